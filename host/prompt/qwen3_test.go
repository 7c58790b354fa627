package prompt

import (
	"slices"
	"strings"
	"testing"

	"github.com/genload/genload/corpus"
	"github.com/genload/genload/host/tokenizer"
)

// qwen3Builder builds prompts the way a default run does: embedded Qwen3 tokenizer and chat
// template, embedded corpus, default suffix and separator.
func qwen3Builder(t testing.TB) (*Builder, *tokenizer.Tokenizer, []string) {
	t.Helper()
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := corpus.Default()
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, len(rows))
	for i, r := range rows {
		texts[i] = r.Text
	}
	tmpl := func(c string) (string, error) {
		return tok.ApplyChatTemplate([]tokenizer.Message{{Role: "user", Content: c}}, true)
	}
	b, err := New(tok, tmpl, texts, Options{Suffix: "Summarize and analyse the text above.", Separator: "\n\n"})
	if err != nil {
		t.Fatal(err)
	}
	return b, tok, texts
}

func TestCorpusRowsUnderQwen3(t *testing.T) {
	_, tok, texts := qwen3Builder(t)
	prefixes := map[string]int{}
	for i, text := range texts {
		ids := tok.Encode(text)
		if n := len(ids); n < 120 || n > 400 {
			t.Errorf("row %d: %d tokens, want 120–400", i, n)
		}
		// The first 32 tokens of distinct rows differ, so prompts with bodies of ≥ 32 tokens
		// (the default minimum) from distinct rows are distinct.
		key := string(int32Bytes(ids[:32]))
		if j, dup := prefixes[key]; dup {
			t.Errorf("rows %d and %d share their first 32 tokens", j, i)
		}
		prefixes[key] = i
	}
}

func int32Bytes(v []int32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = append(b, byte(x), byte(x>>8), byte(x>>16), byte(x>>24))
	}
	return b
}

func TestQwen3PromptsAreExactAndEndWithTheSuffix(t *testing.T) {
	b, tok, _ := qwen3Builder(t)
	// <|im_start|>user\n … \n\nSummarize and analyse the text above.<|im_end|>\n<|im_start|>assistant\n
	if got := tok.Decode(b.Prefix(), false); got != "<|im_start|>user\n" {
		t.Errorf("prefix decodes to %q", got)
	}
	wantTail := "\n\nSummarize and analyse the text above.<|im_end|>\n<|im_start|>assistant\n"
	if got := tok.Decode(b.Tail(), false); got != wantTail {
		t.Errorf("tail decodes to %q, want %q", got, wantTail)
	}
	for _, tc := range []struct{ first, n, length int }{
		{0, 64, b.MinLen()}, {17, 8, 1000}, {250, 12, 4321}, {100, 2, 64000}, {255, 1, 130972},
	} {
		lengths := make([]int, tc.n)
		for i := range lengths {
			lengths[i] = tc.length + 7*i // ragged
		}
		ps, err := b.Build(tc.first, lengths)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for i, p := range ps {
			if len(p) != lengths[i] {
				t.Errorf("first %d prompt %d: %d tokens, want %d", tc.first, i, len(p), lengths[i])
			}
			// The text ends with the suffix and the template end; what joins the body to the
			// suffix is the separator unless the body's last token would merge with it.
			if text := tok.Decode(p, false); !strings.HasSuffix(text, wantTail[2:]) {
				t.Errorf("first %d prompt %d does not end with the suffix and template tail: …%q", tc.first, i, text[len(text)-60:])
			}
			k := string(int32Bytes(p))
			if j, dup := seen[k]; dup {
				t.Errorf("first %d: prompts %d and %d are identical", tc.first, j, i)
			}
			seen[k] = i
		}
	}
}

func TestQwen3PromptsAreDeterministic(t *testing.T) {
	b1, _, _ := qwen3Builder(t)
	b2, _, _ := qwen3Builder(t)
	p1, _ := b1.Build(5, []int{900, 1100, 3000})
	p2, _ := b2.Build(5, []int{900, 1100, 3000})
	for i := range p1 {
		if !slices.Equal(p1[i], p2[i]) {
			t.Errorf("prompt %d differs between two builders", i)
		}
	}
}

func TestQwen3BodyIsTheRowRepeated(t *testing.T) {
	b, tok, texts := qwen3Builder(t)
	p, err := b.One(3, 2000)
	if err != nil {
		t.Fatal(err)
	}
	body := tok.Decode(p[len(b.Prefix()):len(p)-len(b.Tail())], false)
	if !strings.HasPrefix(body, texts[3]+"\n\n"+texts[3]) {
		t.Errorf("body does not start with row 3 repeated: %.80q", body)
	}
}

func BenchmarkBuildDefaultMatrixPrompts(b *testing.B) {
	bl, _, _ := qwen3Builder(b)
	lens := []int{1000, 2000, 4000, 8000, 16000, 32000, 64000}
	batches := []int{1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 32, 48, 64}
	b.ResetTimer()
	for b.Loop() {
		row := 0
		for _, l := range lens {
			for _, bs := range batches {
				ls := make([]int, bs)
				for i := range ls {
					ls[i] = l
				}
				if _, err := bl.Build(row, ls); err != nil {
					b.Fatal(err)
				}
				row = (row + bs) % bl.Rows()
			}
		}
	}
}
