// Package replay sends a request log (host/trace) again, open loop, against an
// OpenAI-compatible server: each request at its own arrival time scaled by a speed, whatever
// the server's state, with a prompt of exactly the logged input length and max_tokens set to
// the logged output length (ignore_eos, checked against what came back). Requests that shared
// prefix blocks in production share the same prompt prefix, so the server's prefix cache sees
// what production's saw. Every request's record (host/records) is appended as it finishes;
// the summary gives TTFT, ITL, TPOT, E2E and goodput, and how far the client fell behind its
// schedule.
//
// # The schedule
//
// A schedule is computed, and every prompt's blocks built, before anything is sent. For a
// window [from, to) of the log's time (the whole log by default) and a speed s > 0,
//
//	send_i = (arrival_i − from) / s            (offset from the replay's origin t₀)
//
// for every request with from ≤ arrival_i < to, in arrival order (ties in log order). A
// request is left out, with its reason, when its output length is 0 (max_tokens cannot be 0)
// or its prompt and output exceed the model's context. The sender waits for each send time
// (dispatch builds the body first and sends at the instant, host/plan Plan.SendAt, keeping its
// scheduler slot for the last millisecond: host/internal/clock HoldUntil) and never for the
// server: a request is sent whether or not the earlier ones finished, unless
// --max-concurrency requests are in flight, when it waits for one to finish — and is late.
//
// # Coordinated omission
//
// A closed-loop client that waits for the server sends later when the server is slow, so its
// latencies omit the wait its users would have had. The summary shows the client's own lag,
// lag_i = sent_i + connect_i − (t₀ + send_i) (connect_i: the wait for a new TCP connection
// after the send stamp, 0 on a connection already open), and every latency both from the
// actual send and from the scheduled one (TTFT and E2E count from sent_i, connecting
// included; "from schedule" they count from t₀ + send_i): where the two differ, the
// client (or --max-concurrency) held requests back, and the figures from the schedule are the
// ones a user would have seen.
//
// # Prompts
//
// A prompt of n tokens with prefix blocks h_0 … h_{m−1} (trace.BlockTokens = 512 tokens each)
// is block(h_0) ‖ block(h_1) ‖ … cut to n tokens, block(h) being the first 512 tokens of one
// distinct prompt source of host/prompt (the j-th distinct hash of the schedule, in order of
// first appearance, takes source j), with no chat template: the logged input length is the
// whole prompt. Tokens beyond the blocks (a log without hashes, or fewer hashes than the
// length needs) come from a source of the request's own. Distinct hashes therefore give
// distinct content from their first token (host/prompt), equal hashes equal tokens.
package replay

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/genload/genload/host/trace"
)

// Item is one request of the schedule.
type Item struct {
	// Index is the item's place in the schedule (0-based); Src the trace record ("file:line").
	Index int
	Src   string
	// At is the send time, an offset from the replay's origin; TraceAt the logged arrival.
	At, TraceAt time.Duration
	// Input is the prompt length and Output the max_tokens, in tokens.
	Input, Output int
	// Hashes are the prompt's prefix blocks (nil: none logged).
	Hashes []int64
}

// Skip is a request of the window left out of the schedule.
type Skip struct {
	Src string `json:"src"`
	Why string `json:"why"`
}

// Schedule is the requests to send, in send order.
type Schedule struct {
	Items   []Item
	Skipped []Skip
	// From and To are the window of log time replayed (To = the last arrival when open);
	// Speed the time scale.
	From, To time.Duration
	Speed    float64
}

// NewSchedule makes the schedule of reqs for the window [from, to) of log time (to = 0: to
// the end) at speed. context is the model's context in tokens (0: unknown, nothing left out
// for it). Errors: a speed that is not a positive finite number, from ≥ to, a window holding
// no request (the log's span is named).
func NewSchedule(reqs []trace.Request, from, to time.Duration, speed float64, context int) (*Schedule, error) {
	if !(speed > 0) || math.IsInf(speed, 0) {
		return nil, fmt.Errorf("speed %v: want a positive number (2 sends twice as fast as logged)", speed)
	}
	if to != 0 && from >= to {
		return nil, fmt.Errorf("window %v-%v: want start < end", from, to)
	}
	order := make([]int, 0, len(reqs))
	var first, last time.Duration = math.MaxInt64, 0
	for i, q := range reqs {
		first, last = min(first, q.Arrival), max(last, q.Arrival)
		if q.Arrival >= from && (to == 0 || q.Arrival < to) {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return reqs[order[a]].Arrival < reqs[order[b]].Arrival })
	s := &Schedule{From: from, To: to, Speed: speed}
	if to == 0 {
		s.To = last
	}
	for _, i := range order {
		q := reqs[i]
		switch {
		case q.Output < 1:
			s.Skipped = append(s.Skipped, Skip{q.Src, "output length 0: max_tokens must be at least 1"})
			continue
		case context > 0 && q.Input+q.Output > context:
			s.Skipped = append(s.Skipped, Skip{q.Src, fmt.Sprintf("prompt %d + output %d tokens exceed the model context %d", q.Input, q.Output, context)})
			continue
		}
		at := time.Duration(float64(q.Arrival-from) / speed)
		s.Items = append(s.Items, Item{Index: len(s.Items), Src: q.Src, At: at, TraceAt: q.Arrival, Input: q.Input, Output: q.Output, Hashes: q.Hashes})
	}
	if len(s.Items) == 0 {
		why := ""
		if len(s.Skipped) > 0 {
			why = fmt.Sprintf(" (%d left out, the first: %s: %s)", len(s.Skipped), s.Skipped[0].Src, s.Skipped[0].Why)
		}
		return nil, fmt.Errorf("window %v-%v holds no request to send%s; the log's arrivals span %v-%v", from, endName(to), why, first, last)
	}
	return s, nil
}

func endName(to time.Duration) string {
	if to == 0 {
		return "end"
	}
	return to.String()
}

// Rate is the schedule's mean send rate in requests per second (0 for one request).
func (s *Schedule) Rate() float64 {
	n := len(s.Items)
	if n < 2 {
		return 0
	}
	span := s.Items[n-1].At - s.Items[0].At
	if span <= 0 {
		return math.Inf(1)
	}
	return float64(n-1) / span.Seconds()
}
