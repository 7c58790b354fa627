package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/internal/logtest"
)

func TestChunkedPrefill(t *testing.T) {
	log := &logtest.LockedBuffer{}
	_, srv := newTestEngine(t, func(c *Config) { c.MaxNumBatchedTokens = 256; c.StepLog = log })
	post(t, srv.URL+"/v1/completions", `{"prompt":`+idList(1, 1000)+`,"max_tokens":3,"ignore_eos":true}`)
	var prefills []int
	for _, s := range parseSteps(t, log.String()) {
		prefills = append(prefills, s.prefill)
	}
	// 1000 prompt tokens under a 256-token budget: 256, 256, 256, 232, then 2 decode steps.
	if want := []int{256, 256, 256, 232, 0, 0}; !equalInts(prefills, want) {
		t.Errorf("prefill tokens per step %v, want %v", prefills, want)
	}
}

func TestPreemptionWhenKVFull(t *testing.T) {
	log := &logtest.LockedBuffer{}
	// 64 blocks × 16 = 1024 tokens of KV; two 400-token prompts generating 200 tokens each need
	// 2 × 600 = 1200 tokens, so one sequence is preempted and recomputed later.
	_, srv := newTestEngine(t, func(c *Config) {
		c.KVCacheTokens = 1024
		c.StepLog = log
		c.DisablePrefixCaching = true
	})
	// both prompts in one request so that they are admitted together
	_, b := post(t, srv.URL+"/v1/completions", `{"prompt":[`+idList(1, 400)+`,`+idList(1001, 400)+`],"max_tokens":200,"ignore_eos":true}`)
	var both completion
	json.Unmarshal(b, &both)
	if both.Usage.CompletionTokens != 400 || len(both.Choices) != 2 {
		t.Fatalf("usage %+v", both.Usage)
	}
	resp, _ := http.Get(srv.URL + "/metrics")
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(m), `vllm:num_preemptions_total{model_name="genload-sim",engine="0"} 0`) {
		t.Errorf("no preemption recorded")
	}
	// The recomputed sequence re-prefills prompt + generated tokens: some step after the first
	// token prefills more than 400 tokens.
	re := false
	for _, s := range parseSteps(t, log.String()) {
		if s.prefill > 400 {
			re = true
		}
	}
	if !re {
		t.Errorf("no recompute prefill in the step log:\n%s", log.String())
	}
	// Preemption does not change the generated tokens.
	_, single := newTestEngine(t, nil)
	_, b = post(t, single.URL+"/v1/completions", `{"prompt":`+idList(1, 400)+`,"max_tokens":200,"ignore_eos":true}`)
	var c completion
	json.Unmarshal(b, &c)
	if c.Choices[0].Text != both.Choices[0].Text {
		t.Errorf("text differs after preemption")
	}
}

func TestContinuousBatchingJoinsRunning(t *testing.T) {
	log := &logtest.LockedBuffer{}
	_, srv := newTestEngine(t, func(c *Config) { c.StepLog = log; c.TimeScale = 1; c.Profile = "dense-8b" })
	// At time scale 1 a dense-8b decode step is ≈ 7 ms; the second request arrives while the
	// first (100 tokens ≈ 0.7 s) is decoding and joins the running batch.
	done := make(chan struct{})
	go func() {
		post(t, srv.URL+"/v1/completions", `{"prompt":[1,2,3],"max_tokens":100,"ignore_eos":true}`)
		close(done)
	}()
	for !strings.Contains(log.String(), "step=5 ") {
		time.Sleep(time.Millisecond)
	}
	post(t, srv.URL+"/v1/completions", `{"prompt":[4,5,6],"max_tokens":5,"ignore_eos":true}`)
	<-done
	mixed, two := false, false
	for _, s := range parseSteps(t, log.String()) {
		if s.decode == 1 && s.prefill == 3 { // one sequence decoding while the other prefills
			mixed = true
		}
		if s.decode == 2 {
			two = true
		}
	}
	if !mixed || !two {
		t.Errorf("no mixed prefill+decode step (%v) or two-sequence decode (%v)", mixed, two)
	}
}

