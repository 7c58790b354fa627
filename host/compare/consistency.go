package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/repeat"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/stats"
)

// CellKey identifies a cell across runs: its target mean sequence length L and batch size B
// (tokens, sequences). Cell indexes are not used, so runs of matrices that differ still line
// up on the cells they share.
type CellKey struct {
	SeqLen int // L, tokens
	Batch  int // B, sequences
}

// String is "L=…,B=…", as matrix.Cell.Key.
func (k CellKey) String() string { return fmt.Sprintf("L=%d,B=%d", k.SeqLen, k.Batch) }

func keyOf(c *results.Cell) CellKey { return CellKey{c.Cell.SeqLen, c.Cell.Batch} }

// LeftOut is a cell not compared, and why (missing from a run, or not measured in it).
type LeftOut struct {
	CellKey
	Reason string
}

// CellCV is the repeatability of one cell over the runs compared.
//
// The figure is the cell's mean per-forward latency (measure.Figures.PerForward.Mean: the
// per-sequence decode time divided by completion tokens − 1, averaged over the cell's
// sequences), one value x_i per run i = 1…n:
//
//	Mean = Σ x_i / n
//	SD   = √( Σ (x_i − Mean)² / (n − 1) )   (sample standard deviation, Bessel-corrected)
//	CV   = SD / Mean                        (a fraction; 0.05 is 5 %)
//
// (stats.CV, over gonum's stat.MeanStdDev). WindowCV is the same for the full-occupancy figure
// (measure.Window.PerStep), NaN unless the window was valid in every run. Merged is the
// per-forward distribution of all runs' sequences together, from their merged HDR histograms
// (nil unless every run kept them); its percentiles are HDR's, clamped to the exact [Min, Max]
// (see measure.Histogram).
type CellCV struct {
	CellKey
	Runs     []time.Duration // x_i, in run order
	Mean, SD time.Duration   // over Runs
	Min, Max time.Duration   // of Runs
	CV       float64         // SD / Mean, a fraction (0 when Mean is 0)
	WindowCV float64         // the same for the full-occupancy figure; NaN unless valid in every run
	Merged   *measure.Summary
}

// Consistency is the repeatability of a set of runs of the same matrix: a CellCV per cell
// measured in every run, then run-level statistics.
//
// MedianCV is the median of the cells' CVs (stats.Median: the mean of the two middle values
// for an even count); P90CV their nearest-rank 90th percentile, x[⌈0.9·n⌉−1] of the ascending
// values (stats.Quantile), like measure.Summary's percentiles: one of the cells' CVs. Within5
// and Within10 count cells with CV ≤ 0.05 and ≤ 0.10.
//
// The whole-run figures are taken over the common cells only, so that runs compare on the
// same cells: RunMean[i] is the mean, RunMedian[i] the median, over the common cells of run
// i's per-cell mean per-forward latency. MeanSpan = max(RunMean)/min(RunMean) − 1,
// MedianSpan likewise (fractions): how far apart the best and the worst run are.
type Consistency struct {
	RunIDs   []string  // run order ("run N" for a run without an id)
	Cells    []CellCV  // common cells, ascending L then B
	LeftOut  []LeftOut // cells not measured in every run
	Warnings []string  // settings that differ between the runs

	MedianCV, P90CV, MaxCV float64 // fractions
	MaxCell                CellKey // the cell with MaxCV
	Within5, Within10      int     // cells with CV ≤ 0.05, ≤ 0.10

	RunMean, RunMedian   []time.Duration // per run, over the common cells
	MeanSpan, MedianSpan float64         // max/min − 1 of RunMean, RunMedian

	// FromRepeats is set by ConsistentRepeats: the "runs" are the repeats of one run's cells,
	// whose counts differ per cell (len(CellCV.Runs)).
	FromRepeats bool
	// Pooled says, per run with repeats compared by Consistent, how its repeats were pooled
	// into one figure per cell ("RUN: each cell's figure is the mean …", see [Pool]).
	Pooled []string
}

// measured returns c's mean per-forward latency when the cell was measured with at least one
// per-forward sample.
func measured(c *results.Cell) (time.Duration, string) {
	switch {
	case c.Status != results.StatusOK:
		return 0, "status " + c.Status
	case c.Figures == nil || c.Figures.PerForward.N == 0:
		return 0, "no per-forward sample"
	}
	return c.Figures.PerForward.Mean, ""
}

