package sse

import (
	"strconv"
	"strings"
	"testing"
)

// ev is one recorded completions event of choice idx with text (finish "" = null); lp ≥ 0
// adds a vLLM-shaped logprobs object listing lp tokens (lp = -1: "logprobs":null, lp ≤ -2:
// llama.cpp's content form listing -lp-1 tokens); u ≥ 0 adds a usage object with
// completion_tokens u (u = -1: none).
func ev(idx int, text string, lp, u int, finish string) string {
	fr := "null"
	if finish != "" {
		fr = `"` + finish + `"`
	}
	lps := "null"
	switch {
	case lp >= 0:
		toks := strings.TrimSuffix(strings.Repeat(`"t",`, lp), ",")
		lpv := strings.TrimSuffix(strings.Repeat(`-0.5,`, lp), ",")
		lps = `{"text_offset":[` + strings.TrimSuffix(strings.Repeat(`0,`, lp), ",") + `],"token_logprobs":[` + lpv +
			`],"tokens":[` + toks + `],"top_logprobs":[` + strings.TrimSuffix(strings.Repeat(`{"t":-0.5},`, lp), ",") + `]}`
	case lp <= -2:
		lps = `{"content":[` + strings.TrimSuffix(strings.Repeat(`{"id":7,"token":"t","bytes":[116],"logprob":-0.5,"top_logprobs":[]},`, -lp-1), ",") + `]}`
	}
	usage := ""
	if u >= 0 {
		usage = `,"usage":{"prompt_tokens":5,"completion_tokens":` + strconv.Itoa(u) + `,"total_tokens":` + strconv.Itoa(5+u) + `}`
	}
	return `data: {"id":"cmpl-1","object":"text_completion","choices":[{"index":` + strconv.Itoa(idx) + `,"text":"` + text +
		`","logprobs":` + lps + `,"finish_reason":` + fr + `}]` + usage + "}\n\n"
}

// usageOnly is the request's usage chunk ("choices":[]) with completion_tokens n.
func usageOnly(n int) string {
	return `data: {"id":"cmpl-1","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":` + strconv.Itoa(n) +
		`,"total_tokens":` + strconv.Itoa(5+n) + "}}\n\n"
}

// zero is llama.cpp-derived per-chunk usage: every count 0.
const zero = 0

