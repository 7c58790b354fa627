package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/lengths"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/plan"
	"github.com/genload/genload/host/plugin"
	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/scrape"
	"github.com/genload/genload/host/sse"
	"github.com/genload/genload/host/warning"
)

// The stages of a cell, each faked: a lengths plugin, a router, a prompt builder, a dispatcher
// that answers with a canned recording, and a /metrics watcher. No server is started.

type fakeLengths []int

func (f fakeLengths) Lengths(context.Context, int, int, int, int) ([]int, error) {
	return slices.Clone(f), nil
}

// splitRouter sends prompt i to worker i mod 2 and keeps what it was told.
type splitRouter struct {
	routes [][]int
	done   [][]plugin.Completion
}

func (r *splitRouter) Route(_ context.Context, lens []int, workers int) ([]int, error) {
	r.routes = append(r.routes, slices.Clone(lens))
	out := make([]int, len(lens))
	for i := range out {
		out[i] = i % workers
	}
	return out, nil
}

func (r *splitRouter) Complete(_ context.Context, done []plugin.Completion) error {
	r.done = append(r.done, done)
	return nil
}

var (
	_ lengths.Router = (*splitRouter)(nil)
	_ Completer      = (*splitRouter)(nil)
)

// fixedPrompts makes prompt i of length l: l ids, all i.
type fixedPrompts struct{}

func (fixedPrompts) Prompts(_ context.Context, _ matrix.Cell, lens []int, one bool) ([][]int32, []string, []int, error) {
	if one {
		lens = lens[:1]
	}
	ids := make([][]int32, len(lens))
	for i, l := range lens {
		ids[i] = slices.Repeat([]int32{int32(i)}, l)
	}
	return ids, nil, slices.Clone(lens), nil
}

// canned is a dispatcher that records the plans it was given and answers each with rec(plan).
type canned struct {
	plans []*plan.Plan
	rec   func(p *plan.Plan) *recording.Result
}

func (d *canned) Do(_ context.Context, p *plan.Plan) (*recording.Result, error) {
	d.plans = append(d.plans, p)
	return d.rec(p), nil
}

var _ Dispatcher = (*canned)(nil)

// lockstep is the recording of a plan whose B sequences all decode together: every sequence's
// first token at ttft, then one token every step until max_tokens, usage exact (the prompt's
// built length and max_tokens per sequence); each request's usage is its sequences' sum.
func lockstep(p *plan.Plan, ttft, step time.Duration) *recording.Result {
	res := &recording.Result{Mode: p.Shape, MaxTokens: p.MaxTokens, Start: time.Unix(0, 0)}
	for ri, q := range p.Requests {
		rq := recording.Request{Worker: q.Worker, Prompts: q.Prompts, Attempts: 1, Status: 200, Done: true, HasUsage: true,
			Header: ttft / 2, End: ttft + time.Duration(p.MaxTokens-1)*step}
		for k := range q.Sequences() {
			var marks []sse.Mark
			for j := range p.MaxTokens {
				marks = append(marks, sse.Mark{At: ttft + time.Duration(j)*step, Text: 3, Tokens: 1})
			}
			prompt := q.Prompts[k/q.N]
			s := sse.Sequence{Index: k, Marks: sse.MarksOf(marks...), Chunks: p.MaxTokens, TextBytes: 3 * p.MaxTokens,
				Finished: true, FinishReason: "length", FinishAt: rq.End, CompletionTokens: p.MaxTokens, TokenSource: sse.TokensChoiceUsage,
				Usage: sse.Usage{PromptTokens: p.Built[prompt], CompletionTokens: p.MaxTokens}, HasUsage: true}
			res.Sequences = append(res.Sequences, recording.Sequence{Sequence: s, Prompt: prompt, Request: ri})
			rq.Usage.PromptTokens += p.Built[prompt]
			rq.Usage.CompletionTokens += p.MaxTokens
		}
		if q.N > 1 { // n > 1: the prompt is counted once
			rq.Usage.PromptTokens = p.Built[q.Prompts[0]]
		}
		res.Requests = append(res.Requests, rq)
	}
	return res
}

func fakeCfg(t *testing.T, mode string) *config.Config {
	return probeCfg(t, "target = \"http://127.0.0.1:1\"\nmode = \""+mode+"\"\nmax_tokens = 16\nmetrics = \"off\"\n[matrix]\nseq_lens = [100]\nbatch_sizes = [4]\n")
}

