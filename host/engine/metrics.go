package engine

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// histogram is a Prometheus-style cumulative histogram with fixed upper bounds.
type histogram struct {
	bounds []float64
	counts []uint64 // per bucket (non-cumulative), last = +Inf
	sum    float64
	n      uint64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i]++
	h.sum += v
	h.n++
}

func (h *histogram) write(w *bufio.Writer, name, labels string) {
	var cum uint64
	sep := ""
	if labels != "" {
		sep = ","
	}
	for i, b := range h.bounds {
		cum += h.counts[i]
		fmt.Fprintf(w, "%s_bucket{%s%sle=\"%s\"} %d\n", name, labels, sep, fmtFloat(b), cum)
	}
	cum += h.counts[len(h.bounds)]
	fmt.Fprintf(w, "%s_bucket{%s%sle=\"+Inf\"} %d\n", name, labels, sep, cum)
	fmt.Fprintf(w, "%s_sum%s %s\n", name, braces(labels), fmtFloat(h.sum))
	fmt.Fprintf(w, "%s_count%s %d\n", name, braces(labels), h.n)
}

func braces(labels string) string {
	if labels == "" {
		return ""
	}
	return "{" + labels + "}"
}

func fmtFloat(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Bucket bounds (vLLM v1 loggers.py values for the request histograms).
var (
	latencyBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
		2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0,
		7.5, 10.0, 20.0, 40.0, 80.0}
	stepBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
		0.25, 0.5, 1, 2.5, 5, 10}
	tokenBuckets = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
)

// metrics is the engine's Prometheus state; /metrics renders it in the dialect's names.
type metrics struct {
	mu        sync.Mutex
	running   int
	waiting   int
	kvUsed    float64
	iterTok   *histogram
	ttft      *histogram
	e2e       *histogram
	queue     *histogram
	itl       *histogram
	stepWall  *histogram
	stepSim   *histogram
	steps     uint64
	stepSimS  float64
	stepWallS float64
	promptTok uint64
	genTok    uint64
	success   map[string]uint64

	preemptions   atomic.Int64
	prefixQueries atomic.Int64
	prefixHits    atomic.Int64
	specDrafts    atomic.Int64
	specDraftTok  atomic.Int64
	specAccepted  atomic.Int64
}

func newMetrics() *metrics {
	return &metrics{
		iterTok:  newHistogram(tokenBuckets),
		ttft:     newHistogram(latencyBuckets),
		e2e:      newHistogram(latencyBuckets),
		queue:    newHistogram(latencyBuckets),
		itl:      newHistogram(itlBuckets),
		stepWall: newHistogram(stepBuckets),
		stepSim:  newHistogram(stepBuckets),
		success:  map[string]uint64{},
	}
}

func (m *metrics) setQueue(running, waiting int, kv *kvCache) {
	m.mu.Lock()
	m.running, m.waiting = running, waiting
	m.kvUsed = float64(kv.used) / float64(kv.total)
	m.mu.Unlock()
}

func (m *metrics) observeStep(sh StepShape, sim, wall time.Duration, _ int) {
	m.mu.Lock()
	m.steps++
	m.iterTok.observe(float64(int64(sh.DecodeSeqs) + sh.PrefillTokens))
	m.stepSim.observe(sim.Seconds())
	m.stepWall.observe(wall.Seconds())
	m.stepSimS += sim.Seconds()
	m.stepWallS += wall.Seconds()
	m.promptTok += uint64(sh.PrefillTokens)
	m.mu.Unlock()
}

func (m *metrics) observeQueue(d time.Duration) {
	m.mu.Lock()
	m.queue.observe(d.Seconds())
	m.mu.Unlock()
}

// observeToken records TTFT on a sequence's first token, ITL between its tokens and E2E
// latency when it finishes. Called by the scheduler goroutine, which owns q.
func (m *metrics) observeToken(q *seq, finished bool) {
	now := time.Now()
	m.mu.Lock()
	m.genTok++
	if q.generated == 1 {
		m.ttft.observe(now.Sub(q.req.arrival).Seconds())
	} else if !q.lastEmit.IsZero() {
		m.itl.observe(now.Sub(q.lastEmit).Seconds())
	}
	q.lastEmit = now
	if finished {
		m.e2e.observe(now.Sub(q.req.arrival).Seconds())
		switch q.fin {
		case finStop:
			m.success["stop"]++
		default:
			m.success["length"]++
		}
	}
	m.mu.Unlock()
}

// metricNames are the dialect-specific names of the shared signals.
type metricNames struct {
	promptCached, running, waiting, kvUsage, iterTokens, ttft, e2e, queue, itl string
	prefixQueries, prefixHits, promptTokens, genTokens, preemptions            string
	specDrafts, specDraftTokens, specAccepted, success                         string
	labels                                                                     string
}

