package run

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/lengths"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/plan"
	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/scrape"
	"github.com/genload/genload/host/scrape/metrics"
	"github.com/genload/genload/host/warning"
)

// overrunWatcher answers each measured attempt's scrape with the next of its overruns (nil:
// no overrun record, as a server other than the built-in engine), and counts the scrapes.
// failFrom > 0 fails every scrape from that 1-based attempt on.
type overrunWatcher struct {
	overruns []*metrics.Overrun
	ended    int
	failFrom int
}

func (w *overrunWatcher) Begin(context.Context) error { return nil }
func (w *overrunWatcher) EndRouted(context.Context, int, []int) (scrape.CellMetrics, error) {
	o := w.overruns[min(w.ended, len(w.overruns)-1)]
	w.ended++
	if w.failFrom > 0 && w.ended >= w.failFrom {
		return scrape.CellMetrics{}, errors.New("GET /metrics: status 503")
	}
	return scrape.CellMetrics{Steps: metrics.Steps{Overrun: o}}, nil
}

// attemptSteps is a recording of p whose forward passes last step: each attempt is told apart by
// its fwd.
func attemptSteps(steps ...time.Duration) func(p *plan.Plan) *recording.Result {
	n := 0
	return func(p *plan.Plan) *recording.Result {
		if p.MaxTokens == 1 { // the warmup
			return lockstep(p, 20*time.Millisecond, time.Millisecond)
		}
		s := steps[min(n, len(steps)-1)]
		n++
		return lockstep(p, 20*time.Millisecond, s)
	}
}

func over(share float64) *metrics.Overrun { return &metrics.Overrun{Steps: 100, Share: share} }

// A cell whose built-in engine says its steps ran over the stated share is measured again, at
// most [run] remeasure_overrun times more: the figures are the first attempt within the share
// (or the last one), each discarded attempt's lateness is in the record and its warning, the
// warmup is sent once, and a server without an overrun record is measured once. Steps late
// at their median (a lateness every attempt would have) are not measured again.
func TestCellRemeasuredWhileTheEngineOverran(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name      string
		budget    int
		overruns  []*metrics.Overrun
		attempts  int     // measured requests sent
		fwdMs     float64 // the kept attempt's
		remeasure []float64
		overrun   bool // the engine-overrun warning stays (the last attempt was over)
	}{
		{"within the share at once", 2, []*metrics.Overrun{over(0.019)}, 1, 2, nil, false},
		{"over, then within", 2, []*metrics.Overrun{over(0.05), over(0.005)}, 2, 3, []float64{0.05}, false},
		{"over until the budget ends", 2, []*metrics.Overrun{over(0.05), over(0.06), over(0.07)}, 3, 4, []float64{0.05, 0.06}, true},
		{"never re-measured", 0, []*metrics.Overrun{over(0.05), over(0.005)}, 1, 2, nil, true},
		{"decode steps short", 1, []*metrics.Overrun{{Steps: 100, Share: 0.001, Decode: -0.03, HasDecode: true}, over(0)}, 2, 3, []float64{0.001}, false},
		{"no overrun record", 2, []*metrics.Overrun{nil}, 1, 2, nil, false},
		{"every step late", 2, []*metrics.Overrun{{Steps: 100, Share: 2.0, P50: 5}, over(0)}, 1, 2, nil, true},
		{"the median step within the share", 2, []*metrics.Overrun{{Steps: 100, Share: 0.05, P50: 0.02}, over(0)}, 2, 3, []float64{0.05}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fakeCfg(t, "array")
			cfg.Run.RemeasureOverrun = tc.budget
			w := &overrunWatcher{overruns: tc.overruns}
			d := &canned{rec: attemptSteps(2*ms, 3*ms, 4*ms)}
			cr := &cellRunner{cfg: cfg, client: d, watcher: w, stages: plan.Stages{Lengths: lengths.Stage{Lo: 1, Hi: 1000}, Prompts: fixedPrompts{}, MaxTokens: 16}}
			rec, err := cr.measure(context.Background(), matrix.Cell{SeqLen: 50, Batch: 2})
			if err != nil {
				t.Fatal(err)
			}
			warmups := 0
			for _, p := range d.plans {
				if p.MaxTokens == 1 {
					warmups++
				}
			}
			if warmups != 1 || len(d.plans)-warmups != tc.attempts || w.ended != tc.attempts {
				t.Fatalf("%d warmups, %d measured attempts, %d scrapes; want 1, %d, %d", warmups, len(d.plans)-warmups, w.ended, tc.attempts, tc.attempts)
			}
			if got := float64(rec.Figures.PerForward.Mean) / 1e6; got < tc.fwdMs-1e-9 || got > tc.fwdMs+1e-9 {
				t.Fatalf("fwd %.6f ms, want the kept attempt's %.0f ms", got, tc.fwdMs)
			}
			var shares []float64
			for _, r := range rec.Remeasured {
				shares = append(shares, r.Overrun.Share)
			}
			if !slices.Equal(shares, tc.remeasure) {
				t.Fatalf("remeasured shares %v, want %v", shares, tc.remeasure)
			}
			if got := rec.Server.Steps.Overrun; got != tc.overruns[min(tc.attempts, len(tc.overruns))-1] {
				t.Fatalf("kept overrun %+v, want the last attempt's", got)
			}
			names := rec.WarningNames
			if slices.Contains(names, warning.EngineRemeasured) != (len(tc.remeasure) > 0) || slices.Contains(names, warning.EngineOverrun) != tc.overrun {
				t.Fatalf("warnings %q", rec.Warnings)
			}
			if n := len(tc.remeasure); n > 0 {
				text := rec.Warnings[slices.Index(names, warning.EngineRemeasured)]
				if want := "these figures are of attempt " + string(rune('1'+n)) + " of " + string(rune('1'+n)); !strings.Contains(text, want) {
					t.Fatalf("warning %q lacks %q", text, want)
				}
				if tc.remeasure[0] > 0.02 && !strings.Contains(text, "in attempt 1 the built-in engine's steps ran 5.0 % over their planned wall time") ||
					tc.remeasure[0] <= 0.02 && !strings.Contains(text, "in attempt 1 the built-in engine's decode steps ran 3.0 % short of their plan") {
					t.Fatalf("warning %q does not say how the first attempt ran", text)
				}
			}
		})
	}
}

