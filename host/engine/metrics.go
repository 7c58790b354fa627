package engine

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
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

// clone returns a copy of h that shares nothing it changes (bounds are never written).
func (h *histogram) clone() *histogram {
	c := *h
	c.counts = slices.Clone(h.counts)
	return &c
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

// metrics is the engine's Prometheus state; /metrics renders it in the dialect's names. The
// scheduler records every step and token under mu, so /metrics renders a copy (snapshot)
// rather than holding mu while it writes.
type metrics struct {
	mu sync.Mutex
	metricState

	preemptions   atomic.Int64
	prefixQueries atomic.Int64
	prefixHits    atomic.Int64
	specDrafts    atomic.Int64
	specDraftTok  atomic.Int64
	specAccepted  atomic.Int64

	// lastStep and lastDecode are the wall durations (ns) of the last step and of the last
	// step without prefill, read without mu (Quirks.LateFirstSteps).
	lastStep, lastDecode atomic.Int64
}

// metricState is the part of metrics guarded by its mu.
type metricState struct {
	running  int
	waiting  int
	kvUsed   float64
	kvTokens int
	// kvBlocks, blockSize and maxSeqs are the engine's capacity (Config.KVCacheTokens in
	// blocks, Config.BlockSize, Config.MaxNumSeqs), exposed as real servers expose theirs:
	// vLLM's cache_config_info, SGLang's max_total_num_tokens and max_running_requests.
	kvBlocks, blockSize, maxSeqs int
	prefixCaching                bool
	constantITL                  time.Duration // Quirks.ConstantITL: observed for every token
	iterTok                      *histogram
	ttft                         *histogram
	e2e                          *histogram
	queue                        *histogram
	itl                          *histogram
	tpot                         *histogram // per finished sequence: (last − first token) / (tokens − 1)
	stepWall                     *histogram // every step
	stepSim                      *histogram
	decWall                      *histogram // steps without prefill
	preWall                      *histogram // steps with prefill
	// overrun observes, per step with a planned wall duration (TimeScale > 0),
	// max(0, measured − planned) / planned; plannedS and overrunS sum the planned wall
	// durations and the overruns, in seconds.
	overrun  *histogram
	plannedS float64
	overrunS float64
	// decPlannedS sums the planned wall durations of the steps without prefill (those of
	// decWall): against decWall's sum, how far the decode steps a client times ran from the
	// plan, in either direction (a step repaying an earlier one's lateness runs short).
	decPlannedS float64
	batchSize   *histogram
	steps       uint64
	decSteps    uint64
	stepSimS    float64
	stepWallS   float64
	decWallS    float64
	busySeqs    uint64 // Σ sequences over steps
	maxTokens   int64  // most tokens in one step
	promptTok   uint64
	genTok      uint64
	promptS     float64 // Σ per sequence arrival → first token
	genS        float64 // Σ per finished sequence first → last token
	success     map[string]uint64
}

var batchBuckets = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}

// overrunBuckets bound a step's overrun as a share of its planned wall duration.
var overrunBuckets = []float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10}

func newMetrics() *metrics {
	return &metrics{metricState: metricState{
		iterTok:   newHistogram(tokenBuckets),
		ttft:      newHistogram(latencyBuckets),
		e2e:       newHistogram(latencyBuckets),
		queue:     newHistogram(latencyBuckets),
		itl:       newHistogram(itlBuckets),
		tpot:      newHistogram(itlBuckets),
		stepWall:  newHistogram(stepBuckets),
		stepSim:   newHistogram(stepBuckets),
		decWall:   newHistogram(stepBuckets),
		preWall:   newHistogram(stepBuckets),
		overrun:   newHistogram(overrunBuckets),
		batchSize: newHistogram(batchBuckets),
		success:   map[string]uint64{},
	}}
}

// snapshot returns a copy of m for rendering: its state copied under mu (the histograms'
// buckets and the outcome counts cloned), its counters read. Copying takes about a
// microsecond; rendering the default dialect's page of about 22 KB took 88 µs of CPU with
// 1,022 allocations (an io.Discard writer), and longer when the render's goroutine lost its
// core, all of it under mu while the scheduler waited to record a step or a token: beside
// the occupancy sampler's scrape every 20 ms, B = 1 cells at time scale 0.1 had a step
// 0.13–0.55 ms late at each scrape.
func (m *metrics) snapshot() *metrics {
	m.mu.Lock()
	s := &metrics{metricState: m.metricState}
	for _, h := range []**histogram{&s.iterTok, &s.ttft, &s.e2e, &s.queue, &s.itl, &s.tpot, &s.stepWall, &s.stepSim, &s.decWall, &s.preWall, &s.overrun, &s.batchSize} {
		*h = (*h).clone()
	}
	s.success = maps.Clone(m.success)
	m.mu.Unlock()
	for _, c := range []struct{ to, from *atomic.Int64 }{
		{&s.preemptions, &m.preemptions}, {&s.prefixQueries, &m.prefixQueries}, {&s.prefixHits, &m.prefixHits},
		{&s.specDrafts, &m.specDrafts}, {&s.specDraftTok, &m.specDraftTok}, {&s.specAccepted, &m.specAccepted},
		{&s.lastStep, &m.lastStep}, {&s.lastDecode, &m.lastDecode},
	} {
		c.to.Store(c.from.Load())
	}
	return s
}

