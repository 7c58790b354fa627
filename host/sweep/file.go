// Package sweep runs one benchmark matrix against a series of server configurations — a
// release sweep over deployment shapes (GPU count, draft tokens, model, engine flags): for
// each point it starts the point's server, waits until it is ready, runs the matrix with
// host/run, stops the server, and records the point in a summary, so that a sweep of many
// shapes is one command and one directory of results.
//
// A sweep file (TOML) names the bench.toml, the serve command as a template with
// {placeholders}, the target URL and readiness check, and the points: a grid (the cartesian
// product of lists) and explicit points, each with its variables, labels and overrides of
// bench.toml keys. See [File].
package sweep

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/exitcode"
)

// Placeholders every point has, besides its variables.
const (
	PlaceGenload = "genload" // the path of the running genload binary
	PlacePort    = "port"    // a free loopback TCP port, picked for the point
	PlacePoint   = "point"   // the point's name
	PlaceOut     = "out"     // the sweep's results directory
)

// DefaultCommand serves the built-in engine, so that a sweep runs on a machine with no GPU
// and no server installed.
const DefaultCommand = "{genload} serve --addr 127.0.0.1:{port}"

// File is a sweep file. Every key is optional.
type File struct {
	// Name names the sweep; default the file's name without .toml.
	Name string `toml:"name"`
	// Bench is the bench.toml every point runs, relative to the sweep file; default none (the
	// defaults).
	Bench string `toml:"bench"`
	// Out is the sweep's results directory: one results file per point and the summary
	// sweep.json. Default "results/sweep-<name>", relative to the working directory.
	Out string `toml:"out"`
	// Server is how each point's server is started, reached and stopped.
	Server Server `toml:"server"`
	// Override sets bench.toml keys for every point (the same keys and shapes as bench.toml,
	// e.g. [override.matrix] batch_sizes = [1, 8]); a string value that is exactly
	// "{name}" takes the point's variable name, with its TOML type.
	Override map[string]any `toml:"override"`
	// Labels are recorded with every point (with the point's variables and own labels, which
	// win over these): they become the point's run's [labels], over bench.toml's and the
	// [override]'s, and each label given another value there is named on stderr, both values
	// and where the replaced one was set.
	Labels map[string]any `toml:"labels"`
	// Grid lists values per variable; the points are their cartesian product, variables in
	// name order (the first name varies slowest).
	Grid map[string][]any `toml:"grid"`
	// Points are explicit points, run after the grid's.
	Points []Point `toml:"point"`

	path string
}

// Server is how a point's server is started, reached and stopped. Strings may hold
// {placeholders}: the point's variables and genload, port, point, out.
type Server struct {
	// Command is run with /bin/sh -c in a process group of its own; its output goes to
	// <out>/<point>.server.log. Default [DefaultCommand].
	Command string `toml:"command"`
	// Target is the server's base URL. Default "http://127.0.0.1:{port}".
	Target string `toml:"target"`
	// Ready is the path polled (GET, every 200 ms) until it answers 200: "/v1/models"
	// (default) or "/health".
	Ready string `toml:"ready"`
	// ReadyTimeout is how long the server may take to answer Ready. Default 120s.
	ReadyTimeout config.Duration `toml:"ready_timeout"`
	// StopTimeout is how long the server has to exit after SIGTERM before its process group
	// is sent SIGKILL. Default 10s.
	StopTimeout config.Duration `toml:"stop_timeout"`
}

// Point is one explicit point.
type Point struct {
	// Name names the point's results files; default "<NN>" + "_var=value" per variable.
	Name string `toml:"name"`
	// Vars are the point's placeholder values.
	Vars map[string]any `toml:"vars"`
	// Labels are recorded with the point.
	Labels map[string]any `toml:"labels"`
	// Override sets bench.toml keys for this point, over the file's [override].
	Override map[string]any `toml:"override"`
	// Server replaces the file's [server] keys that it sets.
	Server Server `toml:"server"`
}

// Load reads and checks a sweep file. Errors name the file and key.
func Load(path string) (*File, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.InvalidConfig, "sweep: %w", err)
	}
	return Parse(path, src)
}

