package latmodel

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/genload/genload/host/compare"
	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/stats"
)

// GridPoint is one point a gate evaluates both models at: SeqLen is the target L it stands
// for (a label; 0 when given as a mean length only), MeanLen the mean prompt length the models
// are evaluated at (tokens), Batch the batch size.
type GridPoint struct {
	SeqLen  int     `json:"seq_len,omitempty"`
	MeanLen float64 `json:"mean_len"`
	Batch   int     `json:"batch"`
}

// String writes the point as messages name it: "L=4000,B=8 (L̄ 3996)", or "L̄=3000,B=8"
// for a point given by its mean length only.
func (p GridPoint) String() string {
	if p.SeqLen > 0 {
		return fmt.Sprintf("L=%d,B=%d (L̄ %.0f)", p.SeqLen, p.Batch, p.MeanLen)
	}
	return fmt.Sprintf("L̄=%g,B=%d", p.MeanLen, p.Batch)
}

// measured returns the cells m was fitted on and its outliers (a cell left out of a fit was
// still measured).
func (m *Model) measured() []Obs {
	obs := slices.Clone(m.Obs)
	for _, o := range m.Outliers {
		if !slices.ContainsFunc(obs, func(x Obs) bool { return x.SeqLen == o.SeqLen && x.Batch == o.Batch }) {
			obs = append(obs, o.Obs)
		}
	}
	sortObs(obs)
	return obs
}

// DefaultGrid returns the grid a gate uses without --grid: every cell the new run measured
// (fitted or outlier), at its realised mean length — at the mean of both realised lengths
// when the baseline measured that cell too — ascending L then B. Points outside the
// baseline's measured range are kept: [Gate] lists them as out of range.
func DefaultGrid(base, next *Model) []GridPoint {
	by := map[[2]int]Obs{}
	for _, o := range base.measured() {
		by[[2]int{o.SeqLen, o.Batch}] = o
	}
	var out []GridPoint
	for _, o := range next.measured() {
		l := o.MeanLen
		if b, ok := by[[2]int{o.SeqLen, o.Batch}]; ok {
			l = (b.MeanLen + o.MeanLen) / 2
		}
		out = append(out, GridPoint{SeqLen: o.SeqLen, MeanLen: l, Batch: o.Batch})
	}
	return out
}

// ParseGrid reads "L1,L2,…xB1,B2,…" (mean prompt lengths in tokens × batch sizes) into the
// points of their product, lengths outer. Errors say which part is wrong.
func ParseGrid(s string) ([]GridPoint, error) {
	ls, bs, ok := strings.Cut(s, "x")
	if !ok {
		return nil, fmt.Errorf("--grid %q: want LENGTHSxBATCHES, e.g. 1000,4000x1,8,64", s)
	}
	var lens []float64
	for _, f := range strings.Split(ls, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			return nil, fmt.Errorf("--grid %q: length %q is not a positive number of tokens", s, f)
		}
		lens = append(lens, v)
	}
	var batches []int
	for _, f := range strings.Split(bs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--grid %q: batch size %q is not a positive integer", s, f)
		}
		batches = append(batches, n)
	}
	var grid []GridPoint
	for _, l := range lens {
		for _, b := range batches {
			grid = append(grid, GridPoint{MeanLen: l, Batch: b})
		}
	}
	return grid, nil
}

// Thresholds are a gate's limits and the confidence of its verdict.
type Thresholds struct {
	// MeanIncrease is the largest accepted mean over the grid of the per-point change, and
	// PointIncrease the largest at any single point, as fractions (0.15 is 15 %).
	MeanIncrease  float64 `json:"mean_increase"`
	PointIncrease float64 `json:"point_increase"`
	// MaxFitError is the largest leave-one-cell-out median relative error either model may
	// have (see [DefaultMaxFitError]); 0 accepts any.
	MaxFitError float64 `json:"max_fit_error"`
	// Confidence is the one-sided confidence of each bound (0 means DefaultConfidence): the
	// mean's bounds at Confidence, each point's at 1 − (1 − Confidence)/points (Bonferroni).
	Confidence float64 `json:"confidence"`
	// MaxBaselineNoise is the largest half-width of the baseline's own bound on its mean
	// level accepted, as a fraction of MeanIncrease (0 means DefaultMaxBaselineNoise; < 0
	// accepts any).
	MaxBaselineNoise float64 `json:"max_baseline_noise"`
}

// DefaultConfidence is the one-sided confidence of the gate's bounds: 0.95.
const DefaultConfidence = 0.95

