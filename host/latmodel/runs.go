package latmodel

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/genload/genload/host/compare"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/stats"
)

// ErrMixed is wrapped by FromRuns's and Gate's errors for runs that are not comparable: of
// another served model, max_tokens or [labels], or measured on another target setup (see
// [compare.CheckComparable]).
var ErrMixed = errors.New("runs not comparable")

// Source is what FromRuns found about the runs: their common identity and the cells left out.
type Source struct {
	Model     string
	Labels    map[string]any
	MaxTokens int
	Runs      []string
	Engine    map[string]any
	// Targets are the external servers measured, distinct, in run order (nil for the built-in
	// engine); Context and ContextSource the first run's model context and where it was read.
	Targets       []string
	Context       int
	ContextSource string
	// Mixed lists the differences allowed to mix (--allow-mixed; else nil), Across those
	// between instances of one deployment, which repeats may differ in (compare.AcrossInstances:
	// "target: a.json http://h1 / b.json http://h2").
	Mixed  []string
	Across []string
	// Excluded are the cells not used, "L=…,B=… in RUN: why", and ExcludedCells the same
	// with their figures.
	Excluded      []string
	ExcludedCells []ExcludedCell
	// perRun are each run's used cells (for the runs' levels, see [RunLevel]).
	perRun [][]runCell
}

// fixedRepeatsAsRuns returns runs with each run of a fixed count of repeats (genload run
// --repeat N: a record per cell and repeat, Header.Repeats = N) replaced by its N repeats as N
// runs — repeat k's records, run id "<id> repeat k", named "<name> (repeat k)" — as the N
// results files of an earlier genload's --repeat N were: round k measured every cell once, so
// repeat k is a run of the matrix, and its level counts as a run's (see [RunLevel]). A run
// with a stopping rule (until_cv: cells repeated different numbers of times, so its repeat k
// is no run of the matrix) or without repeats is kept as it is, its repeated records pooled
// per cell. names may be nil.
func fixedRepeatsAsRuns(runs []*results.Run, names []string) ([]*results.Run, []string) {
	split := false
	for _, r := range runs {
		split = split || r.Header.Repeats > 0
	}
	if !split {
		return runs, names
	}
	var outRuns []*results.Run
	var outNames []string
	for i, r := range runs {
		name := ""
		if i < len(names) {
			name = names[i]
		}
		n := r.Header.Repeats
		if n == 0 {
			outRuns, outNames = append(outRuns, r), append(outNames, name)
			continue
		}
		for k := 1; k <= n; k++ {
			h := r.Header
			h.RunID = fmt.Sprintf("%s repeat %d", h.RunID, k)
			rk := &results.Run{Header: h, Footer: r.Footer}
			for _, c := range r.Cells {
				if c.Repeat == k {
					rk.Cells = append(rk.Cells, c)
				}
			}
			outRuns = append(outRuns, rk)
			if name != "" {
				outNames = append(outNames, fmt.Sprintf("%s (repeat %d)", name, k))
			} else {
				outNames = append(outNames, "")
			}
		}
	}
	return outRuns, outNames
}

// runMaxTokens is the max_tokens of a run (its stored config; 0 when absent).
func runMaxTokens(h results.Header) int {
	if h.Config == nil {
		return 0
	}
	return h.Config.MaxTokens
}

// FromRuns turns the measured cells of runs into observations, one per (L, B) cell measured
// in any run: the runs are repeats when they share cells (the figure is then the mean over
// them, and their spread enters σ, see [Obs]); a run of a fixed count of repeats counts as
// that many runs (see fixedRepeatsAsRuns). Only cells of status ok with a per-forward
// figure are used; partial cells (fewer than B sequences counted: not a batch of B) and failed
// ones are listed in Source.Excluded.
//
// The runs must be distinct ([results.CheckDistinct]: one run given twice would count as two
// repeats that agree exactly) and repeats of one deployment ([compare.CheckComparable]): the
// same served model, max_tokens and labels, and the same target setup — for the built-in
// engine its time scale, profile, quirks and noise (without the seed each repeat derives
// anew). Otherwise the error wraps ErrMixed and names each field that differs with each run's
// value, unless allowMixed, when they are fitted together and Source.Mixed lists the
// differences (max_tokens must still agree: it is a term of the model). Instances of one
// deployment — another external URL, another context reported — are repeats: their
// differences are in Source.Across, and how far the instances differ is what the runs'
// levels measure.
//
// names[i] is how errors call runs[i] (its file; nil or "" for the run id). A used cell whose
// per-forward figure is not a positive finite duration (0, negative, or beyond the ±292 years
// a duration holds: the file's milliseconds overflowed when read) is an error naming the
// file, the run and the cell. Errors carry exitcode.InvalidConfig.
func FromRuns(runs []*results.Run, names []string, allowMixed bool) ([]Obs, *Source, error) {
	runs, names = fixedRepeatsAsRuns(runs, names)
	src, where, err := sourceOf(runs, names, allowMixed)
	if err != nil {
		return nil, nil, err
	}
	cells, err := src.collect(runs, where)
	if err != nil {
		return nil, nil, err
	}
	obs := make([]Obs, 0, len(cells))
	for _, a := range cells {
		obs = append(obs, a.obs())
	}
	sortObs(obs)
	sort.Strings(src.Excluded)
	slices.SortStableFunc(src.ExcludedCells, func(a, b ExcludedCell) int {
		if a.SeqLen != b.SeqLen {
			return a.SeqLen - b.SeqLen
		}
		return a.Batch - b.Batch
	})
	return obs, src, nil
}

