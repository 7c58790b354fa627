package scrape

import (
	"context"
	"fmt"
	"github.com/genload/genload/host/warning"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func snap(t *testing.T, text string) Snapshot {
	t.Helper()
	f, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return Snapshot{Families: f}
}

// vllmText is a vLLM-shaped exposition after `steps` decode steps of batch b (ITL
// observed once per token) with the given ITL and step-duration sums, plus the truth.
func vllmText(steps, b int, itlSum, stepSum float64) string {
	tokens := steps * b
	return fmt.Sprintf(`# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} %d
# TYPE vllm:iteration_tokens_total histogram
vllm:iteration_tokens_total_bucket{engine="0",model_name="m",le="1"} 0
vllm:iteration_tokens_total_bucket{engine="0",model_name="m",le="+Inf"} %d
vllm:iteration_tokens_total_sum{engine="0",model_name="m"} %d
vllm:iteration_tokens_total_count{engine="0",model_name="m"} %d
# TYPE vllm:inter_token_latency_seconds histogram
vllm:inter_token_latency_seconds_bucket{engine="0",model_name="m",le="+Inf"} %d
vllm:inter_token_latency_seconds_sum{engine="0",model_name="m"} %g
vllm:inter_token_latency_seconds_count{engine="0",model_name="m"} %d
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="m"} %d
# TYPE genload_engine_steps_total counter
genload_engine_steps_total %d
# TYPE genload_engine_step_duration_seconds histogram
genload_engine_step_duration_seconds_bucket{le="+Inf"} %d
genload_engine_step_duration_seconds_sum %g
genload_engine_step_duration_seconds_count %d
`, b, steps, tokens, steps, tokens, itlSum, tokens, tokens, steps, steps, stepSum, steps)
}

// Before: 10 steps of B=4 at 5 ms; after: 10 more at 20 ms. Δ: 10 steps, 40 tokens,
// step time 20 ms from ITL (Δsum 40·0.02 / Δcount 40) and from the truth histogram,
// tokens per step 40/10 = 4.
func TestDeltaVLLM(t *testing.T) {
	// before: ITL sum 40 tokens × 5 ms = 0.2 s, steps 10 × 5 ms = 0.05 s;
	// after: + 40 tokens × 20 ms = 1.0 s, + 10 steps × 20 ms = 0.25 s
	before := snap(t, vllmText(10, 4, 0.2, 0.05))
	after := snap(t, vllmText(20, 4, 1.0, 0.25))
	n, ok := Detect(after.Families)
	if !ok || n.Dialect != "vllm" {
		t.Fatalf("detected %+v", n)
	}
	st := Delta(n, before, after, 0)
	// ITL: (1.0 − 0.2) / (80 − 40) = 20 ms; truth: (0.25 − 0.05)/10 = 20 ms
	if !st.HasStepTime || st.StepTime != 20*time.Millisecond || !st.HasTruth || st.TruthStepTime != 20*time.Millisecond {
		t.Fatalf("steps %+v", st)
	}
	if !st.HasTokensPerStep || st.TokensPerStep != 4 || st.Steps != 10 || st.TruthSteps != 10 || st.GeneratedTokens != 40 {
		t.Fatalf("steps %+v", st)
	}
}

// TGI: step time from tgi_batch_decode_duration{method="decode"} only (prefill series
// ignored); llama.cpp: Δseconds / Δdecodes, tokens per step from generated tokens.
func TestDeltaTGIAndLlamaCpp(t *testing.T) {
	tgi := func(n int, sum float64) string {
		return fmt.Sprintf(`# TYPE tgi_batch_current_size gauge
tgi_batch_current_size 3
# TYPE tgi_batch_decode_duration histogram
tgi_batch_decode_duration_bucket{method="decode",le="+Inf"} %d
tgi_batch_decode_duration_sum{method="decode"} %g
tgi_batch_decode_duration_count{method="decode"} %d
tgi_batch_decode_duration_bucket{method="prefill",le="+Inf"} 99
tgi_batch_decode_duration_sum{method="prefill"} 99
tgi_batch_decode_duration_count{method="prefill"} 99
# TYPE tgi_request_generated_tokens_total counter
tgi_request_generated_tokens_total %d
`, n, sum, n, 3*n)
	}
	b, a := snap(t, tgi(5, 0.05)), snap(t, tgi(15, 0.35))
	n, _ := Detect(a.Families)
	st := Delta(n, b, a, 0)
	// (0.35 − 0.05)/(15 − 5) = 30 ms; 30 tokens / 10 steps = 3
	if n.Dialect != "tgi" || st.StepTime != 30*time.Millisecond || st.TokensPerStep != 3 {
		t.Fatalf("tgi %+v", st)
	}
	ll := func(dec int, sec float64, tok int) string {
		return fmt.Sprintf("llamacpp:requests_processing 2\nllamacpp:n_decode_total %d\nllamacpp:tokens_predicted_seconds_total %g\nllamacpp:tokens_predicted_total %d\n", dec, sec, tok)
	}
	// 10 requests of 10 tokens on 2 slots at a 10 ms step: each adds 10 tokens and
	// 9 × 10 ms (its first token to its last) when it ends. Δ: 0.9 s, 100 tokens, 50 decodes.
	b, a = snap(t, ll(100, 1.0, 200)), snap(t, ll(150, 1.9, 300))
	n, _ = Detect(a.Families)
	st = Delta(n, b, a, 10)
	// 0.9 s / (100 − 10) forwards = 10 ms (0.9/100 = 9 ms would be −1/max_tokens);
	// 100 tokens / 50 decodes = 2 per step
	if n.Dialect != "llamacpp" || st.StepTime != 10*time.Millisecond || st.TokensPerStep != 2 {
		t.Fatalf("llama.cpp %+v", st)
	}
	// without the number of finished requests: no figure, and why
	if st = Delta(n, b, a, 0); st.HasStepTime || !strings.Contains(st.StepTimeReason, "finished") {
		t.Fatalf("llama.cpp without finished requests %+v", st)
	}
}

// A fresh server exposes a labelled histogram only after its first observation: absent
// before the cell and present after, it counts from zero. A family absent after, or with
// no new observation, leaves the step time absent with the reason.
func TestDeltaHistogramAbsentBefore(t *testing.T) {
	fresh := snap(t, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 0\n")
	after := snap(t, vllmText(10, 4, 0.4, 0.1)) // 40 tokens, ITL sum 0.4 s
	st := Delta(VLLM, fresh, after, 4)
	if !st.HasStepTime || st.StepTime != 10*time.Millisecond || !st.HasTruth || st.TruthStepTime != 10*time.Millisecond || st.TruthSteps != 10 {
		t.Fatalf("fresh server: %+v, want 10 ms from ITL and truth", st)
	}
	if st := Delta(VLLM, fresh, fresh, 4); st.HasStepTime || st.StepTimeReason != "vllm:inter_token_latency_seconds is not exposed" {
		t.Fatalf("absent after: %+v", st)
	}
	if st := Delta(VLLM, after, after, 4); st.HasStepTime || !strings.Contains(st.StepTimeReason, "no observation") {
		t.Fatalf("no observation: %+v", st)
	}
	if st := Delta(VLLM, after, fresh, 4); st.HasStepTime || st.StepTimeReason == "" {
		t.Fatalf("counts went down: %+v", st)
	}
	restart := snap(t, vllmText(5, 4, 0.2, 0.05))
	if st := Delta(VLLM, after, restart, 4); st.HasStepTime || !strings.Contains(st.StepTimeReason, "went down") {
		t.Fatalf("restart: %+v", st)
	}
}

func TestParseError(t *testing.T) {
	_, err := Parse(strings.NewReader("# TYPE x counter\nx{a=\"1\" 2\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("err = %v", err)
	}
}

// The sampler reads the running gauge from a live /metrics endpoint.
func TestSampler(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := n.Add(1)
		v := 0
		if k >= 2 && k <= 4 {
			v = 8 // scrapes 2..4 see the full batch
		}
		fmt.Fprintf(w, "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs{model_name=\"m\"} %d\n", v)
	}))
	defer srv.Close()
	u, err := MetricsURL(srv.URL + "/v1")
	if err != nil || u != srv.URL+"/metrics" {
		t.Fatalf("url %q %v", u, err)
	}
	sp := NewSampler(&Scraper{URL: u}, SGLang, time.Millisecond)
	sp.Start(context.Background())
	for n.Load() < 6 {
		time.Sleep(time.Millisecond)
	}
	o := sp.Stop(8)
	if o.Samples != 3 || o.Mode != 8 || o.AtTarget != 1 || o.Max != 8 || o.Errors != 0 {
		t.Fatalf("occupancy %+v", o)
	}
	if _, err := (&Scraper{URL: srv.URL + "/nope"}).Scrape(context.Background()); err != nil {
		t.Fatalf("any path answers here: %v", err)
	}
	bad := httptest.NewServer(http.NotFoundHandler())
	defer bad.Close()
	if _, err := (&Scraper{URL: bad.URL + "/metrics"}).Scrape(context.Background()); err == nil || !strings.Contains(err.Error(), "status 404") {
		t.Fatalf("err = %v", err)
	}
}