// Token counts per sequence from every source a stream offers, by server behaviour: the
// count, its source, the mark deltas and the note saying what was discarded.
func TestDemuxTokenCounts(t *testing.T) {
	type want struct {
		tokens int
		src    TokenSource
		deltas []int32 // every mark's Tokens
		note   string  // a substring of TokenNote; "" = TokenNote is empty
	}
	cases := []struct {
		name      string
		expect    int
		maxTokens int
		parts     []string
		want      []want
	}{
		// usage {0,0,0} on every chunk, the real usage in a final choices:[] chunk: the
		// per-chunk zeros contradict the text, so the request's 4 is used.
		{"zero-usage-every-chunk", 1, 4, []string{
			ev(0, "a", -1, zero, ""), ev(0, "b", -1, zero, ""), ev(0, "c", -1, zero, ""), ev(0, "d", -1, zero, "length"),
			usageOnly(4), done,
		}, []want{{4, TokensRequestUsage, []int32{-1, -1, -1, -1}, "per-chunk usage was 0 while text arrived; used the request's usage"}}},
		// the same server with two prompts: total 8 = 2 sequences × max_tokens 4
		{"zero-usage-every-chunk, two sequences", 2, 4, []string{
			ev(0, "a", -1, zero, ""), ev(1, "a", -1, zero, ""), ev(0, "b", -1, zero, ""), ev(1, "b", -1, zero, ""),
			ev(0, "c", -1, zero, ""), ev(1, "c", -1, zero, ""), ev(0, "d", -1, zero, "length"), ev(1, "d", -1, zero, "length"),
			usageOnly(8), done,
		}, []want{
			{4, TokensUsageChunks, []int32{-1, -1, -1, -1}, "per-chunk usage was 0 while text arrived; the request's usage equals its chunks with text: one token each"},
			{4, TokensUsageChunks, []int32{-1, -1, -1, -1}, "per-chunk usage was 0 while text arrived; the request's usage equals its chunks with text: one token each"},
		}},
		// the zeros as placeholders, the real count on the sequence's own final chunk
		{"zero-usage-every-chunk, final count on the choice", 1, 3, []string{
			ev(0, "a", -1, zero, ""), ev(0, "b", -1, zero, ""), ev(0, "c", -1, zero, ""), ev(0, "", -1, 3, "length"), done,
		}, []want{{3, TokensChoiceUsage, []int32{-1, -1, -1}, "per-chunk usage was 0 while text arrived; used the per-choice usage"}}},
		// a zero after real counts is a count going down, not a placeholder
		{"usage dropping to zero", 1, 3, []string{
			ev(0, "a", -1, 1, ""), ev(0, "b", -1, 2, ""), ev(0, "c", -1, zero, "length"), usageOnly(3), done,
		}, []want{{3, TokensRequestUsage, []int32{-1, -1, -1}, "per-chunk usage went down (0 after 2); used the request's usage"}}},
		// ... and with a final usage that is zero too: nothing exact is left
		{"zero-usage everywhere", 1, 4, []string{
			ev(0, "a", -1, zero, ""), ev(0, "b", -1, zero, "length"), usageOnly(0), done,
		}, []want{{2, TokensChunks, []int32{-1, -1}, "per-chunk usage was 0 while text arrived; the request's usage (0) was below its 2 chunks with text; counted chunks"}}},
		// no usage anywhere, 2 tokens per chunk: 3 chunks, a lower bound of 6 tokens
		{"no-usage, 2-token chunks", 1, 6, []string{
			ev(0, "ab", -1, -1, ""), ev(0, "cd", -1, -1, ""), ev(0, "ef", -1, -1, "length"), done,
		}, []want{{3, TokensChunks, []int32{-1, -1, -1}, "no usage or logprobs for this sequence; counted chunks"}}},
		// the same with "logprobs":1: two entries per chunk, 6 tokens exact
		{"no-usage, 2-token chunks, logprobs", 1, 6, []string{
			ev(0, "ab", 2, -1, ""), ev(0, "cd", 2, -1, ""), ev(0, "ef", 2, -1, "length"), done,
		}, []want{{6, TokensLogprobs, []int32{2, 2, 2}, ""}}},
		// chunks known to carry one token each (logprobs list 1 per chunk): exact
		{"one token per chunk, logprobs", 1, 3, []string{
			ev(0, "a", 1, -1, ""), ev(0, "b", 1, -1, ""), ev(0, "c", 1, -1, "length"), done,
		}, []want{{3, TokensLogprobs, []int32{1, 1, 1}, ""}}},
		// llama.cpp's content form, its final text:"" chunk with logprobs null and usage
		{"logprobs, llama.cpp content form and final usage", 1, 3, []string{
			ev(0, "a", -2, -1, ""), ev(0, "b", -2, -1, ""), ev(0, "c", -2, -1, ""), ev(0, "", -1, 3, "length"), done,
		}, []want{{3, TokensChoiceUsage, []int32{1, 1, 1}, ""}}},
		// llama.cpp holding back a split UTF-8 character: 4 tokens, one chunk lists 1 of its
		// 2; the server's usage wins and the deltas become unknown
		{"logprobs below the final usage", 1, 4, []string{
			ev(0, "a", -2, -1, ""), ev(0, "é", -2, -1, ""), ev(0, "c", -2, -1, ""), ev(0, "", -1, 4, "length"), done,
		}, []want{{4, TokensChoiceUsage, []int32{-1, -1, -1}, "per-chunk token counts (3) disagree with the count (4); chunk deltas unknown; used the per-choice usage"}}},
		// vLLM: logprobs with zero per-chunk usage; the stripped EOS (text "") is a token
		{"logprobs beside zero usage, stripped EOS", 1, 4, []string{
			ev(0, "a", 1, zero, ""), ev(0, "bc", 2, zero, ""), ev(0, "", 1, zero, "stop"), done,
		}, []want{{4, TokensLogprobs, []int32{1, 2, 1}, "per-chunk usage was 0 while text arrived; used logprobs"}}},
		// one sequence: the request's usage is preferred to logprobs, which agree (1+2+1)
		{"logprobs and request usage agree", 1, 4, []string{
			ev(0, "a", 1, -1, ""), ev(0, "bc", 2, -1, ""), ev(0, "d", 1, -1, "length"), usageOnly(4), done,
		}, []want{{4, TokensRequestUsage, []int32{1, 2, 1}, ""}}},
		// a chunk with text whose logprobs list nothing: logprobs discarded
		{"logprobs listing no token for text", 1, 4, []string{
			ev(0, "a", 1, -1, ""), ev(0, "b", 0, -1, ""), ev(0, "c", 1, -1, "length"), done,
		}, []want{{3, TokensChunks, []int32{-1, -1, -1}, "logprobs listed no token for a chunk with text; counted chunks"}}},
		// logprobs on some chunks only: not a count, the listed deltas stay
		{"logprobs on some chunks", 1, 4, []string{
			ev(0, "a", 2, -1, ""), ev(0, "b", -1, -1, ""), ev(0, "c", 1, -1, "length"), done,
		}, []want{{4, TokensChunks, []int32{2, -1, 1}, "logprobs were missing on 1 of 3 chunks with tokens; counted chunks"}}},
		// continuous usage 1, 3, 4: deltas 1, 2, 1, exact
		{"continuous usage", 1, 4, []string{
			ev(0, "a", -1, 1, ""), ev(0, "bc", -1, 3, ""), ev(0, "d", -1, 4, "length"), usageOnly(4), done,
		}, []want{{4, TokensChoiceUsage, []int32{1, 2, 1}, ""}}},
		// vLLM n=2 continuous usage, interleaved: each choice counts only itself
		{"continuous usage, two sequences", 2, 3, []string{
			ev(0, "a", -1, 1, ""), ev(1, "ab", -1, 2, ""), ev(0, "bc", -1, 3, "length"), ev(1, "c", -1, 3, "length"), usageOnly(6), done,
		}, []want{{3, TokensChoiceUsage, []int32{1, 2}, ""}, {3, TokensChoiceUsage, []int32{2, 1}, ""}}},
		// usage counting the whole request on each one-choice chunk: 1,3 and 2,4 sum to 7
		// against a total of 4, so the choices' counts are not believed; the total equals
		// the 4 chunks with text, one token each
		{"request-wide usage on choice chunks", 2, 2, []string{
			ev(0, "a", -1, 1, ""), ev(1, "a", -1, 2, ""), ev(0, "b", -1, 3, "length"), ev(1, "b", -1, 4, "length"), usageOnly(4), done,
		}, []want{
			{2, TokensUsageChunks, []int32{-1, -1}, "per-choice usage summed to 7, above the request's usage (4); the request's usage equals its chunks with text: one token each"},
			{2, TokensUsageChunks, []int32{-1, -1}, "per-choice usage summed to 7, above the request's usage (4); the request's usage equals its chunks with text: one token each"},
		}},
		// the same with a total of 5 over the 4 chunks with text: neither is believed
		{"request-wide usage on choice chunks, a total above the chunks", 2, 2, []string{
			ev(0, "a", -1, 1, ""), ev(1, "a", -1, 2, ""), ev(0, "b", -1, 3, "length"), ev(1, "b", -1, 4, "length"), usageOnly(5), done,
		}, []want{
			{2, TokensChunks, []int32{-1, -1}, "per-choice usage summed to 7, above the request's usage (5); counted chunks"},
			{2, TokensChunks, []int32{-1, -1}, "per-choice usage summed to 7, above the request's usage (5); counted chunks"},
		}},
		// usage 1, 3, 2, 4: it went down at the third chunk
		{"usage going down", 1, 4, []string{
			ev(0, "a", -1, 1, ""), ev(0, "bc", -1, 3, ""), ev(0, "d", -1, 2, ""), ev(0, "e", -1, 4, "length"), usageOnly(5), done,
		}, []want{{5, TokensRequestUsage, []int32{-1, -1, -1, -1}, "per-chunk usage went down (2 after 3); used the request's usage"}}},
		{"usage going down, no request usage", 1, 4, []string{
			ev(0, "a", -1, 1, ""), ev(0, "bc", -1, 3, ""), ev(0, "d", -1, 2, "length"), done,
		}, []want{{3, TokensChunks, []int32{-1, -1, -1}, "per-chunk usage went down (2 after 3); counted chunks"}}},
		// continuous usage 3, 3, 3 over three chunks with text: deltas 3, 0, 0 cannot be
		{"usage not growing with text", 1, 4, []string{
			ev(0, "a", -1, 3, ""), ev(0, "b", -1, 3, ""), ev(0, "c", -1, 3, "length"), done,
		}, []want{{3, TokensChunks, []int32{-1, -1, -1}, "per-chunk usage did not grow on a chunk with text; counted chunks"}}},
		// usage 1 on the first chunk only, then 3 more chunks with text
		{"usage below the chunks that followed", 1, 4, []string{
			ev(0, "a", -1, 1, ""), ev(0, "b", -1, -1, ""), ev(0, "c", -1, -1, ""), ev(0, "d", -1, -1, "length"), done,
		}, []want{{4, TokensChunks, []int32{-1, -1, -1, -1}, "per-chunk usage (1) was below the 4 chunks with text; counted chunks"}}},
		// 3 sequences, no usage of their own; total 10 ≠ 3 × max_tokens 4: not used
		// 10 chunks with text, 10 tokens: one token each, whatever the split
		{"request total equal to the chunks with text of 3 sequences", 3, 4, []string{
			ev(0, "a", -1, -1, ""), ev(1, "a", -1, -1, ""), ev(2, "a", -1, -1, ""),
			ev(0, "b", -1, -1, ""), ev(1, "b", -1, -1, ""), ev(2, "b", -1, -1, ""),
			ev(0, "c", -1, -1, ""), ev(1, "c", -1, -1, "length"), ev(2, "c", -1, -1, "length"),
			ev(0, "d", -1, -1, "length"), usageOnly(10), done,
		}, []want{
			{4, TokensUsageChunks, []int32{-1, -1, -1, -1}, ""},
			{3, TokensUsageChunks, []int32{-1, -1, -1}, ""},
			{3, TokensUsageChunks, []int32{-1, -1, -1}, ""},
		}},
		// three of eight finishing without a token and one after 3 of 4: 4·4 + 3 = 19 tokens
		// in 19 chunks with text
		{"zero-token and early-stopped sequences, request total only", 8, 4, zeroAndEarly(), []want{
			{4, TokensUsageChunks, nil, ""}, {4, TokensUsageChunks, nil, ""}, {4, TokensUsageChunks, nil, ""},
			{4, TokensUsageChunks, nil, ""}, {3, TokensUsageChunks, nil, ""},
			{0, TokensUsageChunks, nil, ""}, {0, TokensUsageChunks, nil, ""}, {0, TokensUsageChunks, nil, ""},
		}},
		// 11 tokens in 10 chunks: a chunk carried two, which one is unknown
		{"request total that does not split over 3 sequences", 3, 4, []string{
			ev(0, "a", -1, -1, ""), ev(1, "a", -1, -1, ""), ev(2, "a", -1, -1, ""),
			ev(0, "b", -1, -1, ""), ev(1, "b", -1, -1, ""), ev(2, "b", -1, -1, ""),
			ev(0, "c", -1, -1, ""), ev(1, "c", -1, -1, "length"), ev(2, "c", -1, -1, "length"),
			ev(0, "d", -1, -1, "length"), usageOnly(11), done,
		}, []want{
			{4, TokensChunks, []int32{-1, -1, -1, -1}, "the request's usage (11) does not split over its 3 sequences without their own count; counted chunks"},
			{3, TokensChunks, []int32{-1, -1, -1}, "does not split"},
			{3, TokensChunks, []int32{-1, -1, -1}, "does not split"},
		}},
		// the same total splits evenly when it is 12 = 3 × 4
		{"request total that splits over 3 sequences", 3, 4, []string{
			ev(0, "ab", -1, -1, ""), ev(1, "ab", -1, -1, ""), ev(2, "abcd", -1, -1, "length"),
			ev(0, "cd", -1, -1, "length"), ev(1, "cd", -1, -1, "length"), usageOnly(12), done,
		}, []want{{4, TokensEvenSplit, nil, ""}, {4, TokensEvenSplit, nil, ""}, {4, TokensEvenSplit, nil, ""}}},
		// two sequences counted by their own usage (TGI-style, on the final chunk), the
		// third by what the request's 10 leaves: 10 − 4 − 3 = 3
		{"request total minus the counted sequences", 3, 4, []string{
			ev(0, "ab", -1, -1, ""), ev(1, "a", -1, -1, ""), ev(2, "abc", -1, -1, ""),
			ev(0, "cd", -1, 4, "length"), ev(1, "bc", -1, 3, "length"), ev(2, "", -1, -1, "length"), usageOnly(10), done,
		}, []want{{4, TokensChoiceUsage, nil, ""}, {3, TokensChoiceUsage, nil, ""}, {3, TokensRequestUsage, nil, ""}}},
		// a sequence that never sent a chunk counts 0, and is no part of a split
		{"unseen sequence", 2, 2, []string{
			ev(0, "a", -1, -1, ""), ev(0, "b", -1, -1, "length"), usageOnly(2), done,
		}, []want{{2, TokensRequestUsage, nil, ""}, {0, TokensChunks, nil, ""}}},
	}
	cases = append(cases, struct {
		name      string
		expect    int
		maxTokens int
		parts     []string
		want      []want
	}{
		// per-chunk usage that counts the tokens before its chunk, the first chunk of
		// sequence 0 carrying 2 tokens: its count (3, not below its 3 chunks) and sequence
		// 1's (3, below its 4 chunks) are one short of max_tokens 4, both finished with
		// "length", and the request's usage is 8 = 2 × 4: each ran 4
		"usage lagging a chunk", 2, 4, []string{
			ev(0, "ab", -1, 0, ""), ev(1, "a", -1, 0, ""), ev(0, "c", -1, 2, ""), ev(1, "b", -1, 1, ""),
			ev(0, "d", -1, 3, "length"), ev(1, "c", -1, 2, ""), ev(1, "d", -1, 3, "length"), usageOnly(8), done,
		}, []want{
			{4, TokensEvenSplit, []int32{-1, -1, -1}, "per-choice usage (3) was below max_tokens (4) on a sequence that finished with \"length\", while the request's usage is max_tokens for each of its sequences (per-chunk usage that lags a chunk behind); split the request's usage evenly"},
			{4, TokensEvenSplit, []int32{-1, -1, -1, -1}, "per-chunk usage (1) was below the 2 chunks with text; split the request's usage evenly"},
		}}, struct {
		name      string
		expect    int
		maxTokens int
		parts     []string
		want      []want
	}{
		// the same total, 2 × max_tokens 4, from a sequence that stopped after 3 tokens and
		// one that ran 5: their own counts stand (a "stop" is not cut short by max_tokens)
		"early stop and overlong summing to B × max_tokens", 2, 4, []string{
			ev(0, "a", -1, 1, ""), ev(1, "a", -1, 1, ""), ev(0, "b", -1, 2, ""), ev(1, "b", -1, 2, ""),
			ev(0, "c", -1, 3, "stop"), ev(1, "c", -1, 3, ""), ev(1, "d", -1, 4, ""), ev(1, "e", -1, 5, "length"), usageOnly(8), done,
		}, []want{
			{3, TokensChoiceUsage, []int32{1, 1, 1}, ""},
			{5, TokensChoiceUsage, []int32{1, 1, 1, 1, 1}, ""},
		}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			at := make([]float64, len(tc.parts))
			for i := range at {
				at[i] = float64(i + 1)
			}
			d, _ := run(t, tc.expect, at, tc.parts...)
			seqs := d.Finalize(tc.maxTokens)
			if len(seqs) != len(tc.want) {
				t.Fatalf("%d sequences, want %d", len(seqs), len(tc.want))
			}
			for i, w := range tc.want {
				s := seqs[i]
				if s.CompletionTokens != w.tokens || s.TokenSource != w.src {
					t.Errorf("seq %d: %d tokens from %s, want %d from %s (note %q)", i, s.CompletionTokens, s.TokenSource, w.tokens, w.src, s.TokenNote)
				}
				if w.note == "" && s.TokenNote != "" || !strings.Contains(s.TokenNote, w.note) {
					t.Errorf("seq %d: note %q, want %q", i, s.TokenNote, w.note)
				}
				if w.deltas != nil {
					var got []int32
					for _, m := range s.Marks.All() {
						got = append(got, m.Tokens)
					}
					if !equalInt32(got, w.deltas) {
						t.Errorf("seq %d: deltas %v, want %v", i, got, w.deltas)
					}
				}
			}
		})
	}
}

