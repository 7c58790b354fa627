package engine

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/genload/genload/host/tokenizer"
)

// TestRealTokenizer runs the engine with the embedded Qwen3 tokenizer: string prompts are
// counted as the tokenizer counts them and generated text is clean UTF-8 words.
func TestRealTokenizer(t *testing.T) {
	tok, err := tokenizer.Default()
	if err != nil {
		t.Skipf("tokenizer unavailable: %v", err)
	}
	var _ Tokenizer = tok
	e, err := New(func() Config { c := DefaultConfig(); c.TimeScale = 0; return c }(), tok)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.Handler())
	defer func() { srv.Close(); e.Close() }()
	if len(e.vocab.ids) < 100 {
		t.Errorf("output vocabulary has %d tokens, want ≥ 100", len(e.vocab.ids))
	}
	prompt := "The quick brown fox jumps over the lazy dog."
	_, b := post(t, srv.URL+"/v1/completions", `{"prompt":"`+prompt+`","max_tokens":20,"ignore_eos":true}`)
	var c completion
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if want := len(tok.Encode(prompt)); c.Usage.PromptTokens != want {
		t.Errorf("prompt tokens %d, want %d", c.Usage.PromptTokens, want)
	}
	text := c.Choices[0].Text
	if !utf8.ValidString(text) || len(strings.Fields(text)) < 10 {
		t.Errorf("generated text %q", text)
	}
}