// A cell through every stage with fakes: the plan carries the clamped lengths and the router's
// workers, the warmup goes first with max_tokens 1 and the same requests, and the figures are
// the recording's: one token every 2 ms is a forward pass of 2 ms.
func TestCellStagesWithFakes(t *testing.T) {
	cfg := fakeCfg(t, "routed")
	r := &splitRouter{}
	d := &canned{rec: func(p *plan.Plan) *recording.Result { return lockstep(p, 20*time.Millisecond, 2*time.Millisecond) }}
	cr := &cellRunner{cfg: cfg, client: d, router: r, stages: plan.Stages{Shape: recording.ModeRouted,
		Lengths: lengths.Stage{Source: fakeLengths{60, 100, 100, 160}, Lo: 80, Hi: 150}, Prompts: fixedPrompts{}, Router: r, Workers: 2, MaxTokens: 16}}
	c := matrix.Cell{Index: 0, SeqLen: 100, Batch: 4}
	rec, err := cr.measure(context.Background(), c)
	if err != nil {
		t.Fatalf("%v (%+v)", err, rec)
	}
	// 60 → 80 and 160 → 150: mean (80+100+100+150)/4 = 107.5, +7.5 % off L
	if !slices.Equal(rec.Lengths.Each, []int{80, 100, 100, 150}) || rec.Lengths.Clamped != 2 || rec.Lengths.Mean != 107.5 {
		t.Fatalf("lengths %+v", rec.Lengths)
	}
	if !strings.Contains(strings.Join(rec.Warnings, "\n"), "realised mean length 108 is +7.5 % off L = 100: 2 of 4 lengths clamped to [80, 150]") {
		t.Errorf("warnings:\n%s", strings.Join(rec.Warnings, "\n"))
	}
	if !slices.Equal(rec.Workers, []int{0, 1, 0, 1}) || len(r.routes) != 1 || !slices.Equal(r.routes[0], rec.Lengths.Each) {
		t.Fatalf("workers %v, router asked %v", rec.Workers, r.routes)
	}
	if len(d.plans) != 2 || !d.plans[0].Warmup || d.plans[0].MaxTokens != 1 || d.plans[1].Warmup || d.plans[1].MaxTokens != 16 ||
		!slices.Equal(d.plans[0].Workers, d.plans[1].Workers) {
		t.Fatalf("plans sent: %d, warmup %+v", len(d.plans), d.plans[0])
	}
	// the router heard of the four requests: worker, prompt length, 16 tokens each
	if len(r.done) != 1 || len(r.done[0]) != 4 || r.done[0][3] != (plugin.Completion{Worker: 1, PromptLen: 150, CompletionTokens: 16}) {
		t.Fatalf("completions %+v", r.done)
	}
	if rec.Status != results.StatusOK || rec.Figures == nil || rec.Figures.PerForward.Mean != 2*time.Millisecond {
		t.Fatalf("status %s, figures %+v", rec.Status, rec.Figures)
	}
	// routed over two workers: no full-batch window
	if rec.Figures.Window.Valid || !strings.Contains(rec.Figures.Window.Reason, "routed over 2 workers") {
		t.Errorf("window %+v", rec.Figures.Window)
	}
}

