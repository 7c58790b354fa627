// Package htmlreport writes genload results as one self-contained HTML file: the result
// table (the default columns, every column on demand), the warnings grouped by kind, per-forward
// latency against batch size for each sequence length, the realised prompt lengths of every
// cell as histograms, and, for several runs of one matrix, their consistency and an A/B
// comparison. Everything is inline (CSS, SVG, a few lines of JavaScript): the file opens with
// no network and can be mailed or attached as it is.
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
	"time"

	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/repeat"
	"github.com/genload/genload/host/report"
)

//go:embed page.html.tmpl
var pageText string

var page = template.Must(template.New("page").Parse(pageText))

// Options tune [Write].
type Options struct {
	// Title heads the page. Defaults to "genload report" and the run ids.
	Title string
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
	Key   string
	Stats []string // lines under the histogram
	SVG   template.HTML
}

type histRow struct {
	L     int
	Cells []histView
}

type runView struct {
	ID, Model, Target, Context, Setup, Engine, Status string
	Narrow, Wide                                      tableView
	Warnings                                          []warnView
	Charts                                            []template.HTML
	Hists                                             []histRow
}

type compareView struct {
	Title, Note string
	Table       tableView
	Charts      []template.HTML
	Warnings    []string
}

type pageView struct {
	Title       string
	Generated   string
	Runs        []runView
	Consistency *compareView
	AB          *compareView
}

// Write writes the HTML report of runs (at least one) to w: one section per run, then, for
// two or more runs, their consistency ([report.Consistent]: per-cell CV of the mean
// per-forward latency over the cells all runs measured; a run with repeats by its cells'
// means over their repeats, see [report.Pool]), and for exactly two, the A/B change of the
// second against the first ([report.Compare]). One run with repeats (genload run --until-cv)
// gets the consistency of its repeats instead ([report.ConsistentRepeats]) with each cell's
// CV upper bound under the run's stopping rule. It fails when runs is empty or w fails;
// a consistency or comparison that cannot be made is shown with its reason instead.
func Write(w io.Writer, runs []*report.Run, opt Options) error {
	if len(runs) == 0 {
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
			v.Title += sep + r.Header.RunID
		}
	}
	for i, r := range runs {
		v.Runs = append(v.Runs, runSection(r, i))
	}
	if len(runs) >= 2 {
		v.Consistency = consistencySection(runs)
	} else if runs[0].HasRepeats() {
		v.Consistency = repeatsSection(runs[0])
	}
	if len(runs) == 2 {
		v.AB = abSection(runs[0], runs[1])
	}
	return page.Execute(w, v)
}

