package scrape

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
)

// Steps are server-side figures of one cell from a scrape before and one after it
// (Δ = after − before). Each estimate is valid only when its Has* flag is set; a missing
// StepTime has its StepTimeReason. A series absent before the cell and present after it
// counts from zero: a fresh server creates a labelled histogram's series only at its
// first observation.
//
//	StepTime (seconds per forward pass), first available of:
//	  vLLM, SGLang: ΔITL_sum / ΔITL_count of *:inter_token_latency_seconds — the mean
//	                inter-token latency, equal to the decode step time when every step
//	                emits one token per running sequence;
//	  TGI:          Δsum / Δcount of tgi_batch_decode_duration{method="decode"};
//	  llama.cpp:    Δtokens_predicted_seconds_total / (Δtokens_predicted_total − R), R the
//	                requests that finished in the interval (Delta's finished). llama.cpp
//	                adds a slot's n_decoded (every generated token, the first included) and
//	                its t_token_generation (from the first token to the last: n − 1 decode
//	                forward passes) when the request ends, so per request the seconds
//	                span n − 1 forwards for n tokens; dividing by the tokens alone reads
//	                step·(1 − 1/n) (−10 % at max_tokens 10). Unknown R (0): no figure.
//	TokensPerStep, first available of:
//	  vLLM:         Δsum / Δcount of vllm:iteration_tokens_total (prompt + generated tokens
//	                per step; equals the batch size on pure decode steps);
//	  otherwise:    Δgeneration tokens / Δsteps, steps from llama.cpp's n_decode_total or
//	                TGI's decode histogram count, else the truth counter.
//	TruthStepTime = Δsum / Δcount of genload_engine_step_duration_seconds (every step,
//	                prefill included) and TruthSteps = Δgenload_engine_steps_total: the
//	                built-in engine's own values.
type Steps struct {
	Dialect          string        `json:"dialect"`
	StepTime         time.Duration `json:"-"`
	HasStepTime      bool          `json:"has_step_time"`
	StepTimeReason   string        `json:"step_time_reason,omitempty"`
	TokensPerStep    float64       `json:"tokens_per_step"`
	HasTokensPerStep bool          `json:"has_tokens_per_step"`
	Steps            float64       `json:"steps"`
	GeneratedTokens  float64       `json:"generated_tokens"`
	TruthStepTime    time.Duration `json:"-"`
	TruthSteps       float64       `json:"truth_steps"`
	HasTruth         bool          `json:"has_truth"`
	// TruthDecodeStepTime is Δsum / Δcount of genload_engine_decode_step_duration_seconds:
	// the engine's steps with no prefill work, the quantity a decode per-forward figure
	// estimates. Valid when HasTruthDecode.
	TruthDecodeStepTime time.Duration `json:"-"`
	HasTruthDecode      bool          `json:"has_truth_decode"`
}

// MarshalJSON writes the durations as step_time_ms and truth_step_time_ms.
func (s Steps) MarshalJSON() ([]byte, error) {
	type plain Steps
	return json.Marshal(struct {
		plain
		StepTimeMs            float64 `json:"step_time_ms"`
		TruthStepTimeMs       float64 `json:"truth_step_time_ms"`
		TruthDecodeStepTimeMs float64 `json:"truth_decode_step_time_ms"`
	}{plain(s), ms(s.StepTime), ms(s.TruthStepTime), ms(s.TruthDecodeStepTime)})
}