// Parse decodes src (named path in messages) and applies the defaults. Unknown keys, a grid
// variable with no values and duplicate point names are errors.
func Parse(path string, src []byte) (*File, error) {
	f := &File{path: path}
	md, err := toml.NewDecoder(bytes.NewReader(src)).Decode(f)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.InvalidConfig, "%s: %v", path, err)
	}
	var errs []error
	for _, k := range md.Undecoded() {
		key := k.String()
		if strings.HasPrefix(key, "override.") || strings.HasPrefix(key, "labels.") ||
			(strings.HasPrefix(key, "point.") && (strings.Contains(key, ".override.") || strings.Contains(key, ".labels.") || strings.Contains(key, ".vars."))) {
			continue
		}
		errs = append(errs, fmt.Errorf("%s: unknown key [%s]", path, key))
	}
	if f.Name == "" {
		f.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	if f.Out == "" {
		f.Out = filepath.Join("results", "sweep-"+f.Name)
	}
	if f.Bench != "" && !filepath.IsAbs(f.Bench) {
		f.Bench = filepath.Join(filepath.Dir(path), f.Bench)
	}
	for k, vs := range f.Grid {
		if len(vs) == 0 {
			errs = append(errs, fmt.Errorf("%s: [grid.%s] has no values", path, k))
		}
	}
	if len(f.Grid) == 0 && len(f.Points) == 0 {
		errs = append(errs, fmt.Errorf("%s: no points: give [grid] lists or [[point]] tables", path))
	}
	if len(errs) > 0 {
		return nil, exitcode.With(exitcode.InvalidConfig, errors.Join(errs...))
	}
	return f, nil
}

// Spec is one point of a sweep, expanded: its variables, labels and server strings with
// {placeholders} not yet replaced (port is picked when it runs).
type Spec struct {
	Index    int
	Name     string
	Vars     map[string]any
	Labels   map[string]any
	Override map[string]any // the file's [override] with the point's over it
	Server   Server
}

// Expand expands the grid (variables in name order, the first varying slowest) and the
// explicit points, in that order, with the defaults filled in.
func (f *File) Expand() ([]Spec, error) {
	var vars []map[string]any
	names := make([]string, 0, len(f.Grid))
	for k := range f.Grid {
		names = append(names, k)
	}
	sort.Strings(names)
	if len(names) > 0 {
		vars = []map[string]any{{}}
		for _, k := range names {
			var next []map[string]any
			for _, v := range vars {
				for _, x := range f.Grid[k] {
					m := maps(v)
					m[k] = x
					next = append(next, m)
				}
			}
			vars = next
		}
	}
	var out []Spec
	for _, v := range vars {
		out = append(out, Spec{Vars: v, Override: f.Override, Server: f.Server})
	}
	for _, p := range f.Points {
		s := Spec{Name: p.Name, Vars: maps(p.Vars), Override: deepMerge(f.Override, p.Override), Server: f.Server}
		s.Labels = p.Labels
		mergeServer(&s.Server, p.Server)
		out = append(out, s)
	}
	seen := map[string]int{}
	for i := range out {
		s := &out[i]
		s.Index = i
		labels := maps(f.Labels)
		for k, v := range s.Vars {
			labels[k] = v
		}
		for k, v := range s.Labels {
			labels[k] = v
		}
		s.Labels = labels
		if s.Name == "" {
			s.Name = defaultName(i, s.Vars)
		}
		if !nameRe.MatchString(s.Name) {
			return nil, exitcode.Errorf(exitcode.InvalidConfig, "%s: point %d: name %q: want letters, digits and . _ = - only (it names files)", f.path, i, s.Name)
		}
		if j, dup := seen[s.Name]; dup {
			return nil, exitcode.Errorf(exitcode.InvalidConfig, "%s: points %d and %d are both named %q", f.path, j, i, s.Name)
		}
		seen[s.Name] = i
		if s.Server.Command == "" {
			s.Server.Command = DefaultCommand
		}
		if s.Server.Target == "" {
			s.Server.Target = "http://127.0.0.1:{port}"
		}
		if s.Server.Ready == "" {
			s.Server.Ready = "/v1/models"
		}
		if s.Server.ReadyTimeout.Duration == 0 {
			s.Server.ReadyTimeout.Duration = 120 * time.Second
		}
		if s.Server.StopTimeout.Duration == 0 {
			s.Server.StopTimeout.Duration = 10 * time.Second
		}
	}
	return out, nil
}