// common returns the keys of the cells measured in every run (ascending L, then B), each
// run's cells by key, the other cells with the first reason found (run order), and per run
// how its repeats were pooled (see [Pool]; "" for a run without repeats).
func common(runs []*results.Run) ([]CellKey, []map[CellKey]*results.Cell, []LeftOut, []string) {
	by := make([]map[CellKey]*results.Cell, len(runs))
	all := map[CellKey]bool{}
	notes := make([]string, len(runs))
	for i, r := range runs {
		by[i] = map[CellKey]*results.Cell{}
		if r.HasRepeats() {
			pooled, note := Pool(r)
			notes[i] = note
			for k, c := range pooled {
				by[i][k], all[k] = c, true
			}
			continue
		}
		for j := range r.Cells {
			c := &r.Cells[j]
			by[i][keyOf(c)] = c // a later record of the same cell supersedes (as Latest)
			all[keyOf(c)] = true
		}
	}
	var keys []CellKey
	var left []LeftOut
	for k := range all {
		reason := ""
		for i, r := range runs {
			c, ok := by[i][k]
			if !ok {
				reason = "missing from " + r.Name(i)
				break
			}
			if _, why := measured(c); why != "" {
				reason = why + " in " + r.Name(i)
				break
			}
		}
		if reason == "" {
			keys = append(keys, k)
		} else {
			left = append(left, LeftOut{k, reason})
		}
	}
	slices.SortFunc(keys, cmpKey)
	slices.SortFunc(left, func(a, b LeftOut) int { return cmpKey(a.CellKey, b.CellKey) })
	return keys, by, left, notes
}

// PooledRun is r with one record per cell: r itself when it has no repeats, else a copy
// whose Cells are [Pool]'s records in cell-index order (the header and footer shared).
func PooledRun(r *results.Run) *results.Run {
	if !r.HasRepeats() {
		return r
	}
	pooled, _ := Pool(r)
	out := &results.Run{Header: r.Header, Footer: r.Footer, Cells: make([]results.Cell, 0, len(pooled))}
	for _, c := range pooled {
		out.Cells = append(out.Cells, *c)
	}
	slices.SortFunc(out.Cells, results.ByIndexRepeat)
	return out
}

// Pool turns a run with repeats (records with a Repeat, genload run --until-cv) into one
// record per cell, so that it compares with other runs cell by cell: a cell's measured repeats
// (status ok with a per-forward sample; partial, failed and interrupted repeats are left out)
// x_1…x_n are pooled by genload's one rule for repeats, their mean ([stats.Pool]):
//
//	PerForward.Mean = Σ x_k / n   (x_k the repeat's PerForward.Mean), PerForward.N = Σ N_k
//	TTFT.P50        = the mean of the repeats' TTFT.P50
//	Window.PerStep  = the mean of the repeats' PerStep, Valid only when valid in every one
//	Hist.PerForward = the repeats' per-forward histograms merged (nil unless all have one)
//
// — the figures Consistent and Compare read; its other figures are zero, its other fields its
// last measured repeat's (Repeat 0). A cell without a measured repeat keeps its last record
// (its status says why it is left out). note says how, for the reader of the output: the
// rule, and the fewest and most repeats pooled per cell.
func Pool(r *results.Run) (map[CellKey]*results.Cell, string) {
	recs := map[CellKey][]*results.Cell{}
	for i := range r.Cells {
		c := &r.Cells[i]
		recs[keyOf(c)] = append(recs[keyOf(c)], c)
	}
	out := make(map[CellKey]*results.Cell, len(recs))
	lo, hi := math.MaxInt, 0
	for k, cs := range recs {
		slices.SortFunc(cs, func(a, b *results.Cell) int { return a.Repeat - b.Repeat })
		var ok []*results.Cell
		for _, c := range cs {
			if _, why := measured(c); why == "" {
				ok = append(ok, c)
			}
		}
		if len(ok) == 0 {
			out[k] = cs[len(cs)-1]
			continue
		}
		lo, hi = min(lo, len(ok)), max(hi, len(ok))
		p := *ok[len(ok)-1]
		p.Repeat, p.Warnings = 0, nil
		p.Figures = poolFigures(ok)
		out[k] = &p
	}
	rule := "each cell's figure is the mean over its measured repeats"
	if hi == 0 {
		return out, rule + " (no cell has one)"
	}
	if u := r.Header.UntilCV; u != nil {
		rule += fmt.Sprintf(" (%d to %d per cell; repeated until the CV's %g %% upper bound ≤ %g %%)", lo, hi, 100*u.Confidence, 100*u.TargetCV)
	} else {
		rule += fmt.Sprintf(" (%d to %d per cell)", lo, hi)
	}
	return out, rule
}

