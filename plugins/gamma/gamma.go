// Command gamma is genload's default prompt-length distribution plugin (ABI kind "lengths").
//
// For a cell of target mean length L (tokens) and batch size B it returns B deterministic,
// evenly spaced quantiles of a gamma distribution with mean L:
//
//	q_i = F⁻¹((i + 0.5) / B),  i = 0 … B−1,  F = Gamma(shape k, scale θ = L/k)  (mean kθ = L)
//	x_i = q_i · L / q̄,         q̄ = (1/B) Σ q_i                                  (if normalize)
//	ℓ_i = clamp(round(x_i), min, max)                                            (round half away from zero)
//
// F⁻¹ is the inverse of the regularised incomplete gamma function computed inside the wasm
// module by Halley's method (quantile.go); it agrees with gonum's distuv.Gamma.Quantile to a
// relative 1e-13, and every length of a wide matrix equals the lengths computed with distuv
// (host/plugin TestGammaEqualsNativeOnAWideMatrix). The inversion at rate 1 is memoised per batch size B and scaled per
// cell (see sampler). Midpoint quantiles underestimate the mean of a right-skewed
// distribution (for B = 1, q_0 is the median, ≈ 0.66 L at k = 0.9), so by default the B
// quantiles are rescaled to have mean exactly L: the shape (ratios between lengths) is the
// gamma's, the mean is the cell's. Rounding then moves the mean by at most 0.5 tokens, so an
// unclamped cell's realised mean is within 0.5/L of L (0.05 % at L = 1000).
//
// Config (the [lengths] table of bench.toml):
//
//	k         = 0.9   # shape in [0.01, 10000]; smaller is more skewed (k = 1 is exponential, large k → all ≈ L)
//	normalize = true  # rescale the B quantiles to mean exactly L
//
// The output does not depend on the seed (capability "pure").
package main

import (
	"errors"
	"math"
	"strconv"
)

// config is the plugin's bench.toml table.
type config struct {
	// K is the gamma shape parameter k (dimensionless), > 0. Defaults to 0.9.
	K float64 `json:"k"`
	// Normalize rescales the quantiles to mean exactly L. Defaults to true.
	Normalize bool `json:"normalize"`
}

// defaultConfig returns the defaults documented on the package.
func defaultConfig() config { return config{K: 0.9, Normalize: true} }

// validate reports a config that cannot produce lengths.
func (c config) validate() error {
	if !(c.K >= minK && c.K <= maxK) {
		return errors.New("config: k = " + g(c.K) + ", want a shape in [" + g(minK) + ", " + g(maxK) + "] (default 0.9): below " + g(minK) + " nearly every " +
			"length is the minimum, above " + g(maxK) + " every length is within 1 % of the mean (use the uniform plugin)")
	}
	return nil
}

// g formats v as fmt's %v does (the shortest decimal that reads back as v, %g's form), without
// fmt: the plugin links neither fmt nor reflect (see sdk.Field).
func g(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// The range of the shape k. Within it the inversion converges in a few Halley steps and agrees
// with distuv to 1e-13 (TestQuantilesMatchDistuv); its series need about √(74·k) terms, ≈ 860
// at maxK.
const (
	minK = 0.01
	maxK = 1e4
)

// maxMemo bounds the memo of standard quantiles (float64 values, 8 MiB).
const maxMemo = 1 << 20

// standardQuantiles are the n standard quantiles of one batch size and their sum.
type standardQuantiles struct {
	y   []float64 // y_i = F₁⁻¹((i + 0.5)/n), ascending
	sum float64   // Σ y_i
}

// sampler computes a cell's lengths and memoises, per batch size n, the standard quantiles
// y_i = F₁⁻¹((i + 0.5)/n) of Gamma(shape k, rate 1). The quantile of Gamma(k, rate β = k/L) is
// y_i/β, so a cell's lengths are
//
//	x_i = y_i · L·n / Σ_j y_j   (normalize: β cancels)
//	x_i = y_i · L/k             (otherwise)
//
// and the costly inversion runs once per batch size instead of once per cell (13 times instead
// of 91 for the default matrix).
type sampler struct {
	c        config
	q        quantiler
	memo     map[int]standardQuantiles
	memoSize int
}

// newSampler returns a sampler for a validated config.
func newSampler(c config) *sampler {
	return &sampler{c: c, q: newQuantiler(c.K), memo: map[int]standardQuantiles{}}
}

// standard returns the memoised standard quantiles of batch size n.
func (s *sampler) standard(n int) standardQuantiles {
	if sq, ok := s.memo[n]; ok {
		return sq
	}
	sq := standardQuantiles{y: make([]float64, n)}
	s.q.quantiles(sq.y)
	for _, y := range sq.y {
		sq.sum += y
	}
	if s.memoSize+n > maxMemo {
		clear(s.memo)
		s.memoSize = 0
	}
	s.memo[n] = sq
	s.memoSize += n
	return sq
}

// gammaLengths returns the n lengths (tokens) of a cell with mean length mean, clamped to
// [lo, hi], following the formulas in the package comment, without memo.
func gammaLengths(c config, n, mean, lo, hi int) ([]int, error) {
	return newSampler(c).lengths(n, mean, lo, hi, nil)
}

// lengths returns the n lengths (tokens) of a cell with mean length mean, clamped to [lo, hi],
// following the formulas in the package comment, in out if it holds n ints (else in a new
// slice). It returns an error for mean < 1 or lo > hi.
func (s *sampler) lengths(n, mean, lo, hi int, out []int) ([]int, error) {
	c := s.c
	if mean < 1 {
		return nil, errors.New("mean = " + strconv.Itoa(mean) + " tokens, want >= 1")
	}
	if lo > hi {
		return nil, errors.New("min = " + strconv.Itoa(lo) + " > max = " + strconv.Itoa(hi))
	}
	if len(out) != n {
		out = make([]int, n)
	}
	if n == 0 {
		return out, nil
	}
	L := float64(mean)
	sq := s.standard(n)
	f := L / c.K
	if c.Normalize {
		if !(sq.sum > 0) || math.IsInf(sq.sum, 0) {
			return nil, errors.New("quantiles of Gamma(k=" + g(c.K) + ", θ=" + g(L/c.K) + ") sum to " + g(sq.sum/c.K*L) + "; cannot normalise")
		}
		f = L * float64(n) / sq.sum
	}
	fhi := float64(hi)
	for i, y := range sq.y {
		out[i] = roundClamp(y*f, lo, hi, fhi)
	}
	return out, nil
}

// roundClamp returns v ≥ 0 rounded half away from zero (as math.Round) and clamped to
// [lo, hi]; fhi is float64(hi). math.Trunc is one wasm instruction where math.Round is a call.
func roundClamp(v float64, lo, hi int, fhi float64) int {
	if v >= fhi {
		return hi
	}
	t := math.Trunc(v)
	if v-t >= 0.5 {
		t++
	}
	return max(int(t), lo)
}
