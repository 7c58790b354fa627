package compare

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/internal/resultstest"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/results"
)

const ms = time.Millisecond

// mkRun builds a run whose cells have the given mean per-forward latencies (resultstest.Cell sets
// PerForward.Mean and the valid full-occupancy window to the same value).
func mkRun(id string, maxTokens int, cells ...results.Cell) *results.Run {
	cfg := config.Default()
	cfg.MaxTokens = maxTokens
	return &results.Run{Header: results.Header{RunID: id, Model: "m", Config: cfg, Schema: results.Schema}, Cells: cells}
}

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

// threeRuns are three runs of cells A…D (common to all), E (missing from r3) and F (failed
// in r2). Per-forward means, ms:
//
//	cell          r1    r2    r3    mean  sample SD                         CV
//	A L=1000 B=1  1.0   1.1   0.9   1.0   √((0² + 0.1² + 0.1²)/2) = 0.1     10 %
//	B L=1000 B=8  2.0   2.0   2.0   2.0   0                                  0 %
//	C L=4000 B=1  1.0   1.02  0.98  1.0   √((0 + 0.02² + 0.02²)/2) = 0.02    2 %
//	D L=4000 B=8  4.0   5.0   6.0   5.0   √((1 + 0 + 1)/2) = 1              20 %
func threeRuns() []*results.Run {
	vals := [][4]float64{{1.0, 2.0, 1.0, 4.0}, {1.1, 2.0, 1.02, 5.0}, {0.9, 2.0, 0.98, 6.0}}
	var runs []*results.Run
	for i, v := range vals {
		cells := []results.Cell{
			resultstest.Cell(0, 1000, 1, time.Duration(v[0]*1e6)),
			resultstest.Cell(1, 1000, 8, time.Duration(v[1]*1e6)),
			resultstest.Cell(2, 4000, 1, time.Duration(v[2]*1e6)),
			resultstest.Cell(3, 4000, 8, time.Duration(v[3]*1e6)),
		}
		if i < 2 {
			cells = append(cells, resultstest.Cell(4, 8000, 1, 3*ms)) // E
		}
		f := resultstest.Cell(5, 8000, 8, 7*ms) // F
		if i == 1 {
			f.Status, f.Figures = results.StatusError, nil
		}
		cells = append(cells, f)
		runs = append(runs, mkRun([]string{"r1", "r2", "r3"}[i], 100, cells...))
	}
	return runs
}

