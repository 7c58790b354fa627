package measure

import (
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/recording"
)

// every returns n mark times from first, step ms apart.
func every(first, step float64, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = first + step*float64(i)
	}
	return v
}

func headerOf(t *testing.T, o Options, hdr map[string]string, seqs ...recording.Sequence) *HeaderFigure {
	t.Helper()
	res := &recording.Result{Requests: []recording.Request{{HasUsage: true, Headers: hdr}}, Sequences: seqs}
	o.GenerationDurationHeader, o.SpeculationAcceptanceHeader = "generation-duration", "speculation-acceptance"
	return Compute(res, o).Header
}

// One sequence of T = 101 tokens (T − 1 = 100 after the first), D = 0.5 s: the τ formulas.
func TestHeaderFigureFormulas(t *testing.T) {
	cases := []struct {
		name   string
		dur    string
		accept string
		draft  int
		tau    float64
		per    time.Duration
	}{
		{"no speculation", "0.5", "", 0, 1, ms(5)},            // F = 100, 500/100
		{"rate with draft k=4", "500ms", "0.5", 4, 3, ms(15)}, // τ = 1 + 0.5·4 = 3, F = 100/3
		{"accepted length", "0.5s", "2.5", 0, 2.5, ms(12.5)},  // τ = 2.5, F = 40
		{"rate, k unknown", "0.5", "0.75", 0, 4, ms(20)},      // τ = 1/(1−0.75) = 4, F = 25
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{"generation-duration": tc.dur}
			if tc.accept != "" {
				h["speculation-acceptance"] = tc.accept
			}
			hf := headerOf(t, Options{DraftTokens: tc.draft}, h, seq(0, true, 101, every(1, 5, 101)...))
			if hf == nil || hf.TokensPerForward != tc.tau || hf.PerForward.Mean != tc.per || hf.Reason != "" {
				t.Fatalf("header figure %+v, want τ %v per-forward %v", hf, tc.tau, tc.per)
			}
		})
	}
	res := &recording.Result{Requests: []recording.Request{{HasUsage: true}}, Sequences: []recording.Sequence{seq(0, true, 3, 1, 2, 3)}}
	if Compute(res, Options{GenerationDurationHeader: "generation-duration"}).Header != nil {
		t.Fatal("header figure without the header")
	}
}

// A request of several sequences: D spans the earliest first token to the latest last one.
func TestHeaderFigureRequestOfSeveral(t *testing.T) {
	dur := func(s string) map[string]string { return map[string]string{"generation-duration": s} }
	// No speculation, 10 ms steps, 101 tokens each; sequence 1's first token two steps after
	// sequence 0's (a prefill split over steps): D = 1.02 s spans 2 + 100 forwards.
	hf := headerOf(t, Options{}, dur("1.02"), seq(0, true, 101, every(0.3, 10, 101)...), seq(0, true, 101, every(20.1, 10, 101)...))
	if hf == nil || hf.PerForward.N != 1 || hf.PerForward.Mean != ms(10) {
		t.Fatalf("staggered first tokens: %+v, want 10 ms (F = 102)", hf)
	}
	// Speculation, one chunk per forward (ChunkForwards): sequence 0 needs 3 forwards after
	// its first token for 10 tokens, sequence 1 needs 5; D = 50 ms ends on sequence 1, so
	// F = 5 (not the mean 4) → 10 ms; τ = (9 + 9)/(3 + 5) = 2.25.
	spec := map[string]string{"generation-duration": "0.05", "speculation-acceptance": "0.5"}
	hf = headerOf(t, Options{ChunkForwards: true, DraftTokens: 3}, spec, seq(0, true, 10, every(0, 10, 4)...), seq(0, true, 10, every(0.2, 10, 6)...))
	if hf == nil || hf.PerForward.Mean != ms(10) || hf.TokensPerForward != 2.25 {
		t.Fatalf("chunk forwards: %+v, want 10 ms, τ 2.25", hf)
	}
	// The same without ChunkForwards: the acceptance rate cannot give the slowest
	// sequence's forwards, so no figure, with the reason.
	hf = headerOf(t, Options{DraftTokens: 3}, spec, seq(0, true, 10, every(0, 10, 4)...), seq(0, true, 10, every(0.2, 10, 6)...))
	if hf == nil || hf.PerForward.N != 0 || !strings.Contains(hf.Reason, "speculative decoding in a request of 2 sequences") {
		t.Fatalf("speculation over 2 sequences: %+v, want no figure and a reason", hf)
	}
	// No speculation but chunks of 2 tokens and first tokens 2 chunks apart: the forward
	// passes between the first tokens are unknown.
	hf = headerOf(t, Options{}, dur("1"), seq(0, true, 20, every(0, 20, 10)...), seq(0, true, 20, every(40, 20, 10)...))
	if hf == nil || hf.PerForward.N != 0 || !strings.Contains(hf.Reason, "2 chunks apart") {
		t.Fatalf("coalesced chunks, staggered: %+v", hf)
	}
}
