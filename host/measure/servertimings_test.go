package measure

import (
	"testing"
	"time"

	"github.com/genload/genload/host/sse"
)

// ollama's eval_duration of a sequence of n tokens spans its n − 1 forward passes after the
// first token: the server's figure divides by them, and a sequence of one token has none.
func TestServerTimingsOllama(t *testing.T) {
	res := stream{B: 3, MaxTokens: 11, Step: 5 * time.Millisecond, Usage: "continuous"}.result()
	for i := range res.Sequences {
		res.Sequences[i].Generate = sse.GenerateMetrics{EvalCount: 11, EvalDuration: time.Duration(50+10*i) * time.Millisecond}
		res.Sequences[i].HasGenerate = true
	}
	st := Compute(res, Options{}).ServerTimings
	if st == nil || st.Source != "ollama eval_duration" || st.PerForward.N != 3 || st.PerForward.Mean != 6*time.Millisecond || st.Reason != "" {
		t.Fatalf("server timings %+v, want 5, 6 and 7 ms (mean 6 ms) from ollama", st)
	}
	for i := range res.Sequences {
		res.Sequences[i].Generate.EvalCount = 1
	}
	if st := Compute(res, Options{}).ServerTimings; st == nil || st.PerForward.N != 0 || st.Reason != "no sequence's timings span two tokens" {
		t.Errorf("one token each: %+v", st)
	}
}