// DefaultMaxBaselineNoise is the default Thresholds.MaxBaselineNoise: 0.5. A baseline whose
// own level is uncertain by more than half the mean threshold leaves no room: with a new run
// as noisy, the change's bound is √2 × that, 0.71 of the threshold, so that no change at all
// only just passes and only a regression above 1.7 × the threshold fails.
const DefaultMaxBaselineNoise = 0.5

func (th Thresholds) confidence() float64 {
	if th.Confidence <= 0 || th.Confidence >= 1 {
		return DefaultConfidence
	}
	return th.Confidence
}

func (th Thresholds) maxBaselineNoise() float64 {
	if th.MaxBaselineNoise == 0 {
		return DefaultMaxBaselineNoise
	}
	return th.MaxBaselineNoise
}

// Verdicts of a gate.
const (
	VerdictPass       = "pass"
	VerdictFail       = "fail"
	VerdictCannotTell = "cannot tell"
)

// Interval is an estimated change with its standard error, degrees of freedom and one-sided
// bounds: Lo and Hi are each a one-sided bound at the gate's confidence (together a two-sided
// interval of 2·confidence − 1), fractions.
type Interval struct {
	Est float64 `json:"est"`
	SE  float64 `json:"se"`
	DoF float64 `json:"dof"`
	Lo  float64 `json:"lo"`
	Hi  float64 `json:"hi"`
	// LevelSE is the part of SE from the models' level uncertainties (SE² = coefficient
	// part + LevelSE²).
	LevelSE float64 `json:"level_se"`
}

// GatePoint is one grid point's change.
type GatePoint struct {
	GridPoint
	// BaseMs and NewMs are the two models' predictions (ms); Change = NewMs/BaseMs − 1 with
	// its interval.
	BaseMs float64  `json:"base_ms"`
	NewMs  float64  `json:"new_ms"`
	Change Interval `json:"change"`
	// Over reports that the point's lower bound exceeds PointIncrease (a regression there).
	Over bool `json:"over"`
	// Extrapolated says that the point is outside one model's measured range (Why: where in
	// full, Outside: which model and which of L̄ and B, "baseline B; new L̄ and B"); it is
	// judged only when the gate was allowed to extrapolate.
	Extrapolated bool   `json:"extrapolated,omitempty"`
	Why          string `json:"why,omitempty"`
	Outside      string `json:"outside,omitempty"`
}

// outside names which of the mean length (L̄) and batch size (B) of in lie outside r, as
// [Model.PredictAt] judges them ("L̄ and B"; "" for none).
func (r Range) outside(in Input) string {
	var out []string
	if in.MeanLen < r.MeanLen[0]*(1-1e-9) || in.MeanLen > r.MeanLen[1]*(1+1e-9) {
		out = append(out, "L̄")
	}
	if in.Batch < r.Batch[0] || in.Batch > r.Batch[1] {
		out = append(out, "B")
	}
	return strings.Join(out, " and ")
}

// String writes the range as "mean length 1000–8000 tokens, batch size 1–16".
func (r Range) String() string {
	return fmt.Sprintf("mean length %g–%g tokens, batch size %d–%d", r.MeanLen[0], r.MeanLen[1], r.Batch[0], r.Batch[1])
}

// GateResult is a gate's outcome.
type GateResult struct {
	Base, New string // the models' run ids, comma-separated
	// BaseFiles and NewFiles are the files each side was read from, as given (nil when the
	// models were given as such).
	BaseFiles, NewFiles []string
	// Comparable is the first line: whether the models are of comparable runs.
	Comparable string
	Thresholds Thresholds
	// BaseFit and NewFit are how well each model describes its own cells; BaseLevel and
	// NewLevel each model's level uncertainty (see [Model.Level]).
	BaseFit, NewFit     FitQuality
	BaseLevel, NewLevel Level
	// BaseNoise is the half-width of the baseline's own bound on its mean level over the
	// grid, a fraction.
	BaseNoise float64
	// Points are the judged points; OutOfRange the points left out for lying outside a
	// model's measured range (when not extrapolating); BaseRange and NewRange the models'
	// measured ranges.
	Points              []GatePoint
	OutOfRange          []GatePoint
	BaseRange, NewRange Range
	// Mean is the mean over Points of the change, with its interval; Max the largest
	// point change, at MaxAt.
	Mean  Interval
	Max   float64
	MaxAt GridPoint
	// Verdict is pass, fail or cannot tell (see [Gate]); Failed lists the thresholds
	// crossed, Undecided what could not be told, Decide how many repeats would tell it.
	Verdict   string
	Failed    []string
	Undecided []string
	Decide    string
	// Warnings are differences between the models that were allowed (mixed groups).
	Warnings []string
}

