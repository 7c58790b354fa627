// Package scrape reads a serving engine's Prometheus /metrics (text format, parsed with
// github.com/prometheus/common/expfmt) and derives per-cell server-side figures: batch
// occupancy sampled during a cell, and step time and tokens per step from counters and
// histograms taken before and after it. Metric names follow vLLM, SGLang, llama.cpp and
// TGI; genload's built-in engine also exposes
// genload_engine_step_duration_seconds and genload_engine_steps_total as the truth.
//
// It uses net/http (not fasthttp, which only host/dispatch imports): scraping is not on
// the measured path.
package scrape

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Names are the metric names of one server family. An empty name is not exposed by it.
type Names struct {
	// Dialect is "vllm", "sglang", "llamacpp" or "tgi".
	Dialect string
	// Running is the gauge of sequences/requests in the running batch.
	Running string
	// Waiting is the gauge of queued requests.
	Waiting string
	// ITL is a histogram of inter-token latency in seconds (vLLM, SGLang), or TGI's
	// histogram of per-request mean time per token.
	ITL string
	// IterationTokens is a histogram of tokens per engine step (vLLM).
	IterationTokens string
	// GenerationTokens is a counter of generated tokens.
	GenerationTokens string
	// DecodeDuration is a histogram of decode step (forward) durations in seconds (TGI
	// tgi_batch_decode_duration, label method="decode").
	DecodeDuration string
	// Decodes and DecodeSeconds are llama.cpp's counters of decode calls and of seconds
	// spent generating (llamacpp:n_decode_total, llamacpp:tokens_predicted_seconds_total).
	Decodes, DecodeSeconds string
	// SpecAcceptLength is a gauge of the mean tokens per forward pass under speculative
	// decoding (SGLang's sglang:spec_accept_length, 1 without speculation) on a server whose
	// ITL histogram is per token.
	SpecAcceptLength string
}

// Known server families.
var (
	VLLM = Names{Dialect: "vllm", Running: "vllm:num_requests_running", Waiting: "vllm:num_requests_waiting",
		ITL: "vllm:inter_token_latency_seconds", IterationTokens: "vllm:iteration_tokens_total",
		GenerationTokens: "vllm:generation_tokens_total"}
	SGLang = Names{Dialect: "sglang", Running: "sglang:num_running_reqs", Waiting: "sglang:num_queue_reqs",
		ITL: "sglang:inter_token_latency_seconds", GenerationTokens: "sglang:generation_tokens_total",
		SpecAcceptLength: "sglang:spec_accept_length"}
	LlamaCpp = Names{Dialect: "llamacpp", Running: "llamacpp:requests_processing", Waiting: "llamacpp:requests_deferred",
		GenerationTokens: "llamacpp:tokens_predicted_total", Decodes: "llamacpp:n_decode_total",
		DecodeSeconds: "llamacpp:tokens_predicted_seconds_total"}
	TGI = Names{Dialect: "tgi", Running: "tgi_batch_current_size", Waiting: "tgi_queue_size",
		ITL: "tgi_request_mean_time_per_token_duration", GenerationTokens: "tgi_request_generated_tokens_total",
		DecodeDuration: "tgi_batch_decode_duration"}
)

// Truth metric names exposed by genload's built-in engine in every dialect.
const (
	TruthStepDuration       = "genload_engine_step_duration_seconds"
	TruthDecodeStepDuration = "genload_engine_decode_step_duration_seconds"
	TruthSteps              = "genload_engine_steps_total"
	TruthPlannedSeconds     = "genload_engine_step_planned_seconds_total"
	TruthOverrunSeconds     = "genload_engine_step_overrun_seconds_total"
	TruthOverrunRatio       = "genload_engine_step_overrun_ratio"
	TruthDecodePlanned      = "genload_engine_decode_step_planned_seconds_total"
)

// Snapshot is one parsed scrape.
type Snapshot struct {
	// At is when the response was read (monotonic).
	At time.Time
	// Families are the metric families by name.
	Families map[string]*dto.MetricFamily
}

// Parse reads Prometheus text format. Errors carry expfmt's line number.
func Parse(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("scrape: metrics text: %w", err)
	}
	return fams, nil
}

// Detect returns the Names whose running gauge appears in fams (vLLM first), ok false
// when none does.
func Detect(fams map[string]*dto.MetricFamily) (Names, bool) {
	for _, n := range []Names{VLLM, SGLang, LlamaCpp, TGI} {
		if _, ok := fams[n.Running]; ok {
			return n, true
		}
	}
	return Names{}, false
}

// Scraper fetches a /metrics URL.
type Scraper struct {
	// URL is the metrics URL, e.g. "http://127.0.0.1:8000/metrics".
	URL string
	// APIKey, when set, is sent as a Bearer token (never in errors).
	APIKey string
	// Client is the HTTP client; nil uses one with a 10 s timeout.
	Client *http.Client
}

// MetricsURL returns base's /metrics URL (a trailing "/v1" is removed).
func MetricsURL(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("scrape: bad base URL %q", base)
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1") + "/metrics"
	return u.String(), nil
}

var defaultClient = &http.Client{Timeout: 10 * time.Second}

// Scrape fetches and parses the metrics once. Errors name the URL and the HTTP status.
func (s *Scraper) Scrape(ctx context.Context) (Snapshot, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return Snapshot{}, fmt.Errorf("scrape: GET %s: %w", s.URL, err)
	}
	if s.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+s.APIKey)
	}
	c := s.Client
	if c == nil {
		c = defaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return Snapshot{}, fmt.Errorf("scrape: GET %s: %w", s.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Snapshot{}, fmt.Errorf("scrape: GET %s: status %d", s.URL, resp.StatusCode)
	}
	fams, err := Parse(resp.Body)
	if err != nil {
		return Snapshot{}, fmt.Errorf("scrape: GET %s: %w", s.URL, err)
	}
	return Snapshot{At: time.Now(), Families: fams}, nil
}

// Value returns the sum over all series of a counter, gauge or untyped family (ok false
// when absent).
func (s Snapshot) Value(name string) (float64, bool) {
	f, ok := s.Families[name]
	if !ok {
		return 0, false
	}
	v := 0.0
	for _, m := range f.GetMetric() {
		switch {
		case m.Counter != nil:
			v += m.GetCounter().GetValue()
		case m.Gauge != nil:
			v += m.GetGauge().GetValue()
		case m.Untyped != nil:
			v += m.GetUntyped().GetValue()
		}
	}
	return v, true
}

// Hist returns the summed sample count and sum of a histogram (or summary) family over
// the series whose labels include every pair in match ("k=v"; none = all series).
func (s Snapshot) Hist(name string, match ...string) (count, sum float64, ok bool) {
	f, ok := s.Families[name]
	if !ok {
		return 0, 0, false
	}
	for _, m := range f.GetMetric() {
		if !labelsMatch(m, match) {
			continue
		}
		switch {
		case m.Histogram != nil:
			count += float64(m.GetHistogram().GetSampleCount())
			sum += m.GetHistogram().GetSampleSum()
		case m.Summary != nil:
			count += float64(m.GetSummary().GetSampleCount())
			sum += m.GetSummary().GetSampleSum()
		}
	}
	return count, sum, true
}

func labelsMatch(m *dto.Metric, match []string) bool {
	for _, kv := range match {
		k, v, _ := strings.Cut(kv, "=")
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == k && lp.GetValue() == v {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
