// Package metrics holds the values a scrape of a server's /metrics yields for one cell —
// step figures (Steps), the running-gauge occupancy (Occupancy) and their per-server split
// of a routed cell (CellMetrics, ServerMetrics) — with their JSON forms and notes, and no
// transport: results readers (report, diff) decode and print them without linking an HTTP
// client. Package scrape computes them from /metrics over HTTP.
package metrics

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/genload/genload/host/stats"
	"github.com/genload/genload/host/warning"
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
//	                emits one token per running sequence. vLLM observes one interval per
//	                request per engine step, however many tokens the step gave it, so
//	                its mean stays per forward pass under speculative decoding. SGLang
//	                adds the interval to the sum once but counts it once per new token:
//	                its mean is per token, so with speculation (spec_accept_length > 1)
//	                there is no figure (the gauge is not the cell's own mean);
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
	// Overrun is how late the built-in engine's steps ran against their plan (simulated
	// duration × time scale) during the cell, from genload_engine_step_planned_seconds_total,
	// genload_engine_step_overrun_seconds_total and the genload_engine_step_overrun_ratio
	// histogram; nil when the engine does not sleep or is not the target.
	Overrun *Overrun `json:"overrun,omitempty"`
}

// OverrunShareLimit is the stated share: a cell whose engine steps ran, in all, more than 2 %
// over their planned wall time measured the host's load as much as the cost model (at the
// large batch sizes of the default matrix a step is 3–4 % longer than the previous B's).
const OverrunShareLimit = 0.02

// Overrun is the built-in engine's lateness over a cell's steps.
type Overrun struct {
	// Steps is the steps observed. Share = max(0, Σ measured − Σ planned) / Σ planned over
	// them: how much longer than the cost model's the steps ran in all, the bias of a mean
	// such as fwd (the engine repays small delays with shorter steps, so it is net of them).
	// Late = Σ max(0, measured − planned) / Σ planned: the delays before repayment.
	Steps float64 `json:"steps"`
	Share float64 `json:"share"`
	Late  float64 `json:"late"`
	// P50 and P99 are quantiles of one step's overrun as a share of its planned duration
	// (upper bounds of the histogram's buckets).
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	// Decode = Σ measured / Σ planned − 1 over the steps without prefill (valid when
	// HasDecode): how far from the cost model the decode steps that fwd times ran, in either
	// direction. Share nets every step, prefills included, so a late prefill repaid by the
	// decode steps after it (each at least half its planned duration) nets to nothing while
	// those steps ran short: fwd then reads below the cost model.
	Decode    float64 `json:"decode"`
	HasDecode bool    `json:"has_decode"`
}

// Disturbed reports whether the cell's figures measured the host as much as the cost model:
// the steps ran, in all, more than OverrunShareLimit over their plan (Share), or the decode
// steps more than OverrunShareLimit short of it (Decode, repaying a late prefill). False for
// nil (no record: not the built-in engine, or it does not sleep).
func (o *Overrun) Disturbed() bool {
	return o != nil && (o.Share > OverrunShareLimit || o.HasDecode && -o.Decode > OverrunShareLimit)
}

// Intermittent reports whether the steps' lateness came from a few of them: the median step
// ran within OverrunShareLimit of its plan (P50), so that the excess is the host's stalls,
// which another attempt draws afresh. When the median step itself ran late (P50 above the
// share: steps too short for the host's timers, at time scale 0.01 every step 100–500 % late,
// or a host saturated throughout), another attempt would read the same.
func (o *Overrun) Intermittent() bool { return o != nil && o.P50 <= OverrunShareLimit }