// The measured wall time of a re-measured cell is the sum of its attempts' (the GPU time it
// took), each discarded attempt's own in its entry; without a warmup, what the server had
// cached before the cell is the first attempt's, not the next one's (which finds its own
// prompts).
func TestCellRemeasuredKeepsTheTimeAndTheFirstCache(t *testing.T) {
	cfg := fakeCfg(t, "array")
	cfg.Warmup.Disabled = true
	w := &overrunWatcher{overruns: []*metrics.Overrun{over(0.05), over(0)}}
	cached := 0
	d := &canned{rec: func(p *plan.Plan) *recording.Result {
		res := lockstep(p, 20*time.Millisecond, time.Millisecond)
		time.Sleep(5 * time.Millisecond)
		for i := range res.Requests {
			q := &res.Requests[i]
			q.Usage.HasCached, q.Usage.CachedTokens = true, cached
		}
		cached = 100 // the second attempt finds the whole prompts cached
		return res
	}}
	cr := &cellRunner{cfg: cfg, client: d, watcher: w, stages: plan.Stages{Lengths: lengths.Stage{Lo: 1, Hi: 1000}, Prompts: fixedPrompts{}, MaxTokens: 16}}
	rec, err := cr.measure(context.Background(), matrix.Cell{SeqLen: 50, Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Remeasured) != 1 || rec.Remeasured[0].Measured < results.Millis(5*time.Millisecond) || !rec.Remeasured[0].Ended.After(rec.Started) ||
		rec.MeasuredElapsed < rec.Remeasured[0].Measured+results.Millis(5*time.Millisecond) {
		t.Fatalf("measured %v, remeasured %+v", rec.MeasuredElapsed, rec.Remeasured)
	}
	if rec.CacheBefore == nil || rec.CacheBefore.Cached != 0 || rec.WasCached() {
		t.Fatalf("cache before %+v: not the first attempt's", rec.CacheBefore)
	}
}

// A re-measured attempt whose scrape failed has no server figures: the record does not keep
// the discarded attempt's (it says the scrape failed, and that it was measured again).
func TestCellRemeasuredKeepsNoServerFiguresOfAnotherAttempt(t *testing.T) {
	cfg := fakeCfg(t, "array")
	w := &overrunWatcher{overruns: []*metrics.Overrun{over(0.05)}, failFrom: 2}
	d := &canned{rec: attemptSteps(2*time.Millisecond, 3*time.Millisecond)}
	cr := &cellRunner{cfg: cfg, client: d, watcher: w, stages: plan.Stages{Lengths: lengths.Stage{Lo: 1, Hi: 1000}, Prompts: fixedPrompts{}, MaxTokens: 16}}
	rec, err := cr.measure(context.Background(), matrix.Cell{SeqLen: 50, Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	if w.ended != 2 || len(rec.Remeasured) != 1 || rec.Server != nil || !slices.Contains(rec.Warnings, "metrics: GET /metrics: status 503") {
		t.Fatalf("%d scrapes, remeasured %+v, server %+v, warnings %q", w.ended, rec.Remeasured, rec.Server, rec.Warnings)
	}
}
