// Command gamma is genload's default prompt-length distribution plugin (ABI kind "lengths").
//
// For a cell of target mean length L (tokens) and batch size B it returns B deterministic,
// evenly spaced quantiles of a gamma distribution with mean L:
//
//	q_i = F⁻¹((i + 0.5) / B),  i = 0 … B−1,  F = Gamma(shape k, scale θ = L/k)  (mean kθ = L)
//	x_i = q_i · L / q̄,         q̄ = (1/B) Σ q_i                                  (if normalize)
//	ℓ_i = clamp(round(x_i), min, max)                                            (round half away from zero)
//
// F⁻¹ is gonum's distuv.Gamma{Alpha: k, Beta: k/L}.Quantile (Beta is the rate 1/θ), computed
// inside the wasm module; the inversion at rate 1 is memoised per batch size B and divided by
// k/L per cell, which is bit for bit the same value (see sampler). Midpoint quantiles underestimate the mean of a right-skewed
// distribution (for B = 1, q_0 is the median, ≈ 0.66 L at k = 0.9), so by default the B
// quantiles are rescaled to have mean exactly L: the shape (ratios between lengths) is the
// gamma's, the mean is the cell's. Rounding then moves the mean by at most 0.5 tokens, so an
// unclamped cell's realised mean is within 0.5/L of L (0.05 % at L = 1000).
//
// Config (the [lengths] table of bench.toml):
//
//	k         = 0.9   # shape, > 0; smaller is more skewed (k = 1 is exponential, large k → all ≈ L)
//	normalize = true  # rescale the B quantiles to mean exactly L
//
// The output does not depend on the seed (capability "pure").
package main

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
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
	if !(c.K > 0) || math.IsInf(c.K, 0) {
		return fmt.Errorf("config: k = %v, want a finite shape > 0 (default 0.9)", c.K)
	}
	return nil
}

// maxMemo bounds the memo of standard quantiles (float64 values, 8 MiB).
const maxMemo = 1 << 20

// sampler computes a cell's lengths and memoises, per batch size n, the standard quantiles
// y_i = F₁⁻¹((i + 0.5)/n) of Gamma(shape k, rate 1). Since distuv.Gamma.Quantile(p) is
// mathext.GammaIncRegInv(k, p) / Beta, the cell's quantile q_i = y_i / (k/L) is bit for bit what
// distuv.Gamma{Alpha: k, Beta: k/L}.Quantile gives, and the costly inversion runs once per
// batch size instead of once per cell (13 times instead of 91 for the default matrix).
type sampler struct {
	c        config
	memo     map[int][]float64
	memoSize int
}

// newSampler returns a sampler for a validated config.
func newSampler(c config) *sampler { return &sampler{c: c, memo: map[int][]float64{}} }

// standard returns the memoised y_i for batch size n.
func (s *sampler) standard(n int) []float64 {
	if y, ok := s.memo[n]; ok {
		return y
	}
	g := distuv.Gamma{Alpha: s.c.K, Beta: 1}
	y := make([]float64, n)
	for i := range y {
		y[i] = g.Quantile((float64(i) + 0.5) / float64(n))
	}
	if s.memoSize+n > maxMemo {
		clear(s.memo)
		s.memoSize = 0
	}
	s.memo[n] = y
	s.memoSize += n
	return y
}

// gammaLengths returns the n lengths (tokens) of a cell with mean length mean, clamped to
// [lo, hi], following the formulas in the package comment, without memo.
func gammaLengths(c config, n, mean, lo, hi int) ([]int, error) {
	return newSampler(c).lengths(n, mean, lo, hi)
}

// lengths returns the n lengths (tokens) of a cell with mean length mean, clamped to [lo, hi],
// following the formulas in the package comment. It returns an error for mean < 1 or lo > hi.
func (s *sampler) lengths(n, mean, lo, hi int) ([]int, error) {
	c := s.c
	if mean < 1 {
		return nil, fmt.Errorf("mean = %d tokens, want >= 1", mean)
	}
	if lo > hi {
		return nil, fmt.Errorf("min = %d > max = %d", lo, hi)
	}
	if n == 0 {
		return []int{}, nil
	}
	L := float64(mean)
	beta := c.K / L // the rate of Gamma(k, θ = L/k)
	y := s.standard(n)
	q := make([]float64, n)
	sum := 0.0
	for i := range q {
		q[i] = y[i] / beta
		sum += q[i]
	}
	scale := 1.0
	if c.Normalize {
		if !(sum > 0) || math.IsInf(sum, 0) {
			return nil, fmt.Errorf("quantiles of Gamma(k=%v, θ=%v) sum to %v; cannot normalise", c.K, L/c.K, sum)
		}
		scale = L * float64(n) / sum
	}
	out := make([]int, n)
	for i, v := range q {
		out[i] = min(max(int(math.Round(v*scale)), lo), hi)
	}
	return out, nil
}
