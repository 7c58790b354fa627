package tokenizer

import (
	"strings"
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

// A chat template that writes BOS, under a tokenizer whose encoding adds none: TemplateBOS is
// its text and ApplyChatTemplateNoBOS leaves it out; when the tokenizer adds BOS itself
// (TextSpecials), ApplyChatTemplateText already does and TemplateBOS is "".
func TestTemplateBOS(t *testing.T) {
	noPost := strings.Replace(tinyJSON, `"post_processor": {"type": "TemplateProcessing"`, `"post_processor": null, "unused": {"type": "TemplateProcessing"`, 1)
	cfg := `{"bos_token": "<s>", "chat_template": "{{ bos_token }}{% for m in messages %}[{{ m['content'] }}]{% endfor %}"}`
	tk, err := Load(writeTiny(t, map[string]string{"tokenizer.json": noPost, "tokenizer_config.json": cfg}))
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{{Role: "user", Content: "abc"}}
	if bos := tk.TemplateBOS(); bos != "<s>" {
		t.Errorf("TemplateBOS %q, want <s>", bos)
	}
	if s, err := tk.ApplyChatTemplateNoBOS(msgs, true); err != nil || s != "[abc]" {
		t.Errorf("without BOS: %q %v", s, err)
	}
	if s, _ := tk.ApplyChatTemplateText(msgs, true); s != "<s>[abc]" {
		t.Errorf("text: %q", s)
	}
	withPost, err := Load(writeTiny(t, map[string]string{"tokenizer.json": tinyJSON, "tokenizer_config.json": cfg}))
	if err != nil {
		t.Fatal(err)
	}
	if bos := withPost.TemplateBOS(); bos != "" {
		t.Errorf("a tokenizer that adds BOS itself: TemplateBOS %q, want \"\"", bos)
	}
}