func TestClientDisconnectAbortsSequences(t *testing.T) {
	_, srv := newTestEngine(t, func(c *Config) { c.TimeScale = 1; c.Profile = "dense-8b" })
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/completions",
		strings.NewReader(`{"prompt":[[1,2],[3,4]],"max_tokens":100000,"ignore_eos":true,"stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	for i := 0; i < 6; i++ { // three events: "data: …" + blank line each
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	resp.Body.Close()
	// The scheduler drops both sequences at its next step boundary: poll until nothing runs.
	running := ""
	for i := 0; i < 200; i++ {
		r, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		m, _ := io.ReadAll(r.Body)
		r.Body.Close()
		running = metricLine(string(m), "vllm:num_requests_running")
		if strings.HasSuffix(running, " 0") && strings.HasSuffix(metricLine(string(m), "vllm:kv_cache_usage_perc"), " 0") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("sequences still running after the client left: %s", running)
}

func metricLine(text, name string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, name+"{") || strings.HasPrefix(l, name+" ") {
			return l
		}
	}
	return ""
}

func TestStartAndClose(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TimeScale = 1
	e, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	url, err := e.Start("127.0.0.1:0")
	if err != nil || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("start: %q %v", url, err)
	}
	if _, err := e.Start("127.0.0.1:0"); err == nil {
		t.Errorf("second Start succeeded")
	}
	// A long stream in flight: Close ends it instead of waiting for 100,000 tokens.
	resp, err := http.Post(url+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":[1],"max_tokens":100000,"ignore_eos":true,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	io.Copy(io.Discard, br) // returns: the stream ended
	resp.Body.Close()
	if err := e.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

// The engine records how far each step ran past its plan: the step log's planned_ms is
// fwd_ms × the time scale, /metrics sums the planned time and the overruns (max(0, wall −
// planned), the same steps as the log), and the ratio histogram counts every step. A
// non-sleeping engine plans nothing and records no overrun.
func TestStepOverrunRecord(t *testing.T) {
	log := &logtest.LockedBuffer{}
	_, srv := newTestEngine(t, func(c *Config) { c.StepLog = log; c.TimeScale = 0.1 })
	post(t, srv.URL+"/v1/completions", `{"prompt":[1,2,3],"max_tokens":8,"ignore_eos":true}`)
	var planned, over, decPlanned float64
	lines := logtest.Lines(log.String())
	for _, l := range lines {
		p, fwd, wall := l.Float(t, "planned_ms"), l.Float(t, "fwd_ms"), l.Float(t, "wall_ms")
		if math.Abs(p-fwd*0.1) > 0.0015 {
			t.Errorf("planned_ms %.3f, want fwd_ms %.3f × 0.1", p, fwd)
		}
		planned += p / 1e3
		over += max(0, wall-p) / 1e3
		if l.Int(t, "prefill_tokens") == 0 {
			decPlanned += p / 1e3
		}
	}
	m := metricsText(t, srv.URL)
	gotP, gotO := metricValue(t, m, "genload_engine_step_planned_seconds_total"), metricValue(t, m, "genload_engine_step_overrun_seconds_total")
	// the log rounds each step to 1 µs
	if tol := 2e-6 * float64(len(lines)); math.Abs(gotP-planned) > tol || math.Abs(gotO-over) > tol {
		t.Fatalf("metrics planned %.6f s, overrun %.6f s; the log's %d steps: %.6f s, %.6f s", gotP, gotO, len(lines), planned, over)
	}
	if d := metricValue(t, m, "genload_engine_decode_step_planned_seconds_total"); decPlanned <= 0 || decPlanned >= planned || math.Abs(d-decPlanned) > 2e-6*float64(len(lines)) {
		t.Fatalf("metrics decode planned %.6f s; the log's decode steps: %.6f s of %.6f s", d, decPlanned, planned)
	}
	if c := metricValue(t, m, "genload_engine_step_overrun_ratio_count"); int(c) != len(lines) || len(lines) != 8 {
		t.Fatalf("overrun histogram counts %v steps, the log has %d (want 8)", c, len(lines))
	}

	log0 := &logtest.LockedBuffer{}
	_, fast := newTestEngine(t, func(c *Config) { c.StepLog = log0 })
	post(t, fast.URL+"/v1/completions", `{"prompt":[1,2,3],"max_tokens":4,"ignore_eos":true}`)
	if strings.Contains(log0.String(), "planned_ms") {
		t.Errorf("time scale 0: the step log plans steps:\n%s", log0.String())
	}
	m = metricsText(t, fast.URL)
	if v := metricValue(t, m, "genload_engine_step_planned_seconds_total"); v != 0 {
		t.Errorf("time scale 0: planned %v s, want 0", v)
	}
}

func metricsText(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// metricValue returns the value of the unlabelled series name in a metrics text.
func metricValue(t *testing.T, text, name string) float64 {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return f
		}
	}
	t.Fatalf("metrics lack %s", name)
	return 0
}

// The step clock: on time, a step ends one planned duration after the previous one; a delay
// of a few ms is repaid by the next steps, none shorter than half its plan, so that the mean
// step keeps its planned duration; a delay longer than maxDebt (and than a step) is forgiven;
// after idle the clock restarts.
func TestNextDeadline(t *testing.T) {
	t0 := time.Unix(1000, 0)
	wall := 300 * time.Microsecond
	cases := []struct {
		name      string
		idle      bool
		late      time.Duration // now − the previous step's planned end
		plan, end time.Duration // the returned plan and end − the previous planned end
	}{
		{"on time", false, 0, wall, wall},
		{"a little late: the plan holds", false, 100 * time.Microsecond, wall, wall},
		{"late by more than half a step: at least half a step", false, 250 * time.Microsecond, wall, 250*time.Microsecond + wall/2},
		{"late by 5 ms: half a step, the plan kept to repay", false, 5 * time.Millisecond, wall, 5*time.Millisecond + wall/2},
		{"late by 25 ms: forgiven", false, 25 * time.Millisecond, 25*time.Millisecond + wall, 25*time.Millisecond + wall},
		{"after idle", true, 0, wall, wall},
	}
	for _, tc := range cases {
		plan, end := nextDeadline(tc.idle, t0.Add(tc.late), t0, wall)
		if plan.Sub(t0) != tc.plan || end.Sub(t0) != tc.end {
			t.Errorf("%s: plan %v, end %v after the previous plan; want %v, %v", tc.name, plan.Sub(t0), end.Sub(t0), tc.plan, tc.end)
		}
	}
	// 200 steps with one 3 ms delay (ten steps) at step 10: the steps' total wall time is still
	// 200 planned steps, the delay repaid within the next 20 steps, none shorter than half a
	// step; a 30 ms delay is forgiven instead.
	for _, delay := range []time.Duration{3 * time.Millisecond, 30 * time.Millisecond} {
		now, plan := t0, t0
		var total, shortest time.Duration = 0, time.Hour
		for k := range 200 {
			start := now
			if k == 10 {
				now = now.Add(delay)
			}
			var end time.Time
			plan, end = nextDeadline(k == 0, now, plan, wall)
			now = end // the step ends when asked (a perfect sleep)
			total += now.Sub(start)
			if k != 10 {
				shortest = min(shortest, now.Sub(start))
			}
		}
		want := 200 * wall
		if delay > maxDebt {
			want += delay // forgiven: the steps after it keep their durations
		}
		if total != want || shortest < wall/2 {
			t.Fatalf("delay %v: 200 steps took %v, want %v; shortest step %v, want ≥ %v", delay, total, want, shortest, wall/2)
		}
	}
}