// Passed reports a pass verdict.
func (g *GateResult) Passed() bool { return g.Verdict == VerdictPass }

// ErrThresholds is wrapped by Err's error for a failed gate, ErrCannotTell for a gate that
// cannot tell, ErrOutOfRange for a pass that left grid points out.
var (
	ErrThresholds = errors.New("latency regression")
	ErrCannotTell = errors.New("cannot tell")
	ErrOutOfRange = errors.New("grid points outside the measured range were not judged")
)

// Err returns the error that gives the gate's exit code: nil for a pass of every point;
// ErrThresholds (exitcode.ThresholdsFailed, 6) for a fail; ErrCannotTell
// (exitcode.Inconclusive, 8) when the bounds straddle a threshold; ErrOutOfRange
// (exitcode.OutOfRange, 9) for a pass that left points out of range unjudged.
func (g *GateResult) Err() error {
	switch {
	case g.Verdict == VerdictFail:
		return exitcode.With(exitcode.ThresholdsFailed, fmt.Errorf("%w: %s", ErrThresholds, strings.Join(g.Failed, "; ")))
	case g.Verdict == VerdictCannotTell:
		return exitcode.With(exitcode.Inconclusive, fmt.Errorf("%w: %s; %s", ErrCannotTell, strings.Join(g.Undecided, "; "), g.Decide))
	case len(g.OutOfRange) > 0:
		return exitcode.With(exitcode.OutOfRange, fmt.Errorf("gate passed on %d point(s), but %w: %d point(s) (--extrapolate to judge them)", len(g.Points), ErrOutOfRange, len(g.OutOfRange)))
	}
	return nil
}

// ErrTooNoisy is wrapped by Gate's error for a baseline too noisy to judge against.
var ErrTooNoisy = errors.New("baseline too noisy to judge")

// component is one independent part of a variance, with its degrees of freedom.
type component struct{ v, dof float64 }

// combine returns the standard error of the sum of components and its Welch–Satterthwaite
// degrees of freedom (V² / Σ v_k²/ν_k).
func combine(cs ...component) (se, dof float64) {
	var v, d float64
	for _, c := range cs {
		v += c.v
		if c.v > 0 {
			d += c.v * c.v / c.dof
		}
	}
	if d == 0 {
		return math.Sqrt(v), math.Inf(1)
	}
	return math.Sqrt(v), v * v / d
}

// interval returns est with its one-sided q bounds.
func interval(est float64, q float64, cs ...component) Interval {
	se, dof := combine(cs...)
	t := stats.TQuantile(q, dof)
	return Interval{Est: est, SE: se, DoF: dof, Lo: est - t*se, Hi: est + t*se}
}

// pointInterval returns one of n points' change est with bounds that hold for all n points
// at once with confidence ≥ q: the level part, shared by every point, within its bound at
// 1 − (1 − q)/2, and each point's coefficient part within its bound at 1 − (1 − q)/(2n)
// (Bonferroni over the points); the union bound gives q for both events together, and the
// point's bound is the sum of the two half-widths. SE and DoF are those of the whole variance.
func pointInterval(est, q float64, n int, coef, level []component) Interval {
	cse, cdof := combine(coef...)
	lse, ldof := combine(level...)
	se, dof := combine(append(slices.Clone(coef), level...)...)
	hw := stats.TQuantile(1-(1-q)/2, ldof)*lse + stats.TQuantile(1-(1-q)/(2*float64(n)), cdof)*cse
	return Interval{Est: est, SE: se, DoF: dof, Lo: est - hw, Hi: est + hw, LevelSE: lse}
}

// regressors returns x_j(in) for the model's terms, in order.
func (m *Model) regressors(in Input) []float64 {
	x := make([]float64, len(m.Terms))
	for i, t := range m.Terms {
		x[i] = m.x(t.Name, in)
	}
	return x
}

// Identity is the model's identity for [compare.CheckComparable], called name: what
// [compare.IdentityOf] reads from a results header, from the model's record of its runs (the
// first run's engine and context; every external server measured, joined by " + ").
func (m *Model) Identity(name string) compare.Identity {
	h := results.Header{Model: m.Model, Labels: m.Labels, Engine: m.Engine, TargetKind: "external",
		Target: strings.Join(m.Targets, " + "), Context: m.Context, ContextSource: m.ContextSource,
		Config: &config.Config{MaxTokens: m.MaxTokens}}
	if m.Engine != nil {
		h.TargetKind = "builtin"
	}
	return compare.IdentityOf(name, h)
}