// Note returns the warning for an overrun above OverrunShareLimit, or for decode steps that
// ran more than OverrunShareLimit short of their plan (Decode), "" otherwise (and for nil):
// the warning of a Disturbed record.
func (o *Overrun) Note() string {
	if !o.Disturbed() {
		return ""
	}
	if o.Share <= OverrunShareLimit {
		return fmt.Sprintf("the built-in engine's steps ran short of their planned wall time: its decode steps %.1f %% in all (over %.0f steps, their net %+.1f %%), repaying lateness of earlier steps on a busy host (each repaying step runs at least half its plan), beyond the %.0f %% this cell allows: fwd reads below the cost model (a larger [engine] time_scale, or a quieter host)",
			-100*o.Decode, o.Steps, 100*o.Share, 100*OverrunShareLimit)
	}
	if !o.Intermittent() {
		return fmt.Sprintf("the built-in engine's steps ran %.1f %% over their planned wall time in all, the median step among them (one step's delay p50 %.1f %%, p99 %.1f %% of it; over %.0f steps), above the %.0f %% this cell allows: steps too short for the host's timers, or a host busy throughout, so fwd follows the host as much as the cost model, and another attempt would read the same (not measured again; a larger [engine] time_scale, or a quieter host)",
			100*o.Share, 100*o.P50, 100*o.P99, o.Steps, 100*OverrunShareLimit)
	}
	return fmt.Sprintf("the built-in engine's steps ran %.1f %% over their planned wall time in all (one step's delay p50 %.1f %%, p99 %.1f %% of it; over %.0f steps), above the %.0f %% this cell allows: the host was busy, so fwd follows its load as much as the cost model (a larger [engine] time_scale, or a quieter host)",
		100*o.Share, 100*o.P50, 100*o.P99, o.Steps, 100*OverrunShareLimit)
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

// Occupancy summarises the running-requests gauge sampled during a cell. Leading and
// trailing samples with 0 running (before the first request arrived, after the last
// finished) are dropped; the rest are "samples".
//
//	Mode     = the most frequent value (ties → the larger)
//	AtTarget = share of samples equal to the target batch size B
//	Max      = the largest sample (a value above B means other load on the server)
//	Mean     = arithmetic mean of the samples
//	P10, P50, P90 = nearest-rank percentiles of the samples: the ⌈q·N⌉-th smallest
//
// The mode alone can mislead: a server that ramps up to B and down again in a long tail
// spends most samples at 1 (the mode) although it peaked near B; the percentiles and the
// mean show the distribution. Records written before the percentiles existed have them 0.
type Occupancy struct {
	Samples  int     `json:"samples"`
	Target   int     `json:"target"`
	Mode     int     `json:"mode"`
	AtTarget float64 `json:"share_at_target"`
	Max      int     `json:"max"`
	Mean     float64 `json:"mean"`
	P10      int     `json:"p10,omitempty"`
	P50      int     `json:"p50,omitempty"`
	P90      int     `json:"p90,omitempty"`
	// Errors counts failed scrapes during the cell.
	Errors int `json:"scrape_errors"`
	// Fixed reports that the gauge read one value in every sample of this cell and of an
	// earlier cell of the run with another B: the server reports a fixed value, not the
	// requests it runs, and Judge gives no verdict on it (set by the run, which sees the
	// cells).
	Fixed bool `json:"fixed,omitempty"`
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
	sorted := slices.Clone(s)
	slices.Sort(sorted)
	o.P10, o.P50, o.P90 = stats.Quantile(sorted, 0.1), stats.Quantile(sorted, 0.5), stats.Quantile(sorted, 0.9)
	return o
}

// Distribution describes the samples in a phrase: "median 300, mean 358, p10–p90 1–1,020,
// max 1,020 over 57 samples, 0 % at 1,024" (without the percentiles in records written
// before they existed: "mean 358, max 1,020, mostly 1 over 57 samples, 0 % at 1,024").
func (o Occupancy) Distribution() string {
	if o.P50 == 0 && o.Samples > 0 && o.Max > 0 {
		return fmt.Sprintf("mean %s, max %s, mostly %s over %d samples, %.0f %% at %s",
			count(o.Mean), warning.Thousands(o.Max), warning.Thousands(o.Mode), o.Samples, 100*o.AtTarget, warning.Thousands(o.Target))
	}
	return fmt.Sprintf("median %s, mean %s, p10–p90 %s–%s, max %s over %d samples, %.0f %% at %s",
		warning.Thousands(o.P50), count(o.Mean), warning.Thousands(o.P10), warning.Thousands(o.P90), warning.Thousands(o.Max), o.Samples, 100*o.AtTarget, warning.Thousands(o.Target))
}

// MinSamples is the fewest gauge samples (one every 20 ms) on which Judge gives a verdict.
const MinSamples = 3

// BriefShare is the share of gauge samples at the target below which a batch that was
// reached counts as reached only briefly.
const BriefShare = 0.5

// Judge is the gauge's verdict on a batch of o.Target sequences sent to one server (who:
// "the server", or "server URL" in a routed cell; what: how the target reads, "B = 16" or
// "the 4 sequences routed to it"); ok is false when there is nothing to say or fewer than
// MinSamples samples. It reads the distribution, not only the mode:
//
//   - Max > Target: other load shares the server (warning.OtherLoad);
//   - Max < Target: the batch was not reached — no sample saw the target running
//     (warning.BatchNotReached; the cell is partial);
//   - AtTarget < BriefShare: reached, but for under half of the samples
//     (warning.BatchBrief).
func (o Occupancy) Judge(who, what string) (w warning.Warning, ok bool) {
	if o.Samples < MinSamples || o.Target <= 0 || o.Fixed {
		return w, false
	}
	switch {
	case o.Max > o.Target:
		return warning.Newf(warning.OtherLoad, "%s ran up to %s requests at once, more than %s: other load shares it (gauge: %s)",
			who, warning.Thousands(o.Max), what, o.Distribution()), true
	case o.Max < o.Target:
		return warning.Newf(warning.BatchNotReached, "batch not reached: %s ran at most %s sequences at once, not %s (gauge: %s); the figures are kept, for a batch of at most %s",
			who, warning.Thousands(o.Max), what, o.Distribution(), warning.Thousands(o.Max)), true
	case o.AtTarget < BriefShare:
		return warning.Newf(warning.BatchBrief, "batch reached briefly: %s ran %s in %.0f %% of the samples only (gauge: %s)",
			who, what, 100*o.AtTarget, o.Distribution()), true
	}
	return w, false
}

// count writes a mean number of sequences: one decimal below 10, else rounded (358).
func count(v float64) string {
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return warning.Thousands(int(math.Round(v)))
}

// CellMetrics are the server-side figures of one cell. For a cell routed over several
// servers, Servers holds each server's own figures and Steps and Occupancy combine them:
// Steps from the servers' counters and histograms summed (so the step time is the pooled
// mean over every server's observations, e.g. Σ ITL sums / Σ ITL counts), Occupancy from
// the sum of the running gauges scraped at the same tick, against the cell's B.
type CellMetrics struct {
	Steps     Steps           `json:"steps"`
	Occupancy Occupancy       `json:"occupancy"`
	Servers   []ServerMetrics `json:"servers,omitempty"`
}

// ServerMetrics are one server's figures in a cell routed over several servers.
type ServerMetrics struct {
	// URL is the server's /metrics URL; Workers the names of the workers on it.
	URL     string   `json:"url"`
	Workers []string `json:"workers"`
	// Sequences is the share of the cell's B routed to it (its occupancy target), −1 when
	// the routing was not given.
	Sequences int       `json:"sequences"`
	Steps     Steps     `json:"steps"`
	Occupancy Occupancy `json:"occupancy"`
	// Error is the failed scrape of the cell, if any (its Steps are then empty).
	Error string `json:"error,omitempty"`
}

// Notes are the cell's warnings that the caller does not derive itself: why the (combined)
// step time is absent and, per server of a routed cell, a failed scrape, an absent step time
// (not for a server the cell routed no sequence to),
// and the gauge's verdict on the share of B routed to it (Occupancy.Judge: other load, a
// share not reached, or reached briefly). The single-server occupancy against B is left to
// the caller, which knows the request shape.
func (m CellMetrics) Notes() []warning.Warning {
	var ns []warning.Warning
	if !m.Steps.HasStepTime && m.Steps.StepTimeReason != "" {
		ns = append(ns, warning.New(warning.MetricsFwdAbsent, "metrics fwd absent: "+m.Steps.StepTimeReason))
	}
	if n := m.Steps.Overrun.Note(); n != "" {
		ns = append(ns, warning.New(warning.EngineOverrun, n))
	}
	for _, s := range m.Servers {
		switch {
		case s.Error != "":
			ns = append(ns, warning.Newf(warning.MetricsFailed, "server %s: %s", s.URL, s.Error))
			continue
		case !s.Steps.HasStepTime && s.Steps.StepTimeReason != "" && s.Sequences != 0:
			// (a server the cell routed no sequence to has nothing to observe)
			ns = append(ns, warning.Newf(warning.MetricsFwdAbsent, "server %s: metrics fwd absent: %s", s.URL, s.Steps.StepTimeReason))
		}
		if s.Sequences <= 0 {
			continue
		}
		o := s.Occupancy
		o.Target = s.Sequences
		if w, ok := o.Judge("server "+s.URL, fmt.Sprintf("the %d routed to it", s.Sequences)); ok {
			ns = append(ns, w)
		}
	}
	return ns
}

// NotReached reports whether the gauge of any server of m (the combined one for a single
// server, against b) shows that its share of the batch was never running at once
// (Occupancy.Judge's BatchNotReached). A cell of one server is judged against b by the
// caller, which knows whether the request shape lets the gauge count sequences.
func (m CellMetrics) NotReached() bool {
	for _, s := range m.Servers {
		o := s.Occupancy
		o.Target = s.Sequences
		if w, ok := o.Judge("", ""); ok && s.Error == "" && s.Sequences > 0 && w.Name == warning.BatchNotReached {
			return true
		}
	}
	return false
}
