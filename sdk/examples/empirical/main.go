// Command empirical is an example genload length distribution a team would write: its config is
// a histogram of the prompt lengths seen in production, and each cell gets lengths of that shape
// rescaled to the cell's mean.
//
// Build and try it:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -ldflags="-s -w" \
//	    -o build/plugins/empirical.wasm ./sdk/examples/empirical
//	genload lengths --plugin empirical --mean 2000 --batch 16 \
//	    --set 'edges=[0,256,512,1024,2048,4096,8192]' --set 'counts=[120,340,280,150,80,30]'
//
// Config (the [lengths] table of bench.toml):
//
//	edges  = [0, 256, 512, 1024, 2048, 4096, 8192]  # bin edges in tokens, strictly ascending, >= 0
//	counts = [120, 340, 280, 150, 80, 30]           # prompts seen per bin, len(edges) − 1 values >= 0
//	mode   = "quantiles"                             # or "sample"
//
// The histogram is read as a piecewise-uniform density: bin j holds a fraction c_j / Σc of the
// prompts, spread evenly over [e_j, e_{j+1}). Its quantile function Q(p) is the inverse of the
// piecewise-linear CDF: find j with C_j ≤ p·Σc < C_{j+1} (C_j = Σ_{i<j} c_i), then
//
//	Q(p) = e_j + (p·Σc − C_j) / c_j · (e_{j+1} − e_j).
//
// For a cell of mean L and batch B the plugin takes B values
//
//	mode "quantiles": q_i = Q((i + 0.5) / B)                      (deterministic, evenly spaced)
//	mode "sample":    q_i = Q(u_i), u_i uniform on [0, 1) from a PCG seeded with the cell seed
//
// and rescales them to mean exactly L, x_i = q_i · L / q̄, so the cell keeps production's shape
// (ratios between lengths) at the benchmark's mean; then rounds half away from zero and clamps to
// [min, max]. Both modes depend only on the call's parameters (the seed is one), hence "pure".
package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/genload/genload/sdk"
	"github.com/genload/genload/sdk/lengths"
)

// config is the plugin's bench.toml table.
type config struct {
	// Edges are the histogram's bin edges in tokens, strictly ascending, >= 0. Required.
	Edges []float64 `json:"edges"`
	// Counts are the numbers of prompts per bin, len(Edges)−1 values >= 0 with a positive sum.
	// Required.
	Counts []float64 `json:"counts"`
	// Mode is "quantiles" (default) or "sample".
	Mode string `json:"mode"`
}

// histogram is a validated config with cumulative counts.
type histogram struct {
	edges, cum []float64 // cum[j] = Σ_{i<j} counts[i]; len(cum) = len(edges)
	sample     bool
}

// newHistogram validates c; errors name the key.
func newHistogram(c config) (*histogram, error) {
	if len(c.Edges) < 2 {
		return nil, fmt.Errorf("config: edges has %d values, want at least 2 (bin edges in tokens)", len(c.Edges))
	}
	if len(c.Counts) != len(c.Edges)-1 {
		return nil, fmt.Errorf("config: counts has %d values, want len(edges) − 1 = %d", len(c.Counts), len(c.Edges)-1)
	}
	h := &histogram{edges: c.Edges, cum: make([]float64, len(c.Edges))}
	for j, e := range c.Edges {
		if e < 0 || math.IsInf(e, 0) || math.IsNaN(e) || (j > 0 && e <= c.Edges[j-1]) {
			return nil, fmt.Errorf("config: edges[%d] = %v; edges must be finite, >= 0 and strictly ascending", j, e)
		}
	}
	for j, n := range c.Counts {
		if n < 0 || math.IsInf(n, 0) || math.IsNaN(n) {
			return nil, fmt.Errorf("config: counts[%d] = %v, want a finite count >= 0", j, n)
		}
		h.cum[j+1] = h.cum[j] + n
	}
	if h.cum[len(h.cum)-1] <= 0 {
		return nil, fmt.Errorf("config: counts sum to 0, want at least one prompt")
	}
	switch c.Mode {
	case "", "quantiles":
	case "sample":
		h.sample = true
	default:
		return nil, fmt.Errorf("config: mode = %q, want \"quantiles\" or \"sample\"", c.Mode)
	}
	return h, nil
}

// quantile is Q(p) of the package comment, p in [0, 1).
func (h *histogram) quantile(p float64) float64 {
	total := h.cum[len(h.cum)-1]
	target := p * total
	// The first bin whose cumulative end exceeds target; empty bins are skipped.
	j := sort.Search(len(h.cum)-1, func(j int) bool { return h.cum[j+1] > target })
	if j >= len(h.cum)-1 {
		return h.edges[len(h.edges)-1]
	}
	c := h.cum[j+1] - h.cum[j]
	return h.edges[j] + (target-h.cum[j])/c*(h.edges[j+1]-h.edges[j])
}

// lengths returns the cell's lengths (see the package comment).
func (h *histogram) lengths(c lengths.Call) ([]int, error) {
	if c.Mean < 1 || c.Min > c.Max {
		return nil, sdk.BadInput("cell mean = %d, [min, max] = [%d, %d]: want mean >= 1 and min <= max", c.Mean, c.Min, c.Max)
	}
	q := make([]float64, c.N)
	rng := rand.New(rand.NewPCG(c.Seed, 0x656d7069726963)) // "empiric"
	sum := 0.0
	for i := range q {
		p := (float64(i) + 0.5) / float64(c.N)
		if h.sample {
			p = rng.Float64()
		}
		q[i] = h.quantile(p)
		sum += q[i]
	}
	out := make([]int, c.N)
	if c.N == 0 {
		return out, nil
	}
	if sum <= 0 { // every value at edge 0: give every prompt the mean
		for i := range out {
			out[i] = min(max(c.Mean, c.Min), c.Max)
		}
		return out, nil
	}
	scale := float64(c.Mean) * float64(c.N) / sum
	for i, v := range q {
		out[i] = min(max(int(math.Round(v*scale)), c.Min), c.Max)
	}
	return out, nil
}

func init() {
	lengths.Register(sdk.Info{Name: "empirical", Version: "1.0.0", Caps: []string{sdk.CapPure}},
		func(env *sdk.Env) (lengths.Func, error) {
			var cfg config
			if err := env.Decode(&cfg); err != nil {
				return nil, err
			}
			h, err := newHistogram(cfg)
			if err != nil {
				return nil, sdk.BadInput("%w", err)
			}
			return h.lengths, nil
		})
}

// main is required by the Go toolchain and never runs in a c-shared module.
func main() {}
