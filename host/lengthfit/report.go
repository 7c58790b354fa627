package lengthfit

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/trace"
)

// Group is the fits of one group of a log's requests (every request when the log has no
// group field): its prompt lengths and, when the log has them, its output lengths. A sample
// that cannot be fitted has its error instead (naming the record at fault).
type Group struct {
	// Name is the group's value, "" for all requests.
	Name string
	// Requests counts the group's requests.
	Requests int
	// Input is the fits of the prompt lengths; Output of the output lengths (nil when the log
	// has none).
	Input, Output       *Result
	InputErr, OutputErr error
}

// FitTrace fits the prompt and output lengths of reqs (host/trace: every length ≥ 0, prompts
// ≥ 1), all together and, when groups is true, per value of Request.Group (in order of first
// appearance, after the whole). outputs says whether the log has output lengths.
func FitTrace(reqs []trace.Request, outputs, groups bool, opt Options) []Group {
	sets := []Group{{Requests: len(reqs)}}
	members := [][]trace.Request{reqs}
	if groups {
		idx := map[string]int{}
		for _, q := range reqs {
			i, ok := idx[q.Group]
			if !ok {
				i = len(sets)
				idx[q.Group] = i
				sets = append(sets, Group{Name: q.Group})
				members = append(members, nil)
			}
			members[i] = append(members[i], q)
			sets[i].Requests++
		}
	}
	for i := range sets {
		qs := members[i]
		in := make([]float64, len(qs))
		out := make([]float64, len(qs))
		for j, q := range qs {
			in[j], out[j] = float64(q.Input), float64(q.Output)
		}
		sets[i].Input, sets[i].InputErr = fitNamed(in, qs, opt)
		if outputs {
			sets[i].Output, sets[i].OutputErr = fitNamed(out, qs, opt)
		}
	}
	return sets
}

// SampleError is a sample of a log that cannot be fitted, with where its records are: the
// record of a bad value ("file:line"), or, for a sample that is empty, too small or all
// equal, the span of its records ("file:2-4", or "a.csv:2 … b.csv:9" across files).
type SampleError struct {
	Where string
	Err   error
}

func (e *SampleError) Error() string { return e.Where + ": " + e.Err.Error() }

// Unwrap returns the fit's error (ErrAllEqual, ErrTooFew, a *ValueError's …).
func (e *SampleError) Unwrap() error { return e.Err }

// fitNamed is FitAll with its error naming the records at fault (a *SampleError).
func fitNamed(xs []float64, qs []trace.Request, opt Options) (*Result, error) {
	r, err := FitAll(xs, opt)
	if err == nil {
		return r, nil
	}
	var ve *ValueError
	if errors.As(err, &ve) && ve.Index < len(qs) {
		return nil, &SampleError{Where: qs[ve.Index].Src, Err: errors.Unwrap(err)}
	}
	if len(qs) > 0 {
		return nil, &SampleError{Where: span(qs[0].Src, qs[len(qs)-1].Src), Err: err}
	}
	return nil, err
}

// span names the records from first to last ("file:line" each): "file:2-4" in one file, the
// two sources joined by " … " otherwise, first alone when they are the same record.
func span(first, last string) string {
	if first == last {
		return first
	}
	i, j := strings.LastIndexByte(first, ':'), strings.LastIndexByte(last, ':')
	if i > 0 && j > 0 && first[:i] == last[:j] {
		return first + "-" + last[j+1:]
	}
	return first + " … " + last
}

// WriteReport writes each group's fits as markdown tables and the [lengths] settings for
// bench.toml: the gamma plugin's k with its interval, and what fits better when gamma does not.
// inName and outName are the log's field names.
func WriteReport(w io.Writer, groups []Group, inName, outName string) {
	for gi, g := range groups {
		title := fmt.Sprintf("all %d requests", g.Requests)
		if g.Name != "" || gi > 0 {
			title = fmt.Sprintf("group %q (%d requests)", g.Name, g.Requests)
		}
		fmt.Fprintf(w, "## %s\n\n", title)
		writeSample(w, "prompt lengths ("+inName+")", g.Input, g.InputErr)
		if g.Output != nil || g.OutputErr != nil {
			writeSample(w, "output lengths ("+outName+")", g.Output, g.OutputErr)
		}
		if g.Input != nil {
			writeSettings(w, g.Input, inName)
		}
	}
}

