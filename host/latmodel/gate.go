package latmodel

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/genload/genload/host/exitcode"
)

// GridPoint is one point a gate evaluates both models at: SeqLen is the target L it stands
// for (a label; 0 when given as a mean length only), MeanLen the mean prompt length the models
// are evaluated at (tokens), Batch the batch size.
type GridPoint struct {
	SeqLen  int     `json:"seq_len,omitempty"`
	MeanLen float64 `json:"mean_len"`
	Batch   int     `json:"batch"`
}

// SharedGrid returns the cells both models measured (matched by target L and B): the cells
// they were fitted on and their outliers (a cell left out of a fit was still measured, and the
// model is evaluated there like anywhere in its range), each at the mean of the two realised
// mean lengths, ascending L then B; empty when they share none.
func SharedGrid(base, next *Model) []GridPoint {
	type key struct{ l, b int }
	measured := func(m *Model) []Obs {
		obs := slices.Clone(m.Obs)
		for _, o := range m.Outliers {
			if !slices.ContainsFunc(obs, func(x Obs) bool { return x.SeqLen == o.SeqLen && x.Batch == o.Batch }) {
				obs = append(obs, o.Obs)
			}
		}
		return obs
	}
	by := map[key]Obs{}
	for _, o := range measured(base) {
		by[key{o.SeqLen, o.Batch}] = o
	}
	var out []GridPoint
	for _, o := range measured(next) {
		if b, ok := by[key{o.SeqLen, o.Batch}]; ok {
			out = append(out, GridPoint{SeqLen: o.SeqLen, MeanLen: (b.MeanLen + o.MeanLen) / 2, Batch: o.Batch})
		}
	}
	slices.SortFunc(out, func(a, b GridPoint) int {
		if a.SeqLen != b.SeqLen {
			return a.SeqLen - b.SeqLen
		}
		return a.Batch - b.Batch
	})
	return out
}

// Thresholds are a gate's limits, as fractions (0.15 is 15 %).
type Thresholds struct {
	// MeanIncrease is the largest accepted mean over the grid of the per-point change.
	MeanIncrease float64 `json:"mean_increase"`
	// PointIncrease is the largest accepted change at any single point.
	PointIncrease float64 `json:"point_increase"`
	// MaxFitError is the largest leave-one-cell-out median relative error either model may
	// have (see [DefaultMaxFitError]); 0 accepts any.
	MaxFitError float64 `json:"max_fit_error"`
}

// GatePoint is one grid point's verdict.
type GatePoint struct {
	GridPoint
	// BaseMs and NewMs are the two models' predictions (ms); Change = NewMs/BaseMs − 1.
	BaseMs float64 `json:"base_ms"`
	NewMs  float64 `json:"new_ms"`
	Change float64 `json:"change"`
	// Over reports Change > PointIncrease.
	Over bool `json:"over"`
	// Extrapolated says that the point is outside one model's measured range (Why: where).
	Extrapolated bool   `json:"extrapolated,omitempty"`
	Why          string `json:"why,omitempty"`
}

// GateResult is a gate's outcome.
type GateResult struct {
	Base, New  string // the models' run ids, comma-separated
	Thresholds Thresholds
	// BaseFit and NewFit are how well each model describes its own cells.
	BaseFit, NewFit FitQuality
	Points          []GatePoint
	// Mean is the mean of the points' Change; Max the largest Change, at MaxAt.
	Mean  float64
	Max   float64
	MaxAt GridPoint
	// Failed lists the thresholds crossed, in words; empty when the gate passes.
	Failed []string
	// Warnings are differences between the models that were allowed (mixed groups).
	Warnings []string
}

// Passed reports that no threshold was crossed.
func (g *GateResult) Passed() bool { return len(g.Failed) == 0 }

// ErrThresholds is wrapped by the error Gate's caller returns for a failed gate; see Err.
var ErrThresholds = errors.New("latency regression")

// Err returns nil for a passed gate, else an error wrapping ErrThresholds that carries
// exitcode.ThresholdsFailed and says which thresholds were crossed.
func (g *GateResult) Err() error {
	if g.Passed() {
		return nil
	}
	return exitcode.With(exitcode.ThresholdsFailed, fmt.Errorf("%w: %s", ErrThresholds, strings.Join(g.Failed, "; ")))
}