// SGLang's ITL histogram counts every token but sums each interval once: with speculation
// (accept length > 1) its mean is per token, and the step time is absent with the reason.
func TestDeltaSGLangSpeculation(t *testing.T) {
	text := func(n int, sum float64, accept float64) string {
		return fmt.Sprintf("sglang:num_running_reqs 2\nsglang:spec_accept_length %g\n# TYPE sglang:inter_token_latency_seconds histogram\nsglang:inter_token_latency_seconds_bucket{le=\"+Inf\"} %d\nsglang:inter_token_latency_seconds_sum %g\nsglang:inter_token_latency_seconds_count %d\n", accept, n, sum, n)
	}
	// no speculation: 100 tokens, 1 s → 10 ms
	if st := Delta(SGLang, snap(t, text(0, 0, 1)), snap(t, text(100, 1, 1)), 2); !st.HasStepTime || st.StepTime != 10*time.Millisecond {
		t.Fatalf("sglang without speculation %+v", st)
	}
	st := Delta(SGLang, snap(t, text(0, 0, 2.5)), snap(t, text(100, 1, 2.5)), 2)
	if st.HasStepTime || !strings.Contains(st.StepTimeReason, "speculates (sglang:spec_accept_length 2.50") {
		t.Fatalf("sglang with speculation %+v", st)
	}
}