func writeSample(w io.Writer, what string, r *Result, err error) {
	if err != nil {
		fmt.Fprintf(w, "%s: not fitted: %v\n\n", what, err)
		return
	}
	s := r.Summary
	fmt.Fprintf(w, "%s: n %d, mean %.0f, CV %.2f, min %.0f, p50 %.0f, p90 %.0f, p99 %.0f, max %.0f tokens\n\n",
		what, s.N, s.Mean, s.CV, s.Min, s.P50, s.P90, s.P99, s.Max)
	fmt.Fprintf(w, "| fit | parameters | KS | AIC | ΔAIC |\n|---|---|---|---|---|\n")
	for _, f := range r.Fits {
		fmt.Fprintf(w, "| %s | %s | %.4f | %.1f | %.1f |\n", f.Name, params(&f), f.KS, f.AIC, f.AIC-r.Fits[0].AIC)
	}
	best := bestParametric(r)
	line := fmt.Sprintf("best: %s (lowest AIC)", r.Best().Name)
	if r.Best().Name == Empirical {
		line += fmt.Sprintf("; of the parametric fits, %s (KS %.4f)", best.Name, best.KS)
	}
	fmt.Fprintln(w)
	report.Prose(w, "", "", line+". KS is the largest gap between the sample's CDF and the fit's; AIC = 2·parameters − 2·log-likelihood.")
	fmt.Fprintln(w)
}

func params(f *Fit) string {
	switch f.Name {
	case Gamma:
		k := f.Param("k")
		return fmt.Sprintf("k = %.4g [%.4g, %.4g] (95 %%), θ = %.4g tokens", k.Value, k.Lo, k.Hi, f.Param("theta").Value)
	case LogNormal:
		return fmt.Sprintf("μ = %.4g, σ = %.4g (of ln tokens)", f.Param("mu").Value, f.Param("sigma").Value)
	case Weibull:
		return fmt.Sprintf("c = %.4g, λ = %.4g tokens", f.Param("c").Value, f.Param("lambda").Value)
	case Empirical:
		return fmt.Sprintf("%.0f quantile bins (2 parameters a bin)", f.Param("bins").Value)
	}
	return ""
}

func bestParametric(r *Result) *Fit {
	var best *Fit
	for i := range r.Fits {
		if f := &r.Fits[i]; f.Name != Empirical && (best == nil || f.AIC < best.AIC) {
			best = f
		}
	}
	return best
}

// MaxSuggestSpread is the widest 95 % interval of gamma's k, as hi/lo, for which the report
// suggests [lengths] settings: beyond it the sample does not pin the shape down (with k near
// 0.9 it takes about 50 lengths to get within it: the Fisher information of k, θ profiled
// out, is ψ′(k) − 1/k per length, so hi/lo ≈ exp(2·1.96/(k·√(n·(ψ′(k) − 1/k))))).
const MaxSuggestSpread = 2.0

// TooFewToSuggest says why r's sample is too small to suggest settings from ("" when it is
// not): k's 95 % interval spans more than a factor MaxSuggestSpread.
func TooFewToSuggest(r *Result) string {
	k := r.Get(Gamma).Param("k")
	if spread := k.Hi / k.Lo; !(spread <= MaxSuggestSpread) {
		return fmt.Sprintf("%d lengths are too few to suggest [lengths] settings: gamma's k = %.3g has the 95 %% interval [%.4g, %.4g], a factor %.3g wide (more than %g); fit a larger log",
			r.Summary.N, k.Value, k.Lo, k.Hi, spread, MaxSuggestSpread)
	}
	return ""
}

