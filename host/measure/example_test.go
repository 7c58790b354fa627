package measure_test

import (
	"fmt"
	"time"

	"github.com/genload/genload/host/dispatch"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/sse"
)

// Two sequences of one request decoding on a 10 ms step: the second starts one step
// later and both run 5 tokens.
func ExampleCompute() {
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	seq := func(first int) dispatch.Sequence {
		s := dispatch.Sequence{}
		for k := range 5 {
			s.Marks.Append(sse.Mark{At: ms(first + 10*k), Text: 2, Tokens: -1})
		}
		s.Finished, s.FinishAt, s.CompletionTokens = true, ms(first+40), 5
		return s
	}
	res := &dispatch.Result{MaxTokens: 5, Requests: []dispatch.Request{{}}, Sequences: []dispatch.Sequence{seq(50), seq(60)}}
	f := measure.Compute(res, measure.Options{})
	fmt.Println("per-forward mean:", f.PerForward.Mean) // (90−50)/4 and (100−60)/4
	fmt.Println("window:", f.Window.Start, "→", f.Window.End, "steps", f.Window.Steps, "per step", f.Window.PerStep)
	fmt.Println("TTFT p50:", f.TTFT.P50, "ITL p99:", f.ITL.P99, "E2E max:", f.E2E.Max)
	// Output:
	// per-forward mean: 10ms
	// window: 60ms → 90ms steps 3 per step 10ms
	// TTFT p50: 50ms ITL p99: 10ms E2E max: 100ms
}