// poolFigures returns the figures [Pool] gives a cell from its measured repeats ok (≥ 1).
func poolFigures(ok []*results.Cell) *measure.Figures {
	f := &measure.Figures{Window: measure.Window{Valid: true}, Hist: &measure.Histograms{PerForward: measure.NewHistogram()}}
	fwd, ttft, win := make([]float64, len(ok)), make([]float64, len(ok)), make([]float64, len(ok))
	for i, c := range ok {
		g := c.Figures
		fwd[i], ttft[i], win[i] = float64(g.PerForward.Mean), float64(g.TTFT.P50), float64(g.Window.PerStep)
		f.PerForward.N += g.PerForward.N
		f.Sequences, f.Counted = g.Sequences, g.Counted
		f.Window.Valid = f.Window.Valid && g.Window.Valid
		if f.Hist != nil && g.Hist != nil && g.Hist.PerForward != nil {
			f.Hist.PerForward.Merge(g.Hist.PerForward)
		} else {
			f.Hist = nil
		}
	}
	f.PerForward.Mean = pooled(fwd)
	f.TTFT.P50 = pooled(ttft)
	if f.Window.Valid {
		f.Window.PerStep = pooled(win)
	}
	return f
}

// pooled is [stats.Pool]'s figure of repeats' durations xs (ns), to the nanosecond.
func pooled(xs []float64) time.Duration {
	fig, _ := stats.Pool(xs)
	return time.Duration(math.Round(fig))
}

func durs(xs []time.Duration) []float64 {
	f := make([]float64, len(xs))
	for i, x := range xs {
		f[i] = float64(x)
	}
	return f
}

// span is max/min − 1 of xs (0 when min ≤ 0 or xs is empty).
func span(xs []time.Duration) float64 {
	if len(xs) == 0 {
		return 0
	}
	lo, hi := slices.Min(xs), slices.Max(xs)
	if lo <= 0 {
		return 0
	}
	return float64(hi)/float64(lo) - 1
}

// Consistent compares runs (≥ 2) of the same matrix: see Consistency. Cells are matched by
// (L, B); a cell missing from a run or not measured in it (status not ok, no per-forward
// sample) is left out and listed in LeftOut. A run with repeats (genload run --until-cv)
// counts as one run whose cells are the means of their measured repeats ([Pool]; said in
// Pooled). Differences in model, max_tokens, mode or target
// kind between the runs are reported in Warnings. It fails with fewer than two runs or no
// common measured cell.
func Consistent(runs []*results.Run) (*Consistency, error) {
	if len(runs) < 2 {
		return nil, fmt.Errorf("consistency: need at least 2 runs, got %d", len(runs))
	}
	keys, by, left, pooled := common(runs)
	if len(keys) == 0 {
		return nil, fmt.Errorf("consistency: no cell is measured in all %d runs (%d cells left out)", len(runs), len(left))
	}
	c := &Consistency{LeftOut: left, Warnings: headerDifferences(runs)}
	c.Warnings = append(c.Warnings, report.CacheNotes(runs)...)
	for i, p := range pooled {
		if p != "" {
			c.Pooled = append(c.Pooled, runs[i].Name(i)+": "+p)
		}
	}
	for i, r := range runs {
		c.RunIDs = append(c.RunIDs, r.Name(i))
	}
	cells := make([][]*results.Cell, len(keys))
	for j, k := range keys {
		for i := range runs {
			cells[j] = append(cells[j], by[i][k])
		}
	}
	c.summarize(keys, cells, len(runs))
	return c, nil
}

