package plugin

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/agnivade/levenshtein"

	"github.com/genload/genload/host/plugin/bundled"
)

// EnvPluginDir is the environment variable naming directories (separated by the OS path list
// separator, ':' on Unix) searched for plugins by name before the plugins built into genload;
// the Makefile sets it to build/plugins for the tests.
const EnvPluginDir = "GENLOAD_PLUGIN_DIR"

// Shipped are the plugins of this repository (plugins/), which `make build` builds into
// genload.
var Shipped = []string{"gamma", "uniform", "router-rr"}

// BuiltinPrefix starts the Path of a plugin built into genload: "builtin:gamma.wasm".
const BuiltinPrefix = "builtin:"

// sumsFile lists the built-in plugins' SHA-256 digests, one "<hex>  <name>.wasm" line each.
const sumsFile = "SHA256SUMS"

// builtinFS is the embedded plugin directory (host/plugin/bundled); tests replace it.
var builtinFS = bundled.FS()

// validName is the syntax of a plugin name: lower-case letters, digits, '-' and '_'.
var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// Source is a plugin located by [Locate]: where it comes from and its bytes.
type Source struct {
	// Path is the file's path, or BuiltinPrefix + "<name>.wasm" for a plugin built into genload.
	Path string
	// Builtin reports a plugin embedded in the genload binary.
	Builtin bool
	// Wasm is the module's bytes.
	Wasm []byte
}

