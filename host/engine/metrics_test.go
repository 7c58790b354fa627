package engine

import (
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMetricsParse checks that every dialect's /metrics parses as Prometheus text and carries
// the dialect's §5 names and the engine's truth, after one 5-token request (1 prefill step +
// 4 decode steps).
func TestMetricsParse(t *testing.T) {
	cases := []struct {
		dialect string
		want    []string
	}{
		{DialectVLLM, []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
			"vllm:iteration_tokens_total", "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
			"vllm:prompt_tokens_cached_total", "vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds",
			"vllm:request_queue_time_seconds", "vllm:inter_token_latency_seconds", "vllm:request_time_per_output_token_seconds",
			"vllm:spec_decode_num_drafts_total", "vllm:spec_decode_num_draft_tokens_total", "vllm:spec_decode_num_accepted_tokens_total"}},
		{DialectSGLang, []string{"sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage", "sglang:num_used_tokens",
			"sglang:inter_token_latency_seconds", "sglang:gen_throughput", "sglang:cache_hit_rate", "sglang:cached_tokens_total",
			"sglang:time_to_first_token_seconds", "sglang:e2e_request_latency_seconds", "sglang:queue_time_seconds",
			"sglang:spec_accept_length", "sglang:spec_accept_rate"}},
		{DialectLlamaCpp, []string{"llamacpp:requests_processing", "llamacpp:requests_deferred", "llamacpp:kv_cache_usage_ratio",
			"llamacpp:predicted_tokens_seconds", "llamacpp:n_decode_total", "llamacpp:n_busy_slots_per_decode",
			"llamacpp:n_tokens_max", "llamacpp:prompt_seconds_total", "llamacpp:tokens_predicted_seconds_total"}},
		{DialectTGI, []string{"tgi_batch_current_size", "tgi_queue_size", "tgi_batch_current_max_tokens",
			"tgi_request_mean_time_per_token_duration", "tgi_batch_forward_duration", "tgi_batch_decode_duration",
			"tgi_batch_next_size", "tgi_request_queue_duration", "tgi_request_inference_duration"}},
	}
	for _, tc := range cases {
		t.Run(tc.dialect, func(t *testing.T) {
			_, srv := newTestEngine(t, func(c *Config) { c.Dialect = tc.dialect })
			post(t, srv.URL+"/v1/completions", `{"prompt":"abc","max_tokens":5,"ignore_eos":true}`)
			resp, err := http.Get(srv.URL + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			parser := expfmt.NewTextParser(model.UTF8Validation)
			fams, err := parser.TextToMetricFamilies(strings.NewReader(string(b)))
			if err != nil {
				t.Fatalf("parse: %v\n%s", err, b)
			}
			for _, n := range append(tc.want, "genload_engine_steps_total", "genload_engine_decode_steps_total",
				"genload_engine_step_duration_seconds", "genload_engine_decode_step_duration_seconds",
				"genload_engine_step_simulated_seconds", "genload_engine_time_scale") {
				if fams[n] == nil {
					t.Errorf("missing family %s", n)
				}
			}
			// 5 tokens: 1 prefill step + 4 decode steps
			if v := fams["genload_engine_steps_total"].GetMetric()[0].GetCounter().GetValue(); v != 5 {
				t.Errorf("steps %v, want 5", v)
			}
			if v := fams["genload_engine_decode_steps_total"].GetMetric()[0].GetCounter().GetValue(); v != 4 {
				t.Errorf("decode steps %v, want 4", v)
			}
		})
	}
}

// blockingWriter blocks its first Write until release is closed, after saying so on started.
type blockingWriter struct {
	started, release chan struct{}
	once             bool
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	if !w.once {
		w.once = true
		close(w.started)
		<-w.release
	}
	return len(p), nil
}

// /metrics renders a copy: a render stalled in its writes (a slow client, or the render's
// goroutine waiting for a core) does not hold the lock under which the scheduler records each
// step and token, and the copy owns its histograms (every one of metricState's, found by
// reflection, so that a new histogram cannot be left shared) and outcome counts.
func TestMetricsRenderDoesNotHoldTheSchedulersLock(t *testing.T) {
	m := newMetrics()
	m.observeStep(StepShape{Seqs: 1, DecodeSeqs: 1}, time.Millisecond, time.Millisecond, time.Millisecond)
	w := &blockingWriter{started: make(chan struct{}), release: make(chan struct{})}
	rendered := make(chan struct{})
	go func() {
		defer close(rendered)
		for range 10 { // over the bufio writer's 4 KiB: the render itself writes
			m.write(w, dialects[DialectVLLM], "m", 0.1, false, false)
		}
	}()
	<-w.started
	recorded := make(chan struct{})
	go func() {
		m.observeStep(StepShape{Seqs: 1, DecodeSeqs: 1}, time.Millisecond, time.Millisecond, 2*time.Millisecond)
		close(recorded)
	}()
	select {
	case <-recorded:
	case <-time.After(10 * time.Second):
		t.Fatal("a step could not be recorded while a /metrics render was blocked in its writes")
	}
	close(w.release)
	<-rendered

	s := m.snapshot()
	m.observeStep(StepShape{Seqs: 2, DecodeSeqs: 2}, time.Millisecond, time.Millisecond, time.Millisecond)
	m.success["stop"]++
	if s.steps != 2 || s.stepWall.n != 2 || s.batchSize.n != 2 || s.success["stop"] != 0 {
		t.Fatalf("the snapshot follows the metrics: steps %d, step histogram %d, batch histogram %d, stop %d", s.steps, s.stepWall.n, s.batchSize.n, s.success["stop"])
	}
	ms, ss := reflect.ValueOf(&m.metricState).Elem(), reflect.ValueOf(&s.metricState).Elem()
	hist := reflect.TypeFor[*histogram]()
	n := 0
	for i := range ms.NumField() {
		if ms.Field(i).Type() != hist {
			continue
		}
		n++
		a, b := ms.Field(i).Pointer(), ss.Field(i).Pointer()
		if a == b || ss.Field(i).IsNil() {
			t.Fatalf("histogram %s is shared with the snapshot (or nil in it)", ms.Type().Field(i).Name)
		}
		if ss.Field(i).Elem().FieldByName("counts").Pointer() == ms.Field(i).Elem().FieldByName("counts").Pointer() {
			t.Fatalf("histogram %s: the snapshot shares its buckets", ms.Type().Field(i).Name)
		}
	}
	if n == 0 {
		t.Fatal("no histogram found in metricState")
	}
}
