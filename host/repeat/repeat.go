// Package repeat decides how often to measure each cell of a matrix: the stopping rule of
// "repeat until stable" and the interleaved order of the rounds. It holds no I/O and no
// measurement; the run loop asks it, after each round, which cells need another repeat and in
// which order to visit them.
//
// # The rule
//
// A cell's repeats give n values x₁…xₙ of its mean per-forward latency, with sample mean x̄,
// sample standard deviation s and CV c = s / x̄. Stopping when c ≤ target is optimistic at
// small n: two repeats that happen to agree give c ≈ 0 whatever the cell's true spread. The
// rule therefore stops a cell when the one-sided upper confidence bound of its CV is within
// the target:
//
//	c_up = c · sqrt((n − 1) / χ²(α; n − 1)) ≤ target
//
// with χ²(α; n − 1) the α-quantile of the chi-square distribution with n − 1 degrees of
// freedom — the standard bound on a normal sample's σ (the CV's relative error is σ's for the
// small CVs of interest) — and Confidence = 1 − α (default 0.9). With Confidence 0.9 the
// factor sqrt((n − 1)/χ²) is 7.96 at n = 2, 3.08 at n = 3, 1.94 at n = 5, 1.57 at n = 8.
//
// The bound is checked after every repeat, so the chance that a cell above the target is
// declared stable is more than α over all the looks. Simulated with lognormal repeats (the
// test of this package, 2000 cells each), a 5 % target, 2 to 8 repeats, Confidence 0.9:
//
//	true CV    declared stable   mean repeats
//	  1 %          100 %             2.6
//	  2 %           99 %             3.6
//	  3 %           79 %             5.0
//	  5 %           29 %             6.8
//	 10 %            8 %             7.6
//
// so quiet cells cost about half of five fixed repeats and noisy ones up to MaxRepeats; cells
// that reach MaxRepeats without meeting the target are flagged (Verdict.Exhausted), never
// silently kept. A larger Confidence trades repeats of quiet cells for fewer false stops; the
// same simulation (4000 cells each, seeds 1…6 by row) at the two confidences:
//
//	                 target 5 %                       target 10 %
//	true CV    Confidence 0.9   Confidence 0.8   Confidence 0.9   Confidence 0.8
//	           stable repeats   stable repeats   stable repeats   stable repeats
//	  1 %       100 %   2.58     100 %   2.21     100 %   2.21     100 %   2.01
//	  2 %        99 %   3.65     100 %   2.84     100 %   2.60     100 %   2.21
//	  3 %        78 %   5.04      93 %   3.86     100 %   3.01     100 %   2.46
//	  5 %        31 %   6.68      47 %   5.84      92 %   4.39      98 %   3.35
//	 10 %         8 %   7.60      14 %   7.22      31 %   6.71      49 %   5.79
//	 20 %         4 %   7.80       6 %   7.65       8 %   7.57      15 %   7.20
//
// A cell at twice the target is called stable 8 % of the time at 0.9 and 14–15 % at 0.8;
// a matrix of 1 % cells costs 2.2 repeats per cell at (5 %, 0.8) or (10 %, 0.9), 2.0 at
// (10 %, 0.8).
//
// # A fixed count
//
// A Rule with Count N (genload run --repeat N) has no stopping rule: every cell is measured N
// times, in the same interleaved rounds (round k measures every cell's k-th repeat), and its
// Verdict is Done once it has N repeats; its CV is reported, not judged.
//
// The CV of single repeats is the statistic, not the half-width of the mean's confidence
// interval, because it is what genload consistency reports and what --max-cv gates: a matrix
// "consistent to 5 %" means that repeating any cell gives a value within that spread, which
// the mean's half-width (shrinking as 1/√n however noisy the cell) does not promise.
package repeat

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/genload/genload/host/stats"

	"gonum.org/v1/gonum/stat/distuv"
)

// Rule is the stopping rule, or a fixed count of repeats. Build one with the fields below and
// call Validate.
type Rule struct {
	// Count, when > 0, is a fixed number of repeats of every cell (≥ 2), without a stopping
	// rule; TargetCV, MinRepeats, MaxRepeats and Confidence must then be 0 (MinRepeats and
	// MaxRepeats default to Count, Confidence to 0.9 for the reported UpperCV).
	Count int
	// TargetCV is the per-cell CV to reach, as a fraction (0.05 = 5 %). Required (> 0).
	TargetCV float64
	// MinRepeats is the fewest repeats of every cell; at least 2 (a CV needs two). Defaults
	// to 2 (0).
	MinRepeats int
	// MaxRepeats is the most repeats of any cell; ≥ MinRepeats. Defaults to 8 (0).
	MaxRepeats int
	// Confidence is the one-sided confidence of the CV's upper bound at each look, in (0, 1).
	// Defaults to 0.9 (0).
	Confidence float64
}

// WithDefaults returns r with its zero fields set to their defaults.
func (r Rule) WithDefaults() Rule {
	if r.Count > 0 && r.MinRepeats == 0 && r.MaxRepeats == 0 {
		r.MinRepeats, r.MaxRepeats = r.Count, r.Count
	}
	if r.MinRepeats == 0 {
		r.MinRepeats = 2
	}
	if r.MaxRepeats == 0 {
		r.MaxRepeats = max(8, r.MinRepeats)
	}
	if r.Confidence == 0 {
		r.Confidence = 0.9
	}
	return r
}