// Gate evaluates base and next on grid and compares them point by point, with intervals.
//
// At each point the change is c = ŷ_new/ŷ_base − 1. Its variance has two parts per model
// (delta method, the models independent):
//
//	coefficients  xᵀ·Cov·x of each prediction (Cov = s²(XᵀWX)⁻¹: the residual scatter of the
//	              fit and the cells' weights, which repeats tighten), scaled by ∂c/∂ŷ
//	level         (1 + c)²·u², u the model's level uncertainty ([Model.Level])
//
// and the mean change c̄ over the grid the same, its coefficient part through the gradient of
// c̄ in each model's coefficients (so the points' covariances count), its level part once
// (a level moves every point together). Degrees of freedom are Welch–Satterthwaite's over the
// parts. The mean's bounds are one-sided at th.Confidence; the points' hold for every point at
// once at th.Confidence (see pointInterval: the shared level at 1 − (1 − q)/2, each point's
// coefficient part Bonferroni-corrected), so that the family of point decisions errs at most
// as often as the mean's.
//
// The verdict: fail when the mean's lower bound exceeds th.MeanIncrease or some point's lower
// bound exceeds th.PointIncrease — the evidence says a threshold is crossed; pass when the
// mean's upper bound and every point's upper bound are within their thresholds; otherwise
// cannot tell, with the number of repeats of each run that would decide it (GateResult.Decide).
//
// Refusals (errors, exitcode.InvalidConfig): a model whose leave-one-cell-out median error
// exceeds th.MaxFitError (ErrPoorFit); a baseline whose own bound on its mean level over the
// grid is wider than th.MaxBaselineNoise × th.MeanIncrease (ErrTooNoisy, with the repeats
// that would bring it within); models of different served model, labels or max_tokens
// (ErrMixed) unless allowMixed, when it is a warning. Grid points outside either model's
// measured range are listed in OutOfRange and not judged unless extrapolate (then judged and
// flagged); a grid with no point left is an error wrapping ErrExtrapolation
// (exitcode.OutOfRange), an empty grid an InvalidConfig error.
func Gate(base, next *Model, grid []GridPoint, th Thresholds, allowMixed, extrapolate bool) (*GateResult, error) {
	g := &GateResult{Base: strings.Join(base.Runs, ","), New: strings.Join(next.Runs, ","), Thresholds: th,
		BaseFit: base.Quality(), NewFit: next.Quality(), BaseLevel: base.Level(), NewLevel: next.Level(),
		BaseFiles: base.files, NewFiles: next.files, BaseRange: base.Range, NewRange: next.Range}
	g.Thresholds.Confidence = th.confidence()
	if err := g.checkModels(base, next, allowMixed); err != nil {
		return g, err
	}
	pts, err := g.predict(base, next, grid, extrapolate)
	if err != nil {
		return g, err
	}
	g.changes(base, next, pts)
	if err := g.checkBaselineNoise(base, pts); err != nil {
		return g, err
	}
	g.Max = math.Inf(-1)
	for _, p := range g.Points {
		if p.Change.Est > g.Max {
			g.Max, g.MaxAt = p.Change.Est, p.GridPoint
		}
	}
	g.verdict()
	return g, nil
}

// checkModels refuses models of different groups (unless allowMixed: then a warning) and a
// model whose fit is poor (CheckQuality at the thresholds' MaxFitError).
func (g *GateResult) checkModels(base, next *Model, allowMixed bool) error {
	cmp := compare.CheckComparable([]compare.Identity{base.Identity("baseline " + base.called()), next.Identity("new " + next.called())})
	g.Comparable = cmp.Line(compare.AcrossDeployments...)
	if bad := cmp.Refused(compare.AcrossDeployments...); len(bad) > 0 {
		if !allowMixed {
			return exitcode.With(exitcode.InvalidConfig, fmt.Errorf("gate: %w: %s (--allow-mixed to compare them anyway)", ErrMixed, strings.Join(bad, "; ")))
		}
		g.Warnings = append(g.Warnings, "compared although not comparable (--allow-mixed): "+strings.Join(bad, "; "))
	}
	for _, v := range []struct {
		name string
		m    *Model
	}{{"baseline", base}, {"new", next}} {
		if err := v.m.CheckQuality(g.Thresholds.MaxFitError); err != nil {
			return fmt.Errorf("gate: %s: %w", v.name, err)
		}
	}
	return nil
}

