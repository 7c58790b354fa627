package measure

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/sse"
)

// stream describes a synthetic recording of one cell with a known true decode step: B
// sequences of one request, sequence i producing its tokens at (start_i + j)·Step + 1 s, j =
// 0..max_tokens−1, and each chunk arriving when its last token was produced plus a jitter
// drawn uniformly in [0, Jitter) from a seeded source. Arrivals keep TCP order: a chunk held
// back delays those behind it.
type stream struct {
	B, MaxTokens int
	Step         time.Duration
	Jitter       time.Duration
	Seed         uint64
	// Starts are per-sequence first steps (ragged prefill); nil: all 0.
	Starts []int
	// FirstDelay is added to every sequence's first chunk (a late first chunk: Nagle and
	// delayed ACK; negative: an early one, sent before the decode steps began).
	FirstDelay time.Duration
	// Coalesce is the probability that a token after the first joins the previous token's
	// chunk (stream_interval or a coalescing proxy): 0.2 gives ~1.2 tokens per chunk. The
	// first token is always sent alone (as vLLM does with stream_interval > 1).
	Coalesce float64
	// Spec > 0: speculative decoding with Spec drafts; each forward pass yields
	// 1 + Uniform{0..Spec} tokens in one chunk, and Step is the forward pass.
	Spec int
	// Usage: "continuous" (exact per-chunk deltas), "final" (an exact count, no deltas),
	// "none" (chunks counted), "zero" (all-zero usage on every chunk, taken at its word).
	Usage string
	// Zero, Early, Overlong: how many sequences (the last ones) finish with no token, stop
	// after EarlyAt tokens with finish_reason "stop", or generate 10 × max_tokens.
	Zero, Early, Overlong int
	EarlyAt               int
	// OneChunk: how many sequences (the first ones) receive all their tokens in one chunk.
	OneChunk int
	// BurstGap > 0: a stall and a burst — every chunk after the first is held back until
	// the last one is ready, then they come BurstGap apart, each in a read of its own.
	BurstGap time.Duration
}

func (g stream) result() *recording.Result {
	rng := rand.New(rand.NewPCG(g.Seed, 7))
	t0 := time.Second
	res := &recording.Result{MaxTokens: g.MaxTokens, Requests: []recording.Request{{HasUsage: g.Usage != "none"}}}
	for i := range g.B {
		s := recording.Sequence{Prompt: i}
		s.Index = i
		start := 0
		if g.Starts != nil {
			start = g.Starts[i]
		}
		ntok := g.MaxTokens
		reason := "length"
		switch {
		case i >= g.B-g.Zero:
			ntok = 0
		case i >= g.B-g.Zero-g.Early:
			ntok, reason = g.EarlyAt, "stop"
		case i >= g.B-g.Zero-g.Early-g.Overlong:
			ntok = 10 * g.MaxTokens
		}
		// chunks: (tokens, production time of the last token)
		type chunk struct {
			tok int
			at  time.Duration
		}
		var cs []chunk
		if g.Spec > 0 {
			for k, got := 0, 0; got < ntok; k++ {
				n := 1
				if k > 0 {
					n = min(1+rng.IntN(g.Spec+1), ntok-got)
				}
				got += n
				cs = append(cs, chunk{n, t0 + time.Duration(start+k)*g.Step})
			}
		} else {
			for j := range ntok {
				at := t0 + time.Duration(start+j)*g.Step
				if (j > 0 && i < g.OneChunk) || (j > 1 && rng.Float64() < g.Coalesce) {
					cs[len(cs)-1].tok++
					cs[len(cs)-1].at = at
					continue
				}
				cs = append(cs, chunk{1, at})
			}
		}
		if g.BurstGap > 0 && len(cs) > 1 {
			last := cs[len(cs)-1].at
			for k := 1; k < len(cs); k++ {
				cs[k].at = last + time.Duration(k)*g.BurstGap
			}
		}
		prev := time.Duration(0)
		total := 0
		for k, c := range cs {
			at := c.at
			if g.Jitter > 0 {
				at += time.Duration(rng.Int64N(int64(g.Jitter)))
			}
			if k == 0 {
				at += g.FirstDelay
			}
			at = max(at, prev)
			prev = at
			total += c.tok
			m := sse.Mark{At: at, Text: int32(4 * c.tok), Tokens: -1}
			switch g.Usage {
			case "continuous":
				m.Tokens = int32(c.tok)
			case "zero":
				m.Tokens = 0
			}
			s.Marks.Append(m)
		}
		s.Finished, s.FinishReason, s.FinishAt = true, reason, prev
		switch g.Usage {
		case "continuous":
			s.CompletionTokens, s.TokenSource, s.HasUsage = total, sse.TokensChoiceUsage, true
		case "final":
			s.CompletionTokens, s.TokenSource = total, sse.TokensEvenSplit
		case "zero":
			s.CompletionTokens, s.TokenSource, s.HasUsage = 0, sse.TokensChoiceUsage, true
		default:
			s.CompletionTokens, s.TokenSource = len(cs), sse.TokensChunks
		}
		res.Sequences = append(res.Sequences, s)
	}
	return res
}