// The legacy n shape is data in the plan: one prompt, one request with n = B, no plugin asked.
func TestCellNShapeIsOnePromptWithN(t *testing.T) {
	cfg := fakeCfg(t, "n")
	d := &canned{rec: func(p *plan.Plan) *recording.Result { return lockstep(p, 20*time.Millisecond, 2*time.Millisecond) }}
	cr := &cellRunner{cfg: cfg, client: d, stages: plan.Stages{Shape: recording.ModeN,
		Lengths: lengths.Stage{Lo: 80, Hi: 150}, Prompts: fixedPrompts{}, MaxTokens: 16}}
	rec, err := cr.measure(context.Background(), matrix.Cell{SeqLen: 100, Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	p := d.plans[1]
	if len(p.IDs) != 1 || len(p.Requests) != 1 || p.Requests[0].N != 4 || !slices.Equal(rec.Lengths.Each, []int{100, 100, 100, 100}) {
		t.Fatalf("plan %d prompts, requests %+v, lengths %v", len(p.IDs), p.Requests, rec.Lengths.Each)
	}
	if rec.Figures.Sequences != 4 || rec.Figures.PerForward.Mean != 2*time.Millisecond {
		t.Fatalf("figures: %d sequences, fwd %v", rec.Figures.Sequences, rec.Figures.PerForward.Mean)
	}
}

// A recording kept on disk (JSON) replays through the run's measure stage into the figures of
// the live one, and a failed request in it fails the cell with the target's exit code.
func TestRecordingReplaysThroughMeasure(t *testing.T) {
	cfg := fakeCfg(t, "array")
	stages := plan.Stages{Shape: recording.ModeArray, Lengths: lengths.Stage{Source: fakeLengths{100, 100, 100, 100}, Lo: 80, Hi: 150},
		Prompts: fixedPrompts{}, MaxTokens: 16}
	live := &canned{rec: func(p *plan.Plan) *recording.Result { return lockstep(p, 30*time.Millisecond, 3*time.Millisecond) }}
	want, err := (&cellRunner{cfg: cfg, client: live, stages: stages}).measure(context.Background(), matrix.Cell{SeqLen: 100, Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	disk, err := json.Marshal(live.rec(live.plans[1]))
	if err != nil {
		t.Fatal(err)
	}
	replayed := &canned{rec: func(p *plan.Plan) *recording.Result {
		var r recording.Result
		if err := json.Unmarshal(disk, &r); err != nil {
			t.Fatal(err)
		}
		return &r
	}}
	got, err := (&cellRunner{cfg: cfg, client: replayed, stages: stages}).measure(context.Background(), matrix.Cell{SeqLen: 100, Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	gj, _ := json.Marshal(got.Figures)
	wj, _ := json.Marshal(want.Figures)
	if string(gj) != string(wj) || got.Figures.PerForward.Mean != 3*time.Millisecond {
		t.Fatalf("replayed figures differ:\n got %s\nwant %s", gj, wj)
	}

	failed := &canned{rec: func(p *plan.Plan) *recording.Result {
		r := lockstep(p, 30*time.Millisecond, 3*time.Millisecond)
		if !p.Warmup {
			re := &recording.RequestError{Kind: recording.KindHTTP, URL: "http://x/v1/completions", Status: 500, Message: "boom"}
			r.Requests[0].Err, r.Requests[0].Error = re, re.Error()
		}
		return r
	}}
	rec, err := (&cellRunner{cfg: cfg, client: failed, stages: stages}).measure(context.Background(), matrix.Cell{SeqLen: 100, Batch: 4})
	if exitcode.Of(err) != exitcode.TargetFailed || rec.Status != results.StatusError || !strings.Contains(rec.Error, "status 500: boom") {
		t.Fatalf("err %v (code %v), record %s %q", err, exitcode.Of(err), rec.Status, rec.Error)
	}
}

// A failing lengths plugin is the plugin's failure (exit code), before anything is sent.
func TestCellLengthsFailureSendsNothing(t *testing.T) {
	d := &canned{}
	cr := &cellRunner{cfg: fakeCfg(t, "array"), client: d, stages: plan.Stages{Lengths: lengths.Stage{Source: errLengths{}, Lo: 1, Hi: 10}, Prompts: fixedPrompts{}}}
	_, err := cr.measure(context.Background(), matrix.Cell{SeqLen: 5, Batch: 1})
	if exitcode.Of(err) != exitcode.PluginRejected || len(d.plans) != 0 {
		t.Fatalf("err %v (code %v), %d plans sent", err, exitcode.Of(err), len(d.plans))
	}
}

type errLengths struct{}

func (errLengths) Lengths(context.Context, int, int, int, int) ([]int, error) {
	return nil, errors.New("plugin says no")
}

// A watcher's metrics land in the record; a failed scrape is a warning, not a failed cell.
type fakeWatcher struct{ begun, ended int }

func (w *fakeWatcher) Begin(context.Context) error { w.begun++; return nil }
func (w *fakeWatcher) EndRouted(_ context.Context, b int, _ []int) (scrape.CellMetrics, error) {
	w.ended++
	return scrape.CellMetrics{}, errors.New("GET /metrics: status 503")
}

func TestCellWatcherAroundTheMeasuredRequests(t *testing.T) {
	w := &fakeWatcher{}
	d := &canned{rec: func(p *plan.Plan) *recording.Result { return lockstep(p, 20*time.Millisecond, 2*time.Millisecond) }}
	cr := &cellRunner{cfg: fakeCfg(t, "array"), client: d, watcher: w, stages: plan.Stages{Lengths: lengths.Stage{Lo: 1, Hi: 1000}, Prompts: fixedPrompts{}, MaxTokens: 16}}
	rec, err := cr.measure(context.Background(), matrix.Cell{SeqLen: 50, Batch: 2})
	if err != nil || w.begun != 1 || w.ended != 1 || rec.Server != nil || !slices.Contains(rec.Warnings, "metrics: GET /metrics: status 503") {
		t.Fatalf("err %v, begun %d ended %d, server %v, warnings %q", err, w.begun, w.ended, rec.Server, rec.Warnings)
	}
}

// memWriter keeps the records written.
type memWriter struct{ cells []results.Cell }

func (w *memWriter) Cell(c results.Cell) error { w.cells = append(w.cells, c); return nil }

// failOn is a dispatcher whose measured requests (every one of them: a routed cell with one
// failed request is measured over the others) fail with HTTP 500 in the cells of length L in
// bad, and succeed in lockstep elsewhere.
func failOn(bad ...int) *canned {
	return &canned{rec: func(p *plan.Plan) *recording.Result {
		r := lockstep(p, 20*time.Millisecond, 2*time.Millisecond)
		if !p.Warmup && slices.Contains(bad, p.Cell.SeqLen) {
			re := &recording.RequestError{Kind: recording.KindHTTP, URL: "http://x/v1/completions", Status: 500, Message: "boom"}
			for i := range r.Requests {
				r.Requests[i].Err, r.Requests[i].Error = re, re.Error()
			}
		}
		return r
	}}
}

// The loop: cells measured by the run being resumed are skipped with their routing call
// repeated (a stateful router sees every cell in order); the first failed cell is written and
// ends the run.
func TestRunCellsSkipsResumedAndStopsAtAFailure(t *testing.T) {
	r := &splitRouter{}
	cells := []matrix.Cell{{Index: 0, SeqLen: 100, Batch: 2}, {Index: 1, SeqLen: 200, Batch: 2}, {Index: 2, SeqLen: 300, Batch: 2}, {Index: 3, SeqLen: 400, Batch: 2}}
	d := failOn(300)
	cr := &cellRunner{cfg: fakeCfg(t, "routed"), client: d, router: r, stages: plan.Stages{Shape: recording.ModeRouted,
		Lengths: lengths.Stage{Lo: 1, Hi: 1000}, Prompts: fixedPrompts{}, Router: r, Workers: 2, MaxTokens: 16}}
	w := &memWriter{}
	err := runCells(context.Background(), cr, cells, map[int]bool{0: true}, w, newProgress(io.Discard, false, cells, 16), false)
	if err == nil || exitcode.Of(err) != exitcode.TargetFailed || !strings.HasPrefix(err.Error(), "cell L=300,B=2: ") {
		t.Fatalf("err %v (code %v)", err, exitcode.Of(err))
	}
	// written: L=200 ok, L=300 error; L=400 never started. Routed: 100 (replayed), 200, 300.
	if len(w.cells) != 2 || w.cells[0].Status != results.StatusOK || w.cells[1].Status != results.StatusError || len(r.routes) != 3 || r.routes[0][0] != 100 {
		t.Fatalf("records %d (%v), router calls %v", len(w.cells), statuses(w.cells), r.routes)
	}
}

func statuses(cs []results.Cell) []string {
	var s []string
	for _, c := range cs {
		s = append(s, c.Cell.Key()+" "+c.Status)
	}
	return s
}

// [run] on_error = "continue": every cell is measured; the failed ones are written with their
// errors, and the run's error counts them, with the first failure's exit code.
func TestRunCellsKeepsGoing(t *testing.T) {
	cells := []matrix.Cell{{Index: 0, SeqLen: 100, Batch: 2}, {Index: 1, SeqLen: 200, Batch: 2}, {Index: 2, SeqLen: 300, Batch: 2}, {Index: 3, SeqLen: 400, Batch: 2}}
	cr := &cellRunner{cfg: fakeCfg(t, "array"), client: failOn(200, 300), stages: plan.Stages{Lengths: lengths.Stage{Lo: 1, Hi: 1000}, Prompts: fixedPrompts{}, MaxTokens: 16}}
	w := &memWriter{}
	err := runCells(context.Background(), cr, cells, nil, w, newProgress(io.Discard, false, cells, 16), true)
	if exitcode.Of(err) != exitcode.TargetFailed || !strings.HasPrefix(err.Error(), "2 of 4 cells failed ([run] on_error = \"continue\"):\ncell L=200,B=2: ") ||
		!strings.Contains(err.Error(), "\ncell L=300,B=2: ") {
		t.Fatalf("err %v (code %v)", err, exitcode.Of(err))
	}
	if got := statuses(w.cells); !slices.Equal(got, []string{"L=100,B=2 ok", "L=200,B=2 error", "L=300,B=2 error", "L=400,B=2 ok"}) {
		t.Fatalf("records %v", got)
	}
	if !strings.Contains(w.cells[1].Error, "status 500: boom") {
		t.Fatalf("the failed cell's error: %q", w.cells[1].Error)
	}
}

// A cell whose measured requests saturated the client says so first, and the record keeps the
// client's load; the same recording without it raises no such warning.
func TestCellSaysTheClientWasTheBottleneck(t *testing.T) {
	cfg := fakeCfg(t, "array")
	for _, busy := range []bool{false, true} {
		d := &canned{rec: func(p *plan.Plan) *recording.Result {
			res := lockstep(p, 20*time.Millisecond, 2*time.Millisecond)
			res.Client = recording.ClientLoad{CPU: 190 * time.Millisecond, Wall: 100 * time.Millisecond, Cores: 2, CPUShare: 0.95}
			if !busy {
				res.Client.CPU, res.Client.CPUShare = 20*time.Millisecond, 0.1
			}
			return res
		}}
		cr := &cellRunner{cfg: cfg, client: d, stages: plan.Stages{Shape: recording.ModeArray,
			Lengths: lengths.Stage{Source: fakeLengths{100, 100, 100, 100}, Lo: 80, Hi: 150}, Prompts: fixedPrompts{}, MaxTokens: 16}}
		rec, err := cr.measure(context.Background(), matrix.Cell{Index: 0, SeqLen: 100, Batch: 4})
		if err != nil {
			t.Fatal(err)
		}
		if rec.Client == nil || rec.Client.Cores != 2 {
			t.Fatalf("record's client load %+v, want the recording's", rec.Client)
		}
		said := len(rec.Warnings) > 0 && strings.HasPrefix(rec.Warnings[0], "the client was the bottleneck: genload's process used 95 % of its 2 cores")
		if said != busy {
			t.Fatalf("busy client %v, warnings:\n%s", busy, strings.Join(rec.Warnings, "\n"))
		}
	}
}

// A cell's record keeps the figures, not the recording they came from: once measure has
// returned, the recording (every request's marks and bodies) can be collected while the
// record lives on, as a run of many cells keeps every cell's record.
func TestTheRecordDoesNotKeepTheRecording(t *testing.T) {
	cfg := fakeCfg(t, "array")
	var held weak.Pointer[recording.Result]
	d := &canned{rec: func(p *plan.Plan) *recording.Result {
		res := lockstep(p, 20*time.Millisecond, 2*time.Millisecond)
		res.Client = recording.ClientLoad{CPU: 20 * time.Millisecond, Wall: 100 * time.Millisecond, Cores: 2, CPUShare: 0.1}
		held = weak.Make(res)
		return res
	}}
	cr := &cellRunner{cfg: cfg, client: d, stages: plan.Stages{Shape: recording.ModeArray,
		Lengths: lengths.Stage{Source: fakeLengths{100, 100, 100, 100}, Lo: 80, Hi: 150}, Prompts: fixedPrompts{}, MaxTokens: 16}}
	rec, err := cr.measure(context.Background(), matrix.Cell{Index: 0, SeqLen: 100, Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	if held.Value() != nil {
		t.Fatal("the recording is still reachable after measure returned")
	}
	if rec.Client == nil || rec.Client.CPU != 20*time.Millisecond || rec.Figures == nil {
		t.Fatalf("the record lost its client load %+v or figures", rec.Client)
	}
	runtime.KeepAlive(rec)
}

// A body write delays the first token only: a clean server's 0.5 ms of a 20 ms TTFT is said
// nowhere, a 2 ms one (10 %) is a note on TTFT, and neither claims the client limited the
// chunk timings.
func TestCellNotesASlowBodyWriteOnTTFTOnly(t *testing.T) {
	cfg := fakeCfg(t, "array")
	for _, tc := range []struct {
		write time.Duration
		want  string // "" = no note
	}{
		{500 * time.Microsecond, ""},
		{2 * time.Millisecond, "writing the body of request 0 took 2.0 ms, 10.0 % of the cell's TTFT p50 20.0 ms"},
	} {
		d := &canned{rec: func(p *plan.Plan) *recording.Result {
			res := lockstep(p, 20*time.Millisecond, 2*time.Millisecond)
			res.Client = recording.ClientLoad{WriteRequest: 0, Write: tc.write, WriteShare: float64(tc.write) / float64(20*time.Millisecond), Cores: 2, CPUShare: 0.1}
			return res
		}}
		cr := &cellRunner{cfg: cfg, client: d, stages: plan.Stages{Shape: recording.ModeArray,
			Lengths: lengths.Stage{Source: fakeLengths{100, 100, 100, 100}, Lo: 80, Hi: 150}, Prompts: fixedPrompts{}, MaxTokens: 16}}
		rec, err := cr.measure(context.Background(), matrix.Cell{Index: 0, SeqLen: 100, Batch: 4})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, nw := range rec.NamedWarnings() {
			if nw.Name == warning.SlowBodyWrite || nw.Name == warning.ClientBottleneck {
				got = append(got, string(nw.Name)+": "+nw.Text)
			}
		}
		if tc.want == "" && len(got) > 0 || tc.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], "slow-body-write: "+tc.want)) {
			t.Fatalf("write %v: client warnings %q, want %q", tc.write, got, tc.want)
		}
	}
}

// ctxWatcher fails its scrape with the context's error, as a scrape cut short by Ctrl-C does.
type ctxWatcher struct{}

func (ctxWatcher) Begin(context.Context) error { return nil }
func (ctxWatcher) EndRouted(ctx context.Context, _ int, _ []int) (scrape.CellMetrics, error) {
	return scrape.CellMetrics{}, fmt.Errorf("GET /metrics: %w", ctx.Err())
}

// A cell interrupted while it ran (Ctrl-C) gets no metrics-failed warning from the scrape the
// interrupt cut short: "context canceled" is the interrupt's, not the server's.
func TestInterruptedCellHasNoMetricsWarning(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := &canned{rec: func(p *plan.Plan) *recording.Result {
		if !p.Warmup {
			cancel()
		}
		return lockstep(p, 20*time.Millisecond, 2*time.Millisecond)
	}}
	cr := &cellRunner{cfg: fakeCfg(t, "array"), client: d, watcher: ctxWatcher{}, stages: plan.Stages{Lengths: lengths.Stage{Lo: 1, Hi: 1000}, Prompts: fixedPrompts{}, MaxTokens: 16}}
	rec, _ := cr.measure(ctx, matrix.Cell{SeqLen: 50, Batch: 2})
	for _, w := range rec.Warnings {
		if strings.HasPrefix(w, "metrics: ") {
			t.Errorf("interrupted cell warns %q", w)
		}
	}
}

// A cell is planned at the collector target planGCPercent unless the process's own is lower
// or off, and the process's target is back when planning returns.
func TestPlanningLowersTheCollectorTargetOnlyWhilePlanning(t *testing.T) {
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })
	for _, tc := range []struct{ process, during int }{
		{100, planGCPercent},
		{400, planGCPercent},
		{planGCPercent / 2, planGCPercent / 2},
		{-1, -1}, // GOGC=off
	} {
		debug.SetGCPercent(tc.process)
		during := 0
		planning(func() {
			during = debug.SetGCPercent(12345)
			debug.SetGCPercent(during)
		})
		if after := debug.SetGCPercent(tc.process); during != tc.during || after != tc.process {
			t.Errorf("process GOGC %d: %d while planning, %d after; want %d, %d", tc.process, during, after, tc.during, tc.process)
		}
	}
}
