// Package htmlreport writes genload results as one self-contained HTML file to send: a
// summary at the top (what ran, where, how long, how many cells ok, partial or failed, the GPU
// time and the headline figures), the A/B comparison first when two runs (or a genload ab
// file) are given, then per run its result table (the default columns, every column on
// demand), its warnings grouped by kind, its per-forward latency against batch size in one
// panel per sequence length, and the realised prompt lengths of every cell as a grid of
// histograms; last, for repeats of one configuration, their consistency. The plots are
// gonum/plot's SVG, drawn with host/chart as genload plot, fit and gap draw. Everything is
// inline (CSS, SVG, a few lines of JavaScript): the file opens with no network and can be
// mailed or attached as it is.
package htmlreport

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/genload/genload/host/compare"
	"github.com/genload/genload/host/gputime"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/repeat"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/warning"
)

//go:embed page.html.tmpl
var pageText string

var page = template.Must(template.New("page").Parse(pageText))

// Options tune [Write].
type Options struct {
	// Title heads the page. Defaults to "genload report" and the run ids.
	Title string
	// AB is a paired comparison from genload ab --json ([ReadAB]). When set, the A/B section
	// shows its per-cell intervals (and comes first) instead of comparing two runs.
	AB *ABFile
}

type tableView struct {
	Head   []string
	Rows   [][]string
	Legend [][2]string
}

type warnView struct {
	Mark, Kind, Cells string
	N                 int
	Each              [][2]string // cell key, message
}

type histView struct {
	Key   string // "L=…,B=…"
	B     int
	Stats []string // lines under the histogram
	SVG   template.HTML
}

// histGrid is the lengths of a run's cells as a grid: a row per L, a column per batch size
// of the run (an empty slot where the L has no such cell), so that no row wraps.
type histGrid struct {
	Bs   []int
	Rows []histRow
}

type histRow struct {
	L     int
	Cells []*histView // one per Bs entry; nil for none
}

type chartView struct {
	SVG template.HTML
}

// factsView is one run's (or comparison's) block of the summary: labelled lines, and its
// headline figures per sequence length.
type factsView struct {
	Name     string
	Lines    [][2]string
	Headline tableView
}

type runView struct {
	Index                     int
	ID, Model                 string
	Narrow, Wide              tableView
	Warnings                  []warnView
	Latency                   template.HTML
	LatencyNote               string
	Hists                     histGrid
	CellCount, HistogramCount int
}

type compareView struct {
	Title, Note string
	Table       tableView
	Charts      []template.HTML
	Warnings    []string
}

type pageView struct {
	Title       string
	Summary     []factsView
	Notes       []string // summary lines about the page itself (a section left out and why)
	AB          *abView
	Runs        []runView
	Consistency *compareView
}