// within reports |got/want − 1| ≤ 1 %.
func within(got, want time.Duration) bool {
	return math.Abs(float64(got)/float64(want)-1) <= 0.01
}

// TestSyntheticStreams: for each server behaviour, the headline per-forward figure and the
// full-batch figure are within 1 % of the true step, or absent with the expected reason.
func TestSyntheticStreams(t *testing.T) {
	const S = 5 * time.Millisecond
	ragged := func(b int, spread int) []int {
		v := make([]int, b)
		for i := range v {
			v[i] = i * spread / max(b-1, 1)
		}
		return v
	}
	cases := []struct {
		name    string
		g       stream
		chunkFw bool
		// want*: "" = within 1 % of S; else a substring of the reason (figure absent)
		wantFwd, wantWin string
		counted          int
		fitted           int // sequences in PerForward when not counted (all tokens in one chunk)
		method           string
		check            string        // substring of a failed cross-check; "" = none
		want             time.Duration // the expected figure when not S
	}{
		{name: "clean, continuous usage", g: stream{B: 8, MaxTokens: 64, Step: S, Jitter: 300 * time.Microsecond, Usage: "continuous"},
			counted: 8, method: "anchored"},
		{name: "clean, final usage only", g: stream{B: 8, MaxTokens: 64, Step: S, Jitter: 300 * time.Microsecond, Usage: "final"},
			counted: 8, method: "anchored"},
		{name: "ragged starts", g: stream{B: 8, MaxTokens: 64, Step: S, Jitter: 300 * time.Microsecond, Usage: "final", Starts: ragged(8, 20)},
			counted: 8, method: "anchored"},
		{name: "late first chunk 40 ms", g: stream{B: 8, MaxTokens: 40, Step: S, Jitter: 200 * time.Microsecond, Usage: "final", FirstDelay: 40 * time.Millisecond},
			counted: 8, method: "anchored", check: "arrived late: their first chunk"},
		// The first chunk held back longer than the whole stream (24 steps of 5 ms behind
		// 200 ms): every chunk arrives in one read, and no interval can be timed.
		{name: "whole stream held back behind its first chunk", g: stream{B: 8, MaxTokens: 24, Step: S, Jitter: 200 * time.Microsecond, Usage: "final", FirstDelay: 200 * time.Millisecond},
			counted: 8, wantFwd: "arrived mostly together", wantWin: "finished before the last one received its first token"},
		// A stream that stalls after its first chunk and then bursts, its chunks 10 µs apart
		// in reads of their own (no interval is 0): timing them would read fwd ~500× low.
		{name: "stall after the first chunk, then a burst", g: stream{B: 1, MaxTokens: 20, Step: S, Usage: "continuous", BurstGap: 10 * time.Microsecond},
			counted: 1, wantFwd: "arrived mostly together", wantWin: "arrived mostly together"},
		// A client cannot tell a first chunk sent 20 ms before the decode steps began from a
		// first decode step 20 ms slower (a prefill sharing it): both are in the mean,
		// (39·S + 20 ms)/39, and the check against the fit names the long first interval.
		{name: "early first chunk 20 ms", g: stream{B: 8, MaxTokens: 40, Step: S, Jitter: 200 * time.Microsecond, Usage: "final", FirstDelay: -20 * time.Millisecond},
			counted: 8, method: "anchored", check: "first decode interval of 8 of 8 sequences", want: S + 20*time.Millisecond/39},
		{name: "coalesced 1.2 tokens per chunk, continuous usage", g: stream{B: 8, MaxTokens: 64, Step: S, Jitter: 300 * time.Microsecond, Usage: "continuous", Coalesce: 0.2},
			counted: 8, method: "anchored"},
		{name: "coalesced, exact count only", g: stream{B: 8, MaxTokens: 64, Step: S, Jitter: 300 * time.Microsecond, Usage: "final", Coalesce: 0.2},
			counted: 8, wantFwd: "no per-chunk counts", wantWin: "per-chunk token counts unknown"},
		{name: "late first chunk, coalesced, exact count only", g: stream{B: 8, MaxTokens: 64, Step: S, Jitter: 300 * time.Microsecond, Usage: "final", Coalesce: 0.2, FirstDelay: 40 * time.Millisecond},
			counted: 8, wantFwd: "no per-chunk counts", wantWin: "per-chunk token counts unknown"},
		{name: "no usage, 2-token chunks", g: stream{B: 4, MaxTokens: 64, Step: S, Usage: "none", Coalesce: 1.0 / 2.0, Seed: 3},
			counted: 4, wantFwd: "token counts unverified: no usable usage (absent, or contradicting the stream) and chunks may carry several tokens", wantWin: "token counts unverified"},
		{name: "zero usage on every chunk", g: stream{B: 4, MaxTokens: 64, Step: S, Usage: "zero"},
			counted: 4, wantFwd: "token counts unverified", wantWin: "token counts unverified"},
		{name: "4 of 10 sequences with no token", g: stream{B: 10, MaxTokens: 64, Step: S, Jitter: 300 * time.Microsecond, Usage: "final", Zero: 4},
			counted: 6, method: "anchored"},
		{name: "one early stop at 2 tokens", g: stream{B: 8, MaxTokens: 64, Step: S, Jitter: 300 * time.Microsecond, Usage: "continuous", Early: 1, EarlyAt: 2},
			counted: 7, method: "anchored"},
		{name: "overlong, B = 1", g: stream{B: 1, MaxTokens: 10, Step: S, Usage: "continuous", Overlong: 1},
			counted: 0, wantFwd: "more than max_tokens 10", wantWin: "no counted sequences"},
		{name: "all tokens in one chunk, B = 1", g: stream{B: 1, MaxTokens: 10, Step: S, Usage: "final", OneChunk: 1},
			counted: 1, wantFwd: "all their tokens in one chunk", wantWin: "all its tokens in one chunk"},
		{name: "one of 4 in one chunk", g: stream{B: 4, MaxTokens: 64, Step: S, Jitter: 300 * time.Microsecond, Usage: "continuous", OneChunk: 1},
			counted: 4, fitted: 3, method: "anchored", wantWin: "all its tokens in one chunk"},
		{name: "speculative, chunk per forward pass", g: stream{B: 8, MaxTokens: 120, Step: S, Jitter: 300 * time.Microsecond, Usage: "continuous", Spec: 3},
			chunkFw: true, counted: 8, method: "anchored"},
		{name: "speculative, no usage", g: stream{B: 8, MaxTokens: 120, Step: S, Jitter: 300 * time.Microsecond, Usage: "none", Spec: 3},
			chunkFw: true, counted: 8, method: "anchored"}, // chunks are the forward passes: no token count needed
		{name: "window too short", g: stream{B: 4, MaxTokens: 20, Step: S, Jitter: 300 * time.Microsecond, Usage: "final", Starts: []int{0, 5, 10, 12}},
			counted: 4, method: "anchored", wantWin: "holds 7 forward passes, fewer than the 10"},
		{name: "exponential-like jitter of 1 ms", g: stream{B: 16, MaxTokens: 100, Step: S, Jitter: 2 * time.Millisecond, Usage: "final", Seed: 11},
			counted: 16, method: "anchored"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := Compute(tc.g.result(), Options{ChunkForwards: tc.chunkFw})
			if f.Counted != tc.counted || f.Sequences != tc.g.B || f.Partial() != (tc.counted < tc.g.B) {
				t.Errorf("counted %d of %d (partial %v), want %d; left out %+v", f.Counted, f.Sequences, f.Partial(), tc.counted, f.LeftOut)
			}
			want := S
			if tc.want > 0 {
				want = tc.want
			}
			fitted := tc.counted
			if tc.fitted > 0 {
				fitted = tc.fitted
			}
			if tc.wantFwd == "" {
				if !within(f.PerForward.Mean, want) || f.PerForward.N != fitted || f.PerForwardMethod != tc.method {
					t.Errorf("per-forward %v (n %d, %s), want %v within 1 %% over %d sequences by %s; reason %q", f.PerForward.Mean, f.PerForward.N, f.PerForwardMethod, want, fitted, tc.method, f.PerForwardReason)
				}
			} else if f.PerForward.N != 0 || !strings.Contains(f.PerForwardReason, tc.wantFwd) || f.PerForwardReason == "" {
				t.Errorf("per-forward %+v reason %q, want absent with %q", f.PerForward, f.PerForwardReason, tc.wantFwd)
			}
			if (tc.counted < tc.g.B || tc.g.OneChunk > 0) && f.PerForwardReason == "" {
				t.Errorf("sequences left out but no per-forward reason")
			}
			if tc.wantWin == "" {
				if !f.Window.Valid || !within(f.Window.PerStep, want) {
					t.Errorf("window %+v, want %v within 1 %%", f.Window, want)
				}
			} else if f.Window.Valid || !strings.Contains(f.Window.Reason, tc.wantWin) {
				t.Errorf("window %+v, want absent with %q", f.Window, tc.wantWin)
			}
			got := strings.Join(f.Checks, " | ")
			if (tc.check == "") != (got == "") || !strings.Contains(got, tc.check) {
				t.Errorf("checks %q, want %q", got, tc.check)
			}
		})
	}
}