func writeSettings(w io.Writer, r *Result, inName string) {
	if why := TooFewToSuggest(r); why != "" {
		fmt.Fprintf(w, "no bench.toml settings for the prompt lengths (%s): %s.\n\n", inName, why)
		return
	}
	g := r.Get(Gamma)
	k := g.Param("k")
	fmt.Fprintf(w, "bench.toml (the shipped gamma plugin; a cell rescales its lengths to mean L, so only the shape k carries over):\n\n")
	fmt.Fprintf(w, "    [lengths]\n    plugin = \"gamma\"\n    [lengths.config]\n    k = %s    # 95 %% interval [%.4g, %.4g]; KS %.4f\n\n", shortFloat(k.Value), k.Lo, k.Hi, g.KS)
	if b := bestParametric(r); b.Name != Gamma {
		report.Prose(w, "", "", fmt.Sprintf("gamma is not the best parametric fit: %s is (ΔAIC %.1f, KS %.4f against gamma's %.4f); -o writes the sample's quantile table for the empirical plugin, which keeps the shape whatever the family.",
			b.Name, g.AIC-b.AIC, b.KS, g.KS))
		fmt.Fprintln(w)
	}
}

// shortFloat rounds to 3 significant digits for a config value.
func shortFloat(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprint(v)
	}
	d := 3 - int(math.Ceil(math.Log10(math.Abs(v))))
	if d < 0 {
		d = 0
	}
	return fmt.Sprintf("%.*f", d, v)
}

// TablePaths returns the file each group's quantile table is written to by -o path: path for
// all requests, path with ".<group>" before its extension for each group. A group name with
// characters other than letters, digits, '-', '_' and '.' has them replaced by '_' and, so
// that two groups never share a file ("b/c" and "b_c"), the FNV-1a hash of the whole name
// added: ".b_c-88647327" for "b/c". Two groups that still share a path are an error naming
// both.
func TablePaths(path string, groups []Group) ([]string, error) {
	ext := ""
	if i := strings.LastIndexByte(path, '.'); i > strings.LastIndexByte(path, '/') {
		ext = path[i:]
	}
	base := strings.TrimSuffix(path, ext)
	out := make([]string, len(groups))
	owner := map[string]string{}
	for i, g := range groups {
		if i == 0 {
			out[i] = path
			owner[path] = "all requests"
			continue
		}
		name := strings.Map(func(r rune) rune {
			if r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
				return r
			}
			return '_'
		}, g.Name)
		if name != g.Name {
			h := fnv.New32a()
			h.Write([]byte(g.Name))
			name = fmt.Sprintf("%s-%08x", name, h.Sum32())
		}
		out[i] = base + "." + name + ext
		what := fmt.Sprintf("group %q", g.Name)
		if o, dup := owner[out[i]]; dup {
			return nil, fmt.Errorf("-o %s: %s and %s would both be written to %s: choose another -o", path, o, what, out[i])
		}
		owner[out[i]] = what
	}
	return out, nil
}

// SortGroups orders groups after the first (all requests) by name, for stable output.
func SortGroups(groups []Group) {
	if len(groups) > 2 {
		rest := groups[1:]
		sort.SliceStable(rest, func(i, j int) bool { return rest[i].Name < rest[j].Name })
	}
}

// Command is what `genload lengths fit` asks: the logs to read and how.
type Command struct {
	// Paths are the request logs; their requests are fitted together.
	Paths []string
	// Format is trace.FormatJSONL, trace.FormatCSV or "" (by extension).
	Format string
	// Fields name the log's fields; Fields.Group set means per-group fits.
	Fields trace.Fields
	// Bins is the quantile table's bins (default 32).
	Bins int
	// Table, when not "", is where the quantile table of all prompt lengths is written (and,
	// per group, beside it: [TablePaths]); Force lets them replace files that exist (else
	// Run refuses, before writing any).
	Table string
	Force bool
}