var (
	nameRe  = regexp.MustCompile(`^[A-Za-z0-9._=-]+$`)
	placeRe = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_.-]*)\}`)
	unsafe  = regexp.MustCompile(`[^A-Za-z0-9.=-]+`)
)

func defaultName(i int, vars map[string]any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%02d", i)
	for _, k := range slices.Sorted(mapKeys(vars)) {
		b.WriteString("_" + unsafe.ReplaceAllString(fmt.Sprintf("%s=%v", k, vars[k]), "-"))
	}
	return b.String()
}

// expand replaces every {name} in s with vals[name]; unknown names are an error that lists
// the known ones.
func expand(s, where string, vals map[string]string) (string, error) {
	var unknown []string
	out := placeRe.ReplaceAllStringFunc(s, func(m string) string {
		k := m[1 : len(m)-1]
		v, ok := vals[k]
		if !ok {
			unknown = append(unknown, m)
			return m
		}
		return v
	})
	if len(unknown) > 0 {
		return "", fmt.Errorf("unknown placeholder %s in %s %q (known: %s)", strings.Join(unknown, ", "), where, s,
			strings.Join(slices.Sorted(mapKeys(vals)), ", "))
	}
	return out, nil
}

// expandValue substitutes placeholders in the strings of an override value: a string that is
// exactly "{name}" becomes the variable's value (keeping its type), other strings are
// expanded as text.
func expandValue(v any, where string, vars map[string]any, vals map[string]string) (any, error) {
	switch x := v.(type) {
	case string:
		if m := placeRe.FindStringSubmatch(x); m != nil && m[0] == x {
			if vv, ok := vars[m[1]]; ok {
				return vv, nil
			}
		}
		return expand(x, where, vals)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			ev, err := expandValue(e, where+"."+k, vars, vals)
			if err != nil {
				return nil, err
			}
			out[k] = ev
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			ev, err := expandValue(e, where, vars, vals)
			if err != nil {
				return nil, err
			}
			out[i] = ev
		}
		return out, nil
	}
	return v, nil
}

func maps(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func mapKeys(m any) func(func(string) bool) {
	return func(yield func(string) bool) {
		switch x := m.(type) {
		case map[string]any:
			for k := range x {
				if !yield(k) {
					return
				}
			}
		case map[string]string:
			for k := range x {
				if !yield(k) {
					return
				}
			}
		}
	}
}

// deepMerge returns a over which b is laid, table by table (b's values win).
func deepMerge(a, b map[string]any) map[string]any {
	out := maps(a)
	for k, v := range b {
		if bm, ok := v.(map[string]any); ok {
			if am, ok := out[k].(map[string]any); ok {
				out[k] = deepMerge(am, bm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

func mergeServer(dst *Server, src Server) {
	if src.Command != "" {
		dst.Command = src.Command
	}
	if src.Target != "" {
		dst.Target = src.Target
	}
	if src.Ready != "" {
		dst.Ready = src.Ready
	}
	if src.ReadyTimeout.Duration != 0 {
		dst.ReadyTimeout = src.ReadyTimeout
	}
	if src.StopTimeout.Duration != 0 {
		dst.StopTimeout = src.StopTimeout
	}
}

// templateError is the placeholder error of the server strings when every point of mine has
// one (a typo in the shared template: refused before any server starts, rather than recorded
// once per point); nil when at least one point expands (a point of its own with a bad
// variable is recorded for that point when it runs).
func templateError(f *File, specs []Spec, mine []int, executable string) error {
	var first error
	for _, i := range mine {
		sp := specs[i]
		vals := map[string]string{PlaceGenload: executable, PlacePort: "0", PlacePoint: sp.Name, PlaceOut: f.Out}
		for k, v := range sp.Vars {
			vals[k] = fmt.Sprint(v)
		}
		var err error
		for _, t := range []struct{ s, where string }{{sp.Server.Command, "[server] command"}, {sp.Server.Target, "[server] target"}, {sp.Server.Ready, "[server] ready"}} {
			if _, err = expand(t.s, t.where, vals); err != nil {
				break
			}
		}
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		return nil
	}
	return fmt.Errorf("sweep %s: %w, in every point: nothing was started", f.path, first)
}
