package measure

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/sse"
	"github.com/genload/genload/host/stats"
)

func ms(v float64) time.Duration { return time.Duration(math.Round(v * float64(time.Millisecond))) }

var base = time.Unix(100, 0)

// timedReader delivers one event per Read, the k-th stamped at[k] ms after base.
type timedReader struct{ evs []string }

func (r *timedReader) Read(p []byte) (int, error) {
	if len(r.evs) == 0 {
		return 0, errEOF
	}
	n := copy(p, r.evs[0])
	r.evs[0] = r.evs[0][n:]
	if r.evs[0] == "" {
		r.evs = r.evs[1:]
	}
	return n, nil
}

var errEOF = io.EOF

// replay runs events (one read each, at the given ms) through the sse pipeline and wraps
// the sequences as a one-request recording.Result sent at 0.
func replay(t *testing.T, expect, maxTokens int, at []float64, evs ...string) *recording.Result {
	t.Helper()
	rd := sse.NewReader(&timedReader{evs: evs}, 0)
	k := 0
	rd.Now = func() time.Time { k++; return base.Add(ms(at[k-1])) }
	d := &sse.Demux{}
	d.Reset(base, expect)
	if err := d.Run(rd); err != nil {
		t.Fatal(err)
	}
	res := &recording.Result{MaxTokens: maxTokens, Start: base, Requests: []recording.Request{{Prompts: []int{0}}}}
	res.Requests[0].Usage, res.Requests[0].HasUsage = d.RequestUsage()
	for i, s := range d.Finalize(maxTokens) {
		res.Sequences = append(res.Sequences, recording.Sequence{Sequence: s, Prompt: i})
	}
	return res
}

