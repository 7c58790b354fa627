package measure

import (
	"strings"
	"testing"

	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/sse"
)

// routed builds a routed-mode result: request i carries prompt i and the server counted
// counted[i] prompt tokens.
func routed(mode recording.Mode, prompts [][]int, counted ...int) *recording.Result {
	res := &recording.Result{Mode: mode}
	for i, c := range counted {
		res.Requests = append(res.Requests, recording.Request{Prompts: prompts[i], HasUsage: true, Usage: sse.Usage{PromptTokens: c}})
	}
	return res
}

func TestPromptChecksPerRequest(t *testing.T) {
	lens := []int{100, 200, 6000}
	one := [][]int{{0}, {1}, {2}}
	// +3 on one request and −3 on another: the cell's sum is 0, the check sees two.
	p := Compute(routed(recording.ModeRouted, one, 103, 197, 6000), Options{PromptLengths: lens, TextPrompts: true}).Prompts
	if p == nil || p.Requests != 3 || p.Deviating != 2 || p.MaxAbs != 3 || p.Sum != 0 || p.Truncated != 0 || p.TruncationError != "" {
		t.Fatalf("text prompts: %+v", p)
	}
	if m := p.Message(); !strings.Contains(m, "deviate on 2 of 3 requests (max |deviation| 3, sum +0") || !strings.Contains(m, "tokenization") {
		t.Fatalf("text message %q", m)
	}
	// Token-id prompts: the −3 request is truncation, and 4,096 of 6,000 is the worst.
	f := Compute(routed(recording.ModeRouted, one, 103, 197, 4096), Options{PromptLengths: lens})
	p = f.Prompts
	if p.Truncated != 2 || p.Worst == nil || p.Worst.Request != 2 || p.Worst.Sent != 6000 || p.Worst.Counted != 4096 || p.MaxAbs != 1904 {
		t.Fatalf("token prompts: %+v worst %+v", p, p.Worst)
	}
	if e := p.TruncationError; !strings.Contains(e, "truncated") || !strings.Contains(e, "4,096 of the 6,000") || !strings.Contains(e, "2 of 3 requests") {
		t.Fatalf("truncation error %q", e)
	}
	// Text prompts: −3 is drift, but 1,452 of 3,009 (a server whose context cut it to
	// C − max_tokens) is far beyond any drift: truncation too.
	p = Compute(routed(recording.ModeRouted, [][]int{{0}, {1}}, 97, 1452), Options{PromptLengths: []int{100, 3009}, TextPrompts: true}).Prompts
	if p.Truncated != 1 || p.Worst == nil || p.Worst.Request != 1 || !strings.Contains(p.TruncationError, "1,452 of the 3,009") {
		t.Fatalf("text truncation: %+v worst %+v error %q", p, p.Worst, p.TruncationError)
	}
	// downgraded: no error, the message still names truncation
	p = Compute(routed(recording.ModeRouted, one, 100, 200, 4096), Options{PromptLengths: lens, TruncationWarns: true}).Prompts
	if p.TruncationError != "" || !strings.Contains(p.Message(), "truncated") || p.Truncated != 1 {
		t.Fatalf("warn: %+v %q", p, p.Message())
	}
	// array mode: one request of three prompts, 6,300 sent; ModeN: the one prompt, sent once.
	p = Compute(routed(recording.ModeArray, [][]int{{0, 1, 2}}, 6300), Options{PromptLengths: lens}).Prompts
	if p.Requests != 1 || p.Deviating != 0 || p.Message() != "" {
		t.Fatalf("array: %+v", p)
	}
	p = Compute(routed(recording.ModeN, [][]int{{0, 1, 2}}, 100), Options{PromptLengths: []int{100, 100, 100}}).Prompts
	if p.Requests != 1 || p.Deviating != 0 {
		t.Fatalf("n mode: %+v", p)
	}
	// no lengths, or no usage: no check
	if Compute(routed(recording.ModeRouted, one, 1, 2, 3), Options{}).Prompts != nil {
		t.Fatal("check without prompt lengths")
	}
	res := routed(recording.ModeRouted, one, 1, 2, 3)
	for i := range res.Requests {
		res.Requests[i].HasUsage = false
	}
	if Compute(res, Options{PromptLengths: lens}).Prompts != nil {
		t.Fatal("check without usage")
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 4096: "4,096", 1234567: "1,234,567", -6000: "-6,000"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestTextPromptsShortByTokenizerOrContext: with text prompts, requests counted short beyond
// drift by different amounts are another tokenizer, not truncation (no error, the message says
// which setting to change); cut to one count, they are truncation; one request short by less
// than 40 % could be either, and is said so without an error.
func TestTextPromptsShortByTokenizerOrContext(t *testing.T) {
	lens := []int{1000, 2000, 3000}
	one := [][]int{{0}, {1}, {2}}
	text := Options{PromptLengths: lens, TextPrompts: true}
	p := Compute(routed(recording.ModeRouted, one, 880, 1750, 2640), text).Prompts // −12 %, −12.5 %, −12 %
	if p.Mismatch != 3 || p.Truncated != 0 || p.TruncationError != "" || !strings.Contains(p.Message(), "its tokenizer is not genload's") || !strings.Contains(p.Message(), "[tokenizer] path") {
		t.Errorf("another tokenizer: %+v %q", p, p.Message())
	}
	p = Compute(routed(recording.ModeRouted, one, 1000, 1552, 1552), text).Prompts // two cut to C − max_tokens
	if p.Truncated != 2 || p.Mismatch != 0 || !strings.Contains(p.TruncationError, "set context to the server's") {
		t.Errorf("context cut: %+v %q", p, p.TruncationError)
	}
	p = Compute(routed(recording.ModeRouted, one, 1000, 2000, 2400), text).Prompts // one, −20 %
	if !p.Ambiguous || p.Truncated != 0 || p.TruncationError != "" || !strings.Contains(p.Message(), "cannot tell them apart") {
		t.Errorf("one request: %+v %q", p, p.Message())
	}
	// token ids are counted as sent whatever the tokenizer: short is truncation
	p = Compute(routed(recording.ModeRouted, one, 880, 1750, 2640), Options{PromptLengths: lens}).Prompts
	if p.Truncated != 3 || p.Mismatch != 0 || p.TruncationError == "" {
		t.Errorf("token ids: %+v", p)
	}
}

// A server that counts each token-id prompt 5 tokens short (it drops special tokens) is told a
// fixed difference, not a context cut, and the cell is no error; different shortfalls, or one
// beyond a few special tokens, stay truncation.
func TestTokenIDPromptsShortByAFixedAmount(t *testing.T) {
	lens := []int{1000, 2000, 1500}
	p := Compute(routed(recording.ModeRouted, [][]int{{0}, {1}, {2}}, 995, 1995, 1495), Options{PromptLengths: lens}).Prompts
	want := "prompt tokens deviate on 3 of 3 requests (worst: request 0, the server counted 995 of the 1,000 prompt tokens sent): 5 fewer tokens per prompt on every request counted short, a fixed difference — the server drops special tokens (a BOS) of the prompts, or counts without them; not a context cut, which leaves the longest prompts at one count whatever their length (unless every prompt ends within 5 tokens of the server's context)"
	if p.FewerPerPrompt != 5 || p.Truncated != 0 || p.TruncationError != "" || p.Message() != want {
		t.Fatalf("fixed shortfall: %+v\n got %q\nwant %q", p, p.Message(), want)
	}
	// array mode: one request of three prompts, 3 × 1 token short
	p = Compute(routed(recording.ModeArray, [][]int{{0, 1, 2}}, 4497), Options{PromptLengths: lens}).Prompts
	if p.FewerPerPrompt != 1 || p.Truncated != 0 || !strings.Contains(p.Message(), "1 fewer token per prompt") {
		t.Fatalf("array: %+v %q", p, p.Message())
	}
	for _, tc := range []struct {
		name    string
		counted []int
	}{
		{"short by different amounts", []int{995, 1990, 1500}},
		{"short beyond special tokens", []int{990, 2000, 1500}},
		{"cut to one count", []int{1000, 1200, 1200}},
	} {
		p := Compute(routed(recording.ModeRouted, [][]int{{0}, {1}, {2}}, tc.counted...), Options{PromptLengths: lens}).Prompts
		if p.FewerPerPrompt != 0 || p.Truncated == 0 || !strings.HasPrefix(p.TruncationError, "prompts truncated by the server: ") {
			t.Errorf("%s: %+v", tc.name, p)
		}
	}
}