// Run reads the logs, fits every group and writes the report to w, then the quantile tables
// through writeFile (which must not replace a file unless Force is set). Errors (carrying
// exitcode.InvalidConfig from the caller's point of view): a log that cannot be read or holds
// a bad value (file:line), prompt lengths of all requests that cannot be fitted (empty, all
// equal…: the span of their records), a table file that exists without Force (named, nothing
// written); a group that cannot be fitted is reported in its section.
func (c Command) Run(w io.Writer, writeFile func(path string, data []byte) error) ([]Group, error) {
	var reqs []trace.Request
	outputs, groups := true, c.Fields.Group != "" && c.Fields.Group != "-"
	var fields trace.Fields
	warmups := 0
	for _, p := range c.Paths {
		t, err := trace.Read(p, c.Format, c.Fields)
		if err != nil {
			return nil, err
		}
		reqs, warmups = append(reqs, t.Requests...), warmups+t.Warmups
		outputs = outputs && t.HasOutput
		fields = t.Fields
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("lengths fit: no request log given")
	}
	gs := FitTrace(reqs, outputs, groups, Options{Bins: c.Bins})
	SortGroups(gs)
	var paths []string
	if c.Table != "" {
		var err error
		if paths, err = TablePaths(c.Table, gs); err != nil {
			return gs, err
		}
	}
	fmt.Fprintf(w, "# lengths fit: %d requests from %s\n\n", len(reqs), strings.Join(c.Paths, ", "))
	if warmups > 0 {
		fmt.Fprintf(w, "(%d warmup requests of the run's records left out: they resend the measured prompts for one token, they are not traffic)\n\n", warmups)
	}
	WriteReport(w, gs, fields.Input, fields.Output)
	if err := gs[0].InputErr; err != nil {
		var se *SampleError
		if errors.As(err, &se) {
			return gs, fmt.Errorf("%s: prompt lengths (%s): %w", se.Where, fields.Input, se.Err)
		}
		return gs, fmt.Errorf("prompt lengths (%s): %w", fields.Input, err)
	}
	for i, p := range paths {
		if _, err := os.Lstat(p); err == nil && gs[i].Input != nil && !c.Force {
			return gs, fmt.Errorf("-o %s: %s exists: remove it, choose another -o, or give --force to replace it (no table written)", c.Table, p)
		}
	}
	for i, p := range paths {
		if gs[i].Input == nil {
			continue
		}
		var b strings.Builder
		what := "all requests"
		if i > 0 {
			what = fmt.Sprintf("group %q", gs[i].Name)
		}
		dir, err := filepath.Abs(filepath.Dir(p))
		if err != nil {
			dir = filepath.Dir(p)
		}
		s := gs[i].Input.Summary
		comment := []string{
			fmt.Sprintf("Quantile table of the prompt lengths (%s) of %s in %s, written by genload lengths fit:", fields.Input, what, strings.Join(c.Paths, ", ")),
			fmt.Sprintf("%d lengths, mean %.0f tokens, CV %.2f; a cell rescales these to its mean L.", s.N, s.Mean, s.CV),
		}
		if why := TooFewToSuggest(gs[i].Input); why != "" {
			comment = append(comment, "Beware: "+why+".")
		}
		comment = append(comment,
			"The plugin is the SDK's empirical example, at the path \"plugin\" gives, relative to the folder",
			"of the file holding this table (this file for genload lengths -c, your bench.toml if you",
			"paste the table there). Build it beside this file, from a genload checkout:",
			"  GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o "+filepath.Join(dir, EmpiricalWasm)+" ./sdk/examples/empirical",
			"Preview the lengths of a cell: genload lengths -c "+p+" --mean 4000 --batch 64")
		_ = gs[i].Input.Table.WriteTOML(&b, comment)
		if err := writeFile(p, []byte(b.String())); err != nil {
			return gs, fmt.Errorf("-o %s: %w", p, err)
		}
		fmt.Fprintf(w, "wrote %s (%d bins, the empirical plugin's [lengths] table)\n", p, len(gs[i].Input.Table.Counts))
	}
	return gs, nil
}
