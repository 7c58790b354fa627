// Package resultstest makes the results records the tests of host/report and host/compare
// share. host/results' own tests cannot import it (it imports host/results) and build theirs
// in place.
package resultstest

import (
	"time"

	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/results"
)

// Cell is a measured record (status ok) of cell index i at sequence length l and batch size b:
// every sequence counted, 100 completion tokens each, l prompt tokens each; per-forward
// latency fwd (mean, p50 and min; p90 and max 1 µs above), TTFT mean and p50 3 ms, p90 and
// max 4 ms; a valid full-batch window of 98 steps at fwd; realised lengths l/2 … 3l/2 with
// mean l; started 2026-11-30 10:00 UTC, 1.5 s elapsed.
func Cell(i, l, b int, fwd time.Duration) results.Cell {
	f := measure.Figures{Sequences: b, Counted: b, CompletionTokens: 100 * b, PromptTokens: l * b, HasPromptTokens: true,
		PerForward: measure.Summary{N: b, Mean: fwd, P50: fwd, P90: fwd + time.Microsecond, Min: fwd, Max: fwd + time.Microsecond},
		TTFT:       measure.Summary{N: b, Mean: 3 * time.Millisecond, P50: 3 * time.Millisecond, P90: 4 * time.Millisecond, Max: 4 * time.Millisecond},
		Window:     measure.Window{Valid: true, Steps: 98, PerStep: fwd}}
	return results.Cell{Cell: matrix.Cell{Index: i, SeqLen: l, Batch: b}, Status: results.StatusOK, Started: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC),
		Elapsed: results.Millis(1500 * time.Millisecond), Lengths: results.Lengths{Target: l, Min: l / 2, Mean: float64(l), Max: 3 * l / 2, Each: []int{l / 2, 3 * l / 2}}, Figures: &f}
}