// UnmarshalJSON reads what MarshalJSON writes (results read back keep their step times).
func (s *Steps) UnmarshalJSON(b []byte) error {
	type plain Steps
	var v struct {
		plain
		StepTimeMs            float64 `json:"step_time_ms"`
		TruthStepTimeMs       float64 `json:"truth_step_time_ms"`
		TruthDecodeStepTimeMs float64 `json:"truth_decode_step_time_ms"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = Steps(v.plain)
	s.StepTime = time.Duration(math.Round(v.StepTimeMs * 1e6))
	s.TruthStepTime = time.Duration(math.Round(v.TruthStepTimeMs * 1e6))
	s.TruthDecodeStepTime = time.Duration(math.Round(v.TruthDecodeStepTimeMs * 1e6))
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func secs(v float64) time.Duration { return time.Duration(math.Round(v * 1e9)) }

// Delta computes Steps between two snapshots of a server of family n. finished is the
// number of requests (sequences, for llama.cpp's slots) that ended between them, 0 when
// unknown; only llama.cpp's step time needs it.
func Delta(n Names, before, after Snapshot, finished int) Steps {
	st := Steps{Dialect: n.Dialect}
	// delta of a histogram: why is "" when it is usable (count grew)
	dHist := func(name string, match ...string) (dc, ds float64, why string) {
		c1, s1, ok1 := after.Hist(name, match...)
		if !ok1 {
			return 0, 0, name + " is not exposed"
		}
		c0, s0, _ := before.Hist(name, match...) // absent before: from zero
		switch {
		case c1 < c0:
			return 0, 0, name + " went down during the cell (server restarted?)"
		case c1 == c0:
			return 0, 0, name + " had no observation during the cell"
		}
		return c1 - c0, s1 - s0, ""
	}
	dVal := func(name string) (float64, string) {
		if name == "" {
			return 0, "not exposed by " + n.Dialect
		}
		v1, ok1 := after.Value(name)
		if !ok1 {
			return 0, name + " is not exposed"
		}
		v0, _ := before.Value(name)
		if v1 < v0 {
			return 0, name + " went down during the cell (server restarted?)"
		}
		return v1 - v0, ""
	}
	if dc, ds, why := dHist(TruthStepDuration); why == "" {
		st.TruthStepTime, st.HasTruth = secs(ds/dc), true
		st.TruthSteps = dc
	}
	if dc, ds, why := dHist(TruthDecodeStepDuration); why == "" {
		st.TruthDecodeStepTime, st.HasTruthDecode = secs(ds/dc), true
	}
	if _, ok := after.Families[TruthSteps]; ok {
		if d, why := dVal(TruthSteps); why == "" {
			st.TruthSteps = d
		}
	}
	var why []string
	if n.ITL != "" {
		if dc, ds, w := dHist(n.ITL); w == "" {
			st.StepTime, st.HasStepTime = secs(ds/dc), true
		} else {
			why = append(why, w)
		}
	}
	if !st.HasStepTime && n.DecodeDuration != "" {
		if dc, ds, w := dHist(n.DecodeDuration, "method=decode"); w == "" {
			st.StepTime, st.HasStepTime = secs(ds/dc), true
			st.Steps = dc
		} else {
			why = append(why, w)
		}
	}
	if !st.HasStepTime && n.Decodes != "" {
		dsec, w1 := dVal(n.DecodeSeconds)
		dtok, w2 := dVal(n.GenerationTokens)
		switch {
		case w1 != "" || w2 != "":
			why = append(why, strings.TrimSpace(w1+" "+w2))
		case finished <= 0:
			why = append(why, "the number of requests finished in the cell is unknown (llama.cpp's seconds span n − 1 forward passes of n tokens)")
		case dtok-float64(finished) <= 0:
			why = append(why, fmt.Sprintf("%s grew by %g for %d finished requests: no decode forward pass", n.GenerationTokens, dtok, finished))
		default:
			st.StepTime, st.HasStepTime = secs(dsec/(dtok-float64(finished))), true
		}
		if dn, w := dVal(n.Decodes); w == "" && dn > 0 {
			st.Steps = dn
		}
	}
	if !st.HasStepTime {
		if len(why) == 0 {
			why = append(why, "no step-time metric is known for "+n.Dialect)
		}
		st.StepTimeReason = strings.Join(why, "; ")
	}
	if g, w := dVal(n.GenerationTokens); w == "" {
		st.GeneratedTokens = g
	}
	if n.IterationTokens != "" {
		if dc, ds, w := dHist(n.IterationTokens); w == "" {
			st.TokensPerStep, st.HasTokensPerStep = ds/dc, true
			st.Steps = dc
		}
	}
	if !st.HasTokensPerStep {
		steps := st.Steps
		if steps == 0 {
			steps = st.TruthSteps
		}
		if steps > 0 && st.GeneratedTokens > 0 {
			st.TokensPerStep, st.HasTokensPerStep = st.GeneratedTokens/steps, true
			st.Steps = steps
		}
	}
	return st
}

// Occupancy summarises the running-requests gauge sampled during a cell. Leading and
// trailing samples with 0 running (before the first request arrived, after the last
// finished) are dropped; the rest are "samples".
//
//	Mode    = the most frequent value (ties → the larger)
//	AtTarget = share of samples equal to the target batch size B
//	Max     = the largest sample (a value above B means other load on the server)
//	Mean    = arithmetic mean of the samples
type Occupancy struct {
	Samples  int     `json:"samples"`
	Target   int     `json:"target"`
	Mode     int     `json:"mode"`
	AtTarget float64 `json:"share_at_target"`
	Max      int     `json:"max"`
	Mean     float64 `json:"mean"`
	// Errors counts failed scrapes during the cell.
	Errors int `json:"scrape_errors"`
}

// Occupy computes the Occupancy of raw gauge samples for target batch size b.
func Occupy(samples []int, b int) Occupancy {
	lo, hi := 0, len(samples)
	for lo < hi && samples[lo] == 0 {
		lo++
	}
	for hi > lo && samples[hi-1] == 0 {
		hi--
	}
	s := samples[lo:hi]
	o := Occupancy{Samples: len(s), Target: b}
	if len(s) == 0 {
		return o
	}
	freq := map[int]int{}
	sum, at := 0, 0
	for _, v := range s {
		freq[v]++
		sum += v
		o.Max = max(o.Max, v)
		if v == b {
			at++
		}
	}
	best := -1
	for v, c := range freq {
		if c > best || (c == best && v > o.Mode) {
			o.Mode, best = v, c
		}
	}
	o.AtTarget = float64(at) / float64(len(s))
	o.Mean = float64(sum) / float64(len(s))
	return o
}

// Sampler polls the running gauge of a server during a cell.
type Sampler struct {
	scraper  *Scraper
	names    Names
	interval time.Duration

	mu      sync.Mutex
	samples []int
	errors  int
	cancel  context.CancelFunc
	done    chan struct{}
}

// NewSampler returns a Sampler that scrapes s every interval (default 20 ms) and reads
// names.Running.
func NewSampler(s *Scraper, names Names, interval time.Duration) *Sampler {
	if interval <= 0 {
		interval = 20 * time.Millisecond
	}
	return &Sampler{scraper: s, names: names, interval: interval}
}

// Start begins sampling in a goroutine until Stop or ctx ends.
func (sp *Sampler) Start(ctx context.Context) {
	ctx, sp.cancel = context.WithCancel(ctx)
	sp.done = make(chan struct{})
	sp.samples, sp.errors = sp.samples[:0], 0
	go func() {
		defer close(sp.done)
		t := time.NewTicker(sp.interval)
		defer t.Stop()
		for {
			snap, err := sp.scraper.Scrape(ctx)
			sp.mu.Lock()
			if err != nil {
				if ctx.Err() == nil {
					sp.errors++
				}
			} else if v, ok := snap.Value(sp.names.Running); ok {
				sp.samples = append(sp.samples, int(math.Round(v)))
			}
			sp.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// Stop ends sampling and returns the Occupancy for target batch size b.
func (sp *Sampler) Stop(b int) Occupancy {
	if sp.cancel == nil {
		return Occupancy{Target: b}
	}
	sp.cancel()
	<-sp.done
	sp.cancel = nil
	sp.mu.Lock()
	defer sp.mu.Unlock()
	o := Occupy(sp.samples, b)
	o.Errors = sp.errors
	return o
}

// CellMetrics are the server-side figures of one cell.
type CellMetrics struct {
	Steps     Steps     `json:"steps"`
	Occupancy Occupancy `json:"occupancy"`
}

// Watcher scrapes one server around each cell: Begin before the measured requests,
// End after them. Not safe for concurrent cells.
type Watcher struct {
	// Names is the detected server family.
	Names   Names
	scraper *Scraper
	sampler *Sampler
	before  Snapshot
}

// NewWatcher scrapes metricsURL once and detects the server family from its running
// gauge. It fails (naming the URL) when the endpoint is unreachable or exposes none of
// the known running gauges. interval is the occupancy sampling period (0 = 20 ms).
func NewWatcher(ctx context.Context, metricsURL, apiKey string, interval time.Duration) (*Watcher, error) {
	sc := &Scraper{URL: metricsURL, APIKey: apiKey}
	snap, err := sc.Scrape(ctx)
	if err != nil {
		return nil, err
	}
	n, ok := Detect(snap.Families)
	if !ok {
		return nil, fmt.Errorf("scrape: %s exposes no known running-requests gauge (%s, %s, %s, %s)",
			metricsURL, VLLM.Running, SGLang.Running, LlamaCpp.Running, TGI.Running)
	}
	return &Watcher{Names: n, scraper: sc, sampler: NewSampler(sc, n, interval), before: snap}, nil
}

// Begin takes the "before" snapshot and starts sampling occupancy.
func (w *Watcher) Begin(ctx context.Context) error {
	snap, err := w.scraper.Scrape(ctx)
	if err != nil {
		return err
	}
	w.before = snap
	w.sampler.Start(ctx)
	return nil
}

// End stops sampling, takes the "after" snapshot and returns the cell's metrics for
// target batch size b, taken to be the number of sequences that finished in the cell (a
// cell with a failed request is an error cell, whose server figures are not used).
func (w *Watcher) End(ctx context.Context, b int) (CellMetrics, error) {
	occ := w.sampler.Stop(b)
	after, err := w.scraper.Scrape(ctx)
	if err != nil {
		return CellMetrics{Occupancy: occ}, err
	}
	return CellMetrics{Steps: Delta(w.Names, w.before, after, b), Occupancy: occ}, nil
}