// Gate evaluates base and next on grid and compares them: for each point the change
// c = next/base − 1; the gate fails when the mean of c over the grid exceeds
// th.MeanIncrease or any c exceeds th.PointIncrease.
//
// Both models must describe their cells: a model whose leave-one-cell-out median error exceeds
// th.MaxFitError is an error wrapping ErrPoorFit (exitcode.InvalidConfig) naming it — its
// predictions differ from its own cells by more than a regression the gate is to find.
//
// The models must be of the same group (served model, labels, max_tokens: [Model.Key]),
// else the error names both (exitcode.InvalidConfig) unless allowMixed, when the difference
// is a warning. A grid point outside either model's measured range is an error wrapping
// ErrExtrapolation unless extrapolate, when the point is flagged. An empty grid is an error.
func Gate(base, next *Model, grid []GridPoint, th Thresholds, allowMixed, extrapolate bool) (*GateResult, error) {
	g := &GateResult{Base: strings.Join(base.Runs, ","), New: strings.Join(next.Runs, ","), Thresholds: th, BaseFit: base.Quality(), NewFit: next.Quality()}
	for _, v := range []struct {
		name string
		m    *Model
	}{{"baseline", base}, {"new", next}} {
		if err := v.m.CheckQuality(th.MaxFitError); err != nil {
			return g, fmt.Errorf("gate: %s: %w", v.name, err)
		}
	}
	if bk, nk := base.Key(), next.Key(); bk != nk {
		msg := fmt.Sprintf("baseline is %s, new is %s", bk, nk)
		if !allowMixed {
			return nil, exitcode.Errorf(exitcode.InvalidConfig, "gate: %v: %s (--allow-mixed to compare them anyway)", ErrMixed, msg)
		}
		g.Warnings = append(g.Warnings, "compared across groups: "+msg)
	}
	if len(grid) == 0 {
		return nil, exitcode.Errorf(exitcode.InvalidConfig, "gate: empty grid: the models share no cell (give --grid)")
	}
	g.Max = math.Inf(-1)
	var sum float64
	for _, pt := range grid {
		bp, err := base.Predict(pt.MeanLen, pt.Batch, extrapolate)
		if err != nil {
			return nil, fmt.Errorf("gate: baseline: %w", err)
		}
		np, err := next.Predict(pt.MeanLen, pt.Batch, extrapolate)
		if err != nil {
			return nil, fmt.Errorf("gate: new: %w", err)
		}
		if !(bp.Ms > 0) {
			return nil, exitcode.Errorf(exitcode.InvalidConfig, "gate: baseline predicts %.4g ms at L̄=%g B=%d: not a latency", bp.Ms, pt.MeanLen, pt.Batch)
		}
		p := GatePoint{GridPoint: pt, BaseMs: bp.Ms, NewMs: np.Ms, Change: np.Ms/bp.Ms - 1}
		p.Over = p.Change > th.PointIncrease
		var why []string
		if bp.Extrapolated {
			why = append(why, "baseline: "+bp.Why)
		}
		if np.Extrapolated {
			why = append(why, "new: "+np.Why)
		}
		p.Extrapolated, p.Why = len(why) > 0, strings.Join(why, "; ")
		g.Points = append(g.Points, p)
		sum += p.Change
		if p.Change > g.Max {
			g.Max, g.MaxAt = p.Change, pt
		}
	}
	g.Mean = sum / float64(len(grid))
	if g.Mean > th.MeanIncrease {
		g.Failed = append(g.Failed, fmt.Sprintf("mean change %+.1f %% over %d points exceeds +%g %%", 100*g.Mean, len(grid), 100*th.MeanIncrease))
	}
	if g.Max > th.PointIncrease {
		n := 0
		for _, p := range g.Points {
			if p.Over {
				n++
			}
		}
		g.Failed = append(g.Failed, fmt.Sprintf("%d point(s) above +%g %%, the largest %+.1f %% at L̄=%.0f B=%d", n, 100*th.PointIncrease, 100*g.Max, g.MaxAt.MeanLen, g.MaxAt.Batch))
	}
	return g, nil
}