// SearchDirs returns the directories Locate searches for a plugin name, in order, before the
// plugins built into genload: extraDirs ([plugins.dir]), then each entry of
// $GENLOAD_PLUGIN_DIR. Nothing is searched relative to the working directory or the
// executable, so that genload finds the same plugins wherever it is run from.
func SearchDirs(extraDirs ...string) []string {
	var dirs []string
	for _, d := range extraDirs {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	for _, d := range filepath.SplitList(os.Getenv(EnvPluginDir)) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// Builtin is a plugin built into genload: its name and the hex SHA-256 of its module.
type Builtin struct {
	Name, SHA256 string
}

// Builtins lists the plugins built into this genload binary, by name, with their digests as
// SHA256SUMS records them (empty for a genload compiled without `make plugins`).
func Builtins() []Builtin {
	sums, _ := readSums()
	var out []Builtin
	for name, sum := range sums {
		out = append(out, Builtin{Name: name, SHA256: sum})
	}
	slices.SortFunc(out, func(a, b Builtin) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// readSums parses the embedded SHA256SUMS into plugin name → hex digest; a missing file is an
// empty map and fs.ErrNotExist.
func readSums() (map[string]string, error) {
	b, err := fs.ReadFile(builtinFS, sumsFile)
	if err != nil {
		return map[string]string{}, err
	}
	sums := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		sum, file, ok := strings.Cut(strings.TrimSpace(sc.Text()), "  ")
		if ok && strings.HasSuffix(file, ".wasm") {
			sums[strings.TrimSuffix(strings.TrimPrefix(file, "*"), ".wasm")] = sum
		}
	}
	return sums, nil
}

// builtin returns the embedded plugin name, checked against its SHA256SUMS line: ok is false
// when genload has no plugin of that name built in; an error when it has one whose bytes do not
// match the digest recorded when it was built in (or no digest).
func builtin(name string) (Source, bool, error) {
	wasm, err := fs.ReadFile(builtinFS, name+".wasm")
	if errors.Is(err, fs.ErrNotExist) {
		return Source{}, false, nil
	}
	path := BuiltinPrefix + name + ".wasm"
	if err != nil {
		return Source{}, false, fmt.Errorf("plugin %q built into genload: %w", name, err)
	}
	sums, _ := readSums()
	want, ok := sums[name]
	got := sha256.Sum256(wasm)
	if !ok || want != hex.EncodeToString(got[:]) {
		if !ok {
			want = "none"
		}
		return Source{}, false, fmt.Errorf("plugin %s: sha256 %x does not match the digest %s recorded in %s when it was built in; rebuild genload with `make build`",
			path, got[:8], want, sumsFile)
	}
	return Source{Path: path, Builtin: true, Wasm: wasm}, true, nil
}

// Locate resolves a plugin reference. A reference ending in ".wasm" or containing a path
// separator is a path, read as is. Otherwise it is a name such as "gamma", looked up as
// <dir>/<name>.wasm in SearchDirs(extraDirs...), then among the plugins built into genload
// (verified against their SHA-256). The error for a name found nowhere lists the places
// searched, says when genload was compiled without its plugins and how to build them in, and
// suggests the nearest known name ("did you mean").
func Locate(nameOrPath string, extraDirs ...string) (Source, error) {
	if strings.HasSuffix(nameOrPath, ".wasm") || strings.ContainsRune(nameOrPath, '/') || strings.ContainsRune(nameOrPath, filepath.Separator) {
		st, err := os.Stat(nameOrPath)
		if err != nil {
			return Source{}, fmt.Errorf("plugin file %s: %w", nameOrPath, err)
		}
		if st.IsDir() {
			return Source{}, fmt.Errorf("plugin file %s is a directory, want a .wasm file", nameOrPath)
		}
		wasm, err := os.ReadFile(nameOrPath)
		if err != nil {
			return Source{}, fmt.Errorf("plugin file %s: %w", nameOrPath, err)
		}
		return Source{Path: nameOrPath, Wasm: wasm}, nil
	}
	if !validName.MatchString(nameOrPath) {
		return Source{}, fmt.Errorf("plugin name %q is invalid: want lower-case letters, digits, '-' or '_', or a path to a .wasm file", nameOrPath)
	}
	var tried []string
	known := map[string]bool{}
	for _, d := range SearchDirs(extraDirs...) {
		p := filepath.Join(d, nameOrPath+".wasm")
		st, err := os.Stat(p)
		if err == nil && !st.IsDir() {
			wasm, err := os.ReadFile(p)
			if err != nil {
				return Source{}, fmt.Errorf("plugin %q: %w", nameOrPath, err)
			}
			return Source{Path: p, Wasm: wasm}, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return Source{}, fmt.Errorf("plugin %q: %w", nameOrPath, err)
		}
		tried = append(tried, p)
		if ents, err := os.ReadDir(d); err == nil {
			for _, e := range ents {
				if n, ok := strings.CutSuffix(e.Name(), ".wasm"); ok && !e.IsDir() {
					known[n] = true
				}
			}
		}
	}
	src, ok, err := builtin(nameOrPath)
	if err != nil || ok {
		return src, err
	}
	var where string
	if len(tried) > 0 {
		where = "; searched " + strings.Join(tried, ", ")
	}
	if slices.Contains(Shipped, nameOrPath) {
		return Source{}, fmt.Errorf("plugin %q is not built into this genload, which was compiled without its plugins (a go build or go install that did not run `make plugins` first embeds none)%s; "+
			"build genload with `make build` (it builds the plugins, then embeds them), or set %s to a directory holding %s.wasm",
			nameOrPath, where, EnvPluginDir, nameOrPath)
	}
	for _, n := range Shipped {
		known[n] = true
	}
	builtIn := "none (compiled without `make plugins`)"
	if bs := Builtins(); len(bs) > 0 {
		names := make([]string, len(bs))
		for i, b := range bs {
			names[i] = b.Name
		}
		builtIn = strings.Join(names, ", ")
	}
	msg := fmt.Sprintf("plugin %q not found: it is not built into genload (built in: %s)%s", nameOrPath, builtIn, where)
	if s := nearest(nameOrPath, known); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	return Source{}, fmt.Errorf("%s (a plugin of your own: give its .wasm path, or set %s to its directory)", msg, EnvPluginDir)
}

// nearest returns the candidate closest to name in Levenshtein distance when it is a likely
// typo — at most 2 edits and fewer than half of name's characters — else "". Ties go to the
// alphabetically first candidate.
func nearest(name string, candidates map[string]bool) string {
	best, bestD := "", 3
	for c := range candidates {
		d := levenshtein.ComputeDistance(name, c)
		if d < bestD || (d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	if best == "" || 2*bestD >= len([]rune(name)) {
		return ""
	}
	return best
}