// sourceOf returns the runs' common identity (the first run's model, labels, max_tokens and
// engine) and how errors call each run, "FILE (run ID)"; see FromRuns for the rules it
// enforces.
func sourceOf(runs []*results.Run, names []string, allowMixed bool) (*Source, []string, error) {
	if len(runs) == 0 {
		return nil, nil, exitcode.Errorf(exitcode.InvalidConfig, "no results file given")
	}
	if err := results.CheckDistinct(runs, names); err != nil {
		return nil, nil, err
	}
	src := &Source{}
	where := make([]string, len(runs))
	ids := make([]compare.Identity, len(runs))
	for i, r := range runs {
		id := r.Header.RunID
		if id == "" {
			id = fmt.Sprintf("run %d", i+1)
		}
		src.Runs = append(src.Runs, id)
		where[i], ids[i] = id, compare.IdentityOf(id, r.Header)
		if i < len(names) && names[i] != "" {
			where[i] = fmt.Sprintf("%s (run %s)", names[i], id)
			ids[i].Name = names[i]
		}
		if t := ids[i].Target; t != "" && !slices.Contains(src.Targets, t) {
			src.Targets = append(src.Targets, t)
		}
	}
	h0 := runs[0].Header
	src.Model, src.Labels, src.MaxTokens, src.Engine = h0.Model, h0.Labels, runMaxTokens(h0), h0.Engine
	src.Context, src.ContextSource = h0.Context, h0.ContextSource
	cmp := compare.CheckComparable(ids)
	src.Across = cmp.Noted(compare.AcrossInstances...)
	if bad := cmp.Refused(compare.AcrossInstances...); len(bad) > 0 {
		if !allowMixed {
			return nil, nil, exitcode.With(exitcode.InvalidConfig, fmt.Errorf("%w: %s; they are not repeats of one deployment and are not fitted together (--allow-mixed forces it)", ErrMixed, strings.Join(bad, "; ")))
		}
		if cmp.Differs(compare.FieldMaxTokens) {
			return nil, nil, exitcode.Errorf(exitcode.InvalidConfig, "runs of different max_tokens cannot be fitted together, even with --allow-mixed: it is a term of the model (%s)", strings.Join(bad, "; "))
		}
		src.Mixed = bad
		if cmp.Differs(compare.FieldLabels) {
			src.Labels = nil
		}
	}
	if src.MaxTokens < 1 {
		return nil, nil, exitcode.Errorf(exitcode.InvalidConfig, "%s: no max_tokens in the results header's config", where[0])
	}
	return src, where, nil
}

// cellRuns accumulates one (L, B) cell over the runs that used it: per run its per-forward
// figure (ms), the gap to its Theil–Sen figure, its realised mean and longest length, and the
// most prompts clamped in any run.
type cellRuns struct {
	key            compare.CellKey
	fwd, est       []float64
	meanLen, maxLn []float64
	clamped        int
}

// obs is the cell's observation: the repeats pooled by stats.Pool, σ from their standard
// error, the mean Theil–Sen gap and a 0.5 % floor, added in quadrature.
func (a *cellRuns) obs() Obs {
	fwd, rep := stats.Pool(a.fwd)
	est := stat.Mean(a.est, nil)
	floor := 0.005 * fwd
	return Obs{SeqLen: a.key.SeqLen, Batch: a.key.Batch, MeanLen: stat.Mean(a.meanLen, nil), MaxLen: stat.Mean(a.maxLn, nil),
		Clamped: a.clamped, Runs: len(a.fwd), FwdMs: fwd, SigmaMs: math.Sqrt(rep*rep + est*est + floor*floor)}
}

// unusable says why a cell is not used (not ok, no per-forward figure, no realised lengths),
// "" for a cell that is.
func unusable(c *results.Cell) string {
	switch {
	case c.Status != results.StatusOK:
		return "status " + c.Status
	case c.Figures == nil || c.Figures.PerForward.N == 0:
		why := "no per-forward figure"
		if c.Figures != nil && c.Figures.PerForwardReason != "" {
			why += ": " + c.Figures.PerForwardReason
		}
		return why
	case c.Lengths.Mean <= 0:
		return "no realised lengths"
	}
	return ""
}

