package prompt

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/genload/genload/corpus"
	"github.com/genload/genload/host/tokenizer"
)

// tokenizerCache is where host/tokenizer/oracle/fetch.sh puts the real tokenizers (CI runs it).
func tokenizerCache() string {
	if d := os.Getenv("GENLOAD_TOKENIZER_CACHE"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "genload", "tokenizers")
}

// TestRealTokenizersGiveExactLengths builds prompts with each real tokenizer's own chat
// template (BOS exactly once, as the template emits it) and checks that every prompt has
// exactly the target number of tokens and ends with the suffix and the template's end.
func TestRealTokenizersGiveExactLengths(t *testing.T) {
	rows, err := corpus.Default()
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, len(rows))
	for i, r := range rows {
		texts[i] = r.Text
	}
	for _, name := range []string{"llama3", "llama3_1", "qwen3", "deepseek_v3", "gptoss", "gemma3"} {
		t.Run(name, func(t *testing.T) {
			tok := loadForTest(t, name)
			var tmpl Template = func(c string) (string, error) {
				return tok.ApplyChatTemplate([]tokenizer.Message{{Role: "user", Content: c}}, true)
			}
			if _, err := tmpl("x"); errors.Is(err, tokenizer.ErrNoChatTemplate) {
				tmpl = nil // gpt-oss ships no template: raw completion prompts
			} else if err != nil {
				t.Fatal(err)
			}
			b, err := New(tok, tmpl, texts, Options{Suffix: "Summarize and analyse the text above."})
			if err != nil {
				t.Fatal(err)
			}
			lengths := []int{b.MinLen(), 1000, 4096, 33333}
			ps, err := b.Build(250, lengths)
			if err != nil {
				t.Fatal(err)
			}
			post := templatePost(t, tmpl)
			for i, p := range ps {
				if text := tok.Decode(p, false); len(p) != lengths[i] || !strings.HasSuffix(text, testSuffix+post) || !slices.Equal(tok.Encode(text), p) {
					t.Errorf("prompt %d: %d tokens (want %d), ends with the suffix and template: %v, canonical: %v", i, len(p), lengths[i],
						strings.HasSuffix(text, testSuffix+post), slices.Equal(tok.Encode(text), p))
				}
			}
			// BOS at most once (the template emits it; encoding adds none).
			if bos, bosID, ok := tok.SpecialToken("bos_token"); ok && tmpl != nil {
				n := 0
				for _, id := range ps[1] {
					if id == bosID {
						n++
					}
				}
				if n > 1 {
					t.Errorf("BOS %q appears %d times in a prompt", bos, n)
				}
			}
		})
	}
}