func TestConsistentCVArithmetic(t *testing.T) {
	c, err := Consistent(threeRuns())
	if err != nil {
		t.Fatal(err)
	}
	wantCV := []struct {
		key      CellKey
		mean, sd time.Duration
		cv       float64
	}{
		{CellKey{1000, 1}, 1 * ms, 100 * time.Microsecond, 0.10},
		{CellKey{1000, 8}, 2 * ms, 0, 0},
		{CellKey{4000, 1}, 1 * ms, 20 * time.Microsecond, 0.02},
		{CellKey{4000, 8}, 5 * ms, 1 * ms, 0.20},
	}
	if len(c.Cells) != len(wantCV) {
		t.Fatalf("%d cells compared, want %d: %+v", len(c.Cells), len(wantCV), c.Cells)
	}
	for i, w := range wantCV {
		g := c.Cells[i]
		if g.CellKey != w.key || g.Mean != w.mean || g.SD != w.sd || !near(g.CV, w.cv, 1e-9) {
			t.Errorf("cell %d = %v mean %v sd %v cv %v; want %v %v %v %v", i, g.CellKey, g.Mean, g.SD, g.CV, w.key, w.mean, w.sd, w.cv)
		}
		// The window figure equals the per-forward one in resultstest.Cell, so its CV does too.
		if !near(g.WindowCV, w.cv, 1e-9) {
			t.Errorf("cell %v window CV %v, want %v", g.CellKey, g.WindowCV, w.cv)
		}
	}
	if d := c.Cells[3]; d.Min != 4*ms || d.Max != 6*ms || len(d.Runs) != 3 || d.Runs[1] != 5*ms {
		t.Errorf("D min/max/runs = %v %v %v", d.Min, d.Max, d.Runs)
	}
	// Sorted CVs 0, 0.02, 0.10, 0.20: median (0.02 + 0.10)/2 = 0.06, nearest-rank
	// P90 x[⌈3.6⌉−1] = x[3] = 0.20; ≤ 5 %: 0 and 0.02; ≤ 10 %: also 0.10.
	if !near(c.MedianCV, 0.06, 1e-9) || !near(c.P90CV, 0.20, 1e-9) || !near(c.MaxCV, 0.20, 1e-9) || c.MaxCell != (CellKey{4000, 8}) {
		t.Errorf("median %v p90 %v max %v at %v", c.MedianCV, c.P90CV, c.MaxCV, c.MaxCell)
	}
	if c.Within5 != 2 || c.Within10 != 3 {
		t.Errorf("within 5 %% = %d, within 10 %% = %d; want 2, 3", c.Within5, c.Within10)
	}
	// Whole-run figures over A…D: means (1+2+1+4)/4 = 2.0, (1.1+2+1.02+5)/4 = 2.28,
	// (0.9+2+0.98+6)/4 = 2.47 → span 2.47/2.0 − 1 = 0.235; medians (the middle two of 4)
	// (1+2)/2 = 1.5, (1.1+2)/2 = 1.55, (0.98+2)/2 = 1.49 → span 1.55/1.49 − 1 = 0.040268.
	wantMean := []time.Duration{2 * ms, 2280 * time.Microsecond, 2470 * time.Microsecond}
	wantMedian := []time.Duration{1500 * time.Microsecond, 1550 * time.Microsecond, 1490 * time.Microsecond}
	for i := range wantMean {
		if c.RunMean[i] != wantMean[i] || c.RunMedian[i] != wantMedian[i] {
			t.Errorf("run %d mean %v median %v; want %v %v", i, c.RunMean[i], c.RunMedian[i], wantMean[i], wantMedian[i])
		}
	}
	if !near(c.MeanSpan, 0.235, 1e-9) || !near(c.MedianSpan, 1.55/1.49-1, 1e-9) {
		t.Errorf("spans %v %v", c.MeanSpan, c.MedianSpan)
	}
	wantLeft := []LeftOut{{CellKey{8000, 1}, "missing from r3"}, {CellKey{8000, 8}, "status error in r2"}}
	if len(c.LeftOut) != 2 || c.LeftOut[0] != wantLeft[0] || c.LeftOut[1] != wantLeft[1] {
		t.Errorf("left out %+v, want %+v", c.LeftOut, wantLeft)
	}
	if len(c.Warnings) != 0 {
		t.Errorf("warnings %v", c.Warnings)
	}
	for _, tc := range []struct {
		stat string
		want float64
	}{{"max", 0.20}, {"p90", 0.20}, {"median", 0.06}} {
		if v, err := c.Stat(tc.stat); err != nil || !near(v, tc.want, 1e-9) {
			t.Errorf("Stat(%q) = %v, %v; want %v", tc.stat, v, err, tc.want)
		}
	}
	if _, err := c.Stat("mean"); err == nil {
		t.Error("Stat(mean): no error")
	}

	var b bytes.Buffer
	c.WriteMarkdown(&b)
	out := b.String()
	for _, want := range []string{
		"| 4000 | 8 |       5.000 | 1.000 | 4.000 | 6.000 | 20.00 |",
		"median 6.00 %, P90 20.00 %, max 20.00 % (L=4000,B=8)",
		"across 4 common cells (2 left out)",
		"cells with CV ≤ 5 %: 2/4; CV ≤ 10 %: 3/4",
		"2.000, 2.280, 2.470; span 23.50 %",
		"left out L=8000,B=1: missing from r3",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
}

func TestConsistentErrorsAndWarnings(t *testing.T) {
	runs := threeRuns()
	if _, err := Consistent(runs[:1]); err == nil || !strings.Contains(err.Error(), "at least 2 runs") {
		t.Errorf("one run: %v", err)
	}
	disjoint := []*results.Run{mkRun("a", 100, resultstest.Cell(0, 1000, 1, ms)), mkRun("b", 100, resultstest.Cell(0, 2000, 1, ms))}
	if _, err := Consistent(disjoint); err == nil || !strings.Contains(err.Error(), "2 cells left out") {
		t.Errorf("disjoint runs: %v", err)
	}
	// A different max_tokens is measured anyway but warned about.
	diff := []*results.Run{mkRun("a", 100, resultstest.Cell(0, 1000, 1, ms)), mkRun("b", 50, resultstest.Cell(0, 1000, 1, ms))}
	c, err := Consistent(diff)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 1 || c.Warnings[0] != "the runs differ in max_tokens: 100 / 50" {
		t.Errorf("warnings %q", c.Warnings)
	}
	// An invalid window in one run makes the window CV undefined, not zero.
	r := threeRuns()
	r[2].Cells[0].Figures.Window = measure.Window{Reason: "x"}
	if c, _ := Consistent(r); !math.IsNaN(c.Cells[0].WindowCV) {
		t.Errorf("window CV with an invalid window = %v, want NaN", c.Cells[0].WindowCV)
	}
}

// TestConsistentMergesHistograms: the per-forward HDR histograms of the runs merge into one
// distribution per cell; its percentiles stay inside the exact [min, max] of all samples.
func TestConsistentMergesHistograms(t *testing.T) {
	runs := threeRuns()
	samples := [][]time.Duration{{1 * ms, 1 * ms}, {1100 * time.Microsecond}, {900 * time.Microsecond}}
	for i, r := range runs {
		for j := range r.Cells {
			if r.Cells[j].Figures == nil {
				continue
			}
			h := measure.NewHistograms()
			for _, s := range samples[i] {
				h.PerForward.Record(s)
			}
			r.Cells[j].Figures.Hist = h
		}
	}
	c, err := Consistent(runs)
	if err != nil {
		t.Fatal(err)
	}
	m := c.Cells[0].Merged
	if m == nil {
		t.Fatal("no merged summary")
	}
	// 4 samples 0.9, 1.0, 1.0, 1.1 ms: exact mean 1.0 ms, min 0.9, max 1.1. HDR's P50 is rank
	// ⌊0.5·4 + 0.5⌋ = 2 → 1.0 ms within HDR's 0.1 %; P99 rank 4 → 1.1 ms, clamped to the max.
	if m.N != 4 || m.Mean != ms || m.Min != 900*time.Microsecond || m.Max != 1100*time.Microsecond || m.P99 != m.Max {
		t.Errorf("merged = %+v", *m)
	}
	if !near(float64(m.P50), float64(ms), 1e-3*float64(ms)) {
		t.Errorf("merged P50 = %v, want 1 ms ± 0.1 %%", m.P50)
	}
	// One run without histograms: no merged figure rather than a partial one.
	runs[1].Cells[0].Figures.Hist = nil
	if c, _ := Consistent(runs); c.Cells[0].Merged != nil {
		t.Errorf("merged without all runs' histograms: %+v", *c.Cells[0].Merged)
	}
}
