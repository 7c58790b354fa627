package replay

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/genload/genload/host/records"
	"github.com/genload/genload/host/stats"
)

// SummarySchema names the replay summary file (genload replay writes it as <id>.json).
const SummarySchema = "genload.replay/v1"

// Dist is a sample's nearest-rank percentiles in ms (N = 0: no sample, the rest 0).
type Dist struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean_ms"`
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
}

// NewDist summarises v (ms).
func NewDist(v []float64) Dist {
	if len(v) == 0 {
		return Dist{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return Dist{N: len(s), Mean: sum / float64(len(s)), P50: stats.Quantile(s, 0.5), P90: stats.Quantile(s, 0.9), P99: stats.Quantile(s, 0.99), Max: s[len(s)-1]}
}

// Summary is a replay's outcome (the <id>.json file, schema genload.replay/v1).
type Summary struct {
	Schema string `json:"schema"`
	// Header is the records file's header (trace, window, speed, target, engine …).
	Header records.Header `json:"header"`
	// Records is the records file; Steps the built-in engine's step log ("" for another
	// target), both relative to the summary's directory when written by genload replay.
	Records string `json:"records"`
	Steps   string `json:"steps,omitempty"`
	// Counts: requests in the schedule, sent, finished with a record, ok (status 200 and
	// exactly max_tokens generated), failed (an error), short or long (another completion
	// count than max_tokens: ignore_eos not honoured, or a truncated stream), whose prompt the
	// server counted otherwise than sent, and left out of the window (with the first reasons).
	Scheduled      int    `json:"scheduled"`
	Sent           int    `json:"sent"`
	Finished       int    `json:"finished"`
	OK             int    `json:"ok"`
	Failed         int    `json:"failed"`
	WrongLength    int    `json:"wrong_length"`
	PromptMismatch int    `json:"prompt_mismatch"`
	Skipped        int    `json:"skipped"`
	SkippedFirst   []Skip `json:"skipped_first,omitempty"`
	FirstError     string `json:"first_error,omitempty"`
	// Interrupted is set when the replay was stopped (Ctrl-C) before every request was sent
	// or finished.
	Interrupted bool `json:"interrupted,omitempty"`
	// Rate is the schedule's send rate (requests/s; 0 for one request or for requests all
	// scheduled at one instant); Duration the wall time from t₀ to the last request's end (s).
	Rate     float64 `json:"rate_per_s"`
	Duration float64 `json:"duration_s"`
	// Speed is the replay's --speed (log time ÷ speed = send time); TimeScale the built-in
	// engine's wall seconds per simulated second (0: another target, whose times are its own).
	Speed     float64 `json:"speed"`
	TimeScale float64 `json:"time_scale,omitempty"`
	// Lag is the client's lag behind its schedule (sent + connect − scheduled); Late1ms how
	// many requests were sent more than 1 ms late; Dialled how many waited, after their send
	// stamp, for a new TCP connection to open (their lag includes the wait).
	Lag     Dist `json:"lag"`
	Late1ms int  `json:"late_1ms"`
	Dialled int  `json:"dialled"`
	// TTFT, E2E from the actual send; TTFTSched, E2ESched from the scheduled send (+ lag);
	// ITL the gaps between consecutive chunks per token (pooled); TPOT per request
	// (last − first chunk) / (completion tokens − 1). Over the ok requests.
	TTFT      Dist `json:"ttft"`
	TTFTSched Dist `json:"ttft_from_schedule"`
	E2E       Dist `json:"e2e"`
	E2ESched  Dist `json:"e2e_from_schedule"`
	ITL       Dist `json:"itl"`
	TPOT      Dist `json:"tpot"`
	// Goodput: ok requests within the SLOs (TTFT from the schedule, TPOT), per second of
	// Duration, and their output tokens per second; Throughput all output tokens per second.
	SLOTTFTMs  float64 `json:"slo_ttft_ms,omitempty"`
	SLOTPOTMs  float64 `json:"slo_tpot_ms,omitempty"`
	Good       int     `json:"good"`
	Goodput    float64 `json:"goodput_per_s"`
	GoodTokens float64 `json:"good_tokens_per_s"`
	Throughput float64 `json:"tokens_per_s"`
}

// accumulator gathers the figures of finished requests (safe for concurrent use).
type accumulator struct {
	mu                       sync.Mutex
	o                        Options
	t0                       time.Time
	sum                      Summary
	lag, ttft, ttftS, e2e    []float64
	e2eS, itl, tpot          []float64
	lastEnd                  float64
	tokens, goodTokens, good float64
}

func newAccumulator(o Options, t0 time.Time) *accumulator {
	return &accumulator{o: o, t0: t0}
}

func (a *accumulator) failed(it *Item, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sum.Failed++
	if a.sum.FirstError == "" {
		a.sum.FirstError = fmt.Sprintf("%s: %v", it.Src, err)
	}
}

func (a *accumulator) add(it *Item, rs []records.Record) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range rs {
		a.sum.Finished++
		if r.LagMs != nil {
			a.lag = append(a.lag, *r.LagMs)
			if *r.LagMs > 1 {
				a.sum.Late1ms++
			}
		}
		if r.ConnectMs != nil {
			a.sum.Dialled++
		}
		if r.E2EMs != nil {
			a.lastEnd = max(a.lastEnd, r.SentMs+*r.E2EMs)
		}
		if r.UsagePromptTokens != nil && *r.UsagePromptTokens != r.PromptTokens {
			a.sum.PromptMismatch++
		}
		a.tokens += float64(r.CompletionTokens)
		switch {
		case r.Error != "" || r.Status != 200:
			a.sum.Failed++
			if a.sum.FirstError == "" {
				a.sum.FirstError = fmt.Sprintf("%s: %s", it.Src, r.Error)
			}
			continue
		case r.CompletionTokens != r.MaxTokens:
			a.sum.WrongLength++
			if a.sum.FirstError == "" {
				a.sum.FirstError = fmt.Sprintf("%s: %d tokens generated, max_tokens %d (finish %q)", it.Src, r.CompletionTokens, r.MaxTokens, r.FinishReason)
			}
			continue
		}
		a.sum.OK++
		lag := 0.0 // sent − scheduled: TTFT and E2E count from sent, connecting included
		if r.LagMs != nil {
			lag = *r.LagMs
			if r.ConnectMs != nil {
				lag -= *r.ConnectMs
			}
		}
		var tpot float64
		if r.TTFTMs != nil {
			a.ttft = append(a.ttft, *r.TTFTMs)
			a.ttftS = append(a.ttftS, *r.TTFTMs+lag)
		}
		if r.E2EMs != nil {
			a.e2e = append(a.e2e, *r.E2EMs)
			a.e2eS = append(a.e2eS, *r.E2EMs+lag)
		}
		for k := 1; k < len(r.Chunks); k++ {
			gap := r.Chunks[k][0] - r.Chunks[k-1][0]
			if n := r.Chunks[k][1]; n > 1 {
				gap /= n
			}
			a.itl = append(a.itl, gap)
		}
		if n := len(r.Chunks); n > 1 && r.CompletionTokens > 1 {
			tpot = (r.Chunks[n-1][0] - r.Chunks[0][0]) / float64(r.CompletionTokens-1)
			a.tpot = append(a.tpot, tpot)
		}
		okTTFT := a.o.SLOTTFT <= 0 || r.TTFTMs != nil && *r.TTFTMs+lag <= records.Ms(a.o.SLOTTFT)
		okTPOT := a.o.SLOTPOT <= 0 || tpot <= records.Ms(a.o.SLOTPOT)
		if okTTFT && okTPOT {
			a.good++
			a.goodTokens += float64(r.CompletionTokens)
		}
	}
}

func (a *accumulator) summary(s *Schedule, sent int, interrupted bool) *Summary {
	a.mu.Lock()
	defer a.mu.Unlock()
	sum := a.sum
	sum.Schema = SummarySchema
	sum.Scheduled, sum.Sent = len(s.Items), sent
	sum.Skipped = len(s.Skipped)
	sum.SkippedFirst = s.Skipped[:min(5, len(s.Skipped))]
	sum.Interrupted = interrupted
	sum.Speed = s.Speed
	sum.Rate = s.Rate()
	if math.IsInf(sum.Rate, 0) {
		sum.Rate = 0
	}
	sum.Duration = a.lastEnd / 1e3
	sum.Lag, sum.TTFT, sum.TTFTSched = NewDist(a.lag), NewDist(a.ttft), NewDist(a.ttftS)
	sum.E2E, sum.E2ESched, sum.ITL, sum.TPOT = NewDist(a.e2e), NewDist(a.e2eS), NewDist(a.itl), NewDist(a.tpot)
	sum.SLOTTFTMs, sum.SLOTPOTMs = records.Ms(a.o.SLOTTFT), records.Ms(a.o.SLOTPOT)
	sum.Good = int(a.good)
	if sum.Duration > 0 {
		sum.Goodput, sum.GoodTokens, sum.Throughput = a.good/sum.Duration, a.goodTokens/sum.Duration, a.tokens/sum.Duration
	}
	return &sum
}

// plural is "1 request", "2 requests".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// RateText describes the send rate of n requests: "" for one, "all at one instant" when their
// times are equal (rate 0 or +Inf), else "65.1 requests/s".
func RateText(n int, rate float64) string {
	switch {
	case n < 2:
		return ""
	case rate == 0 || math.IsInf(rate, 0):
		return "all at one instant"
	}
	return fmt.Sprintf("%.1f requests/s", rate)
}

// TimeScaleNote says what the built-in engine's time scale ts does to a replay's figures at
// speed ("" for another target, ts = 0): its latencies are wall-clock, ts × the simulated
// server's; and requests sent at the log's rate × speed arrive, per simulated second, at the
// log's rate × speed·ts: the log's load when speed = 1/ts.
func TimeScaleNote(ts, speed float64) string {
	if ts <= 0 {
		return ""
	}
	s := fmt.Sprintf("the built-in engine at time scale %g (wall s per simulated s) is %.3g× faster than the server it simulates: its latencies are wall-clock (× %.3g for the simulated server's)", ts, 1/ts, 1/ts)
	if ts == 1 {
		s = "the built-in engine at time scale 1: its latencies are the simulated server's"
	}
	if load := speed * ts; math.Abs(load-1) < 1e-9 {
		s += fmt.Sprintf("; at speed %g = 1/time scale it serves the log's load on its own clock", speed)
	} else {
		s += fmt.Sprintf("; at speed %g it serves %.3g× the log's load on its own clock (--speed %.3g replays the log's load)", speed, load, 1/ts)
	}
	return s
}

// WriteText prints the summary: counts, lag, latencies, goodput, one line each, and what the
// built-in engine's time scale does to the figures.
func (s *Summary) WriteText(w io.Writer) {
	state := ""
	if s.Interrupted {
		state = " (interrupted: the figures are of the requests that finished)"
	}
	rate := RateText(s.Scheduled, s.Rate)
	if rate != "" {
		rate = " (" + rate + ")"
	}
	fmt.Fprintf(w, "replay: %d scheduled%s, %d sent, %d finished: %d ok, %d failed, %d with another output length than max_tokens, %s counted otherwise than sent%s\n",
		s.Scheduled, rate, s.Sent, s.Finished, s.OK, s.Failed, s.WrongLength, plural(s.PromptMismatch, "prompt"), state)
	if n := TimeScaleNote(s.TimeScale, s.Speed); n != "" {
		fmt.Fprintf(w, "time scale: %s\n", n)
	}
	if s.Skipped > 0 {
		fmt.Fprintf(w, "left out of the window: %d (first: %s: %s)\n", s.Skipped, s.SkippedFirst[0].Src, s.SkippedFirst[0].Why)
	}
	if s.FirstError != "" {
		fmt.Fprintf(w, "first failure: %s\n", s.FirstError)
	}
	fmt.Fprintf(w, "send lag behind the schedule: p50 %.3f, p99 %.3f, max %.3f ms; %d of %d sent more than 1 ms late; %d waited for a new connection\n",
		s.Lag.P50, s.Lag.P99, s.Lag.Max, s.Late1ms, s.Lag.N, s.Dialled)
	unit := "ms"
	if s.TimeScale > 0 {
		unit = fmt.Sprintf("wall ms at time scale %g", s.TimeScale)
	}
	fmt.Fprintf(w, "\n| %s (ok requests) | n | mean | p50 | p90 | p99 | max |\n|---|---|---|---|---|---|---|\n", unit)
	for _, r := range []struct {
		name string
		d    Dist
	}{{"TTFT", s.TTFT}, {"TTFT from schedule", s.TTFTSched}, {"ITL", s.ITL}, {"TPOT", s.TPOT}, {"E2E", s.E2E}, {"E2E from schedule", s.E2ESched}} {
		fmt.Fprintf(w, "| %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f |\n", r.name, r.d.N, r.d.Mean, r.d.P50, r.d.P90, r.d.P99, r.d.Max)
	}
	var slos []string
	if s.SLOTTFTMs > 0 {
		slos = append(slos, fmt.Sprintf("TTFT from schedule ≤ %.0f ms", s.SLOTTFTMs))
	}
	if s.SLOTPOTMs > 0 {
		slos = append(slos, fmt.Sprintf("TPOT ≤ %.1f ms", s.SLOTPOTMs))
	}
	slo := "no SLO given: every ok request counts"
	if len(slos) > 0 {
		slo = "SLO " + strings.Join(slos, ", ")
	}
	fmt.Fprintf(w, "\ngoodput: %s, %.2f requests/s, %.0f output tokens/s (%s); throughput %.0f output tokens/s, both over %.3g s from the first send to the last finish (a short log can read above its offered rate)\n",
		plural(s.Good, "request"), s.Goodput, s.GoodTokens, slo, s.Throughput, s.Duration)
	fmt.Fprintf(w, "\"from schedule\" adds the client's lag: where it differs from the line above, requests were sent late (coordinated omission) and it is what a user would have seen.\n")
}