// evalPoint is a grid point to judge with both models' regressors there.
type evalPoint struct {
	GatePoint
	xb, xn []float64
}

// predict predicts the grid with both models: the points to judge, and in g.OutOfRange those
// outside a model's measured range (unless extrapolate). It fails for an empty grid, a
// prediction error, a baseline prediction that is not a latency, or no point to judge.
func (g *GateResult) predict(base, next *Model, grid []GridPoint, extrapolate bool) ([]evalPoint, error) {
	if len(grid) == 0 {
		return nil, exitcode.Errorf(exitcode.InvalidConfig, "gate: empty grid: the new run has no measured cell (give --grid)")
	}
	var pts []evalPoint
	for _, pt := range grid {
		bp, err := base.Predict(pt.MeanLen, pt.Batch, true)
		if err != nil {
			return nil, fmt.Errorf("gate: baseline: %w", err)
		}
		np, err := next.Predict(pt.MeanLen, pt.Batch, true)
		if err != nil {
			return nil, fmt.Errorf("gate: new: %w", err)
		}
		p := GatePoint{GridPoint: pt, BaseMs: bp.Ms, NewMs: np.Ms}
		var why, where []string
		if bp.Extrapolated {
			why = append(why, "baseline: "+bp.Why)
			where = append(where, "baseline "+base.Range.outside(bp.Input))
		}
		if np.Extrapolated {
			why = append(why, "new: "+np.Why)
			where = append(where, "new "+next.Range.outside(np.Input))
		}
		p.Extrapolated, p.Why, p.Outside = len(why) > 0, strings.Join(why, "; "), strings.Join(where, "; ")
		if p.Extrapolated && !extrapolate {
			p.Change.Est = np.Ms/bp.Ms - 1
			g.OutOfRange = append(g.OutOfRange, p)
			continue
		}
		if !(bp.Ms > 0) {
			return nil, exitcode.Errorf(exitcode.InvalidConfig, "gate: baseline predicts %.4g ms at %s: not a latency", bp.Ms, pt)
		}
		pts = append(pts, evalPoint{GatePoint: p, xb: base.regressors(bp.Input), xn: next.regressors(np.Input)})
	}
	if len(pts) == 0 {
		return nil, exitcode.With(exitcode.OutOfRange, fmt.Errorf("gate: %w: every one of the %d grid point(s) is outside a model's measured range (first: %s: %s); --extrapolate to judge them",
			ErrExtrapolation, len(grid), g.OutOfRange[0].GridPoint, g.OutOfRange[0].Why))
	}
	return pts, nil
}

// changes sets g.Points (each point's change with its simultaneous interval) and g.Mean (the
// mean change with its one-sided interval), as Gate's documentation derives them.
func (g *GateResult) changes(base, next *Model, pts []evalPoint) {
	q, th := g.Thresholds.Confidence, g.Thresholds
	lb, ln := g.BaseLevel, g.NewLevel
	n := float64(len(pts))
	gb, gn := make([]float64, len(base.Terms)), make([]float64, len(next.Terms))
	var sumC float64
	for i := range pts {
		p := &pts[i]
		b, nw := p.BaseMs, p.NewMs
		c := nw/b - 1
		// ∂c/∂β_new = x_n / b, ∂c/∂β_base = −nw·x_b / b².
		vb := base.quad(p.xb) * (nw * nw / (b * b * b * b))
		vn := next.quad(p.xn) / (b * b)
		lv := (1 + c) * (1 + c)
		p.Change = pointInterval(c, q, len(pts), []component{{vb, float64(max(base.DoF, 1))}, {vn, float64(max(next.DoF, 1))}},
			[]component{{lv * lb.SD * lb.SD, lb.DoF}, {lv * ln.SD * ln.SD, ln.DoF}})
		p.Over = p.Change.Lo > th.PointIncrease
		for j := range gb {
			gb[j] -= nw * p.xb[j] / (b * b) / n
		}
		for j := range gn {
			gn[j] += p.xn[j] / b / n
		}
		sumC += c
		g.Points = append(g.Points, p.GatePoint)
	}
	mean := sumC / n
	lv := (1 + mean) * (1 + mean)
	g.Mean = interval(mean, q, component{base.quad(gb), float64(max(base.DoF, 1))}, component{next.quad(gn), float64(max(next.DoF, 1))},
		component{lv * lb.SD * lb.SD, lb.DoF}, component{lv * ln.SD * ln.SD, ln.DoF})
	g.Mean.LevelSE = math.Sqrt(lv * (lb.SD*lb.SD + ln.SD*ln.SD))
}