func namesFor(dialect, model string) metricNames {
	switch dialect {
	case DialectSGLang:
		return metricNames{running: "sglang:num_running_reqs", waiting: "sglang:num_queue_reqs",
			kvUsage: "sglang:token_usage", ttft: "sglang:time_to_first_token_seconds",
			e2e: "sglang:e2e_request_latency_seconds", queue: "sglang:queue_time_seconds",
			itl: "sglang:inter_token_latency_seconds", prefixHits: "sglang:cached_tokens_total",
			promptTokens: "sglang:prompt_tokens_total", genTokens: "sglang:generation_tokens_total",
			labels: `model_name="` + model + `"`}
	case DialectLlamaCpp:
		return metricNames{running: "llamacpp:requests_processing", waiting: "llamacpp:requests_deferred",
			kvUsage: "llamacpp:kv_cache_usage_ratio", promptTokens: "llamacpp:prompt_tokens_total",
			genTokens: "llamacpp:tokens_predicted_total"}
	case DialectTGI:
		return metricNames{running: "tgi_batch_current_size", waiting: "tgi_queue_size",
			queue: "tgi_request_queue_duration", e2e: "tgi_request_inference_duration",
			genTokens: "tgi_request_generated_tokens_total"}
	}
	return metricNames{running: "vllm:num_requests_running", waiting: "vllm:num_requests_waiting",
		kvUsage: "vllm:kv_cache_usage_perc", iterTokens: "vllm:iteration_tokens_total",
		ttft: "vllm:time_to_first_token_seconds", e2e: "vllm:e2e_request_latency_seconds",
		queue: "vllm:request_queue_time_seconds", itl: "vllm:inter_token_latency_seconds",
		prefixQueries: "vllm:prefix_cache_queries_total", prefixHits: "vllm:prefix_cache_hits_total",
		promptCached: "vllm:prompt_tokens_cached_total",
		promptTokens: "vllm:prompt_tokens_total", genTokens: "vllm:generation_tokens_total",
		preemptions: "vllm:num_preemptions_total", specDrafts: "vllm:spec_decode_num_drafts_total",
		specDraftTokens: "vllm:spec_decode_num_draft_tokens_total",
		specAccepted:    "vllm:spec_decode_num_accepted_tokens_total",
		success:         "vllm:request_success_total",
		labels:          `model_name="` + model + `",engine="0"`}
}

// write renders the metrics in Prometheus text exposition format 0.0.4.
func (m *metrics) write(out io.Writer, n metricNames, timeScale float64) {
	w := bufio.NewWriter(out)
	defer w.Flush()
	m.mu.Lock()
	defer m.mu.Unlock()
	l := braces(n.labels)
	gauge := func(name, help string, v float64) {
		if name == "" {
			return
		}
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s%s %s\n", name, help, name, name, l, fmtFloat(v))
	}
	counter := func(name, help string, v float64) {
		if name == "" {
			return
		}
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s%s %s\n", name, help, name, name, l, fmtFloat(v))
	}
	hist := func(name, help string, h *histogram, labels string) {
		if name == "" {
			return
		}
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
		h.write(w, name, labels)
	}
	gauge(n.running, "Number of requests in model execution batches.", float64(m.running))
	gauge(n.waiting, "Number of requests waiting to be processed.", float64(m.waiting))
	gauge(n.kvUsage, "KV-cache usage. 1 means 100 percent usage.", m.kvUsed)
	hist(n.iterTokens, "Histogram of number of tokens per engine_step.", m.iterTok, n.labels)
	hist(n.ttft, "Histogram of time to first token in seconds.", m.ttft, n.labels)
	hist(n.e2e, "Histogram of e2e request latency in seconds.", m.e2e, n.labels)
	hist(n.queue, "Histogram of time spent in WAITING phase for request.", m.queue, n.labels)
	hist(n.itl, "Histogram of inter-token latency in seconds.", m.itl, n.labels)
	counter(n.prefixQueries, "Prefix cache queries, in terms of number of queried tokens.", float64(m.prefixQueries.Load()))
	counter(n.prefixHits, "Prefix cache hits, in terms of number of cached tokens.", float64(m.prefixHits.Load()))
	counter(n.promptCached, "Number of cached prompt tokens (local prefix cache hits).", float64(m.prefixHits.Load()))
	counter(n.promptTokens, "Number of prefill tokens processed.", float64(m.promptTok))
	counter(n.genTokens, "Number of generation tokens processed.", float64(m.genTok))
	counter(n.preemptions, "Cumulative number of preemptions from the engine.", float64(m.preemptions.Load()))
	counter(n.specDrafts, "Number of spec decoding drafts.", float64(m.specDrafts.Load()))
	counter(n.specDraftTokens, "Number of draft tokens.", float64(m.specDraftTok.Load()))
	counter(n.specAccepted, "Number of accepted tokens.", float64(m.specAccepted.Load()))
	if n.success != "" {
		fmt.Fprintf(w, "# HELP %s Count of successfully processed requests.\n# TYPE %s counter\n", n.success, n.success)
		for _, r := range []string{"length", "stop"} {
			fmt.Fprintf(w, "%s{%s,finished_reason=%q} %d\n", n.success, n.labels, r, m.success[r])
		}
	}
	// The engine's own truth, in every dialect.
	fmt.Fprintf(w, "# HELP genload_engine_steps_total Engine steps (forward passes) run.\n# TYPE genload_engine_steps_total counter\ngenload_engine_steps_total %d\n", m.steps)
	fmt.Fprintf(w, "# HELP genload_engine_step_duration_seconds Wall-clock duration of each engine step (simulated duration × time scale).\n# TYPE genload_engine_step_duration_seconds histogram\n")
	m.stepWall.write(w, "genload_engine_step_duration_seconds", "")
	fmt.Fprintf(w, "# HELP genload_engine_step_simulated_seconds Simulated (unscaled) duration of each engine step from the cost model.\n# TYPE genload_engine_step_simulated_seconds histogram\n")
	m.stepSim.write(w, "genload_engine_step_simulated_seconds", "")
	fmt.Fprintf(w, "# HELP genload_engine_time_scale Wall seconds per simulated second.\n# TYPE genload_engine_time_scale gauge\ngenload_engine_time_scale %s\n", fmtFloat(timeScale))
}
