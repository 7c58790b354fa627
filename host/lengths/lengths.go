// Package lengths is the stage of a run that decides, from a matrix cell alone, how long each
// of its B prompts is and — when the cell is routed over several workers — which worker serves
// each. Both decisions are made by plugins (host/plugin's LengthsPlugin and RouterPlugin
// satisfy Lengths and Router); this package holds what the host adds around them, as plain
// functions of plain values: the range every length must lie in (the plugin is asked for
// lengths within it, and the host clamps again), the realised-mean check and its warning, and
// the early call over the run's cells that validates the plugin before any request is sent (and
// warms a "pure" plugin's cache).
//
// It imports no plugin runtime and no transport: tests fake both interfaces with a few lines.
package lengths

import (
	"context"
	"fmt"
	"math"

	"github.com/genload/genload/host/matrix"
)

// Lengths draws the prompt lengths of a cell: n lengths in tokens whose target mean is mean,
// each within [min, max]. host/plugin's *LengthsPlugin satisfies it; its errors name the
// plugin and the failing export.
type Lengths interface {
	Lengths(ctx context.Context, n, mean, min, max int) ([]int, error)
}

// Router assigns a cell's prompts to workers: given each prompt's length in tokens and the
// worker count W, one worker index in [0, W) per prompt. host/plugin's *RouterPlugin satisfies
// it; a stateful router (round robin) must see the calls of a run in the run's cell order.
type Router interface {
	Route(ctx context.Context, promptLens []int, workers int) ([]int, error)
}

// Realised is what the stage made of a cell's lengths: the plugin's draws and the lengths the
// prompts are built to after the host's clamp, with their statistics. Lengths are in tokens
// (chat template and suffix included); Mean is the arithmetic mean of Each.
type Realised struct {
	// Target is the cell's L; Requested the plugin's draws, in prompt order (a copy: Each is
	// clamped apart from it).
	Target    int
	Requested []int
	// Each is every prompt's length after clamping to [Lo, Hi]; Clamped counts the lengths at
	// Lo or Hi: the plugin is asked for lengths within [Lo, Hi] and clamps its draws to it
	// (sdk/ABI.md), so a length on a bound is a clamp, the plugin's or the host's (a draw that
	// falls exactly on a bound counts too).
	Each     []int
	Lo, Hi   int
	Min, Max int
	Mean     float64
	Clamped  int
}

// Stage draws and clamps the lengths of each cell. The zero Source is the legacy n shape's
// rule: every sequence continues the same prompt, of length L, and no plugin is asked.
type Stage struct {
	// Source draws the lengths (nil: every length is the cell's L).
	Source Lengths
	// Lo and Hi bound every prompt: Lo is the shortest prompt the builder can make (chat
	// template, suffix and one body token at least: [lengths.min_len]), Hi the context minus
	// max_tokens. Source is asked for lengths within [Lo, Hi] — the range of the ABI's
	// genload_lengths call, which the plugin host enforces (a length outside it is a bug in the
	// plugin and an error) — and clamped here again for a Source that does not check.
	Lo, Hi int
}

// Cell returns the cell's realised lengths: B draws from Source for target mean L within
// [Lo, Hi]. Errors are Source's, unchanged (they name the plugin).
func (s Stage) Cell(ctx context.Context, c matrix.Cell) (Realised, error) {
	var drawn []int
	if s.Source == nil {
		drawn = make([]int, c.Batch)
		for i := range drawn {
			drawn[i] = c.SeqLen
		}
	} else {
		var err error
		if drawn, err = s.Source.Lengths(ctx, c.Batch, c.SeqLen, s.Lo, s.Hi); err != nil {
			return Realised{}, err
		}
	}
	return Clamp(drawn, c.SeqLen, s.Lo, s.Hi), nil
}

// Clamp returns drawn clamped to [lo, hi] (drawn itself is left as it is) with its statistics
// against target mean L = target; Clamped counts the lengths on a bound. For drawn =
// [10, 50, 500, 200] in [50, 400]: Each = [50, 50, 400, 200], Clamped = 3, Min 50, Max 400,
// Mean 175.
func Clamp(drawn []int, target, lo, hi int) Realised {
	r := Realised{Target: target, Requested: drawn, Each: make([]int, len(drawn)), Lo: lo, Hi: hi, Min: math.MaxInt}
	sum := 0
	for i, l := range drawn {
		c := min(max(l, lo), hi)
		if c == lo || c == hi {
			r.Clamped++
		}
		r.Each[i] = c
		sum += c
		r.Min = min(r.Min, c)
		r.Max = max(r.Max, c)
	}
	if len(drawn) > 0 {
		r.Mean = float64(sum) / float64(len(drawn))
	}
	return r
}

// MeanTolerance is the largest relative gap |mean/L − 1| of a cell's realised mean length that
// passes without a warning: 1 %. Clamps alone do not warn: gamma's lowest quantiles often fall
// a few tokens below min_len, which moves the mean by far less.
const MeanTolerance = 0.01

// Warning says why a cell's realised mean length is off its target L by more than
// MeanTolerance ("" when it is not): the clamps when there were some, else the plugin's draws.
// For L = 1000 and a mean of 1030 with no clamp: "realised mean length 1030 is +3.0 % off
// L = 1000: the plugin's lengths average 1030".
func (r Realised) Warning() string {
	if r.Target <= 0 {
		return ""
	}
	dev := r.Mean/float64(r.Target) - 1
	if math.Abs(dev) <= MeanTolerance {
		return ""
	}
	why := fmt.Sprintf("the plugin's lengths average %.0f", r.Mean)
	if r.Clamped > 0 {
		why = fmt.Sprintf("%d of %d lengths clamped to [%d, %d]", r.Clamped, len(r.Each), r.Lo, r.Hi)
	}
	return fmt.Sprintf("realised mean length %.0f is %+.1f %% off L = %d: %s", r.Mean, 100*dev, r.Target, why)
}

// Prefetch asks the stage's Source once for each cell, with the range [Lo, Hi] the cells use,
// and returns the first failure as "cell L=…,B=…: <Source's error>". A run calls it before any
// request is sent, so that a "pure" plugin failing on any cell (a length out of range, a wrong
// count, a rejected cell) fails the run at once; the plugin host caches a pure plugin's
// answers, so the per-cell calls cost nothing after it. A nil Source is not called.
func (s Stage) Prefetch(ctx context.Context, cells []matrix.Cell) error {
	if s.Source == nil {
		return nil
	}
	for _, c := range cells {
		if _, err := s.Source.Lengths(ctx, c.Batch, c.SeqLen, s.Lo, s.Hi); err != nil {
			return fmt.Errorf("cell %s: %w", c.Key(), err)
		}
	}
	return nil
}

// Route asks r for the workers of the cell's prompts (lengths: the realised ones, in tokens)
// over workers W and checks the answer: one index per prompt, each in [0, W). Errors say which
// prompt and which worker.
func Route(ctx context.Context, r Router, lens []int, workers int) ([]int, error) {
	a, err := r.Route(ctx, lens, workers)
	if err != nil {
		return nil, err
	}
	if len(a) != len(lens) {
		return nil, fmt.Errorf("router returned %d workers for %d prompts", len(a), len(lens))
	}
	for i, w := range a {
		if w < 0 || w >= workers {
			return nil, fmt.Errorf("router sent prompt %d to worker %d, want [0, %d)", i, w, workers)
		}
	}
	return a, nil
}