func (m *metrics) setQueue(running, waiting int, kv *kvCache, blockSize int) {
	m.mu.Lock()
	m.running, m.waiting = running, waiting
	m.kvUsed = float64(kv.used) / float64(kv.total)
	m.kvTokens = kv.used * blockSize
	m.mu.Unlock()
}

// observeStep records a step of shape sh: its simulated duration sim, its planned wall
// duration planned (sim × TimeScale; 0 when the engine does not sleep) and its measured wall
// duration wall.
func (m *metrics) observeStep(sh StepShape, sim, planned, wall time.Duration) {
	m.mu.Lock()
	if planned > 0 {
		over := max(0, wall-planned)
		m.overrun.observe(float64(over) / float64(planned))
		m.plannedS += planned.Seconds()
		m.overrunS += over.Seconds()
	}
	m.steps++
	tokens := int64(sh.DecodeSeqs) + sh.PrefillTokens + sh.SpecTokens
	m.iterTok.observe(float64(tokens))
	m.maxTokens = max(m.maxTokens, tokens)
	m.stepSim.observe(sim.Seconds())
	m.stepWall.observe(wall.Seconds())
	m.batchSize.observe(float64(sh.Seqs))
	m.busySeqs += uint64(sh.Seqs)
	m.lastStep.Store(int64(wall))
	if sh.PrefillTokens == 0 {
		m.lastDecode.Store(int64(wall))
		m.decSteps++
		m.decPlannedS += planned.Seconds()
		m.decWall.observe(wall.Seconds())
		m.decWallS += wall.Seconds()
	} else {
		m.preWall.observe(wall.Seconds())
	}
	m.stepSimS += sim.Seconds()
	m.stepWallS += wall.Seconds()
	m.promptTok += uint64(sh.PrefillTokens)
	m.mu.Unlock()
}

// lastDecodeStep is the wall duration of the last step without prefill, else of the last
// step (0 before any; Quirks.LateFirstSteps).
func (m *metrics) lastDecodeStep() time.Duration {
	if d := m.lastDecode.Load(); d > 0 {
		return time.Duration(d)
	}
	return time.Duration(m.lastStep.Load())
}

func (m *metrics) observeQueue(d time.Duration) {
	m.mu.Lock()
	m.queue.observe(d.Seconds())
	m.mu.Unlock()
}

// observeToken records TTFT on a sequence's first token, ITL between its tokens, and E2E
// and time per output token when it finishes. Called by the scheduler goroutine, which owns q.
func (m *metrics) observeToken(q *seq, finished bool) {
	now := time.Now()
	m.mu.Lock()
	m.genTok++
	if q.generated == 1 {
		q.firstEmit = now
		ttft := now.Sub(q.req.arrival).Seconds()
		m.ttft.observe(ttft)
		m.promptS += ttft
	} else if !q.lastEmit.IsZero() {
		itl := now.Sub(q.lastEmit)
		if m.constantITL > 0 {
			itl = m.constantITL
		}
		m.itl.observe(itl.Seconds())
	}
	q.lastEmit = now
	if finished {
		m.e2e.observe(now.Sub(q.req.arrival).Seconds())
		gen := now.Sub(q.firstEmit).Seconds()
		m.genS += gen
		if q.generated > 1 {
			m.tpot.observe(gen / float64(q.generated-1))
		}
		switch q.fin {
		case finStop:
			m.success["stop"]++
		default:
			m.success["length"]++
		}
	}
	m.mu.Unlock()
}

// promWriter writes Prometheus text series of one dialect: its labels on every series,
// histograms without observations left out when lateHist (a labelled Prometheus client
// histogram has no series before its first observation).
type promWriter struct {
	w        *bufio.Writer
	labels   string // without braces
	lateHist bool
}

func (p *promWriter) printf(format string, args ...any) { fmt.Fprintf(p.w, format, args...) }

