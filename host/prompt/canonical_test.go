package prompt

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/genload/genload/corpus"
	"github.com/genload/genload/host/tokenizer"
)

// canonicalTokenizers are the embedded tokenizer and the real ones fetched by
// host/tokenizer/oracle/fetch.sh (skipped when absent).
var canonicalTokenizers = []string{"embedded", "qwen3", "llama3", "llama3_1", "deepseek_v3", "gptoss", "gemma3", "llama2"}

func loadForTest(t testing.TB, name string) *tokenizer.Tokenizer {
	t.Helper()
	if tok, ok := loadedTokenizers.Load(name); ok {
		return tok.(*tokenizer.Tokenizer)
	}
	if name == "embedded" {
		tok, err := tokenizer.Default()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	dir := filepath.Join(tokenizerCache(), name)
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		t.Skipf("%s not fetched (run host/tokenizer/oracle/fetch.sh): %v", name, err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	loadedTokenizers.Store(name, tok)
	return tok
}

// loadedTokenizers holds the tokenizers loadForTest read (name → *tokenizer.Tokenizer), so
// that the tests of the package parse each tokenizer.json once (gemma3's takes seconds); a
// Tokenizer is safe for concurrent use and no test changes one.
var loadedTokenizers sync.Map

// chatTemplate is the tokenizer's chat template for one user message, nil without one.
func chatTemplate(t testing.TB, tok *tokenizer.Tokenizer) Template {
	var tmpl Template = func(c string) (string, error) {
		return tok.ApplyChatTemplate([]tokenizer.Message{{Role: "user", Content: c}}, true)
	}
	if _, err := tmpl("x"); errors.Is(err, tokenizer.ErrNoChatTemplate) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

func corpusTexts(t testing.TB) []string {
	rows, err := corpus.Default()
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, len(rows))
	for i, r := range rows {
		texts[i] = r.Text
	}
	return texts
}

const testSuffix = "Summarize and analyse the text above."

// checkCanonical asserts what a server that re-tokenizes sees: the decoded prompt is valid
// UTF-8 with no U+FFFD the corpus row lacks, re-encodes to exactly the same ids, has n tokens,
// and ends with the separator (or a space and it), the suffix and the template end.
func checkCanonical(t *testing.T, tok *tokenizer.Tokenizer, b *Builder, row, n int, p []int32, rowText, post string) {
	t.Helper()
	text := tok.Decode(p, false)
	switch {
	case len(p) != n:
		t.Errorf("row %d n %d: %d tokens", row, n, len(p))
	case !utf8.ValidString(text) || strings.Count(text, "\uFFFD") != 0 && !strings.Contains(rowText, "\uFFFD"):
		t.Errorf("row %d n %d: decoded text is not clean UTF-8: …%q", row, n, tail(text, 120))
	case !slices.Equal(tok.Encode(text), p):
		got := tok.Encode(text)
		i := 0
		for i < min(len(got), len(p)) && got[i] == p[i] {
			i++
		}
		t.Errorf("row %d n %d: re-encoding gives %d tokens, first difference at %d: %q", row, n, len(got), i, tok.Decode(p[max(0, i-3):min(len(p), i+3)], false))
	case !strings.HasSuffix(text, testSuffix+post):
		t.Errorf("row %d n %d: text does not end with the suffix and template: …%q", row, n, tail(text, 80))
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// templatePost is the template text after the user content.
func templatePost(t testing.TB, tmpl Template) string {
	if tmpl == nil {
		return ""
	}
	out, err := tmpl(sentinel)
	if err != nil {
		t.Fatal(err)
	}
	_, post, _ := strings.Cut(out, sentinel)
	return post
}

// TestPromptsAreCanonical: for every tokenizer available, every corpus row at a spread of
// lengths (near the overhead, the default matrix's, odd ones), re-encoding the decoded prompt
// gives the same ids, the length is exact and the text is valid UTF-8.
func TestPromptsAreCanonical(t *testing.T) {
	texts := corpusTexts(t)
	for _, name := range canonicalTokenizers {
		t.Run(name, func(t *testing.T) {
			tok := loadForTest(t, name)
			tmpl := chatTemplate(t, tok)
			post := templatePost(t, tmpl)
			b, err := New(tok, tmpl, texts, Options{Suffix: testSuffix})
			if err != nil {
				t.Fatal(err)
			}
			short := []int{b.Overhead() + 1, b.Overhead() + 2, b.Overhead() + 3, b.MinLen(), b.MinLen() + 1, 300, 517}
			long := []int{1000, 1001, 2000, 4000, 4321, 8000, 16000, 32000, 64000}
			if testing.Short() {
				long = long[:4]
			}
			for row := range texts {
				// Every row at MinLen and at 300 + row and 1000 + row (a different cut in
				// each row); the other short lengths on every 4th row, the long ones on
				// every 64th.
				lengths := []int{b.MinLen(), 300 + row, 1000 + row}
				if row%4 == 0 {
					lengths = append(lengths, short...)
				}
				if row%64 == 0 {
					lengths = append(lengths, long...)
				}
				for _, n := range lengths {
					p, err := b.One(row, n)
					if err != nil && n < b.MinLen() && strings.Contains(err.Error(), "no cut of the body") {
						// A body of one to three tokens may not exist (a row that starts
						// with a character of three tokens); genload never asks for one.
						continue
					}
					if err != nil {
						t.Errorf("row %d n %d: %v", row, n, err)
						continue
					}
					checkCanonical(t, tok, b, row, n, p, texts[row], post)
				}
			}
			periodic := 0
			for i := range b.rows {
				if p, _, err := b.planOf(i); err == nil && p.periodic {
					periodic++
				}
			}
			t.Logf("%s: overhead %d, %d of %d rows periodic", name, b.Overhead(), periodic, len(texts))
		})
	}
}