// TestSyntheticSeeds: the headline and the full-batch figure stay within 1 % of the true step
// over 20 seeds of jitter, with a late first chunk of a random 20–60 ms and ~1.2 tokens per
// chunk with exact per-chunk counts, and ragged starts.
func TestSyntheticSeeds(t *testing.T) {
	const S = 4 * time.Millisecond
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		starts := make([]int, 8)
		for i := range starts {
			starts[i] = rng.IntN(6)
		}
		g := stream{B: 8, MaxTokens: 80, Step: S, Jitter: 400 * time.Microsecond, Seed: seed, Usage: "continuous", Coalesce: 0.2,
			Starts: starts, FirstDelay: time.Duration(20+rng.IntN(41)) * time.Millisecond}
		f := Compute(g.result(), Options{})
		if !within(f.PerForward.Mean, S) || !f.Window.Valid || !within(f.Window.PerStep, S) {
			t.Errorf("seed %d (first chunk +%v): fwd %v, window %+v; want %v within 1 %%; endpoints %v", seed, g.FirstDelay, f.PerForward.Mean, f.Window, S, f.PerForwardEndpoints.Mean)
		}
	}
}

// BenchmarkCompute: one cell of 256 sequences × 512 tokens with exact per-chunk counts.
func BenchmarkCompute(b *testing.B) {
	res := stream{B: 256, MaxTokens: 512, Step: 5 * time.Millisecond, Jitter: 300 * time.Microsecond, Usage: "continuous", Coalesce: 0.1}.result()
	b.ReportAllocs()
	for b.Loop() {
		Compute(res, Options{})
	}
}

