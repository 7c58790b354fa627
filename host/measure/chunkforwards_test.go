package measure

import (
	"testing"
	"time"

	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/sse"
)

// TestChunkForwardsCountsSpeculativeSteps: a speculating server streams each forward pass's
// accepted tokens as one chunk. Two sequences, chunks every 10 ms carrying 1, 3, 2, 3, 1, …
// tokens (the pattern of 4 repeated, 1 last: 32 tokens in 15 chunks, 14 decode forward passes after
// the first chunk).
func TestChunkForwardsCountsSpeculativeSteps(t *testing.T) {
	mk := func() recording.Sequence {
		var s recording.Sequence
		pat := []int32{1, 3, 2, 3}
		for i := range 15 {
			tok := pat[i%4]
			if i == 14 {
				tok = 1
			}
			s.Marks.Append(sse.Mark{At: time.Duration(100+10*i) * time.Millisecond, Tokens: tok})
		}
		s.Finished, s.FinishAt, s.CompletionTokens, s.TokenSource = true, 240*time.Millisecond, 32, sse.TokensChoiceUsage
		return s
	}
	res := &recording.Result{MaxTokens: 32, Requests: []recording.Request{{}}, Sequences: []recording.Sequence{mk(), mk()}}
	res.Sequences[1].Index = 1
	// endpoints per token: 140 ms / (32 − 1) = 4.516 ms; per chunk: 140 ms / (15 − 1) = 10 ms.
	tok := Compute(res, Options{})
	chk := Compute(res, Options{ChunkForwards: true})
	if tok.PerForwardEndpoints.Mean != 140*time.Millisecond/31 || chk.PerForward.Mean != 10*time.Millisecond || chk.PerForwardEndpoints.Mean != 10*time.Millisecond {
		t.Errorf("per-forward: tokens %v, chunks %v; want 4.516ms and 10ms", tok.PerForwardEndpoints.Mean, chk.PerForward.Mean)
	}
	// The window [100 ms, 240 ms] holds 14 chunks (31 tokens) after the first.
	if !chk.Window.Valid || chk.Window.Steps != 14 || chk.Window.PerStep != 10*time.Millisecond || chk.Window.Endpoints != 10*time.Millisecond {
		t.Errorf("window with chunk forwards: %+v", chk.Window)
	}
	// In tokens the arrivals are irregular (10 ms for 1, 3, 2 or 3 tokens): the window starts at
	// the reference's first consistent chunk, and counts the tokens from there to the last.
	possible := map[int]bool{}
	for k, cum := 0, 0; k < 14; k++ {
		possible[31-cum] = true
		cum += int([]int32{3, 2, 3, 1}[k%4])
	}
	if !possible[tok.Window.Steps] {
		t.Errorf("window with token forwards: %d steps, want the tokens after one of its chunks (31, 28, 26, 23, …)", tok.Window.Steps)
	}
}
