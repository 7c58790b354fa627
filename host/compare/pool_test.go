package compare

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/internal/resultstest"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/results"
)

// repeatsRun is a run with repeats (until_cv in its header): L=100 measured at 10, 11, 12 ms
// (TTFT p50 3, 4, 5 ms; each repeat's histogram holds its value twice), then a failed repeat
// 4; L=200 at 20, 24 ms, then a partial repeat 3 at 30 ms (left out of every figure).
func repeatsRun() *results.Run {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	rec := func(i, l, rep int, fwd, ttft float64) results.Cell {
		c := resultstest.Cell(i, l, 2, ms(fwd))
		c.Repeat = rep
		c.Figures.TTFT.P50 = ms(ttft)
		h := measure.NewHistogram()
		h.Record(ms(fwd))
		h.Record(ms(fwd))
		c.Figures.Hist = &measure.Histograms{PerForward: h}
		return c
	}
	failed := rec(0, 100, 4, 50, 3)
	failed.Status, failed.Error, failed.Figures = results.StatusError, "status 500", nil
	partial := rec(1, 200, 3, 30, 3)
	partial.Status = results.StatusPartial
	return &results.Run{Header: results.Header{RunID: "ucv", Config: config.Default(), UntilCV: &results.StoppingRule{TargetCV: 0.02, MinRepeats: 2, MaxRepeats: 4, Confidence: 0.9}},
		Cells: []results.Cell{rec(0, 100, 1, 10, 3), rec(1, 200, 1, 20, 3), rec(0, 100, 2, 11, 4), rec(1, 200, 2, 24, 3), rec(0, 100, 3, 12, 5), failed, partial}}
}

// Pool: a cell's figure is the mean of its measured repeats; failed and partial repeats are
// left out; the histograms are merged and the full-batch figure averaged.
func TestPoolRepeats(t *testing.T) {
	got, note := Pool(repeatsRun())
	a, b := got[CellKey{100, 2}], got[CellKey{200, 2}]
	if a == nil || b == nil || a.Status != results.StatusOK || b.Status != results.StatusOK {
		t.Fatalf("pooled %+v / %+v", a, b)
	}
	if f := a.Figures; f.PerForward.Mean != 11*time.Millisecond || f.PerForward.N != 6 || f.TTFT.P50 != 4*time.Millisecond ||
		!f.Window.Valid || f.Window.PerStep != 11*time.Millisecond || f.Hist == nil || f.Hist.PerForward.Count() != 6 {
		t.Fatalf("L=100 pooled figures %+v", f)
	}
	if p50 := a.Figures.Hist.PerForward.Summary().P50; math.Abs(float64(p50-11*time.Millisecond)) > 0.01*float64(time.Millisecond) {
		t.Errorf("merged p50 %v, want 11 ms (the 3rd of 10, 10, 11, 11, 12, 12)", p50)
	}
	if b.Figures.PerForward.Mean != 22*time.Millisecond {
		t.Errorf("L=200 pooled %v, want the mean of 20 and 24 ms (the partial repeat left out)", b.Figures.PerForward.Mean)
	}
	if want := "each cell's figure is the mean over its measured repeats (2 to 3 per cell; repeated until the CV's 90 % upper bound ≤ 2 %)"; note != want {
		t.Errorf("note %q, want %q", note, want)
	}
}

// The pooled figures are the repeats' means, not their medians: repeats at 10, 11 and 15 ms
// (TTFT p50 3, 4 and 8 ms) pool to 12 ms (TTFT 5 ms), where the median would be 11 (4).
func TestPoolIsTheMeanNotTheMedian(t *testing.T) {
	r := &results.Run{Header: results.Header{RunID: "skew", Config: config.Default()}}
	for i, x := range [][2]time.Duration{{10, 3}, {11, 4}, {15, 8}} {
		c := resultstest.Cell(0, 100, 2, x[0]*time.Millisecond)
		c.Repeat, c.Figures.TTFT.P50 = i+1, x[1]*time.Millisecond
		r.Cells = append(r.Cells, c)
	}
	got, _ := Pool(r)
	f := got[CellKey{100, 2}].Figures
	if f.PerForward.Mean != 12*time.Millisecond || f.TTFT.P50 != 5*time.Millisecond || f.Window.PerStep != 12*time.Millisecond {
		t.Errorf("pooled fwd %v, TTFT %v, window %v; want the means 12 ms, 5 ms, 12 ms", f.PerForward.Mean, f.TTFT.P50, f.Window.PerStep)
	}
}

// consistency, diff and the HTML report's sections compare a run with repeats by its cells'
// means over their measured repeats, not by each cell's last record, and say so: against a run
// at L=100 11.5 ms and L=200 22 ms, L=100 is (11, 11.5) ms — mean 11.25 ms, SD 0.5/√2 ms,
// CV 3.143 % — and L=200 (22, 22) ms, CV 0; the diff from the repeats is +4.55 % and 0 %.
func TestRepeatsComparedPooled(t *testing.T) {
	other := &results.Run{Header: results.Header{RunID: "once", Config: config.Default()},
		Cells: []results.Cell{resultstest.Cell(0, 100, 2, 11500*time.Microsecond), resultstest.Cell(1, 200, 2, 22*time.Millisecond)}}
	c, err := Consistent([]*results.Run{repeatsRun(), other})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Cells) != 2 || len(c.LeftOut) != 0 {
		t.Fatalf("cells %+v, left out %+v", c.Cells, c.LeftOut)
	}
	a, b := c.Cells[0], c.Cells[1]
	if wantCV := 0.5 / math.Sqrt2 / 11.25; a.Mean != 11250*time.Microsecond || math.Abs(a.CV-wantCV) > 1e-6 || b.CV != 0 || b.Mean != 22*time.Millisecond {
		t.Fatalf("L=100 %+v (want CV %.5f), L=200 %+v", a, wantCV, b)
	}
	var md strings.Builder
	c.WriteMarkdown(&md)
	if !strings.Contains(md.String(), "| 100 | 2 |      11.250 |") || !strings.Contains(md.String(), "3.14") ||
		!strings.Contains(md.String(), "pooled ucv: each cell's figure is the mean over its measured repeats (2 to 3 per cell") {
		t.Errorf("markdown:\n%s", md.String())
	}
	d, err := Compare(repeatsRun(), other)
	if err != nil {
		t.Fatal(err)
	}
	if x := d.Cells[0]; x.Before != 11*time.Millisecond || math.Abs(x.Change-(11.5/11-1)) > 1e-9 || x.TTFTBefore != 4*time.Millisecond || d.Cells[1].Change != 0 {
		t.Fatalf("diff %+v", d.Cells)
	}
	md.Reset()
	d.WriteMarkdown(&md)
	if !strings.Contains(md.String(), "+4.55") || !strings.Contains(md.String(), "pooled before (ucv): each cell") || strings.Contains(md.String(), "after (once)") {
		t.Errorf("diff markdown:\n%s", md.String())
	}
}

// The plot of a run with repeats has one point per cell, its pooled mean: L=100 11 ms and
// L=200 22 ms at B = 2.
func TestPlotPoolsRepeats(t *testing.T) {
	got := latencySeries(repeatsRun())
	if len(got) != 2 || len(got[0].xy) != 1 || got[0].xy[0].Y != 11 || len(got[1].xy) != 1 || got[1].xy[0].Y != 22 {
		t.Fatalf("series %+v", got)
	}
}