// Write writes the HTML report of runs to w. The page opens with a summary of every run
// ([runFacts]); then, for exactly two runs or with opt.AB, the A/B change of B (the second
// run) against A per cell, with its interval where repeats ([RatioInterval]) or genload ab
// give one; then one section per run; then, for two or more runs of one configuration, their
// consistency ([compare.Consistent]: the per-cell CV of the mean per-forward latency over the
// runs), or for one run with repeats the consistency of its repeats
// ([compare.ConsistentRepeats], with each cell's CV upper bound under its stopping rule).
// Runs that differ in configuration (model, engine, mode, … as compare.Consistent lists
// them) get no consistency section — their differences are what the A/B shows — and the
// summary says so. It fails when there is neither a run nor opt.AB, or w fails; a comparison
// that cannot be made is shown with its reason instead.
func Write(w io.Writer, runs []*results.Run, opt Options) error {
	if len(runs) == 0 && opt.AB == nil {
		return fmt.Errorf("html report: no run given")
	}
	v := pageView{Title: opt.Title}
	if v.Title == "" {
		v.Title = "genload report"
		for i, r := range runs {
			sep := " — "
			if i > 0 {
				sep = ", "
			}
			v.Title += sep + runName(r, i)
		}
		if len(runs) == 0 {
			v.Title += " — A/B " + opt.AB.A + " → " + opt.AB.B
		}
	}
	for i, r := range runs {
		f := runFacts(r)
		f.Name = "Run " + runName(r, i)
		if len(runs) == 2 && opt.AB == nil {
			f.Name = []string{"A", "B"}[i] + ": run " + runName(r, i)
		}
		v.Summary = append(v.Summary, f)
	}
	switch {
	case opt.AB != nil:
		v.AB = abOfFile(opt.AB)
	case len(runs) == 2:
		v.AB = abOfRuns(runs[0], runs[1])
	}
	if v.AB != nil {
		lines := [][2]string{{"change", v.AB.Headline}, {"intervals", v.AB.Source}}
		switch {
		case opt.AB != nil && opt.AB.Comparable != "":
			lines = append(lines, [2]string{"compared", opt.AB.Comparable})
		case opt.AB == nil:
			lines = append(lines, [2]string{"compared", compare.RunsComparability(runs, nil).Line(compare.AcrossDeployments...)})
		}
		v.Summary = append([]factsView{{Name: "A/B", Lines: lines}}, v.Summary...)
	}
	for i, r := range runs {
		v.Runs = append(v.Runs, runSection(r, i))
	}
	switch {
	case len(runs) >= 2:
		if diffs := configDifferences(runs); len(diffs) > 0 {
			v.Notes = append(v.Notes, "no consistency section: the runs are of different configurations ("+strings.Join(diffs, "; ")+"), so their spread is not noise; the A/B compares them")
		} else {
			v.Consistency = consistencySection(runs)
		}
	case len(runs) == 1 && runs[0].HasRepeats():
		v.Consistency = repeatsSection(runs[0])
	}
	return page.Execute(w, v)
}

// configDifferences lists the settings in which runs differ and so measure different things
// ([compare.ConfigDifferences]); nil for runs of one configuration. The notes of
// compare.Consistent's warnings on how a run went (its prompts already cached) are not among
// them: two runs of one bench.toml, the second finding its prompts cached, are repeats.
func configDifferences(runs []*results.Run) []string {
	return compare.ConfigDifferences(runs)
}

// WriteFile writes the report of runs to path ([Write]); the file is removed when writing
// fails.
func WriteFile(path string, runs []*results.Run, opt Options) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	if err := Write(f, runs, opt); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("html report: %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("html report: %s: %w", path, err)
	}
	return nil
}

func grid(g report.Grid) tableView { return tableView{Head: g.Head, Rows: g.Rows, Legend: g.Legend} }

// cellCounts counts a run's cells by status, one per cell (a run with repeats by its pooled
// record: ok when a repeat was measured), and those with warnings; missing is the cells of
// the header's matrix with no record (the run stopped before them).
type cellCounts struct {
	byStatus map[string]int
	total    int
	warned   int
	missing  int
	noFwd    int // ok cells without a per-forward figure
}

func countCells(r *results.Run) cellCounts {
	pooled := compare.PooledRun(r)
	c := cellCounts{byStatus: map[string]int{}}
	seen := map[int]bool{}
	for _, cell := range pooled.Cells {
		c.byStatus[cell.Status]++
		c.total++
		if cell.OKWithoutFwd() {
			c.noFwd++
		}
		seen[cell.Cell.Index] = true
	}
	warned := map[int]bool{}
	for _, cell := range r.Cells {
		if len(cell.Warnings) > 0 {
			warned[cell.Cell.Index] = true
		}
	}
	c.warned = len(warned)
	for _, hc := range r.Header.Cells {
		if !seen[hc.Index] {
			c.missing++
		}
	}
	return c
}

// String is "91 of 91 cells ok" or "91 cells: 88 ok, 2 partial, 1 error", naming only the
// statuses present, then the ok cells without a per-forward figure, the cells with warnings
// and those never measured.
func (c cellCounts) String() string {
	var s string
	if c.byStatus[results.StatusOK] == c.total {
		s = fmt.Sprintf("%d of %d cells ok", c.total, c.total)
	} else {
		var parts []string
		for _, st := range []string{results.StatusOK, results.StatusPartial, results.StatusError, results.StatusInterrupted} {
			if n := c.byStatus[st]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, st))
			}
		}
		s = fmt.Sprintf("%d cells: %s", c.total, strings.Join(parts, ", "))
	}
	if c.noFwd > 0 {
		s += fmt.Sprintf(" (%d of them without a per-forward figure: their sequences could not be timed)", c.noFwd)
	}
	if c.warned > 0 {
		s += fmt.Sprintf("; %d with warnings", c.warned)
	}
	if c.missing > 0 {
		s += fmt.Sprintf("; %d of the matrix not measured (the run stopped before them)", c.missing)
	}
	return s
}