// WriteFile writes the report of runs to path ([Write]); the file is removed when writing
// fails.
func WriteFile(path string, runs []*report.Run, opt Options) error {
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

func runSection(r *report.Run, i int) runView {
	h := r.Header
	v := runView{ID: h.RunID, Model: h.Model, Target: fmt.Sprintf("%s (%s)", h.Target, h.TargetKind),
		Narrow: grid(report.TableGrid(r, report.TableOptions{})), Wide: grid(report.TableGrid(r, report.TableOptions{Wide: true}))}
	if v.ID == "" {
		v.ID = fmt.Sprintf("run %d", i+1)
	}
	v.Context = "unknown"
	if h.Context > 0 {
		v.Context = fmt.Sprintf("%d tokens (%s)", h.Context, h.ContextSource)
	}
	if c := h.Config; c != nil {
		v.Setup = fmt.Sprintf("max_tokens %d, mode %s, lengths %s, seed %d", c.MaxTokens, c.Mode, c.Lengths.Plugin, c.Seed)
	}
	if ts, ok := h.Engine["time_scale"].(float64); ok && ts > 0 {
		v.Engine = fmt.Sprintf("built-in engine, profile %v, time scale %g: times are wall-clock; ×%g gives the simulated GPU time", h.Engine["profile"], ts, 1/ts)
	}
	if f := r.Footer; f != nil {
		v.Status = fmt.Sprintf("%s: %d ok, %d partial, %d failed in %s", f.Status, f.OK, f.Partial, f.Failed, time.Duration(f.Elapsed).Round(100*time.Millisecond))
	} else {
		v.Status = fmt.Sprintf("unfinished: %d cells recorded", len(r.Cells))
	}
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
	// A run with repeats: one point per cell, its mean over its measured repeats.
	pooled, over := report.PooledRun(r), ""
	if r.HasRepeats() {
		over = " (each cell's mean over its measured repeats)"
	}
	v.Charts = []template.HTML{
		perLChart(pooled, fmt.Sprintf("fwd-%d", i), "per-forward latency (fwd mean) against batch size"+over, "fwd ms",
			func(f *measure.Figures) (time.Duration, bool) { return f.PerForward.Mean, f.PerForward.N > 0 }),
		perLChart(pooled, fmt.Sprintf("full-%d", i), "full-batch fwd (all sequences decoding together) against batch size"+over, "full-batch fwd ms",
			func(f *measure.Figures) (time.Duration, bool) { return f.Window.PerStep, f.Window.Valid }),
	}
	rows := map[int]*histRow{}
	var order []int
	seen := map[int]bool{} // a cell's repeats measure one plan: one histogram per cell
	for _, c := range r.Cells {
		if seen[c.Cell.Index] {
			continue
		}
		seen[c.Cell.Index] = true
		l := c.Cell.SeqLen
		if rows[l] == nil {
			rows[l] = &histRow{L: l}
			order = append(order, l)
		}
		stats := []string{"no lengths"}
		if len(c.Lengths.Each) > 0 {
			stats = []string{fmt.Sprintf("mean %.0f", c.Lengths.Mean), fmt.Sprintf("%d–%d", c.Lengths.Min, c.Lengths.Max)}
			if c.Lengths.Clamped > 0 {
				stats = append(stats, fmt.Sprintf("%d clamped", c.Lengths.Clamped))
			}
		}
		rows[l].Cells = append(rows[l].Cells, histView{Key: fmt.Sprintf("B=%d", c.Cell.Batch), Stats: stats,
			SVG: histogram(c.Cell.Key()+" prompt lengths", c.Lengths.Each)})
	}
	for _, l := range order {
		v.Hists = append(v.Hists, *rows[l])
	}
	return v
}

// perLChart is one series per sequence length L of pick's figure (ms) against B, over the
// measured cells that have it.
func perLChart(r *report.Run, id, title, yLabel string, pick func(f *measure.Figures) (time.Duration, bool)) template.HTML {
	byL := map[int][]point{}
	for _, c := range r.Cells {
		if c.Figures == nil || !report.Measured(c.Status) {
			continue
		}
		d, ok := pick(c.Figures)
		if !ok {
			continue
		}
		ms := measure.Ms(d)
		byL[c.Cell.SeqLen] = append(byL[c.Cell.SeqLen], point{x: float64(c.Cell.Batch), y: ms,
			tip: fmt.Sprintf("%s: %.3f ms", c.Cell.Key(), ms)})
	}
	return chart{id: id, title: title, xLabel: "batch size B (log scale)", yLabel: yLabel, logX: true, series: seriesByL(byL)}.svg()
}

func seriesByL(byL map[int][]point) []series {
	ls := make([]int, 0, len(byL))
	for l := range byL {
		ls = append(ls, l)
	}
	sort.Ints(ls)
	var out []series
	for _, l := range ls {
		pts := byL[l]
		sort.Slice(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
		out = append(out, series{name: "L=" + strconv.Itoa(l), points: pts})
	}
	return out
}

func pct(f float64) string {
	if math.IsNaN(f) {
		return "–"
	}
	return strconv.FormatFloat(100*f, 'f', 1, 64)
}

func consistencySection(runs []*report.Run) *compareView {
	v := &compareView{Title: fmt.Sprintf("Consistency of %d runs", len(runs))}
	c, err := report.Consistent(runs)
	if err != nil {
		v.Note = "not computed: " + err.Error()
		return v
	}
	v.Note = fmt.Sprintf("coefficient of variation of each cell's mean per-forward latency over the runs: median %s %%, p90 %s %%, max %s %% (%s); %d of %d cells within 5 %%",
		pct(c.MedianCV), pct(c.P90CV), pct(c.MaxCV), c.MaxCell, c.Within5, len(c.Cells))
	v.Warnings = append(slices.Clone(c.Pooled), c.Warnings...)
	v.Table.Head = []string{"L", "B", "fwd ms mean", "sd", "min", "max", "CV %", "full-batch CV %"}
	byL := map[int][]point{}
	for _, cc := range c.Cells {
		v.Table.Rows = append(v.Table.Rows, []string{strconv.Itoa(cc.SeqLen), strconv.Itoa(cc.Batch), ms3(cc.Mean), ms3(cc.SD), ms3(cc.Min), ms3(cc.Max), pct(cc.CV), pct(cc.WindowCV)})
		byL[cc.SeqLen] = append(byL[cc.SeqLen], point{x: float64(cc.Batch), y: 100 * cc.CV, tip: fmt.Sprintf("%s: CV %s %%", cc.CellKey, pct(cc.CV))})
	}
	v.Warnings = append(v.Warnings, leftOut(c.LeftOut)...)
	v.Charts = []template.HTML{chart{id: "cv", title: "CV of the mean per-forward latency across runs", xLabel: "batch size B (log scale)", yLabel: "CV %", logX: true, series: seriesByL(byL)}.svg()}
	return v
}

// repeatsSection is the consistency of one run's repeats: per cell its measured repeats, CV
// and — when the header has the stopping rule — the CV's upper confidence bound
// (CV · repeat.UpperFactor(n, confidence), the bound the rule held against the target).
func repeatsSection(r *report.Run) *compareView {
	v := &compareView{Title: "Consistency of the repeats of " + r.Header.RunID}
	c, err := report.ConsistentRepeats(r)
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
	byL := map[int][]point{}
	for _, cc := range c.Cells {
		row := []string{strconv.Itoa(cc.SeqLen), strconv.Itoa(cc.Batch), strconv.Itoa(len(cc.Runs)), ms3(cc.Mean), ms3(cc.SD), ms3(cc.Min), ms3(cc.Max), pct(cc.CV), pct(cc.WindowCV)}
		if u != nil {
			up := cc.CV * repeat.UpperFactor(len(cc.Runs), u.Confidence)
			row = append(row, pct(up), map[bool]string{true: "yes", false: "no"}[up <= u.TargetCV])
		}
		v.Table.Rows = append(v.Table.Rows, row)
		byL[cc.SeqLen] = append(byL[cc.SeqLen], point{x: float64(cc.Batch), y: 100 * cc.CV, tip: fmt.Sprintf("%s: CV %s %% over %d repeats", cc.CellKey, pct(cc.CV), len(cc.Runs))})
	}
	v.Warnings = leftOut(c.LeftOut)
	v.Charts = []template.HTML{chart{id: "cv", title: "CV of the mean per-forward latency across repeats", xLabel: "batch size B (log scale)", yLabel: "CV %", logX: true, series: seriesByL(byL)}.svg()}
	return v
}

func abSection(before, after *report.Run) *compareView {
	v := &compareView{Title: fmt.Sprintf("A/B: %s (A) → %s (B)", before.Header.RunID, after.Header.RunID)}
	d, err := report.Compare(before, after)
	if err != nil {
		v.Note = "not computed: " + err.Error()
		return v
	}
	v.Note = fmt.Sprintf("change of the mean per-forward latency, B/A − 1 (+ is slower in B): median %s %%, range %s … %s %% over %d cells",
		plus(d.Median), plus(d.Min), plus(d.Max), len(d.Cells))
	v.Warnings = append(slices.Clone(d.Pooled), d.Warnings...)
	v.Table.Head = []string{"L", "B", "fwd ms A", "fwd ms B", "change %", "TTFT p50 A", "TTFT p50 B", "TTFT change %"}
	byL := map[int][]point{}
	for _, c := range d.Cells {
		v.Table.Rows = append(v.Table.Rows, []string{strconv.Itoa(c.SeqLen), strconv.Itoa(c.Batch), ms3(c.Before), ms3(c.After), plus(c.Change),
			ms1(c.TTFTBefore), ms1(c.TTFTAfter), plus(c.TTFTChange)})
		byL[c.SeqLen] = append(byL[c.SeqLen], point{x: float64(c.Batch), y: 100 * c.Change, tip: fmt.Sprintf("%s: %s %%", c.CellKey, plus(c.Change))})
	}
	v.Warnings = append(v.Warnings, leftOut(d.LeftOut)...)
	v.Charts = []template.HTML{chart{id: "ab", title: "change of the mean per-forward latency, B against A (+ = slower in B)", xLabel: "batch size B (log scale)", yLabel: "change %", logX: true, series: seriesByL(byL)}.svg()}
	return v
}

// leftOut is one line per reason, naming its cells ("left out, missing from r2: L=1000
// B=2,3").
func leftOut(lo []report.LeftOut) []string {
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

func plus(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "–"
	}
	return strconv.FormatFloat(100*f, 'f', 1, 64)
}

func ms3(d time.Duration) string { return strconv.FormatFloat(measure.Ms(d), 'f', 3, 64) }
func ms1(d time.Duration) string {
	if d == 0 {
		return "–"
	}
	return strconv.FormatFloat(measure.Ms(d), 'f', 1, 64)
}
