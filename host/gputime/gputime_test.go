package gputime

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/internal/textcheck"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/results"
)

func cell(l, b int, status string, wall, warm, meas time.Duration) results.Cell {
	return results.Cell{Cell: matrix.Cell{SeqLen: l, Batch: b}, Status: status, Elapsed: results.Millis(wall),
		WarmupElapsed: results.Millis(warm), MeasuredElapsed: results.Millis(meas)}
}

func TestAccountSumsCellsAndRuns(t *testing.T) {
	// Two runs: one finished (footer 100 s) with cells of 30 s and 50 s, one killed (no
	// footer) with a cell of 20 s. With 8 GPUs: run wall 100 + 20 = 120 s = 120/3600 h × 8
	// = 0.26667 GPU-h; cells 100 s → 0.22222 GPU-h; warmups 6 + 10 + 4 = 20 s; measured
	// 20 + 35 + 14 = 69 s.
	a := &results.Run{Cells: []results.Cell{
		cell(1000, 1, results.StatusOK, 30*time.Second, 6*time.Second, 20*time.Second),
		cell(1000, 8, results.StatusOK, 50*time.Second, 10*time.Second, 35*time.Second)},
		Footer: &results.Footer{Elapsed: results.Millis(100 * time.Second)}}
	b := &results.Run{Cells: []results.Cell{cell(4000, 1, results.StatusOK, 20*time.Second, 4*time.Second, 14*time.Second)}}
	acc := Of([]*results.Run{a, b}, 8, "labels gpu_count")
	if acc.RunWall != 120*time.Second || acc.CellWall != 100*time.Second || acc.Warmup != 20*time.Second || acc.Measured != 69*time.Second || !acc.Split || len(acc.Cells) != 3 {
		t.Fatalf("account %+v", acc)
	}
	if h := acc.GPUHours(acc.RunWall); h < 0.266666 || h > 0.266667 {
		t.Errorf("run GPU-hours %.6f, want 0.266667", h)
	}
	var sb strings.Builder
	acc.WriteSummary(&sb)
	for _, want := range []string{"× 8 GPUs (labels gpu_count): 2 runs 2m0s wall = 0.2667 GPU-h; cells 1m40s = 0.2222 GPU-h",
		"warmups 20s = 0.0444 GPU-h (20.0 % of cells); measured requests 1m9s = 0.1533 GPU-h (69.0 %)"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, sb.String())
		}
	}
	// A record without the split (an older run) makes the split absent, with the reason;
	// failed cells never have it and do not count as missing.
	old := &results.Run{Cells: []results.Cell{cell(1000, 1, results.StatusOK, 30*time.Second, 0, 0),
		cell(1000, 2, results.StatusError, time.Second, 0, 0)}}
	acc = Of([]*results.Run{old}, 0, "")
	sb.Reset()
	acc.WriteSummary(&sb)
	if acc.Split || !strings.Contains(acc.SplitReason, "1 measured cell records have no warmup_ms/measured_ms") ||
		!strings.Contains(sb.String(), "per GPU (no gpu_count label)") || acc.GPUs != 1 {
		t.Errorf("account without split %+v\n%s", acc, sb.String())
	}
}

func TestGPUCount(t *testing.T) {
	for _, c := range []struct {
		v    any
		n    int
		ok   bool
		name string
	}{
		{int64(8), 8, true, "TOML integer"},
		{float64(4), 4, true, "JSON number"},
		{"2", 2, true, "string"},
		{2.5, 0, false, "fraction"},
		{int64(0), 0, false, "zero"},
		{nil, 0, false, "absent"},
	} {
		labels := map[string]any{}
		if c.v != nil {
			labels["gpu_count"] = c.v
		}
		if n, ok := GPUCount(labels); n != c.n || ok != c.ok {
			t.Errorf("%s: GPUCount = %d, %v; want %d, %v", c.name, n, ok, c.n, c.ok)
		}
	}
}

func TestBuiltinRunsSayTheirTimeScale(t *testing.T) {
	builtin := func(ts float64) *results.Run {
		return &results.Run{Header: results.Header{TargetKind: "builtin", Engine: map[string]any{"time_scale": ts}}}
	}
	external := &results.Run{Header: results.Header{TargetKind: "external"}}
	for _, c := range []struct {
		runs []*results.Run
		want float64
	}{
		{[]*results.Run{builtin(0.05), builtin(0.05)}, 0.05},
		{[]*results.Run{builtin(0.05), builtin(1)}, 0},
		{[]*results.Run{builtin(0.05), external}, 0},
		{[]*results.Run{external}, 0},
	} {
		if got := Of(c.runs, 1, "flag").TimeScale; got != c.want {
			t.Errorf("time scale %v, want %v", got, c.want)
		}
	}
	var b strings.Builder
	acc := Of([]*results.Run{builtin(0.05)}, 0, "")
	acc.RunWall = 18 * time.Minute
	acc.WriteSummary(&b)
	if !strings.Contains(b.String(), "×20 gives the simulated 6.0000 GPU-h of the run") {
		t.Errorf("summary lacks the simulated GPU time:\n%s", b.String())
	}
}

