package latmodel

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/report"
)

// ErrMixed is wrapped by FromRuns's error when runs of different groups (served model,
// labels, max_tokens) are given without allowing them to mix.
var ErrMixed = errors.New("runs of different models or labels")

// Source is what FromRuns found about the runs: their common identity and the cells left out.
type Source struct {
	Model     string
	Labels    map[string]any
	MaxTokens int
	Runs      []string
	Engine    map[string]any
	// Mixed lists the groups when more than one was allowed to mix (else nil).
	Mixed []string
	// Excluded are the cells not used, "L=…,B=… in RUN: why".
	Excluded []string
}

// runMaxTokens is the max_tokens of a run (its stored config; 0 when absent).
func runMaxTokens(h report.Header) int {
	if h.Config == nil {
		return 0
	}
	return h.Config.MaxTokens
}

// FromRuns turns the measured cells of runs into observations, one per (L, B) cell measured
// in any run: the runs are repeats when they share cells (the figure is then the mean over
// them, and their spread enters σ, see [Obs]). Only cells of status ok with a per-forward
// figure are used; partial cells (fewer than B sequences counted: not a batch of B) and failed
// ones are listed in Source.Excluded.
//
// Runs must share served model, labels and max_tokens (see [GroupKey]); otherwise the error
// wraps ErrMixed and names each run's group, unless allowMixed, when they are fitted together
// and Source.Mixed names the groups (max_tokens must still agree: it is a term of the model).
// Errors carry exitcode.InvalidConfig.
func FromRuns(runs []*report.Run, allowMixed bool) ([]Obs, *Source, error) {
	if len(runs) == 0 {
		return nil, nil, exitcode.Errorf(exitcode.InvalidConfig, "no results file given")
	}
	src := &Source{}
	groups := map[string][]string{}
	var order []string
	for i, r := range runs {
		h := r.Header
		id := h.RunID
		if id == "" {
			id = fmt.Sprintf("run %d", i+1)
		}
		src.Runs = append(src.Runs, id)
		k := GroupKey(h.Model, h.Labels, runMaxTokens(h))
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], id)
	}
	h0 := runs[0].Header
	src.Model, src.Labels, src.MaxTokens, src.Engine = h0.Model, h0.Labels, runMaxTokens(h0), h0.Engine
	if len(order) > 1 {
		var desc []string
		for _, k := range order {
			desc = append(desc, k+": "+strings.Join(groups[k], ", "))
		}
		if !allowMixed {
			return nil, nil, exitcode.With(exitcode.InvalidConfig, fmt.Errorf("%w cannot be fitted together (--allow-mixed to force): %s", ErrMixed, strings.Join(desc, "; ")))
		}
		for _, r := range runs {
			if mt := runMaxTokens(r.Header); mt != src.MaxTokens {
				return nil, nil, exitcode.Errorf(exitcode.InvalidConfig, "runs with different max_tokens (%d and %d) cannot be fitted together: it is a term of the model", src.MaxTokens, mt)
			}
		}
		src.Mixed = desc
		src.Labels = nil
	}
	if src.MaxTokens < 1 {
		return nil, nil, exitcode.Errorf(exitcode.InvalidConfig, "%s: no max_tokens in the results header's config", src.Runs[0])
	}

	type acc struct {
		key            report.CellKey
		fwd, est       []float64
		meanLen, maxLn []float64
		clamped        int
	}
	cells := map[report.CellKey]*acc{}
	for i, r := range runs {
		for j := range r.Cells {
			c := &r.Cells[j]
			k := report.CellKey{SeqLen: c.Cell.SeqLen, Batch: c.Cell.Batch}
			why := ""
			switch {
			case c.Status != report.StatusOK:
				why = "status " + c.Status
			case c.Figures == nil || c.Figures.PerForward.N == 0:
				why = "no per-forward figure"
				if c.Figures != nil && c.Figures.PerForwardReason != "" {
					why += ": " + c.Figures.PerForwardReason
				}
			case c.Lengths.Mean <= 0:
				why = "no realised lengths"
			}
			if why != "" {
				src.Excluded = append(src.Excluded, fmt.Sprintf("%s in %s: %s", k, src.Runs[i], why))
				continue
			}
			a := cells[k]
			if a == nil {
				a = &acc{key: k}
				cells[k] = a
			}
			f := c.Figures
			fwd := measure.Ms(f.PerForward.Mean)
			a.fwd = append(a.fwd, fwd)
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
	obs := make([]Obs, 0, len(cells))
	for _, a := range cells {
		fwd, rep := repeats(a.fwd)
		est := stat.Mean(a.est, nil)
		floor := 0.005 * fwd
		obs = append(obs, Obs{SeqLen: a.key.SeqLen, Batch: a.key.Batch, MeanLen: stat.Mean(a.meanLen, nil), MaxLen: stat.Mean(a.maxLn, nil),
			Clamped: a.clamped, Runs: len(a.fwd), FwdMs: fwd, SigmaMs: math.Sqrt(rep*rep + est*est + floor*floor)})
	}
	sortObs(obs)
	sort.Strings(src.Excluded)
	return obs, src, nil
}

// repeats returns a cell's figure over its runs' values xs and its standard error: one value
// is itself (error 0); two, their mean and SD/√2; three or more, their median and
// 1.2533·1.4826·MAD/√n — the median so that one run disturbed by a loaded machine (a
// cell 10× slow) does not move the cell, the scaled median absolute deviation as the robust
// SD, and 1.2533 = √(π/2) the standard error of a median relative to a mean's.
func repeats(xs []float64) (fig, se float64) {
	n := len(xs)
	switch n {
	case 1:
		return xs[0], 0
	case 2:
		return stat.Mean(xs, nil), stat.StdDev(xs, nil) / math.Sqrt2
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	med := median(s)
	dev := make([]float64, n)
	for i, x := range s {
		dev[i] = math.Abs(x - med)
	}
	slices.Sort(dev)
	return med, math.Sqrt(math.Pi/2) * 1.4826 * median(dev) / math.Sqrt(float64(n))
}

// median of sorted xs, non-empty: the middle value, or the mean of the two middle values for
// an even count (gonum's stat.Quantile has no such rule: Empirical gives the lower middle one,
// LinInterp interpolates its own way).
func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
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
// max_tokens, run ids, engine) and excluded cells recorded in it. opt.MaxTokens is taken from
// the runs. With holdOut ≥ 2 every holdOut-th cell (see [Split]) is not fitted but returned,
// for [Model.Check].
func FitRuns(runs []*report.Run, allowMixed bool, holdOut int, opt FitOptions) (*Model, []Obs, error) {
	obs, src, err := FromRuns(runs, allowMixed)
	if err != nil {
		return nil, nil, err
	}
	opt.MaxTokens = src.MaxTokens
	fit, held := Split(obs, holdOut)
	m, err := Fit(fit, opt)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", strings.Join(src.Runs, ", "), err)
	}
	m.Model, m.Labels, m.Runs, m.Engine, m.Mixed, m.Excluded = src.Model, src.Labels, src.Runs, src.Engine, src.Mixed, src.Excluded
	return m, held, nil
}
