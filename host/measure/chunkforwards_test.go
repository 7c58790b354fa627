package measure

import (
	"testing"
	"time"

	"github.com/genload/genload/host/dispatch"
	"github.com/genload/genload/host/sse"
)

// TestChunkForwardsCountsSpeculativeSteps: a speculating server streams each forward pass's
// accepted tokens as one chunk. Two sequences, chunks every 10 ms carrying 1, 3, 2, 3, 1
// tokens (10 tokens in 5 chunks, 4 decode forward passes after the first chunk).
func TestChunkForwardsCountsSpeculativeSteps(t *testing.T) {
	mk := func() dispatch.Sequence {
		var s dispatch.Sequence
		for i, tok := range []int32{1, 3, 2, 3, 1} {
			s.Marks.Append(sse.Mark{At: time.Duration(100+10*i) * time.Millisecond, Tokens: tok})
		}
		s.Finished, s.FinishAt, s.CompletionTokens = true, 140*time.Millisecond, 10
		return s
	}
	res := &dispatch.Result{MaxTokens: 10, Requests: []dispatch.Request{{}}, Sequences: []dispatch.Sequence{mk(), mk()}}
	res.Sequences[1].Index = 1
	// per token: 40 ms / (10 − 1) = 4.444 ms; per chunk: 40 ms / (5 − 1) = 10 ms.
	tok := Compute(res, Options{})
	chk := Compute(res, Options{ChunkForwards: true})
	if tok.PerForward.Mean != 40*time.Millisecond/9 || chk.PerForward.Mean != 10*time.Millisecond {
		t.Errorf("per-forward: tokens %v, chunks %v; want 4.444ms and 10ms", tok.PerForward.Mean, chk.PerForward.Mean)
	}
	// The window [100 ms, 140 ms] holds 4 chunks (9 tokens) after the first.
	if !chk.Window.Valid || chk.Window.Steps != 4 || chk.Window.PerStep != 10*time.Millisecond {
		t.Errorf("window with chunk forwards: %+v", chk.Window)
	}
	if tok.Window.Steps != 9 {
		t.Errorf("window with token forwards: %d steps, want 9", tok.Window.Steps)
	}
}
