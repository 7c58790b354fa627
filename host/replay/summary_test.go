package replay

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/internal/textcheck"
	"github.com/genload/genload/host/records"
)

func f(v float64) *float64 { return &v }

// The summary counts each finished request once by what came back, takes latencies over the ok
// ones only, adds the lag for the figures from the schedule, and counts goodput within the SLOs.
func TestSummaryCountsAndFigures(t *testing.T) {
	acc := newAccumulator(Options{SLOTTFT: 100 * time.Millisecond, SLOTPOT: 10 * time.Millisecond}, time.Now())
	it := &Item{Src: "t:1"}
	ok := func(lag, ttft float64, chunks ...records.Chunk) records.Record {
		e := chunks[len(chunks)-1][0] - 0 + 1
		return records.Record{Status: 200, MaxTokens: len(chunks), CompletionTokens: len(chunks), LagMs: f(lag), SentMs: 0, TTFTMs: f(ttft), E2EMs: f(e), Chunks: chunks}
	}
	acc.add(it, []records.Record{
		ok(0.5, 50, records.Chunk{50, 1}, records.Chunk{55, 1}, records.Chunk{60, 1}),       // good: TPOT 5 ms
		ok(2, 99, records.Chunk{99, 1}, records.Chunk{104, 1}),                              // TTFT 99 + lag 2 > 100: not good
		ok(0, 20, records.Chunk{20, 1}, records.Chunk{50, 1}),                               // TPOT 30 ms: not good
		{Status: 200, MaxTokens: 5, CompletionTokens: 3, LagMs: f(0), FinishReason: "stop"}, // short
		{Status: 500, Error: "boom", LagMs: f(0)},                                           // failed
	})
	s := acc.summary(&Schedule{Items: make([]Item, 5)}, 5, false)
	if s.Finished != 5 || s.OK != 3 || s.WrongLength != 1 || s.Failed != 1 || s.Late1ms != 1 || s.Good != 1 {
		t.Fatalf("counts %+v", s)
	}
	if s.TTFT.N != 3 || s.TTFT.Max != 99 || s.TTFTSched.Max != 101 || s.TPOT.N != 3 || s.TPOT.Max != 30 {
		t.Errorf("ttft %+v sched %+v tpot %+v", s.TTFT, s.TTFTSched, s.TPOT)
	}
	if s.ITL.N != 4 || s.ITL.P50 != 5 || s.ITL.Max != 30 {
		t.Errorf("itl %+v", s.ITL)
	}
	if math.Abs(s.Duration-0.105) > 1e-9 || math.Abs(s.Goodput-1/0.105) > 1e-9 {
		t.Errorf("duration %v goodput %v", s.Duration, s.Goodput)
	}
}

// The printed summary names the built-in engine's time scale and what it does to the
// figures, lists only the SLOs given, counts in words that agree with the number, and has no
// rate for requests scheduled at one instant.
func TestSummaryTextSaysTheTimeScale(t *testing.T) {
	s := &Summary{Scheduled: 12, Sent: 12, Finished: 12, OK: 12, Good: 1, Goodput: 0.5, PromptMismatch: 1, Rate: 0, Speed: 1, TimeScale: 0.05, SLOTPOTMs: 50, Duration: 2}
	var b strings.Builder
	s.WriteText(&b)
	out := b.String()
	for _, want := range []string{
		"replay: 12 scheduled (all at one instant), 12 sent, 12 finished: 12 ok, 0 failed, 0 with another output length than max_tokens, 1 prompt counted otherwise than sent\n",
		"time scale: the built-in engine at time scale 0.05 (wall s per simulated s) is 20× faster than the server it simulates: its latencies are wall-clock (× 20 for the simulated server's); at speed 1 it serves 0.05× the log's load on its own clock (--speed 20 replays the log's load)\n",
		"| wall ms at time scale 0.05 (ok requests) | n |",
		"goodput: 1 request, 0.50 requests/s, 0 output tokens/s (SLO TPOT ≤ 50.0 ms); throughput",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "(0: none)") || strings.Contains(out, "Inf") {
		t.Errorf("help text or an infinite rate in\n%s", out)
	}
	if n, err := textcheck.MarkdownTables(out); n != 1 || err != nil {
		t.Errorf("%d tables: %v", n, err)
	}
	// At speed 1/time scale the load is the log's; another target has no time-scale line and
	// plain ms; one request has no rate.
	if got := TimeScaleNote(0.05, 20); !strings.HasSuffix(got, "; at speed 20 = 1/time scale it serves the log's load on its own clock") {
		t.Errorf("speed 20: %q", got)
	}
	if got := TimeScaleNote(1, 2); got != "the built-in engine at time scale 1: its latencies are the simulated server's; at speed 2 it serves 2× the log's load on its own clock (--speed 1 replays the log's load)" {
		t.Errorf("time scale 1: %q", got)
	}
	b.Reset()
	(&Summary{Scheduled: 1, Rate: 0, Speed: 1, SLOTTFTMs: 2000, SLOTPOTMs: 50, Good: 2}).WriteText(&b)
	out = b.String()
	if strings.Contains(out, "time scale") || !strings.HasPrefix(out, "replay: 1 scheduled, 0 sent") || !strings.Contains(out, "| ms (ok requests) |") ||
		!strings.Contains(out, "goodput: 2 requests, 0.00 requests/s, 0 output tokens/s (SLO TTFT from schedule ≤ 2000 ms, TPOT ≤ 50.0 ms)") {
		t.Errorf("external target, one request:\n%s", out)
	}
	if got := RateText(5, math.Inf(1)); got != "all at one instant" {
		t.Errorf("RateText(5, +Inf) = %q", got)
	}
}