// TestSyntheticSeedsExactCountOnly: with an exact count but no per-chunk counts (~1.2 tokens
// per chunk), over 20 seeds neither a clean stream nor one whose first chunk was held back
// 20–60 ms gets a figure: which chunk carried how many tokens is unknown (a server that
// coalesces its first chunks reads 10–16 % low by decode time / (tokens − 1)), so the reason
// is given instead — never a wrong figure.
func TestSyntheticSeedsExactCountOnly(t *testing.T) {
	const S = 4 * time.Millisecond
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 3))
		g := stream{B: 8, MaxTokens: 80, Step: S, Jitter: 400 * time.Microsecond, Seed: seed, Usage: "final", Coalesce: 0.2}
		f := Compute(g.result(), Options{})
		if f.PerForward.N != 0 || !strings.Contains(f.PerForwardReason, "no per-chunk counts") {
			t.Errorf("seed %d clean: fwd %+v (%s) reason %q", seed, f.PerForward, f.PerForwardMethod, f.PerForwardReason)
		}
		g.FirstDelay = time.Duration(20+rng.IntN(41)) * time.Millisecond
		f = Compute(g.result(), Options{})
		if f.PerForward.N != 0 || !strings.Contains(f.PerForwardReason, "no per-chunk counts") {
			t.Errorf("seed %d late by %v: fwd %+v reason %q", seed, g.FirstDelay, f.PerForward, f.PerForwardReason)
		}
	}
}