// ConsistentRepeats is the consistency of one run that measured its cells several times
// (genload run --until-cv: records with a Repeat): each cell's CellCV over its own measured
// repeats, in repeat order, so cells differ in their count (CellCV.Runs). A cell with fewer
// than two measured repeats (status ok with a per-forward sample) is left out. There are no
// whole-run figures (RunMean, RunMedian and their spans are empty): the k-th repeats of the
// cells were measured in different rounds, and cells have different counts, so "repeat k" is
// not a run. RunIDs is the run's id. It fails for a run without repeats or with no cell
// measured twice.
func ConsistentRepeats(r *results.Run) (*Consistency, error) {
	if !r.HasRepeats() {
		return nil, errors.New("consistency: the run has no repeated cells")
	}
	by := map[CellKey][]*results.Cell{}
	seen := map[CellKey]string{}
	for i := range r.Cells {
		cell := &r.Cells[i]
		k := keyOf(cell)
		if _, why := measured(cell); why != "" {
			if _, ok := seen[k]; !ok {
				seen[k] = fmt.Sprintf("repeat %d: %s", cell.Repeat, why)
			}
			by[k] = append(by[k], nil)
			continue
		}
		by[k] = append(by[k], cell)
	}
	c := &Consistency{FromRepeats: true, Warnings: report.CacheNotes([]*results.Run{r})}
	var keys []CellKey
	for k, cs := range by {
		var ok []*results.Cell
		for _, x := range cs {
			if x != nil {
				ok = append(ok, x)
			}
		}
		slices.SortFunc(ok, func(a, b *results.Cell) int { return a.Repeat - b.Repeat })
		if len(ok) < 2 {
			reason := fmt.Sprintf("%d measured repeat(s)", len(ok))
			if why := seen[k]; why != "" {
				reason += "; " + why
			}
			c.LeftOut = append(c.LeftOut, LeftOut{k, reason})
			continue
		}
		by[k] = ok
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("consistency: no cell of run %s has two measured repeats (%d cells left out)", r.Name(0), len(c.LeftOut))
	}
	slices.SortFunc(keys, cmpKey)
	slices.SortFunc(c.LeftOut, func(a, b LeftOut) int { return cmpKey(a.CellKey, b.CellKey) })
	cells := make([][]*results.Cell, len(keys))
	for j, k := range keys {
		cells[j] = by[k]
	}
	c.RunIDs = []string{r.Name(0)}
	c.summarize(keys, cells, 0)
	return c, nil
}

// cmpKey orders cell keys by L, then B.
func cmpKey(a, b CellKey) int {
	if a.SeqLen != b.SeqLen {
		return a.SeqLen - b.SeqLen
	}
	return a.Batch - b.Batch
}

// summarize fills c's per-cell CVs from cells[j], the measured records of keys[j] (one per
// run or repeat), and the run-level statistics; the whole-run figures are over the first
// runs records of every cell (none when runs is 0).
func (c *Consistency) summarize(keys []CellKey, cells [][]*results.Cell, runs int) {
	cvs := make([]float64, 0, len(keys))
	perRun := make([][]float64, runs)
	for j, k := range keys {
		cc := CellCV{CellKey: k, Runs: make([]time.Duration, len(cells[j]))}
		win := make([]float64, 0, len(cells[j]))
		var hist *measure.Histogram
		for i, cell := range cells[j] {
			cc.Runs[i], _ = measured(cell)
			if i < runs {
				perRun[i] = append(perRun[i], float64(cc.Runs[i]))
			}
			if w := cell.Figures.Window; w.Valid {
				win = append(win, float64(w.PerStep))
			}
			if h := cell.Figures.Hist; h != nil && h.PerForward != nil && (i == 0 || hist != nil) {
				if hist == nil {
					hist = measure.NewHistogram()
				}
				hist.Merge(h.PerForward)
			} else {
				hist = nil
			}
		}
		xs := durs(cc.Runs)
		mean, sd := stat.MeanStdDev(xs, nil)
		cc.Mean, cc.SD = time.Duration(math.Round(mean)), time.Duration(math.Round(sd))
		cc.Min, cc.Max = slices.Min(cc.Runs), slices.Max(cc.Runs)
		if cv := stats.CV(xs); !math.IsNaN(cv) {
			cc.CV = cv
		}
		cc.WindowCV = math.NaN()
		if len(win) == len(cc.Runs) {
			cc.WindowCV = stats.CV(win)
		}
		if hist != nil && hist.Count() > 0 {
			s := hist.Summary()
			cc.Merged = &s
		}
		if cc.CV <= 0.05 {
			c.Within5++
		}
		if cc.CV <= 0.10 {
			c.Within10++
		}
		if cc.CV > c.MaxCV || len(cvs) == 0 {
			c.MaxCV, c.MaxCell = cc.CV, k
		}
		cvs = append(cvs, cc.CV)
		c.Cells = append(c.Cells, cc)
	}
	slices.Sort(cvs)
	c.MedianCV, c.P90CV = stats.Median(cvs), stats.Quantile(cvs, 0.9)
	for _, xs := range perRun {
		c.RunMean = append(c.RunMean, time.Duration(math.Round(stat.Mean(xs, nil))))
		c.RunMedian = append(c.RunMedian, time.Duration(math.Round(stats.Median(xs))))
	}
	c.MeanSpan, c.MedianSpan = span(c.RunMean), span(c.RunMedian)
}