// baseNoise returns the one-sided bound (a fraction) on the baseline's own mean level over
// pts: its coefficients' part at the mean of its regressors over the points, relative to its
// mean prediction, and its level part.
func (g *GateResult) baseNoise(base *Model, pts []evalPoint) float64 {
	lb := g.BaseLevel
	xbar := make([]float64, len(base.Terms))
	var bMean float64
	n := float64(len(pts))
	for _, p := range pts {
		for j := range xbar {
			xbar[j] += p.xb[j] / n
		}
		bMean += p.BaseMs / n
	}
	bse, bdof := combine(component{base.quad(xbar) / (bMean * bMean), float64(max(base.DoF, 1))}, component{lb.SD * lb.SD, lb.DoF})
	return stats.TQuantile(g.Thresholds.Confidence, bdof) * bse
}

// checkBaselineNoise sets g.BaseNoise, the bound on the baseline's own mean level over the
// points (see baseNoise), and refuses a baseline too noisy for the mean threshold
// (ErrTooNoisy), saying how to measure it better. When the points include extrapolated ones
// and the points in range alone would be within the limit, the width comes from
// extrapolating — the coefficients' uncertainty beyond the measured cells, which repeats of
// the same cells barely narrow — and the error says so instead of asking for repeats.
func (g *GateResult) checkBaselineNoise(base *Model, pts []evalPoint) error {
	th, q, lb := g.Thresholds, g.Thresholds.Confidence, g.BaseLevel
	g.BaseNoise = g.baseNoise(base, pts)
	lim := th.maxBaselineNoise() * th.MeanIncrease
	if th.maxBaselineNoise() <= 0 || g.BaseNoise <= lim {
		return nil
	}
	n := len(pts)
	var in []evalPoint
	for _, p := range pts {
		if !p.Extrapolated {
			in = append(in, p)
		}
	}
	head := fmt.Sprintf("the baseline %s knows its own mean level over the %d points only to ±%.1f %% (one-sided %g %%; level ±%.2f %% from %s, and its coefficients), more than %g × the +%g %% threshold = %.1f %%",
		base.called(), n, 100*g.BaseNoise, 100*q, 100*lb.SD, lb.From, th.maxBaselineNoise(), 100*th.MeanIncrease, 100*lim)
	if len(in) < n {
		inNoise := math.NaN()
		if len(in) > 0 {
			inNoise = g.baseNoise(base, in)
		}
		if inNoise <= lim {
			return exitcode.With(exitcode.InvalidConfig, fmt.Errorf("gate: %w: %s: the width comes from extrapolating: over its %d points in range it is ±%.1f %%, the %d extrapolated ones lie beyond the cells it measured (%s), where its coefficients are uncertain and repeats of the same cells do not remove that; measure the baseline over the grid's range, or gate without --extrapolate",
				ErrTooNoisy, head, len(in), 100*inNoise, n-len(in), base.Range))
		}
	}
	remedy := "measure the baseline at least twice (genload run --repeat 2) and fit the repeats together: repeats measure its level instead of taking it as uncertain as its cells scatter"
	if lb.Measured() {
		k := math.Ceil(float64(lb.Runs) * (g.BaseNoise / lim) * (g.BaseNoise / lim))
		remedy = fmt.Sprintf("measure the baseline about %.0f times (genload run --repeat %.0f) and fit the repeats together, if its runs keep scattering as they did", k, k)
	}
	return exitcode.With(exitcode.InvalidConfig, fmt.Errorf("gate: %w: %s: a change of the threshold's size cannot be told from it; %s", ErrTooNoisy, head, remedy))
}

