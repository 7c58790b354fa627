package tokenizer

import (
	"testing"
	"unicode/utf8"
)

// TokenEnds on the embedded Qwen3 tokenizer: each token ends where the decoding of the
// tokens up to it ends, on every prefix that ends on a character boundary (emoji and CJK
// characters span several byte-level tokens), and the ends add up to the text.
func TestTokenEnds(t *testing.T) {
	tok, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{
		" the river and the stone bridge",
		"naïve café — déjà vu 中文字符 🙂🚀 end",
		"<|im_start|>user\nhi<|im_end|>\n",
		"a\tb\n\n  c   d",
	} {
		ids, ends, ok := tok.TokenEnds(text)
		if !ok || len(ids) != len(ends) || len(ends) == 0 || ends[len(ends)-1] != len(text) {
			t.Errorf("%q: ok %v, %d ids, ends %v", text, ok, len(ids), ends)
			continue
		}
		boundaries := 0
		for i, e := range ends {
			if i > 0 && e < ends[i-1] {
				t.Errorf("%q: ends decrease at %d: %v", text, i, ends)
			}
			if !utf8.ValidString(text[:e]) {
				continue // inside a character: the prefix decodes lossily
			}
			boundaries++
			if got := tok.Decode(ids[:i+1], false); got != text[:e] {
				t.Errorf("%q: tokens 0..%d decode to %q, the text up to their end %d is %q", text, i, got, e, text[:e])
			}
		}
		if boundaries < len(ids)/2 {
			t.Errorf("%q: only %d of %d token ends on a character boundary", text, boundaries, len(ids))
		}
	}
}