// ConfigDifferences lists the settings in which runs differ and so measure different things
// (model, max_tokens, mode, target kind, engine profile and time scale, length plugin and its
// config, prompt format, tokenizer), each as "the runs differ in …: a / b"; nil for runs of
// one configuration. Notes on how a run went (prompts already cached, pooled repeats) are not
// differences of configuration and are not listed.
func ConfigDifferences(runs []*results.Run) []string { return headerDifferences(runs) }

// headerDifferences lists the settings that differ between runs and make them measure
// different things (model, max_tokens, mode, target kind, engine profile and time scale,
// length plugin and its config, prompt format, tokenizer).
func headerDifferences(runs []*results.Run) []string {
	var out []string
	get := map[string]func(h results.Header) string{
		"model":       func(h results.Header) string { return h.Model },
		"target kind": func(h results.Header) string { return h.TargetKind },
		"max_tokens":  func(h results.Header) string { return strconv.Itoa(h.ConfigMaxTokens()) },
		"mode":        func(h results.Header) string { return h.ConfigMode() },
		"engine": func(h results.Header) string {
			if h.Engine == nil {
				return "external server"
			}
			return fmt.Sprintf("%v at time scale %v", h.Engine["profile"], h.Engine["time_scale"])
		},
		"lengths": func(h results.Header) string {
			if h.Config == nil {
				return h.PluginName("lengths")
			}
			b, _ := json.Marshal(h.Config.Lengths.Config) // map keys sorted: a stable text
			return h.PluginName("lengths") + " " + string(b)
		},
		"prompt format": func(h results.Header) string {
			if h.Config == nil {
				return ""
			}
			return h.Config.Prompt.Format
		},
		"tokenizer": func(h results.Header) string { return h.Tokenizer },
	}
	for _, name := range []string{"model", "target kind", "max_tokens", "mode", "engine", "lengths", "prompt format", "tokenizer"} {
		vals := []string{}
		for _, r := range runs {
			if v := get[name](r.Header); !slices.Contains(vals, v) {
				vals = append(vals, v)
			}
		}
		if len(vals) > 1 {
			out = append(out, fmt.Sprintf("the runs differ in %s: %s", name, strings.Join(vals, " / ")))
		}
	}
	return out
}

// Stat returns the run-level CV statistic named "max", "p90" or "median" (a fraction).
func (c *Consistency) Stat(name string) (float64, error) {
	switch name {
	case "max":
		return c.MaxCV, nil
	case "p90":
		return c.P90CV, nil
	case "median":
		return c.MedianCV, nil
	}
	return 0, fmt.Errorf("consistency: unknown CV statistic %q (want max, p90 or median)", name)
}

// Verdicts of a CV threshold ([Consistency.JudgeCV]).
const (
	CVOK         = "ok"
	CVFail       = "fail"
	CVCannotTell = "cannot tell"
)

