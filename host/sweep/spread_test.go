package sweep

import (
	"testing"
	"time"

	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/results"
)

// A point's spread over its measured cells: fwd 4, 1, 3 and 2 ms give min 1, median 2.5 (the
// two middle values' mean), max 4 ms; TTFT p50s 9, 5, 7 ms (one cell without TTFT) give 7 ms;
// a failed cell counts for neither.
func TestSpreadsOfAPoint(t *testing.T) {
	ms := time.Millisecond
	r := &results.Run{}
	for i, x := range [][2]time.Duration{{4 * ms, 9 * ms}, {1 * ms, 5 * ms}, {3 * ms, 0}, {2 * ms, 7 * ms}, {100 * ms, 100 * ms}} {
		c := results.Cell{Status: results.StatusOK, Figures: &measure.Figures{PerForward: measure.Summary{N: 3, Mean: x[0]}}}
		if x[1] > 0 {
			c.Figures.TTFT = measure.Summary{N: 2, P50: x[1]}
		}
		if i == 4 {
			c.Status = results.StatusError
		}
		r.Cells = append(r.Cells, c)
	}
	s, ttft := spreads(r)
	if s == nil || s.Min != results.Millis(ms) || s.Median != results.Millis(2500*time.Microsecond) || s.Max != results.Millis(4*ms) {
		t.Errorf("spread %+v, want 1, 2.5, 4 ms", s)
	}
	if ttft == nil || *ttft != results.Millis(7*ms) {
		t.Errorf("TTFT median %v, want 7 ms", ttft)
	}
}