// Each row names its run and repeat, so that the rows of one cell can be told apart; at time
// scale 1 the summary says the wall-clock time is the simulated GPU time instead of "×1".
func TestRowsNameRunAndRepeatAndTimeScaleOne(t *testing.T) {
	c1, c2 := cell(1000, 1, results.StatusOK, 3*time.Second, time.Second, 2*time.Second), cell(1000, 1, results.StatusOK, 3*time.Second, time.Second, 2*time.Second)
	c1.Repeat, c2.Repeat = 1, 2
	r := &results.Run{Header: results.Header{RunID: "ucv", TargetKind: "builtin", Engine: map[string]any{"time_scale": 1.0}}, Cells: []results.Cell{c1, c2}}
	acc := Of([]*results.Run{r}, 0, "")
	if len(acc.Cells) != 2 || acc.Cells[0].RunID != "ucv" || acc.Cells[0].Repeat != 1 || acc.Cells[1].Repeat != 2 {
		t.Errorf("rows %+v", acc.Cells)
	}
	var sb strings.Builder
	acc.WriteSummary(&sb)
	if !strings.Contains(sb.String(), "(the built-in engine at time scale 1: its wall-clock times are the simulated GPU time)") || strings.Contains(sb.String(), "×1 gives") {
		t.Errorf("summary at time scale 1:\n%s", sb.String())
	}
	r.Header.Engine["time_scale"] = 0.05
	sb.Reset()
	Of([]*results.Run{r}, 0, "").WriteSummary(&sb)
	if !strings.Contains(sb.String(), "time scale 0.05: times are wall-clock; ×20 gives the simulated") {
		t.Errorf("summary at time scale 0.05:\n%s", sb.String())
	}
}

var update = flag.Bool("update", false, "rewrite testdata/golden from the current WriteSummary")

// The summary's text is pinned by a golden file: one run of the built-in engine at time scale
// 0.05, per GPU; five runs on 8 GPUs of a server, of days; a run without the split. Every
// line keeps within 120 columns. `go test ./host/gputime -run Golden -update` rewrites it.
func TestSummaryGolden(t *testing.T) {
	builtin := &results.Run{Header: results.Header{TargetKind: "builtin", Engine: map[string]any{"time_scale": 0.05}},
		Cells:  []results.Cell{cell(1000, 1, results.StatusOK, 30*time.Second, 6*time.Second, 20*time.Second)},
		Footer: &results.Footer{Elapsed: results.Millis(44371 * time.Millisecond)}}
	var runs []*results.Run
	for range 5 {
		runs = append(runs, &results.Run{Cells: []results.Cell{cell(64000, 64, results.StatusOK, 23*time.Hour+59*time.Minute+59*time.Second+999*time.Millisecond, 9*time.Hour, 14*time.Hour)},
			Footer: &results.Footer{Elapsed: results.Millis(99*time.Hour + 59*time.Minute + 59*time.Second + 999*time.Millisecond)}})
	}
	var old []results.Cell
	for i := range 1234 {
		old = append(old, cell(1000, i+1, results.StatusOK, time.Second, 0, 0))
	}
	var b strings.Builder
	Of([]*results.Run{builtin}, 0, "").WriteSummary(&b)
	Of(runs, 8, "labels gpu_count").WriteSummary(&b)
	Of([]*results.Run{{Cells: old}}, 8, "flag").WriteSummary(&b)
	textcheck.Golden(t, filepath.Join("testdata", "golden", "summary.txt"), []byte(b.String()), *update)
	if w := textcheck.Wider(b.String(), 120); len(w) > 0 {
		t.Errorf("lines wider than 120 columns: %q", w)
	}
}

// GPU hours print with 4 decimals, 1 from 100 on, and a time above 0 that would print as zero
// as "<0.0001".
func TestHoursNeverReadsZeroForSomeTime(t *testing.T) {
	for h, want := range map[float64]string{0: "0.0000", 0.00001: "<0.0001", 0.0123: "0.0123", 4000: "4000.0"} {
		if got := hours(h); got != want {
			t.Errorf("hours(%g) = %q, want %q", h, got, want)
		}
	}
}
