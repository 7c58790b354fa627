package compare

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/internal/resultstest"
)

func TestCompareChanges(t *testing.T) {
	// Per-forward means, ms:   before  after   change = after/before − 1
	//   L=1000 B=1              1.0     1.1    +10 %
	//   L=1000 B=8              2.0     1.5    −25 %
	//   L=4000 B=1              4.0     4.0      0 %
	//   L=4000 B=8              –       3.0    (after only: left out)
	// TTFT p50 is 3 ms everywhere (resultstest.Cell) except after L=1000 B=8: 6 ms → +100 %.
	before := mkRun("before", 100, resultstest.Cell(0, 1000, 1, ms), resultstest.Cell(1, 1000, 8, 2*ms), resultstest.Cell(2, 4000, 1, 4*ms))
	b8 := resultstest.Cell(1, 1000, 8, 1500*time.Microsecond)
	b8.Figures.TTFT.P50 = 6 * ms
	after := mkRun("after", 100, resultstest.Cell(0, 1000, 1, 1100*time.Microsecond), b8, resultstest.Cell(2, 4000, 1, 4*ms), resultstest.Cell(3, 4000, 8, 3*ms))
	d, err := Compare(before, after)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		key        CellKey
		change     float64
		ttftChange float64
	}{{CellKey{1000, 1}, 0.10, 0}, {CellKey{1000, 8}, -0.25, 1.0}, {CellKey{4000, 1}, 0, 0}}
	if len(d.Cells) != len(want) {
		t.Fatalf("%d cells, want %d", len(d.Cells), len(want))
	}
	for i, w := range want {
		g := d.Cells[i]
		if g.CellKey != w.key || !near(g.Change, w.change, 1e-9) || !near(g.TTFTChange, w.ttftChange, 1e-9) {
			t.Errorf("cell %d = %v %+.4f ttft %+.4f; want %v %+.4f %+.4f", i, g.CellKey, g.Change, g.TTFTChange, w.key, w.change, w.ttftChange)
		}
	}
	// Sorted changes −0.25, 0, +0.10: median (nearest rank, x[⌈1.5⌉−1] = x[1]) 0, range −25…+10 %.
	if !near(d.Median, 0, 1e-12) || !near(d.Min, -0.25, 1e-9) || !near(d.Max, 0.10, 1e-9) {
		t.Errorf("median %v range %v…%v", d.Median, d.Min, d.Max)
	}
	// TTFT changes 0, 0, +1: median 0, range 0…+100 %.
	if d.TTFTMedian != 0 || d.TTFTMin != 0 || !near(d.TTFTMax, 1, 1e-12) {
		t.Errorf("TTFT median %v range %v…%v", d.TTFTMedian, d.TTFTMin, d.TTFTMax)
	}
	if len(d.LeftOut) != 1 || d.LeftOut[0] != (LeftOut{CellKey{4000, 8}, "missing from before"}) {
		t.Errorf("left out %+v", d.LeftOut)
	}
	var b bytes.Buffer
	d.WriteMarkdown(&b)
	for _, s := range []string{
		"| 1000 | 1 |         1.000 |        1.100 |  +10.00 |",
		"| 1000 | 8 |         2.000 |        1.500 |  -25.00 |             3.0 |            6.0 |  +100.00 |",
		"over 3 common cells (1 left out): median +0.00 %, range -25.00 … +10.00 %",
		"TTFT p50 change: median +0.00 %, range +0.00 … +100.00 %",
	} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("markdown lacks %q:\n%s", s, b.String())
		}
	}
}

func TestCompareNoCommonCellAndZeroTTFT(t *testing.T) {
	if _, err := Compare(mkRun("a", 100, resultstest.Cell(0, 1000, 1, ms)), mkRun("b", 100, resultstest.Cell(0, 1000, 2, ms))); err == nil {
		t.Error("no common cell: no error")
	}
	// A zero TTFT before has no defined change: NaN, and left out of the TTFT summary.
	a, b := resultstest.Cell(0, 1000, 1, ms), resultstest.Cell(0, 1000, 1, 2*ms)
	a.Figures.TTFT.P50 = 0
	d, err := Compare(mkRun("a", 100, a), mkRun("b", 100, b))
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(d.Cells[0].TTFTChange) || !math.IsNaN(d.TTFTMedian) || !near(d.Median, 1, 1e-12) {
		t.Errorf("ttft change %v median %v; fwd median %v", d.Cells[0].TTFTChange, d.TTFTMedian, d.Median)
	}
}
