package replay

import (
	"math"
	"testing"
	"time"

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