// distinct returns the distinct values of the cells' L (or B), ascending.
func distinct(cells []matrix.Cell, of func(matrix.Cell) int) []int {
	var out []int
	for _, c := range cells {
		if v := of(c); !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// runFacts is the summary block of one run: what ran (matrix, model, request shape, length
// plugin, repeats), where (target, engine, labels, genload version), when and how long, the
// cells by status, the GPU time (package gputime: wall time × GPUs, every repeat counted)
// and the headline figures per L.
func runFacts(r *results.Run) factsView {
	h := r.Header
	f := factsView{}
	cells := h.Cells
	if len(cells) == 0 {
		for _, c := range r.Cells {
			cells = append(cells, c.Cell)
		}
	}
	ls := distinct(cells, func(c matrix.Cell) int { return c.SeqLen })
	bs := distinct(cells, func(c matrix.Cell) int { return c.Batch })
	what := fmt.Sprintf("%d cells", len(cells))
	if len(ls) > 0 {
		what += fmt.Sprintf(": %d sequence lengths L %s × %d batch sizes B %s", len(ls), rangeText(ls), len(bs), rangeText(bs))
	}
	if len(ls)*len(bs) != len(cells) && len(ls) > 0 {
		what += " (not every pair)"
	}
	what += "; model " + h.Model
	if c := h.Config; c != nil {
		what += fmt.Sprintf(", max_tokens %d, mode %s, lengths %s", c.MaxTokens, c.Mode, pluginText(h, "lengths"))
	}
	if u := h.UntilCV; u != nil {
		what += fmt.Sprintf("; each cell repeated (%d to %d times) until the %g %% upper confidence bound of its CV was ≤ %g %%: %d records",
			u.MinRepeats, u.MaxRepeats, 100*u.Confidence, 100*u.TargetCV, len(r.Cells))
	} else if h.Repeats > 0 {
		what += fmt.Sprintf("; each cell repeated %d times, in interleaved rounds: %d records", h.Repeats, len(r.Cells))
	} else if r.HasRepeats() {
		what += fmt.Sprintf("; cells repeated: %d records", len(r.Cells))
	}
	f.Lines = append(f.Lines, [2]string{"what ran", what})

	where := fmt.Sprintf("%s (%s)", h.Target, h.TargetKind)
	if len(h.Workers) > 1 {
		urls := make([]string, len(h.Workers))
		for i, w := range h.Workers {
			urls[i] = w.URL
		}
		where = fmt.Sprintf("routed over %d servers: %s (%s)", len(h.Workers), strings.Join(urls, ", "), h.TargetKind)
	}
	if ts, ok := h.Engine["time_scale"].(float64); ok && ts > 0 {
		where = fmt.Sprintf("the built-in engine, profile %v, time scale %g (times are wall-clock; ×%g gives the simulated GPU time), at %s", h.Engine["profile"], ts, 1/ts, h.Target)
	}
	if h.Context > 0 {
		where += fmt.Sprintf("; context %d (%s)", h.Context, h.ContextSource)
	}
	if len(h.Labels) > 0 {
		ks := make([]string, 0, len(h.Labels))
		for k := range h.Labels {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for i, k := range ks {
			ks[i] = fmt.Sprintf("%s=%v", k, h.Labels[k])
		}
		where += "; labels " + strings.Join(ks, ", ")
	}
	if h.Genload != "" {
		where += "; genload " + h.Genload
	}
	f.Lines = append(f.Lines, [2]string{"where", where})

	when := "started " + h.Started.UTC().Format("2006-01-02 15:04:05 UTC")
	if ft := r.Footer; ft != nil {
		when += fmt.Sprintf(", took %s, ended %s", time.Duration(ft.Elapsed).Round(time.Millisecond), ft.Status)
		if ft.Error != "" {
			when += ": " + ft.Error
		}
	} else {
		when += "; unfinished: the file has no footer (the run was killed, or is still running)"
	}
	f.Lines = append(f.Lines, [2]string{"when", when})
	f.Lines = append(f.Lines, [2]string{"cells", countCells(r).String()})
	f.Lines = append(f.Lines, [2]string{"GPU time", gpuText(r)})
	f.Headline = headline(r, bs)
	return f
}

// gpuText is the run's GPU time in one line (package gputime): wall time × GPUs (the
// gpu_count label; without it per GPU), the cells' share in warmups and measured requests,
// every repeat of a run with repeats counted.
func gpuText(r *results.Run) string {
	gpus, src := 0, ""
	if n, ok := gputime.GPUCount(r.Header.Labels); ok {
		gpus, src = n, "labels gpu_count"
	}
	a := gputime.Of([]*results.Run{r}, gpus, src)
	per := fmt.Sprintf("× %d GPUs (%s)", a.GPUs, a.GPUSource)
	if a.GPUSource == "" {
		per = "per GPU (no gpu_count label)"
	}
	s := fmt.Sprintf("%s GPU-h %s: run wall time %s, cells %s", gputime.Hours(a.GPUHours(a.RunWall)), per, a.RunWall.Round(time.Millisecond), a.CellWall.Round(time.Millisecond))
	if r.HasRepeats() {
		s += fmt.Sprintf(" over %d records (every repeat)", len(a.Cells))
	}
	if a.Split && a.CellWall > 0 {
		s += fmt.Sprintf("; warmups %.1f %%, measured requests %.1f %% of the cells' time",
			100*float64(a.Warmup)/float64(a.CellWall), 100*float64(a.Measured)/float64(a.CellWall))
	} else if !a.Split {
		s += "; warmup / measured split absent: " + a.SplitReason
	}
	if a.TimeScale > 0 && a.TimeScale != 1 {
		s += fmt.Sprintf("; at time scale %g the simulated GPU time is %s GPU-h", a.TimeScale, gputime.Hours(a.GPUHours(a.RunWall)/a.TimeScale))
	}
	return s
}

// headline is per sequence length L the mean per-forward latency and the TTFT p50 at the
// smallest and the largest batch size measured at that L (a run with repeats: each cell's
// mean over its measured repeats), and the ratio of the two latencies; a cell not measured is
// "–" and the batch sizes are named. A run routed over servers whose figures differ
// (servers-differ) has the cell's figure, which mixes the servers' sequences, marked as such,
// and a row per server and L with that server's own per-forward latency ([serverRows]).
func headline(r *results.Run, bs []int) tableView {
	if len(bs) == 0 {
		return tableView{}
	}
	type fig struct {
		b          int
		fwd, ttft  float64
		full       float64
		hasFullWin bool
	}
	byL := map[int][]fig{}
	var ls []int
	mixed := map[int]bool{} // L → some cell's servers differ
	for _, c := range compare.PooledRun(r).Cells {
		if c.Figures == nil || !results.Measured(c.Status) || c.Figures.PerForward.N == 0 {
			continue
		}
		l := c.Cell.SeqLen
		if _, ok := byL[l]; !ok {
			ls = append(ls, l)
		}
		mixed[l] = mixed[l] || slices.Contains(c.WarningNames, warning.ServersDiffer)
		g := fig{b: c.Cell.Batch, fwd: measure.Ms(c.Figures.PerForward.Mean), ttft: measure.Ms(c.Figures.TTFT.P50)}
		if c.Figures.Window.Valid {
			g.full, g.hasFullWin = measure.Ms(c.Figures.Window.PerStep), true
		}
		byL[l] = append(byL[l], g)
	}
	sort.Ints(ls)
	t := tableView{Head: []string{"L", "fwd ms at smallest B", "fwd ms at largest B", "largest / smallest", "full-batch fwd ms at largest B", "TTFT p50 ms at smallest B", "TTFT p50 ms at largest B"}}
	for _, l := range ls {
		gs := byL[l]
		slices.SortFunc(gs, func(a, b fig) int { return a.b - b.b })
		lo, hi := gs[0], gs[len(gs)-1]
		full := "–"
		if hi.hasFullWin {
			full = fmt.Sprintf("%.3f", hi.full)
		}
		label, his := strconv.Itoa(l), fmt.Sprintf("%.3f (B=%d)", hi.fwd, hi.b)
		if mixed[l] {
			label += " (all servers)"
			his += ": mixed, a figure of neither server"
		}
		t.Rows = append(t.Rows, []string{label, fmt.Sprintf("%.3f (B=%d)", lo.fwd, lo.b), his,
			fmt.Sprintf("×%.2f", hi.fwd/lo.fwd), full, fmt.Sprintf("%.1f", lo.ttft), fmt.Sprintf("%.1f", hi.ttft)})
		if mixed[l] {
			t.Rows = append(t.Rows, serverRows(r, l)...)
		}
	}
	return t
}

// serverRows are, for a run routed over several servers (cells with per-server figures), a
// headline row per server at sequence length l: its own mean per-forward latency over the
// sequences routed to it at the smallest and largest B where it has one, their ratio; the
// other columns "–" (the full-batch figure and TTFT are the cell's). A run with repeats has
// none: per-server figures are a record's, not pooled over repeats.
func serverRows(r *results.Run, l int) [][]string {
	type fig struct {
		b, seqs int
		fwd     float64
	}
	by := map[string][]fig{}
	shares, servers := timedServerShares(r)
	for _, sh := range shares {
		if sh.cell.SeqLen == l {
			by[sh.fig.Server] = append(by[sh.fig.Server], fig{sh.cell.Batch, sh.fig.Sequences, measure.Ms(sh.fig.PerForward.Mean)})
		}
	}
	var rows [][]string
	for _, sv := range servers {
		gs := by[sv]
		if len(gs) == 0 {
			continue
		}
		slices.SortFunc(gs, func(a, b fig) int { return a.b - b.b })
		lo, hi := gs[0], gs[len(gs)-1]
		rows = append(rows, []string{fmt.Sprintf("%d on %s", l, sv), fmt.Sprintf("%.3f (B=%d, %d on it)", lo.fwd, lo.b, lo.seqs),
			fmt.Sprintf("%.3f (B=%d, %d on it)", hi.fwd, hi.b, hi.seqs), fmt.Sprintf("×%.2f", hi.fwd/lo.fwd), "–", "–", "–"})
	}
	return rows
}

// serverShare is one server's per-forward figures in one cell of a routed run.
type serverShare struct {
	cell matrix.Cell
	fig  *results.ServerFigures
}

// timedServerShares are, in cell order, the per-server figures with a per-forward figure of
// r's measured cells, and the servers they name, sorted; none for a run with repeats
// (per-server figures are a record's, not pooled over repeats).
func timedServerShares(r *results.Run) (shares []serverShare, servers []string) {
	if r.HasRepeats() {
		return nil, nil
	}
	for i := range r.Cells {
		c := &r.Cells[i]
		if !results.Measured(c.Status) {
			continue
		}
		for j := range c.PerServer {
			if sf := &c.PerServer[j]; sf.PerForward.N > 0 {
				shares = append(shares, serverShare{c.Cell, sf})
				if !slices.Contains(servers, sf.Server) {
					servers = append(servers, sf.Server)
				}
			}
		}
	}
	sort.Strings(servers)
	return shares, servers
}

// rangeText is "1000" for one value, "1000–64000" for several (ascending).
func rangeText(xs []int) string {
	if len(xs) == 1 {
		return strconv.Itoa(xs[0])
	}
	return fmt.Sprintf("%d–%d", xs[0], xs[len(xs)-1])
}

// pluginText is the plugin's name and version with its config ("gamma 1.0.0 (k = 0.9)").
func pluginText(h results.Header, kind string) string {
	p, ok := h.Plugins[kind]
	if !ok {
		if h.Config != nil && kind == "lengths" {
			return h.Config.Lengths.Plugin
		}
		return "–"
	}
	s := p.Name + " " + p.Version
	if h.Config != nil && kind == "lengths" && len(h.Config.Lengths.Config) > 0 {
		ks := make([]string, 0, len(h.Config.Lengths.Config))
		for k := range h.Config.Lengths.Config {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for i, k := range ks {
			ks[i] = fmt.Sprintf("%s = %v", k, h.Config.Lengths.Config[k])
		}
		s += " (" + strings.Join(ks, ", ") + ")"
	}
	return s
}

func runSection(r *results.Run, i int) runView {
	h := r.Header
	v := runView{Index: i, ID: runName(r, i), Model: h.Model,
		Narrow: grid(report.TableGrid(r, report.TableOptions{})), Wide: grid(report.TableGrid(r, report.TableOptions{Wide: true}))}
	all := make([]matrix.Cell, len(r.Cells))
	for j, c := range r.Cells {
		all[j] = c.Cell
	}
	for _, g := range report.GroupWarnings(r) {
		wv := warnView{Mark: "⚠", Kind: g.Kind, Cells: report.CellList(g.Cells, all), N: len(g.Cells)}
		if g.Error {
			wv.Mark = "✗"
		}
		for j, c := range g.Cells {
			wv.Each = append(wv.Each, [2]string{c.Key(), g.Messages[j]})
		}
		v.Warnings = append(v.Warnings, wv)
	}
	v.Latency, v.LatencyNote = latencyFigure(r, i)
	v.Hists = histograms(r)
	v.CellCount = len(compare.PooledRun(r).Cells)
	for _, row := range v.Hists.Rows {
		for _, c := range row.Cells {
			if c != nil {
				v.HistogramCount++
			}
		}
	}
	return v
}

// latencyFigure is the run's per-forward latency against batch size, one panel per L: the
// mean per-forward latency (solid), the full-batch figure (dashed) and, on the built-in
// engine, its own mean decode step (the truth). A run with repeats plots each cell's mean over
// its measured repeats, with the range of the repeats as bars.
func latencyFigure(r *results.Run, i int) (template.HTML, string) {
	fwd := seriesDef{label: "fwd mean (per sequence, per decode forward pass)", style: 0, byL: map[int][]value{}}
	full := seriesDef{label: "full-batch fwd (all sequences decoding together)", style: 1, dashed: true, byL: map[int][]value{}}
	truth := seriesDef{label: "engine fwd (the built-in engine's own decode step)", style: 2, dashed: true, byL: map[int][]value{}}
	ranges := map[compare.CellKey][2]float64{}
	note := ""
	if r.HasRepeats() {
		note = "each point is the cell's mean over its measured repeats; the bars span their smallest to largest"
		for _, c := range r.Cells {
			if c.Figures == nil || c.Status != results.StatusOK || c.Figures.PerForward.N == 0 {
				continue
			}
			k := compare.CellKey{SeqLen: c.Cell.SeqLen, Batch: c.Cell.Batch}
			ms := measure.Ms(c.Figures.PerForward.Mean)
			rg, ok := ranges[k]
			if !ok {
				rg = [2]float64{ms, ms}
			}
			ranges[k] = [2]float64{math.Min(rg[0], ms), math.Max(rg[1], ms)}
		}
	}
	for _, c := range compare.PooledRun(r).Cells {
		if c.Figures == nil || !results.Measured(c.Status) {
			continue
		}
		l, x := c.Cell.SeqLen, float64(c.Cell.Batch)
		if f := c.Figures; f.PerForward.N > 0 {
			val := value{x: x, y: measure.Ms(f.PerForward.Mean), lo: math.NaN(), hi: math.NaN()}
			if rg, ok := ranges[compare.CellKey{SeqLen: l, Batch: c.Cell.Batch}]; ok {
				val.lo, val.hi = rg[0], rg[1]
			}
			fwd.byL[l] = append(fwd.byL[l], val)
		}
		if f := c.Figures; f.Window.Valid && f.Window.PerStep > 0 {
			full.byL[l] = append(full.byL[l], value{x: x, y: measure.Ms(f.Window.PerStep), lo: math.NaN(), hi: math.NaN()})
		}
		if m := c.Server; m != nil && m.Steps.HasTruthDecode && m.Steps.TruthDecodeStepTime > 0 && !r.HasRepeats() {
			truth.byL[l] = append(truth.byL[l], value{x: x, y: measure.Ms(m.Steps.TruthDecodeStepTime), lo: math.NaN(), hi: math.NaN()})
		}
	}
	series := []seriesDef{fwd, full}
	if len(truth.byL) > 0 {
		series = append(series, truth)
	}
	if per := serverSeries(r, len(series)); len(per) > 0 {
		series[0].label = "fwd mean over all servers' sequences (a mixture when they differ)"
		series = append(series, per...)
		note = strings.TrimPrefix(note+"; ", "; ") + "routed over several servers: each server's own mean per-forward latency over the sequences routed to it is drawn (dashed); the cell's figure mixes them"
	}
	f := panelFigure{id: fmt.Sprintf("latency-%d", i), title: "per-forward latency against batch size, one panel per sequence length L, run " + runName(r, i),
		yLabel: "ms per forward pass", series: series}
	return f.svg(), note
}

// serverSeries are, for a run routed over two or more servers whose cells record per-server
// figures (and without repeats: those figures are a record's), one series per server of its
// own mean per-forward latency over the sequences routed to it, styles from style on; nil
// otherwise.
func serverSeries(r *results.Run, style int) []seriesDef {
	shares, servers := timedServerShares(r)
	if len(servers) < 2 {
		return nil
	}
	by := map[string]map[int][]value{}
	for _, sv := range servers {
		by[sv] = map[int][]value{}
	}
	for _, sh := range shares {
		l := sh.cell.SeqLen
		by[sh.fig.Server][l] = append(by[sh.fig.Server][l], value{x: float64(sh.cell.Batch), y: measure.Ms(sh.fig.PerForward.Mean), lo: math.NaN(), hi: math.NaN()})
	}
	out := make([]seriesDef, len(servers))
	for i, sv := range servers {
		out[i] = seriesDef{label: "fwd on " + sv + " (its share of the batch)", style: style + i, dashed: true, byL: by[sv]}
	}
	return out
}

// histograms is the grid of the run's realised prompt lengths: a row per L (run order), a
// column per batch size of the run (ascending), one histogram per cell (a cell's repeats
// measure one plan: one histogram).
func histograms(r *results.Run) histGrid {
	var g histGrid
	var ls []int
	byCell := map[[2]int]*histView{}
	for _, c := range r.Cells {
		k := [2]int{c.Cell.SeqLen, c.Cell.Batch}
		if byCell[k] != nil {
			continue
		}
		if !slices.Contains(ls, c.Cell.SeqLen) {
			ls = append(ls, c.Cell.SeqLen)
		}
		if !slices.Contains(g.Bs, c.Cell.Batch) {
			g.Bs = append(g.Bs, c.Cell.Batch)
		}
		stats := []string{"no lengths"}
		if len(c.Lengths.Each) > 0 {
			stats = []string{fmt.Sprintf("mean %.0f", c.Lengths.Mean), fmt.Sprintf("%d–%d", c.Lengths.Min, c.Lengths.Max)}
			if c.Lengths.Clamped > 0 {
				stats = append(stats, fmt.Sprintf("%d clamped", c.Lengths.Clamped))
			}
		}
		byCell[k] = &histView{Key: c.Cell.Key(), B: c.Cell.Batch, Stats: stats, SVG: histogram(c.Cell.Key(), c.Lengths.Each)}
	}
	slices.Sort(g.Bs)
	for _, l := range ls {
		row := histRow{L: l, Cells: make([]*histView, len(g.Bs))}
		for j, b := range g.Bs {
			row.Cells[j] = byCell[[2]int{l, b}]
		}
		g.Rows = append(g.Rows, row)
	}
	return g
}

func pct(f float64) string {
	if math.IsNaN(f) {
		return "–"
	}
	return strconv.FormatFloat(100*f, 'f', 1, 64)
}

func consistencySection(runs []*results.Run) *compareView {
	v := &compareView{Title: fmt.Sprintf("Consistency of %d runs", len(runs))}
	c, err := compare.Consistent(runs)
	if err != nil {
		v.Note = "not computed: " + err.Error()
		return v
	}
	v.Note = fmt.Sprintf("coefficient of variation of each cell's mean per-forward latency over the runs: median %s %%, p90 %s %%, max %s %% (%s); %d of %d cells within 5 %%",
		pct(c.MedianCV), pct(c.P90CV), pct(c.MaxCV), c.MaxCell, c.Within5, len(c.Cells))
	v.Warnings = append(slices.Clone(c.Pooled), c.Warnings...)
	v.Table.Head = []string{"L", "B", "fwd ms mean", "sd", "min", "max", "CV %", "full-batch CV %"}
	byL := map[int][]value{}
	for _, cc := range c.Cells {
		v.Table.Rows = append(v.Table.Rows, []string{strconv.Itoa(cc.SeqLen), strconv.Itoa(cc.Batch), ms3(cc.Mean), ms3(cc.SD), ms3(cc.Min), ms3(cc.Max), pct(cc.CV), pct(cc.WindowCV)})
		byL[cc.SeqLen] = append(byL[cc.SeqLen], value{x: float64(cc.Batch), y: 100 * cc.CV})
	}
	v.Warnings = append(v.Warnings, leftOut(c.LeftOut)...)
	v.Charts = []template.HTML{lineChart{id: "cv", title: "CV of the mean per-forward latency across runs", yLabel: "CV (%)", byL: byL}.svg()}
	return v
}

// repeatsSection is the consistency of one run's repeats: per cell its measured repeats, CV
// and — when the header has the stopping rule — the CV's upper confidence bound
// (CV · repeat.UpperFactor(n, confidence), the bound the rule held against the target).
func repeatsSection(r *results.Run) *compareView {
	v := &compareView{Title: "Consistency of the repeats of " + r.Header.RunID}
	c, err := compare.ConsistentRepeats(r)
	if err != nil {
		v.Note = "not computed: " + err.Error()
		return v
	}
	u := r.Header.UntilCV
	v.Note = fmt.Sprintf("coefficient of variation of each cell's mean per-forward latency over its own measured repeats: median %s %%, p90 %s %%, max %s %% (%s); %d of %d cells within 5 %%",
		pct(c.MedianCV), pct(c.P90CV), pct(c.MaxCV), c.MaxCell, c.Within5, len(c.Cells))
	v.Table.Head = []string{"L", "B", "repeats", "fwd ms mean", "sd", "min", "max", "CV %", "full-batch CV %"}
	if u != nil {
		v.Note += fmt.Sprintf(". Stopping rule: repeat each cell (%d to %d times) until the one-sided %g %% upper confidence bound of its CV is ≤ %g %%",
			u.MinRepeats, u.MaxRepeats, 100*u.Confidence, 100*u.TargetCV)
		v.Table.Head = append(v.Table.Head, "CV upper %", "upper ≤ target")
	}
	byL := map[int][]value{}
	for _, cc := range c.Cells {
		row := []string{strconv.Itoa(cc.SeqLen), strconv.Itoa(cc.Batch), strconv.Itoa(len(cc.Runs)), ms3(cc.Mean), ms3(cc.SD), ms3(cc.Min), ms3(cc.Max), pct(cc.CV), pct(cc.WindowCV)}
		if u != nil {
			up := cc.CV * repeat.UpperFactor(len(cc.Runs), u.Confidence)
			row = append(row, pct(up), map[bool]string{true: "yes", false: "no"}[up <= u.TargetCV])
		}
		v.Table.Rows = append(v.Table.Rows, row)
		byL[cc.SeqLen] = append(byL[cc.SeqLen], value{x: float64(cc.Batch), y: 100 * cc.CV})
	}
	v.Warnings = leftOut(c.LeftOut)
	v.Charts = []template.HTML{lineChart{id: "cv", title: "CV of the mean per-forward latency across repeats", yLabel: "CV (%)", byL: byL}.svg()}
	return v
}

// leftOut is one line per reason, naming its cells ("left out, missing from r2: L=1000
// B=2,3").
func leftOut(lo []compare.LeftOut) []string {
	var reasons []string
	cells := map[string][]matrix.Cell{}
	for _, l := range lo {
		if _, ok := cells[l.Reason]; !ok {
			reasons = append(reasons, l.Reason)
		}
		cells[l.Reason] = append(cells[l.Reason], matrix.Cell{SeqLen: l.SeqLen, Batch: l.Batch})
	}
	out := make([]string, len(reasons))
	for i, r := range reasons {
		out[i] = fmt.Sprintf("%d cells left out, %s: %s", len(cells[r]), r, report.CellList(cells[r], nil))
	}
	return out
}

func ms3(d time.Duration) string { return strconv.FormatFloat(measure.Ms(d), 'f', 3, 64) }
