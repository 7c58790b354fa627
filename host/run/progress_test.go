package run

import (
	"bufio"
	"context"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/results"
)

// recordedCells reads testdata/eta-default-run.txt: "L B elapsed_ms" per cell, in run order,
// the cell times of a default `make bench` run (91 cells against the built-in engine, 106 s,
// 2 cores).
func recordedCells(t *testing.T) ([]matrix.Cell, []time.Duration) {
	t.Helper()
	f, err := os.Open("testdata/eta-default-run.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cells []matrix.Cell
	var times []time.Duration
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		l, _ := strconv.Atoi(fs[0])
		b, _ := strconv.Atoi(fs[1])
		ms, _ := strconv.ParseFloat(fs[2], 64)
		cells = append(cells, matrix.Cell{Index: len(cells), SeqLen: l, Batch: b})
		times = append(times, time.Duration(ms*float64(time.Millisecond)))
	}
	return cells, times
}

// etaErrors replays cells taking times on a simulated clock, asks for the time left every
// second (as the bar does), and returns the relative errors |estimate − truth| / truth of the
// estimates made after the first 10 % of the run, the truth being the run's end minus the
// instant of the estimate.
func etaErrors(cells []matrix.Cell, times []time.Duration) []float64 {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	clock := t0
	type est struct {
		at   time.Time
		left time.Duration
	}
	var log []est
	etaLog = func(at time.Time, left time.Duration, _ bool) { log = append(log, est{at, left}) }
	defer func() { etaLog = nil }()
	p := newProgressClock(io.Discard, false, cells, 100, func() time.Time { return clock }, 0)
	for i, c := range cells {
		end := clock.Add(times[i])
		for next := clock.Truncate(time.Second).Add(time.Second); next.Before(end); next = next.Add(time.Second) {
			clock = next
			p.mu.Lock()
			p.redraw(clock)
			p.mu.Unlock()
		}
		clock = end
		p.done(results.Cell{Cell: c, Status: results.StatusOK, Elapsed: results.Millis(times[i])})
	}
	total := clock.Sub(t0)
	var errs []float64
	for _, e := range log {
		truth := clock.Sub(e.at)
		if e.at.Sub(t0) < total/10 || truth <= 0 {
			continue
		}
		errs = append(errs, math.Abs(float64(e.left-truth))/float64(truth))
	}
	return errs
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// Over a recorded default run, the time left estimated every second after the first 10 % of
// the run is within 25 % of the truth in the median.
func TestETAErrorOverRecordedDefaultRun(t *testing.T) {
	cells, times := recordedCells(t)
	errs := etaErrors(cells, times)
	if len(errs) < 50 {
		t.Fatalf("only %d estimates after the first 10 %%", len(errs))
	}
	m := median(errs)
	s := slices.Clone(errs)
	slices.Sort(s)
	t.Logf("%d estimates: median absolute error %.1f %%, p90 %.1f %%", len(errs), 100*m, 100*s[len(s)*9/10])
	if m >= 0.25 {
		t.Errorf("median absolute error of the time left %.1f %%, want < 25 %%", 100*m)
	}
}

// The ETA's error over a live default run against the built-in engine (the 91 cells of
// bench.toml, about two minutes on 2 cores): every estimate the bar shows, once a second,
// logged with its instant; the truth is the end of the last cell. Run with
// GENLOAD_ETA_RUN=1 (it is too long for make test, which replays a recorded run instead).
func TestETAErrorOfLiveDefaultRun(t *testing.T) {
	if os.Getenv("GENLOAD_ETA_RUN") == "" {
		t.Skip("set GENLOAD_ETA_RUN=1 to run the default matrix live (about 2 minutes) and measure the ETA's error")
	}
	type est struct {
		at   time.Time
		left time.Duration
	}
	var mu sync.Mutex
	var log []est
	etaLog = func(at time.Time, left time.Duration, _ bool) {
		mu.Lock()
		log = append(log, est{at, left})
		mu.Unlock()
	}
	defer func() { etaLog = nil }()
	cfg := config.Default()
	cfg.Out = t.TempDir()
	start := time.Now()
	res, err := Run(context.Background(), cfg, Options{Stderr: io.Discard, Progress: true, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	last := res.Run.Cells[len(res.Run.Cells)-1]
	end := last.Started.Add(time.Duration(last.Elapsed))
	total := end.Sub(start)
	mu.Lock()
	defer mu.Unlock()
	var errs []float64
	for _, e := range log {
		truth := end.Sub(e.at)
		if e.at.Sub(start) < total/10 || truth <= 0 {
			continue
		}
		errs = append(errs, math.Abs(float64(e.left-truth))/float64(truth))
	}
	if len(errs) < 20 {
		t.Fatalf("only %d estimates after the first 10 %% of a %s run", len(errs), total)
	}
	s := slices.Clone(errs)
	slices.Sort(s)
	t.Logf("run %s, %d cells; %d estimates after the first 10 %%: median absolute error %.1f %%, p90 %.1f %%",
		total.Round(time.Second), len(res.Run.Cells), len(errs), 100*median(errs), 100*s[len(s)*9/10])
	if median(errs) >= 0.25 {
		t.Errorf("median absolute error of the time left %.1f %%, want < 25 %%", 100*median(errs))
	}
}

// Times made from known costs are fitted back exactly: T = 20 ms + 0.1 µs·m·B + 0.2 µs·B·L +
// 0.3 µs·B·L²/10⁴ over the default matrix's first two L (B = 1 … 64); a cost the data pull
// negative is held at 0 instead (non-negative least squares).
func TestCostModelRecoversKnownCosts(t *testing.T) {
	want := [4]float64{0.020, 1e-7, 2e-7, 3e-7}
	m := costModel{maxTokens: 100}
	for _, l := range []int{1000, 2000, 4000} {
		for _, b := range []int{1, 2, 4, 8, 16, 32, 64} {
			c := matrix.Cell{SeqLen: l, Batch: b}
			x := m.features(c)
			m.add(c, want[0]*x[0]+want[1]*x[1]+want[2]*x[2]+want[3]*x[3])
		}
	}
	got, ok := m.fit()
	if !ok {
		t.Fatal("no fit")
	}
	for k := range want {
		if math.Abs(got[k]-want[k]) > 1e-9*math.Max(want[k], 1e-3) {
			t.Errorf("c%d = %g, want %g", k, got[k], want[k])
		}
	}
	// Cell time falling with B (a faster server for larger batches, never a cost): the
	// least-squares c₁ would be negative; it is 0 and the rest fit the mean.
	n := costModel{maxTokens: 100}
	for _, b := range []int{1, 2, 4, 8} {
		n.add(matrix.Cell{SeqLen: 1000, Batch: b}, 1-0.01*float64(b))
	}
	got, ok = n.fit()
	if !ok {
		t.Fatal("no fit")
	}
	for k, v := range got {
		if v < 0 {
			t.Errorf("c%d = %g < 0", k, v)
		}
	}
}

// Cells skipped on resume take no time and are not evidence of cost: the time left after
// skipping 3 cells and measuring one in 2 s is that cell's rate over the weight left.
func TestSkippedCellsDoNotLowerTheETA(t *testing.T) {
	cells := []matrix.Cell{{SeqLen: 1000, Batch: 1}, {SeqLen: 1000, Batch: 1}, {SeqLen: 1000, Batch: 1}, {SeqLen: 1000, Batch: 1}, {SeqLen: 1000, Batch: 1}}
	clock := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	p := newProgressClock(io.Discard, false, cells, 100, func() time.Time { return clock }, 0)
	for _, c := range cells[:3] {
		p.skip(c)
	}
	clock = clock.Add(2 * time.Second)
	p.done(results.Cell{Cell: cells[3], Status: results.StatusOK})
	// One equal cell left, measured at 2 s each (the fallback: fewer than 3 cells timed).
	if left, fitted := p.left(clock); fitted || left != 2*time.Second {
		t.Errorf("left %v (fitted %v), want 2s from the fallback", left, fitted)
	}
}

// The bar never goes back: a cell ten times slower than the ones before raises the estimate of
// the time left, and the bar holds its place instead of falling from 50 % to a few.
func TestProgressBarNeverGoesBack(t *testing.T) {
	cells := make([]matrix.Cell, 6)
	for i := range cells {
		cells[i] = matrix.Cell{Index: i, SeqLen: 1000, Batch: 1}
	}
	clock := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var out strings.Builder
	p := newProgressClock(&out, true, cells, 100, func() time.Time { return clock }, 0)
	var seen []int
	step := func(d time.Duration, finish bool) {
		clock = clock.Add(d)
		if finish {
			p.done(results.Cell{Cell: cells[p.n], Status: results.StatusOK})
		} else {
			p.mu.Lock()
			p.redraw(clock)
			p.mu.Unlock()
		}
		seen = append(seen, p.shown)
	}
	for range 3 {
		step(time.Second, true)
	}
	for range 5 { // the fourth cell runs 10 s: the time left it implies rises every second
		step(2*time.Second, false)
	}
	step(0, true)
	step(time.Second, true)
	step(time.Second, true)
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] {
			t.Fatalf("the bar went back at step %d: %v", i, seen)
		}
	}
	if seen[2] != barScale/2 || seen[len(seen)-1] != barScale {
		t.Errorf("bar values %v: want %d after 3 of 6 equal cells and %d at the end", seen, barScale/2, barScale)
	}
}

// A resumed run says its skipped cells in one line per run of them, not one line each.
func TestSkippedCellsAreOneLine(t *testing.T) {
	cells := make([]matrix.Cell, 5)
	for i := range cells {
		cells[i] = matrix.Cell{Index: i, SeqLen: 1000, Batch: i + 1}
	}
	var out strings.Builder
	p := newProgressClock(&out, false, cells, 100, time.Now, 0)
	p.skip(cells[0])
	p.skip(cells[1])
	p.skip(cells[2])
	p.done(results.Cell{Cell: cells[3], Status: results.StatusOK})
	p.skip(cells[4])
	p.finish()
	got := out.String()
	if !strings.Contains(got, "[3/5] 3 cells measured before, skipped\n") || !strings.Contains(got, "[5/5] 1 cell measured before, skipped\n") ||
		strings.Count(got, "skipped") != 2 {
		t.Errorf("progress lines:\n%s", got)
	}
}