// verdict sets Verdict, Failed, Undecided and Decide from the intervals.
func (g *GateResult) verdict() {
	th := g.Thresholds
	if g.Mean.Lo > th.MeanIncrease {
		g.Failed = append(g.Failed, fmt.Sprintf("mean change %+.1f %% over %d points, at least %+.1f %% (one-sided %g %%), exceeds +%g %%",
			100*g.Mean.Est, len(g.Points), 100*g.Mean.Lo, 100*th.Confidence, 100*th.MeanIncrease))
	}
	var over []GatePoint
	worst := -1
	for i, p := range g.Points {
		if p.Over {
			over = append(over, p)
		}
		if p.Change.Hi > th.PointIncrease && (worst < 0 || p.Change.Hi-th.PointIncrease > g.Points[worst].Change.Hi-th.PointIncrease) && !p.Over {
			worst = i
		}
	}
	if len(over) > 0 {
		top := over[0]
		for _, p := range over {
			if p.Change.Lo > top.Change.Lo {
				top = p
			}
		}
		g.Failed = append(g.Failed, fmt.Sprintf("%d point(s) above +%g %% with their bounds, the largest %+.1f %% (at least %+.1f %%) at %s",
			len(over), 100*th.PointIncrease, 100*top.Change.Est, 100*top.Change.Lo, top.GridPoint))
	}
	if len(g.Failed) > 0 {
		g.Verdict = VerdictFail
		return
	}
	meanOpen := g.Mean.Hi > th.MeanIncrease
	if !meanOpen && worst < 0 {
		g.Verdict = VerdictPass
		return
	}
	g.Verdict = VerdictCannotTell
	// The undecided quantity nearest to deciding drives the advice: the mean, else the point
	// whose upper bound is furthest over.
	iv, limit, what := g.Mean, th.MeanIncrease, fmt.Sprintf("the mean change over %d points", len(g.Points))
	if meanOpen {
		g.Undecided = append(g.Undecided, fmt.Sprintf("mean change %+.1f %% with bounds [%+.1f %%, %+.1f %%] straddles +%g %%", 100*g.Mean.Est, 100*g.Mean.Lo, 100*g.Mean.Hi, 100*th.MeanIncrease))
	}
	if worst >= 0 {
		p := g.Points[worst]
		g.Undecided = append(g.Undecided, fmt.Sprintf("change at %s %+.1f %% with bounds [%+.1f %%, %+.1f %%] straddles +%g %%", p.GridPoint, 100*p.Change.Est, 100*p.Change.Lo, 100*p.Change.Hi, 100*th.PointIncrease))
		if !meanOpen {
			iv, limit, what = p.Change, th.PointIncrease, "the change at "+p.GridPoint.String()
		}
	}
	g.Decide = decide(iv, limit, what, g.BaseLevel, g.NewLevel, g.BaseFit.Cells, g.NewFit.Cells)
}

// DecidePower is the probability with which the number of runs a gate that cannot tell
// advises decides it, if its estimate held: 0.8, the usual power of a sample-size
// calculation. The bound must clear the threshold by t_q + t_power standard errors, not t_q
// alone: at t_q alone (power 0.5) the next estimate falls short as often as not, and the
// advice, followed, moves on by a run or two.
const DecidePower = 0.8

// ScatterConfidence is the one-sided confidence of the upper bound on the runs' level scatter
// that the advice of a gate that cannot tell assumes at its conservative end: 0.90.
const ScatterConfidence = 0.90

// runScatter is the range of how far one run's level may scatter about its deployment's (the
// SD of the runs' levels, a fraction) that the advice assumes for a side, with what each end
// is: lo the estimate that makes repeats look most useful, hi the conservative one. A side of
// r ≥ 2 runs measured it: lo is today's SD of their levels s = SD·√r, hi its upper confidence
// bound at ScatterConfidence, s·√((r − 1)/χ²_{1−conf}(r − 1)) (χ² of r − 1 degrees of
// freedom): with two runs one degree of freedom makes s itself scatter by a factor of 8, which
// the point estimate hides. A side of one run cannot measure it: lo is what its cells' noise
// allows, u/√cells (u its cells' scatter), and hi as much as its cells scatter, u — the level
// uncertainty its single run is already given.
type runScatter struct {
	lo, hi float64
	what   string
}

func levelScatter(l Level, cells int) runScatter {
	if l.Measured() {
		r := float64(l.Runs)
		s := l.SD * math.Sqrt(r)
		chi := distuv.ChiSquared{K: r - 1}.Quantile(1 - ScatterConfidence)
		return runScatter{lo: s, hi: s * math.Sqrt((r-1)/chi),
			what: fmt.Sprintf("%d runs: today's spread to its %g %% upper bound", l.Runs, 100*ScatterConfidence)}
	}
	return runScatter{lo: l.SD / math.Sqrt(float64(max(cells, 1))), hi: l.SD, what: "one run: its cells' noise to its cells' scatter"}
}