// CVJudgement is a run-level CV statistic held against a target with its uncertainty: a CV
// from a few runs is itself uncertain (two runs that happen to agree give about 0 whatever
// the spread), so each cell's CV c from n values is given its one-sided bounds at Confidence,
//
//	c_up = c · sqrt((n − 1) / χ²(1 − confidence; n − 1)),  c_lo = c · sqrt((n − 1) / χ²(confidence; n − 1))
//
// (repeat.UpperFactor and repeat.LowerFactor: the standard bounds on a normal sample's σ, the
// rule genload run --until-cv stops by), and the statistic (max, p90 or median over the
// cells) is taken of the CVs (Point), of the upper bounds (Upper) and of the lower bounds
// (Lower). Verdict is ok when Upper ≤ Target, fail when Lower > Target, else cannot tell;
// Cell is the cell the statistic falls on for "max" (of the bound that decided, or of the
// upper bound when none did), N its number of values; Runs is what more would decide a
// cannot tell: the fewest values per cell whose upper bound would be within the target if
// the cell's CV stayed at its point (0 when its point is above the target, or none ≤ 64
// would).
type CVJudgement struct {
	Stat                string
	Point, Lower, Upper float64
	Target, Confidence  float64
	Verdict             string
	Cell                CellKey
	N, Runs             int
}

// JudgeCV holds the statistic named stat ("max", "p90" or "median") of the cells' CVs to
// target (a fraction) at the one-sided confidence of the bounds (see [CVJudgement]). The
// error is [Consistency.Stat]'s for an unknown name.
func (c *Consistency) JudgeCV(stat string, target, confidence float64) (CVJudgement, error) {
	j := CVJudgement{Stat: stat, Target: target, Confidence: confidence}
	var err error
	if j.Point, err = c.Stat(stat); err != nil {
		return j, err
	}
	ups, los := make([]float64, len(c.Cells)), make([]float64, len(c.Cells))
	for i, cc := range c.Cells {
		n := len(cc.Runs)
		ups[i], los[i] = cc.CV*repeat.UpperFactor(n, confidence), cc.CV*repeat.LowerFactor(n, confidence)
	}
	of := func(xs []float64) float64 {
		s := slices.Sorted(slices.Values(xs))
		switch stat {
		case "p90":
			return stats.Quantile(s, 0.9)
		case "median":
			return stats.Median(s)
		}
		return s[len(s)-1]
	}
	j.Upper, j.Lower = of(ups), of(los)
	switch {
	case j.Upper <= target:
		j.Verdict = CVOK
	case j.Lower > target:
		j.Verdict = CVFail
	default:
		j.Verdict = CVCannotTell
	}
	if stat == "max" && len(c.Cells) > 0 {
		by := ups
		if j.Verdict == CVFail {
			by = los
		}
		i := 0
		for k := range by {
			if by[k] > by[i] {
				i = k
			}
		}
		j.Cell, j.N = c.Cells[i].CellKey, len(c.Cells[i].Runs)
		if j.Verdict == CVCannotTell && c.Cells[i].CV <= target {
			for n := j.N + 1; n <= 64; n++ {
				if c.Cells[i].CV*repeat.UpperFactor(n, confidence) <= target {
					j.Runs = n
					break
				}
			}
		}
	}
	return j, nil
}

// String writes the judgement in one line, e.g. "max per-cell CV 5.16 %, 90 % one-sided bounds
// [3.13 %, 41.03 %] (the largest at L=1000,B=4, 2 values): cannot tell against 5 % (…)".
func (j CVJudgement) String() string {
	at := ""
	if j.Stat == "max" {
		at = fmt.Sprintf(" (the largest at %s, %d values)", j.Cell, j.N)
	}
	s := fmt.Sprintf("%s per-cell CV %.2f %%, %.0f %% one-sided bounds [%.2f %%, %.2f %%]%s", j.Stat, 100*j.Point, 100*j.Confidence, 100*j.Lower, 100*j.Upper, at)
	switch j.Verdict {
	case CVOK:
		return fmt.Sprintf("%s: the upper bound is within %.4g %%: ok", s, 100*j.Target)
	case CVFail:
		return fmt.Sprintf("%s: even the lower bound exceeds %.4g %%: fail", s, 100*j.Target)
	}
	s = fmt.Sprintf("%s: cannot tell against %.4g %% (the bounds straddle it: these runs cannot decide", s, 100*j.Target)
	if j.Runs > 0 {
		s += fmt.Sprintf("; about %d values of that cell would, if its CV stays at %.2f %%", j.Runs, 100*j.Point)
	}
	return s + ")"
}
