package measure_test

import (
	"fmt"
	"time"

	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/sse"
)

// Two sequences of one request decoding on a 10 ms step: the second starts one step
// later and both run 12 tokens, counted by the server (usage).
func ExampleCompute() {
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	seq := func(first int) recording.Sequence {
		s := recording.Sequence{}
		for k := range 12 {
			s.Marks.Append(sse.Mark{At: ms(first + 10*k), Text: 2, Tokens: -1})
		}
		s.Finished, s.FinishAt, s.CompletionTokens, s.TokenSource = true, ms(first+110), 12, sse.TokensRequestUsage
		return s
	}
	res := &recording.Result{MaxTokens: 12, Requests: []recording.Request{{}}, Sequences: []recording.Sequence{seq(50), seq(60)}}
	f := measure.Compute(res, measure.Options{})
	fmt.Println("per-forward mean:", f.PerForward.Mean, "by", f.PerForwardMethod, "counted", f.Counted, "of", f.Sequences)
	fmt.Println("window:", f.Window.Start, "→", f.Window.End, "steps", f.Window.Steps, "per step", f.Window.PerStep)
	fmt.Println("TTFT p50:", f.TTFT.P50, "ITL p99:", f.ITL.P99, "E2E max:", f.E2E.Max)
	// Output:
	// per-forward mean: 10ms by anchored counted 2 of 2
	// window: 60ms → 160ms steps 10 per step 10ms
	// TTFT p50: 50ms ITL p99: 10ms E2E max: 170ms
}