func equalInt32(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Per-choice usage that contradicts the stream is not summed into the request's usage
// (TGI-style streams have no usage-only chunk).
func TestRequestUsageSkipsDiscarded(t *testing.T) {
	d, err := run(t, 2, []float64{1, 2, 3, 4},
		ev(0, "a", -1, -1, ""), ev(1, "ab", -1, -1, ""), ev(0, "b", -1, 2, "length"), ev(1, "c", -1, zero, "length"))
	if err != nil {
		t.Fatal(err)
	}
	// sequence 1's usage is 0 after two chunks with text: only sequence 0's 2 counts
	if u, ok := d.RequestUsage(); !ok || u.CompletionTokens != 2 || u.PromptTokens != 5 {
		t.Fatalf("request usage %+v %v, want 2 completion and 5 prompt tokens", u, ok)
	}
}

// zeroAndEarly is the stream of 8 sequences of max_tokens 4 with request usage only:
// sequences 0–3 run 4 tokens, 4 stops after 3, 5–7 finish with no text.
func zeroAndEarly() []string {
	var evs []string
	for k := range 4 {
		for i := range 5 {
			fin := ""
			switch {
			case i < 4 && k == 3:
				fin = "length"
			case i == 4 && k == 2:
				fin = "stop"
			case i == 4 && k == 3:
				continue
			}
			evs = append(evs, ev(i, "x", -1, -1, fin))
		}
	}
	for i := 5; i < 8; i++ {
		evs = append(evs, ev(i, "", -1, -1, "stop"))
	}
	return append(evs, usageOnly(19), done)
}