func (p *promWriter) typed(name, typ, help string) {
	fmt.Fprintf(p.w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

func (p *promWriter) gauge(name, help string, v float64) {
	p.typed(name, "gauge", help)
	fmt.Fprintf(p.w, "%s%s %s\n", name, braces(p.labels), fmtFloat(v))
}

func (p *promWriter) counter(name, help string, v float64) {
	p.typed(name, "counter", help)
	fmt.Fprintf(p.w, "%s%s %s\n", name, braces(p.labels), fmtFloat(v))
}

func (p *promWriter) hist(name, help string, h *histogram) {
	p.typed(name, "histogram", help)
	if p.lateHist && h.n == 0 {
		return
	}
	h.write(p.w, name, p.labels)
}

// sub writes a second labelled series of one histogram family.
func (p *promWriter) sub(h *histogram, name, labels string) {
	if p.lateHist && h.n == 0 {
		return
	}
	h.write(p.w, name, labels)
}

// ratio is a / b, 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// write renders the metrics in Prometheus text exposition format 0.0.4, in the names of
// dialect d (dialect.writeMetrics; with lateHist, histograms without observations have no
// series), followed, unless hideTruth, by the engine's own truth in every dialect:
//
//	genload_engine_steps_total                    engine steps (forward passes)
//	genload_engine_decode_steps_total             steps without prefill tokens
//	genload_engine_step_duration_seconds          measured wall duration of every step, from the
//	                                              end of the previous step (or the end of idling)
//	                                              to the moment its tokens are handed out
//	genload_engine_decode_step_duration_seconds   wall duration of decode-only steps
//	genload_engine_step_simulated_seconds         unscaled cost-model duration of every step
//	genload_engine_time_scale                     wall seconds per simulated second
//	genload_engine_step_planned_seconds_total     Σ planned wall duration (simulated × time
//	                                              scale) of the steps, when the engine sleeps
//	genload_engine_step_overrun_seconds_total     Σ max(0, measured − planned) over those steps
//	genload_engine_step_overrun_ratio             each step's max(0, measured − planned) /
//	                                              planned: how late a busy host made it
//	genload_engine_decode_step_planned_seconds_total  Σ planned wall duration of the steps
//	                                              without prefill, beside the sum of
//	                                              genload_engine_decode_step_duration_seconds
func (m *metrics) write(out io.Writer, d *dialect, model string, timeScale float64, lateHist, hideTruth bool) {
	w := bufio.NewWriter(out)
	defer w.Flush()
	m = m.snapshot()
	d.writeMetrics(&promWriter{w: w, labels: d.metricLabels(model), lateHist: lateHist}, m)
	if hideTruth {
		return
	}
	// The engine's own truth, in every dialect.
	fmt.Fprintf(w, "# HELP genload_engine_steps_total Engine steps (forward passes) run.\n# TYPE genload_engine_steps_total counter\ngenload_engine_steps_total %d\n", m.steps)
	fmt.Fprintf(w, "# HELP genload_engine_decode_steps_total Engine steps without prefill tokens.\n# TYPE genload_engine_decode_steps_total counter\ngenload_engine_decode_steps_total %d\n", m.decSteps)
	fmt.Fprintf(w, "# HELP genload_engine_step_duration_seconds Measured wall-clock duration of each engine step (target: simulated duration × time scale).\n# TYPE genload_engine_step_duration_seconds histogram\n")
	m.stepWall.write(w, "genload_engine_step_duration_seconds", "")
	fmt.Fprintf(w, "# HELP genload_engine_decode_step_duration_seconds Wall-clock duration of each engine step without prefill tokens.\n# TYPE genload_engine_decode_step_duration_seconds histogram\n")
	m.decWall.write(w, "genload_engine_decode_step_duration_seconds", "")
	fmt.Fprintf(w, "# HELP genload_engine_step_simulated_seconds Simulated (unscaled) duration of each engine step from the cost model.\n# TYPE genload_engine_step_simulated_seconds histogram\n")
	m.stepSim.write(w, "genload_engine_step_simulated_seconds", "")
	fmt.Fprintf(w, "# HELP genload_engine_time_scale Wall seconds per simulated second.\n# TYPE genload_engine_time_scale gauge\ngenload_engine_time_scale %s\n", fmtFloat(timeScale))
	fmt.Fprintf(w, "# HELP genload_engine_step_planned_seconds_total Planned wall duration of the engine's steps (simulated duration × time scale).\n# TYPE genload_engine_step_planned_seconds_total counter\ngenload_engine_step_planned_seconds_total %s\n", fmtFloat(m.plannedS))
	fmt.Fprintf(w, "# HELP genload_engine_step_overrun_seconds_total Wall time the engine's steps ran past their planned duration (a busy host).\n# TYPE genload_engine_step_overrun_seconds_total counter\ngenload_engine_step_overrun_seconds_total %s\n", fmtFloat(m.overrunS))
	fmt.Fprintf(w, "# HELP genload_engine_step_overrun_ratio Each step's overrun past its planned wall duration, as a share of it.\n# TYPE genload_engine_step_overrun_ratio histogram\n")
	m.overrun.write(w, "genload_engine_step_overrun_ratio", "")
	fmt.Fprintf(w, "# HELP genload_engine_decode_step_planned_seconds_total Planned wall duration of the engine's steps without prefill tokens.\n# TYPE genload_engine_decode_step_planned_seconds_total counter\ngenload_engine_decode_step_planned_seconds_total %s\n", fmtFloat(m.decPlannedS))
}