// collect gathers the runs' used cells by (L, B), records the others in src.Excluded and
// src.ExcludedCells, and each run's used cells in src.perRun. A used cell whose per-forward
// figure is not a positive finite duration is an error naming where[i] and the cell (all of
// them, joined).
func (src *Source) collect(runs []*results.Run, where []string) (map[compare.CellKey]*cellRuns, error) {
	var bad []error
	cells := map[compare.CellKey]*cellRuns{}
	src.perRun = make([][]runCell, len(runs))
	for i, r := range runs {
		for j := range r.Cells {
			c := &r.Cells[j]
			k := compare.CellKey{SeqLen: c.Cell.SeqLen, Batch: c.Cell.Batch}
			if why := unusable(c); why != "" {
				src.exclude(c, k, src.Runs[i], why)
				continue
			}
			a := cells[k]
			if a == nil {
				a = &cellRuns{key: k}
				cells[k] = a
			}
			f := c.Figures
			if d := f.PerForward.Mean; d <= 0 || d == math.MaxInt64 {
				v := fmt.Sprintf("%.4g ms", measure.Ms(d))
				if d == math.MinInt64 || d == math.MaxInt64 {
					v = "beyond ±9.2e12 ms (the figure overflowed a duration when read)"
				}
				bad = append(bad, fmt.Errorf("%s: cell %s: per-forward mean (fwd) is %s: want a positive finite time", where[i], k, v))
				continue
			}
			fwd := measure.Ms(f.PerForward.Mean)
			a.fwd = append(a.fwd, fwd)
			src.perRun[i] = append(src.perRun[i], runCell{key: [2]int{k.SeqLen, k.Batch}, fwd: fwd})
			est := 0.0
			if f.PerForwardFit.N > 0 {
				est = math.Abs(fwd - measure.Ms(f.PerForwardFit.Mean))
			}
			a.est = append(a.est, est)
			a.meanLen = append(a.meanLen, c.Lengths.Mean)
			maxLen := float64(c.Lengths.Max)
			if maxLen <= 0 {
				maxLen = c.Lengths.Mean
			}
			a.maxLn = append(a.maxLn, maxLen)
			a.clamped = max(a.clamped, c.Lengths.Clamped)
		}
	}
	if len(bad) > 0 {
		return nil, exitcode.With(exitcode.InvalidConfig, errors.Join(bad...))
	}
	return cells, nil
}

// exclude records cell k of run id as not used, why, with its figure when it has a finite one.
func (src *Source) exclude(c *results.Cell, k compare.CellKey, id, why string) {
	src.Excluded = append(src.Excluded, fmt.Sprintf("%s in %s: %s", k, id, why))
	x := ExcludedCell{SeqLen: k.SeqLen, Batch: k.Batch, Run: id, Reason: why, MeanLen: c.Lengths.Mean}
	if c.Figures != nil && c.Figures.PerForward.N > 0 && c.Figures.PerForward.Mean > 0 && c.Figures.PerForward.Mean < math.MaxInt64 {
		x.FwdMs = measure.Ms(c.Figures.PerForward.Mean)
	}
	src.ExcludedCells = append(src.ExcludedCells, x)
}

// sortObs orders observations by L, then B.
func sortObs(obs []Obs) {
	slices.SortFunc(obs, func(a, b Obs) int {
		if a.SeqLen != b.SeqLen {
			return a.SeqLen - b.SeqLen
		}
		return a.Batch - b.Batch
	})
}

// FitRuns is FromRuns then Fit: the model of runs, with their identity (model, labels,
// max_tokens, run ids, engine), the source of its structure, its runs' levels and excluded
// cells recorded in it. opt.MaxTokens is taken from the runs; the moe term is used as
// [ResolveExperts] decides from opt.Experts, opt.Dense, the runs' headers and opt.Lookup.
// With holdOut ≥ 2 every holdOut-th cell (see [Split]) is not fitted but returned, for
// [Model.Check].
func FitRuns(runs []*results.Run, names []string, allowMixed bool, holdOut int, opt FitOptions) (*Model, []Obs, error) {
	obs, src, err := FromRuns(runs, names, allowMixed)
	if err != nil {
		return nil, nil, err
	}
	opt.MaxTokens = src.MaxTokens
	ex, structure, err := ResolveExperts(opt.Experts, opt.Dense, runs, opt.Lookup, allowMixed)
	if err != nil {
		return nil, nil, err
	}
	opt.Experts = ex
	fit, held := Split(obs, holdOut)
	m, err := Fit(fit, opt)
	if err != nil {
		who := src.Runs
		if len(names) == len(runs) {
			who = names
		}
		return nil, nil, fmt.Errorf("%s: %w", strings.Join(who, ", "), err)
	}
	m.Model, m.Labels, m.Runs, m.Engine, m.Mixed, m.Excluded = src.Model, src.Labels, src.Runs, src.Engine, src.Mixed, src.Excluded
	m.Targets, m.Context, m.ContextSource, m.Across = src.Targets, src.Context, src.ContextSource, src.Across
	m.ExcludedCells, m.Structure = src.ExcludedCells, structure
	m.RunLevels = m.runLevels(src.Runs, src.perRun)
	return m, held, nil
}