// decide says how many runs of which side would decide iv against limit, and what that
// assumes: for both sides repeated alike, and for each side repeated alone, the smallest
// number of runs ≤ 50 whose predicted bound clears the gap, at both ends of each side's
// runScatter — a range "4 to 9", since the scatter of few runs is itself uncertain. With k runs
// of a side, the coefficient variance shrinks as (runs today)/k (the cells' σ are means over
// the runs; the coefficient part is split between the sides as their levels are), and the
// side's level uncertainty is σ_run²/k with k − 1 degrees of freedom, σ_run its runs' scatter.
// The bound is Student t of the Welch–Satterthwaite degrees of freedom of the parts, at the
// confidence iv was made at (recovered from it), and must clear the gap with DecidePower: by
// (t_q + t_power)·SE. The estimate is assumed to stay where it is, and said so.
func decide(iv Interval, limit float64, what string, lb, ln Level, baseCells, newCells int) string {
	gap := math.Abs(iv.Est - limit)
	if gap < 1e-9 {
		return fmt.Sprintf("%s is at the threshold itself: no number of repeats decides it", what)
	}
	t0 := (iv.Hi - iv.Est) / math.Max(iv.SE, 1e-300)
	q := stats.TCDF(t0, iv.DoF)
	coef := math.Max(iv.SE*iv.SE-iv.LevelSE*iv.LevelSE, 0)
	ll := lb.SD*lb.SD + ln.SD*ln.SD
	lv := iv.LevelSE * iv.LevelSE / math.Max(ll, 1e-300) // (1 + c)²
	wb := 0.5                                            // the baseline's share of the coefficient variance
	if ll > 0 {
		wb = lb.SD * lb.SD / ll
	}
	type side struct {
		l     Level
		sc    runScatter
		share float64
	}
	sides := []side{{lb, levelScatter(lb, baseCells), wb}, {ln, levelScatter(ln, newCells), 1 - wb}}
	// hw is the predicted half-width with kb runs of the baseline and kn of the new side, each
	// run's level scattering by the low (hi false) or high end of its side's range; a side
	// kept at its runs of today keeps today's level uncertainty.
	hw := func(kb, kn int, hi bool) float64 {
		var cs []component
		for i, k := range []int{kb, kn} {
			sd := sides[i]
			cs = append(cs, component{coef * sd.share * float64(sd.l.Runs) / float64(k), math.Inf(1)})
			v, dof := lv*sd.l.SD*sd.l.SD, sd.l.DoF
			if k > sd.l.Runs {
				sigma := sd.sc.lo
				if hi {
					sigma = sd.sc.hi
				}
				v, dof = lv*sigma*sigma/float64(k), float64(k-1)
			}
			cs = append(cs, component{v, dof})
		}
		se, dof := combine(cs...)
		return (stats.TQuantile(q, dof) + stats.TQuantile(DecidePower, dof)) * se
	}
	least := func(f func(k int) (int, int), hi bool) int {
		for k := 2; k <= 50; k++ {
			if kb, kn := f(k); (kb > lb.Runs || kn > ln.Runs) && hw(kb, kn, hi) < gap {
				return k
			}
		}
		return 0
	}
	count := func(f func(k int) (int, int)) string {
		lo, hi := least(f, false), least(f, true)
		switch {
		case lo == 0:
			return ""
		case hi == lo:
			return fmt.Sprintf("about %d", lo)
		case hi == 0:
			return fmt.Sprintf("at least %d (more than 50 at the scatter's upper end)", lo)
		}
		return fmt.Sprintf("%d to %d", lo, hi)
	}
	var opts []string
	if n := count(func(k int) (int, int) { return max(k, lb.Runs), max(k, ln.Runs) }); n != "" {
		opts = append(opts, n+" runs of each side")
	}
	if n := count(func(k int) (int, int) { return lb.Runs, max(k, ln.Runs) }); n != "" {
		opts = append(opts, n+" of the new side alone")
	}
	if n := count(func(k int) (int, int) { return max(k, lb.Runs), ln.Runs }); n != "" {
		opts = append(opts, n+" of the baseline alone")
	}
	assume := fmt.Sprintf("if its estimate %+.1f %% held and each run's level scattered about its side's by ±%.1f–%.1f %% (baseline, %s) and ±%.1f–%.1f %% (new, %s)",
		100*iv.Est, 100*sides[0].sc.lo, 100*sides[0].sc.hi, sides[0].sc.what, 100*sides[1].sc.lo, 100*sides[1].sc.hi, sides[1].sc.what)
	if len(opts) == 0 {
		return fmt.Sprintf("%s is %.1f %% from the threshold: even 50 runs of each side would not decide it %s", what, 100*gap, assume)
	}
	return fmt.Sprintf("%s would decide %s, %.0f times in 10, %s; more if the runs scatter more (genload run --repeat N: one file of N repeats; or runs measured apart, comma-separated)",
		strings.Join(opts, ", or "), what, 10*DecidePower, assume)
}
