package metrics

import (
	"strings"
	"testing"
)

// A lateness of the median step says that another attempt would read the same and that the
// cell was not measured again; a lateness of a few steps says the host was busy.
func TestOverrunNoteTellsSystematicFromIntermittent(t *testing.T) {
	every := (&Overrun{Steps: 100, Share: 2.05, P50: 5, P99: 5}).Note()
	few := (&Overrun{Steps: 100, Share: 0.05, P50: 0.001, P99: 2}).Note()
	if !strings.Contains(every, "the median step among them (one step's delay p50 500.0 %, p99 500.0 % of it; over 100 steps)") ||
		!strings.Contains(every, "another attempt would read the same (not measured again") {
		t.Fatalf("every step late: %q", every)
	}
	if !strings.Contains(few, "ran 5.0 % over their planned wall time in all (one step's delay p50 0.1 %, p99 200.0 % of it") ||
		!strings.Contains(few, "the host was busy") || strings.Contains(few, "not measured again") {
		t.Fatalf("a few steps late: %q", few)
	}
}