// Validate reports every invalid field at once, naming each flag in brackets.
func (r Rule) Validate() error {
	if r.Count != 0 {
		var errs []error
		if r.Count < 2 {
			errs = append(errs, fmt.Errorf("[repeat] must be >= 2 (a CV needs two repeats), got %d", r.Count))
		}
		if r.TargetCV != 0 || r.MinRepeats != 0 || r.MaxRepeats != 0 || r.Confidence != 0 {
			errs = append(errs, errors.New("[repeat] is a fixed count: not with [until-cv], [min-repeats], [max-repeats] or [cv-confidence]"))
		}
		return errors.Join(errs...)
	}
	r = r.WithDefaults()
	var errs []error
	if !(r.TargetCV > 0 && r.TargetCV < 1) {
		errs = append(errs, fmt.Errorf("[until-cv] must be in (0, 100) percent, got %g %%", 100*r.TargetCV))
	}
	if r.MinRepeats < 2 {
		errs = append(errs, fmt.Errorf("[min-repeats] must be >= 2 (a CV needs two repeats), got %d", r.MinRepeats))
	}
	if r.MaxRepeats < r.MinRepeats {
		errs = append(errs, fmt.Errorf("[max-repeats] must be >= [min-repeats] %d, got %d", r.MinRepeats, r.MaxRepeats))
	}
	if !(r.Confidence > 0 && r.Confidence < 1) {
		errs = append(errs, fmt.Errorf("[cv-confidence] must be in (0, 1), got %g", r.Confidence))
	}
	return errors.Join(errs...)
}

// Verdict is the rule's answer for one cell.
type Verdict struct {
	// N is the repeats so far; CV their sample CV (0 with fewer than 2) and UpperCV its
	// upper confidence bound (+Inf with fewer than 2).
	N       int
	CV      float64
	UpperCV float64
	// Again is true when the cell needs another repeat; Stable when it met the target;
	// Exhausted when it reached MaxRepeats without meeting it (flag it); Done, for a rule
	// with a fixed Count, when it has its Count repeats (never Stable nor Exhausted).
	Again, Stable, Exhausted, Done bool
}

// Decide applies the rule to one cell's repeat values xs (its mean per-forward latency per
// repeat, any unit). Values that are not positive finite numbers are an error (a failed
// repeat has no value: leave it out and count it against MaxRepeats in the caller).
func (r Rule) Decide(xs []float64) (Verdict, error) {
	r = r.WithDefaults()
	v := Verdict{N: len(xs), UpperCV: math.Inf(1)}
	for i, x := range xs {
		if !(x > 0) || math.IsInf(x, 0) {
			return v, fmt.Errorf("repeat %d: value %v is not a positive latency", i+1, x)
		}
	}
	if len(xs) >= 2 {
		v.CV = stats.CV(xs)
		v.UpperCV = v.CV * UpperFactor(len(xs), r.Confidence)
	}
	switch {
	case len(xs) < r.MinRepeats:
		v.Again = true
	case r.Count > 0:
		v.Done = true
	case v.UpperCV <= r.TargetCV:
		v.Stable = true
	case len(xs) >= r.MaxRepeats:
		v.Exhausted = true
	default:
		v.Again = true
	}
	return v, nil
}

// Judge is Decide for a cell measured repeats times, xs the values among its repeats (a
// repeat without a value, partial, counts against MaxRepeats but gives no value): a cell that
// would need another repeat but has MaxRepeats of them is Exhausted — under a fixed Count,
// Done.
func (r Rule) Judge(xs []float64, repeats int) (Verdict, error) {
	v, err := r.Decide(xs)
	if err != nil {
		return v, err
	}
	if v.Again && repeats >= r.WithDefaults().MaxRepeats {
		v.Again = false
		if r.Count > 0 {
			v.Done = true
		} else {
			v.Exhausted = true
		}
	}
	return v, nil
}

// UpperFactor returns sqrt((n − 1) / χ²(1 − confidence; n − 1)), the factor from a sample
// standard deviation of n values to its one-sided upper confidence bound; +Inf for n < 2.
func UpperFactor(n int, confidence float64) float64 {
	if n < 2 {
		return math.Inf(1)
	}
	q := distuv.ChiSquared{K: float64(n - 1)}.Quantile(1 - confidence)
	return math.Sqrt(float64(n-1) / q)
}

// LowerFactor returns sqrt((n − 1) / χ²(confidence; n − 1)), the factor from a sample
// standard deviation of n values to its one-sided lower confidence bound (the counterpart of
// [UpperFactor]); NaN for n < 2.
func LowerFactor(n int, confidence float64) float64 {
	if n < 2 {
		return math.NaN()
	}
	q := distuv.ChiSquared{K: float64(n - 1)}.Quantile(confidence)
	return math.Sqrt(float64(n-1) / q)
}

// Order returns the visiting order of a round: the indices 0…n−1 of the cells still open,
// permuted by a generator seeded with (seed, round), so that a slow drift of the server (heat,
// a neighbour's load) falls on every cell alike instead of always on the matrix's last cells,
// and a run with the same seed visits the cells in the same order.
func Order(n int, seed uint64, round int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	rng := rand.New(rand.NewPCG(seed, uint64(round)+0x726570656174)) // "repeat"
	rng.Shuffle(n, func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	return idx
}
