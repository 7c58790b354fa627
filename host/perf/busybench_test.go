package perf

import (
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/scrape/metrics"
)

func benchCell(l, b int, fwd time.Duration, share float64) results.Cell {
	f := &measure.Figures{PerForward: measure.Summary{N: b, Mean: fwd}}
	c := results.Cell{Cell: matrix.Cell{SeqLen: l, Batch: b}, Status: results.StatusOK, Figures: f}
	if share >= 0 {
		c.Server = &metrics.CellMetrics{Steps: metrics.Steps{Overrun: &metrics.Overrun{Share: share, Steps: 100}}}
	}
	return c
}

func TestCheckBench(t *testing.T) {
	ms := func(v float64) time.Duration { return time.Duration(v * 1e6) }
	run := &results.Run{Cells: []results.Cell{
		benchCell(1000, 1, ms(0.30), 0.001), benchCell(1000, 2, ms(0.31), 0.004), benchCell(1000, 4, ms(0.33), 0.01),
		benchCell(2000, 1, ms(0.40), 0.001), benchCell(2000, 2, ms(0.41), 0.005),
	}}
	c := CheckBench(run, 0.02)
	if !c.OK() || c.Cells != 5 || c.Overrun != 5 || c.MaxAt != "L=1000 B=4" {
		t.Fatalf("monotonic, quiet run: %+v", c)
	}
	// a drop at L=2000 (cells out of order in the file), an overrun over the limit, a cell
	// without fwd and one without an overrun record
	run.Cells = append(run.Cells, benchCell(2000, 3, ms(0.405), 0.05), benchCell(1000, 8, ms(0.5), -1))
	run.Cells = append(run.Cells, results.Cell{Cell: matrix.Cell{SeqLen: 1000, Batch: 16}, Status: results.StatusError, Error: "boom"})
	c = CheckBench(run, 0.02)
	if c.OK() || len(c.Drops) != 1 || c.Over != 1 || c.Overrun != 6 || c.Cells != 7 || len(c.Missing) != 1 {
		t.Fatalf("check %+v", c)
	}
	if !strings.Contains(c.Drops[0], "L=2000: B=3 0.4050 ms < B=2 0.4100 ms (-1.22 %)") || c.MaxAt != "L=2000 B=3" {
		t.Fatalf("drops %q, max at %s", c.Drops, c.MaxAt)
	}
	// a cell measured again twice (its first attempt over, kept within), and one whose first
	// attempt was within the share (its decode steps ran short)
	again := benchCell(4000, 1, ms(0.4), 0.003)
	again.Remeasured = []results.Remeasured{{Overrun: metrics.Overrun{Share: 0.101}}, {Overrun: metrics.Overrun{Share: 0.024}}}
	short := benchCell(4000, 2, ms(0.41), 0.001)
	short.Remeasured = []results.Remeasured{{Overrun: metrics.Overrun{Share: 0.001, Decode: -0.03, HasDecode: true}}}
	run.Cells = append(run.Cells, again, short)
	c = CheckBench(run, 0.02)
	if c.Over != 1 || c.FirstOver != 2 || c.Discarded != 3 || len(c.Remeasured) != 2 || c.Remeasured[0] != "L=4000 B=1: 10.1 %, 2.4 %" {
		t.Fatalf("re-measured: %+v", c)
	}
	var b strings.Builder
	WriteBenchCheck(&b, c)
	for _, want := range []string{"busy-host bench: FAIL", "9 cells with fwd, 1 drops", "1 of 8 cells over (largest 5.00 % at L=2000 B=3); 1 cells without a record", "L=1000 B=16: boom",
		"measured again ([run] remeasure_overrun): 2 cells, 3 attempts discarded; 2 cells over the share in their first attempt"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("verdict lacks %q:\n%s", want, b.String())
		}
	}
}
