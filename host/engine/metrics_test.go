package engine

import (
	"io"
	"net/http"
	"strings"
	"testing"

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