func ev(text, fin string, usage int) string {
	fr := "null"
	if fin != "" {
		fr = `"` + fin + `"`
	}
	s := `data: {"choices":[{"index":0,"text":"` + text + `","finish_reason":` + fr + `}]`
	if usage > 0 {
		s += `,"usage":{"prompt_tokens":5,"completion_tokens":` + itoa(usage) + `,"total_tokens":0}`
	}
	return s + "}\n\n"
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// A first chunk with empty text at 5 ms, then tokens at 214 ms and 234 ms → TTFT =
// 214 ms and one ITL sample of 20 ms.
func TestEmptyFirstChunkTTFT(t *testing.T) {
	res := replay(t, 1, 2, []float64{5, 214, 234, 236},
		ev("", "", 0), ev("a", "", 0), ev("b", "length", 0), "data: [DONE]\n\n")
	f := Compute(res, Options{})
	if f.TTFT.N != 1 || f.TTFT.P50 != ms(214) {
		t.Fatalf("TTFT = %+v, want 214 ms", f.TTFT)
	}
	if f.ITL.N != 1 || f.ITL.P50 != ms(20) {
		t.Fatalf("ITL = %+v, want one sample of 20 ms", f.ITL)
	}
	// 2 tokens counted from chunks (no usage): unverified, so no per-forward figure (the two
	// chunks may carry several tokens each).
	if f.PerForward.N != 0 || !strings.Contains(f.PerForwardReason, "token counts unverified") || f.CompletionTokens != 2 || f.TokensUnverified != 1 || f.Short != 0 {
		t.Fatalf("per-forward %+v (%q) tokens %d short %d", f.PerForward, f.PerForwardReason, f.CompletionTokens, f.Short)
	}
	// The same chunks with an exact count (usage on the finish chunk) give (234 − 214) / (2 − 1).
	res = replay(t, 1, 2, []float64{5, 214, 234, 236},
		ev("", "", 0), ev("a", "", 0), ev("b", "length", 2), "data: [DONE]\n\n")
	if f := Compute(res, Options{}); f.PerForward.Mean != ms(20) || f.PerForwardEndpoints.Mean != ms(20) || f.TokensUnverified != 0 {
		t.Fatalf("exact count: per-forward %v endpoints %v", f.PerForward.Mean, f.PerForwardEndpoints.Mean)
	}
}

// Chunks carrying several tokens (continuous usage 1, then 6, then 7 at 100, 140,
// 180 ms) → TPOT = (180 − 100)/(7 − 1) ms; ITL is per chunk: 40 and 40 ms, with a mean
// token delta (5 + 1)/2 = 3.
func TestMultiTokenChunks(t *testing.T) {
	res := replay(t, 1, 7, []float64{100, 140, 180, 181},
		ev("a", "", 1), ev("bcdef", "", 6), ev("g", "length", 7), "data: [DONE]\n\n")
	f := Compute(res, Options{})
	if want := ms(80) / 6; f.PerForward.Mean != want {
		t.Fatalf("TPOT = %v, want %v", f.PerForward.Mean, want)
	}
	if f.ITL.N != 2 || f.ITL.Min != ms(40) || f.ITL.Max != ms(40) || f.ITLTokens != 3 {
		t.Fatalf("ITL = %+v tokens/chunk %v", f.ITL, f.ITLTokens)
	}
	// 7 tokens over 3 chunks
	if f.CompletionTokens != 7 || math.Abs(f.TokensPerChunk-7.0/3) > 1e-12 || f.TokenSources["choice_usage"] != 1 {
		t.Fatalf("tokens %d per chunk %v sources %v", f.CompletionTokens, f.TokensPerChunk, f.TokenSources)
	}
}

// seq builds a sequence with one-token marks at the given ms.
func seq(req int, finished bool, tokens int, at ...float64) recording.Sequence {
	s := recording.Sequence{Request: req}
	for _, a := range at {
		s.Marks.Append(sse.Mark{At: ms(a), Text: 1, Tokens: -1})
	}
	s.Finished, s.CompletionTokens, s.TokenSource = finished, tokens, sse.TokensRequestUsage
	if len(at) > 0 {
		s.FinishAt = ms(at[len(at)-1])
	}
	return s
}

// Full-occupancy window on a ragged batch with a 10 ms step and sub-step jitter:
//
//	seq 0: tokens at steps 0..29   (t = 10k + 0.3)  ← first to finish: End = 290.3
//	seq 1: tokens at steps 2..31   (t = 10k + 0.1)  ← last to start: Start = 20.1
//	seq 2: tokens at steps 1..30   (t = 10k + 0.5)
//	seq 3: tokens at steps 1..7, an early stop      ← left out
//
// The reference (seq 0) mark nearest Start is its step-2 token at 20.3, then steps 3..29
// follow: 27 steps; the endpoint form is (290.3 − 20.1)/27 = 10.0074 ms, the fit over the
// window exactly 10 ms (every within-sequence slope is 10 ms). With seq 3 counted (as before
// finish classes) the window would end at 70.5 after 5 steps.
func TestWindowRagged(t *testing.T) {
	steps := func(from, to int, off float64) []float64 {
		var v []float64
		for k := from; k <= to; k++ {
			v = append(v, float64(10*k)+off)
		}
		return v
	}
	res := &recording.Result{MaxTokens: 30, Requests: []recording.Request{{}}}
	res.Sequences = []recording.Sequence{
		seq(0, true, 30, steps(0, 29, 0.3)...),
		seq(0, true, 30, steps(2, 31, 0.1)...),
		seq(0, true, 30, steps(1, 30, 0.5)...),
		seq(0, true, 7, steps(1, 7, 0.5)...),
	}
	res.Sequences[3].FinishReason = "stop"
	f := Compute(res, Options{})
	w := f.Window
	if !w.Valid || w.Start != ms(20.1) || w.End != ms(290.3) || w.Steps != 27 || w.Endpoints != ms(270.2)/27 || w.PerStep != ms(10) {
		t.Fatalf("window = %+v", w)
	}
	// per-sequence: every fit and every endpoint figure is 10 ms
	if f.PerForward.N != 3 || f.PerForward.Min != ms(10) || f.PerForward.Max != ms(10) || f.PerForwardEndpoints.Mean != ms(10) || f.PerForwardMethod != "anchored" || f.PerForwardFit.Mean != ms(10) {
		t.Fatalf("per-forward = %+v (%s)", f.PerForward, f.PerForwardMethod)
	}
	// seq 3 has 7 < 30 tokens: an early stop, left out, and the cell partial
	if f.Short != 1 || f.EarlyStop != 1 || f.Counted != 3 || !f.Partial() || len(f.LeftOut) != 1 || f.LeftOut[0].Sequence != 3 {
		t.Fatalf("short %d early %d counted %d left out %+v", f.Short, f.EarlyStop, f.Counted, f.LeftOut)
	}
	if !strings.Contains(f.PerForwardReason, `1 of 4 sequences stopped early (finish_reason "stop" after 7 of max_tokens 30 tokens)`) {
		t.Fatalf("reason %q", f.PerForwardReason)
	}
	// TTFT over the 4 streamed sequences: 0.3, 20.1, 10.5, 10.5 → p50 (⌈2⌉ = 2nd) = 10.5
	if f.TTFT.P50 != ms(10.5) || f.TTFT.Max != ms(20.1) || f.TTFT.N != 4 {
		t.Fatalf("TTFT = %+v", f.TTFT)
	}
}

func TestWindowInvalid(t *testing.T) {
	res := &recording.Result{Requests: []recording.Request{{}}}
	// seq 1 finishes at 20 before seq 0 starts at 30
	res.Sequences = []recording.Sequence{seq(0, true, 2, 30, 40), seq(0, true, 2, 10, 20)}
	if w := Compute(res, Options{}).Window; w.Valid || !strings.Contains(w.Reason, "finished before") {
		t.Fatalf("window = %+v", w)
	}
	if w := Compute(&recording.Result{}, Options{}).Window; w.Valid || w.Reason != "no counted sequences" {
		t.Fatalf("window = %+v", w)
	}
}

// Failed requests (any kind) count in errors and in no latency or token figure;
// unfinished sequences are not counted.
func TestErrorsExcluded(t *testing.T) {
	res := &recording.Result{MaxTokens: 3, Requests: []recording.Request{
		{HasUsage: true, Usage: sse.Usage{PromptTokens: 10, CompletionTokens: 3, CachedTokens: 4, HasCached: true}},
		{Err: &recording.RequestError{Kind: recording.KindServer, URL: "http://x/v1/completions", Status: 200, Message: "boom", Err: &sse.ServerError{Message: "boom"}}},
		{Err: &recording.RequestError{Kind: recording.KindTimeout, Timeout: "first_token", URL: "u", Err: errors.New("deadline")}},
	}}
	res.Sequences = []recording.Sequence{
		seq(0, true, 3, 10, 20, 30),
		seq(1, true, 3, 1, 2, 3),       // request failed
		seq(2, false, 1, 5),            // request failed
		seq(0, false, 3, 10, 20, 30.5), // unfinished
	}
	f := Compute(res, Options{})
	if f.Counted != 1 || f.Sequences != 4 || f.PerForward.Mean != ms(10) || f.CompletionTokens != 3 {
		t.Fatalf("counted %d of %d, per-forward %v, tokens %d", f.Counted, f.Sequences, f.PerForward.Mean, f.CompletionTokens)
	}
	if len(f.Errors) != 2 || f.ErrorKinds["server"] != 1 || f.ErrorKinds["timeout:first_token"] != 1 || !strings.Contains(f.Errors[0], "boom") {
		t.Fatalf("errors %v kinds %v", f.Errors, f.ErrorKinds)
	}
	if f.PromptTokens != 10 || f.CachedTokens != 4 || !f.HasCachedTokens {
		t.Fatalf("prompt %d cached %d", f.PromptTokens, f.CachedTokens)
	}
}

func TestSummary(t *testing.T) {
	// 1..100 ms: p50 = 50th, p90 = 90th, p99 = 99th value (nearest rank)
	var v []time.Duration
	for i := 100; i >= 1; i-- {
		v = append(v, ms(float64(i)))
	}
	s := Summarize(v)
	if s.N != 100 || s.P50 != ms(50) || s.P90 != ms(90) || s.P99 != ms(99) || s.Min != ms(1) || s.Max != ms(100) || s.Mean != ms(50.5) {
		t.Fatalf("summary = %+v", s)
	}
	// one sample: every percentile is it
	if s := Summarize([]time.Duration{7}); s.P50 != 7 || s.P99 != 7 || s.Mean != 7 {
		t.Fatalf("one sample: %+v", s)
	}
	b, _ := json.Marshal(Summarize([]time.Duration{ms(0.25), ms(0.75)}))
	if string(b) != `{"n":2,"mean_ms":0.5,"p50_ms":0.25,"p90_ms":0.75,"p99_ms":0.75,"min_ms":0.25,"max_ms":0.75}` {
		t.Fatalf("json = %s", b)
	}
	var back Summary
	if err := json.Unmarshal(b, &back); err != nil || back.Mean != ms(0.5) || back.Max != ms(0.75) {
		t.Fatalf("round trip %+v %v", back, err)
	}
}

// summarizeSelect gives Summarize's Summary and stats.MedianDuration's median on samples of
// 1–2,000 durations: with ties, negatives, and sums beyond 2⁵³ ns (where it sorts).
func TestSummarizeSelectIsSummarize(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for k := range 400 {
		n := 1 + rng.IntN([]int{3, 12, 60, 2000}[k%4])
		xs := make([]time.Duration, n)
		for i := range xs {
			switch k % 5 {
			case 0:
				xs[i] = time.Duration(rng.IntN(4)) // ties
			case 1:
				xs[i] = time.Duration(rng.Int64N(2e7) - 1e6) // negatives
			case 2:
				xs[i] = time.Duration(rng.Int64N(1 << 62)) // sums past 2⁵³
			default:
				xs[i] = time.Duration(5e6 + rng.NormFloat64()*3e5)
			}
		}
		wantMed := stats.MedianDuration(xs)
		want := Summarize(slices.Clone(xs))
		got, med := summarizeSelect(xs)
		if got != want || med != wantMed {
			t.Fatalf("case %d, n %d: summarizeSelect %+v median %v; Summarize %+v median %v", k, n, got, med, want, wantMed)
		}
	}
}

// An early stop counted in chunks is said as a lower bound: the chunks may carry several
// tokens each.
func TestEarlyStopCountedInChunksIsALowerBound(t *testing.T) {
	res := &recording.Result{MaxTokens: 30, Requests: []recording.Request{{}}}
	res.Sequences = []recording.Sequence{seq(0, true, 30, every(0.3, 10, 30)...), seq(0, true, 7, every(10.5, 10, 7)...)}
	res.Sequences[1].FinishReason, res.Sequences[1].TokenSource, res.Sequences[1].CompletionTokens = "stop", sse.TokensChunks, 0
	f := Compute(res, Options{})
	if !strings.Contains(f.PerForwardReason, `stopped early (finish_reason "stop" after at least 7 (counted in chunks) of max_tokens 30 tokens)`) {
		t.Fatalf("reason %q", f.PerForwardReason)
	}
}

// Four sequences on servers of 20 and 30 ms steps: the window's reference (the 20 ms one, the
// first to finish) and the pooled fit over both disagree, which Compute says; a cell that
// then drops its full-batch figure (routed over several servers) drops that check with it
// and keeps the others.
func TestWithoutWindowDropsItsCheck(t *testing.T) {
	res := &recording.Result{MaxTokens: 40, Requests: []recording.Request{{}, {}, {}, {}}}
	res.Sequences = []recording.Sequence{seq(0, true, 40, every(0.3, 20, 40)...),
		seq(1, true, 40, every(0.6, 30, 40)...), seq(2, true, 40, every(0.9, 30, 40)...), seq(3, true, 40, every(1.2, 30, 40)...)}
	f := Compute(res, Options{})
	if !f.Window.Valid || len(f.Checks) == 0 || !strings.HasPrefix(f.Checks[len(f.Checks)-1], "full-batch estimators disagree") {
		t.Fatalf("window %+v, checks %q: want a valid window and the full-batch check", f.Window, f.Checks)
	}
	f.Checks = append([]string{"another check"}, f.Checks...)
	f.windowCheck++
	n := len(f.Checks)
	f.WithoutWindow("routed over 2 workers")
	if f.Window.Valid || f.Window.Reason != "routed over 2 workers" || len(f.Checks) != n-1 || f.Checks[0] != "another check" {
		t.Fatalf("window %+v, checks %q", f.Window, f.Checks)
	}
	for _, c := range f.Checks {
		if strings.HasPrefix(c, "full-batch") {
			t.Errorf("the full-batch check stayed: %q", c)
		}
	}
}