// engineOverrunText is the built-in engine's overrun record after the given steps: planned and
// overrun seconds and a ratio histogram with counts per bucket (le 0.01, 0.1, 1, +Inf).
func engineOverrunText(planned, overrun, measured float64, counts [4]int) string {
	cum, total := [4]int{}, 0
	for i, c := range counts {
		total += c
		cum[i] = total
	}
	return fmt.Sprintf(`# TYPE genload_engine_step_duration_seconds histogram
genload_engine_step_duration_seconds_bucket{le="+Inf"} %d
genload_engine_step_duration_seconds_sum %g
genload_engine_step_duration_seconds_count %d
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 1
# TYPE genload_engine_step_planned_seconds_total counter
genload_engine_step_planned_seconds_total %g
# TYPE genload_engine_step_overrun_seconds_total counter
genload_engine_step_overrun_seconds_total %g
# TYPE genload_engine_step_overrun_ratio histogram
genload_engine_step_overrun_ratio_bucket{le="0.01"} %d
genload_engine_step_overrun_ratio_bucket{le="0.1"} %d
genload_engine_step_overrun_ratio_bucket{le="1"} %d
genload_engine_step_overrun_ratio_bucket{le="+Inf"} %d
genload_engine_step_overrun_ratio_sum 0
genload_engine_step_overrun_ratio_count %d
`, total, measured, total, planned, overrun, cum[0], cum[1], cum[2], cum[3], total)
}

// The cell's engine overrun is the delta of the engine's record: the steps' measured time
// beyond the planned, net (Share) and before repayment (Late), and the quantiles of the steps'
// delays in the cell; above 2 % net a note says the host was busy.
func TestDeltaEngineOverrun(t *testing.T) {
	n := Names{Dialect: "vllm"}
	before := snap(t, engineOverrunText(1.0, 0.5, 1.2, [4]int{10, 0, 0, 5}))
	// in the cell: 100 steps, 2 s planned, 2.1 s measured (5 % net), 0.3 s of delays (15 %):
	// 90 under 1 %, 9 under 10 %, 1 under 100 %
	after := snap(t, engineOverrunText(3.0, 0.8, 3.3, [4]int{100, 9, 1, 5}))
	o := Delta(n, before, after, 0).Overrun
	if o == nil || o.Steps != 100 || math.Abs(o.Share-0.05) > 1e-9 || math.Abs(o.Late-0.15) > 1e-9 || o.P50 != 0.01 || o.P99 != 0.1 {
		t.Fatalf("overrun %+v: want 100 steps, share 0.05, late 0.15, p50 ≤ 1 %%, p99 ≤ 10 %%", o)
	}
	note := (&CellMetrics{Steps: Steps{Overrun: o}}).Notes()
	if len(note) != 1 || note[0].Name != warning.EngineOverrun || !strings.Contains(note[0].Text, "ran 5.0 % over their planned wall time in all (one step's delay p50 1.0 %, p99 10.0 %") {
		t.Fatalf("notes %q", note)
	}
	// delays repaid: 0.3 s late, but 2.02 s measured for 2 s planned (1 % net): no note
	quiet := snap(t, engineOverrunText(3.0, 0.8, 3.22, [4]int{100, 9, 1, 5}))
	if o := Delta(n, before, quiet, 0).Overrun; o == nil || math.Abs(o.Share-0.01) > 1e-9 || len((&CellMetrics{Steps: Steps{Overrun: o}}).Notes()) != 0 {
		t.Fatalf("1 %% net overrun %+v: want no note", o)
	}
	// no planned time (the engine does not sleep, or another server): no record
	if o := Delta(n, before, before, 0).Overrun; o != nil {
		t.Fatalf("no steps: overrun %+v, want none", o)
	}
}

// A late prefill repaid by the decode steps after it nets to nothing over the cell's steps but
// leaves the decode steps, the ones fwd times, short of their plan: the note says so when they
// ran more than 2 % short, and not when they kept it.
func TestDeltaEngineDecodeRanShort(t *testing.T) {
	n := Names{Dialect: "vllm"}
	text := func(planned, decPlanned, decMeasured float64, decSteps int) string {
		return engineOverrunText(planned, 0.1, planned, [4]int{10, 0, 0, 0}) + fmt.Sprintf(`# TYPE genload_engine_decode_step_duration_seconds histogram
genload_engine_decode_step_duration_seconds_bucket{le="+Inf"} %d
genload_engine_decode_step_duration_seconds_sum %g
genload_engine_decode_step_duration_seconds_count %d
# TYPE genload_engine_decode_step_planned_seconds_total counter
genload_engine_decode_step_planned_seconds_total %g
`, decSteps, decMeasured, decSteps, decPlanned)
	}
	before := snap(t, text(1, 0.5, 0.5, 10))
	// 1 s more planned over the cell and 1 s measured (0 % net), of which 0.8 s planned decode
	// ran in 0.72 s (-10 %)
	o := Delta(n, before, snap(t, text(2, 1.3, 1.22, 90)), 0).Overrun
	if o == nil || !o.HasDecode || math.Abs(o.Decode+0.1) > 1e-9 || o.Share != 0 {
		t.Fatalf("overrun %+v: want decode -10 %%, share 0", o)
	}
	note := (&CellMetrics{Steps: Steps{Overrun: o}}).Notes()
	if len(note) != 1 || note[0].Name != warning.EngineOverrun || !strings.Contains(note[0].Text, "its decode steps 10.0 % in all") || !strings.Contains(note[0].Text, "fwd reads below the cost model") {
		t.Fatalf("notes %q", note)
	}
	if o := Delta(n, before, snap(t, text(2, 1.3, 1.29, 90)), 0).Overrun; o == nil || len((&CellMetrics{Steps: Steps{Overrun: o}}).Notes()) != 0 {
		t.Fatalf("decode 1.25 %% short %+v: want no note", o)
	}
}
