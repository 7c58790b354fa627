package prompt

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// byteEnc is a fake tokenizer: one token per byte, and "<|im_start|>", "<|im_end|>" as single
// special tokens 1000 and 1001, so template arithmetic is easy to follow.
type byteEnc struct{}

func (byteEnc) Encode(s string) []int32 {
	var out []int32
	for len(s) > 0 {
		switch {
		case strings.HasPrefix(s, "<|im_start|>"):
			out, s = append(out, 1000), s[len("<|im_start|>"):]
		case strings.HasPrefix(s, "<|im_end|>"):
			out, s = append(out, 1001), s[len("<|im_end|>"):]
		default:
			out, s = append(out, int32(s[0])), s[1:]
		}
	}
	return out
}

func (byteEnc) Decode(ids []int32, _ bool) string {
	var b strings.Builder
	for _, id := range ids {
		switch id {
		case 1000:
			b.WriteString("<|im_start|>")
		case 1001:
			b.WriteString("<|im_end|>")
		default:
			b.WriteByte(byte(id))
		}
	}
	return b.String()
}

func chatML(content string) (string, error) {
	return "<|im_start|>user\n" + content + "<|im_end|>\n<|im_start|>assistant\n", nil
}

func TestBuildExactLengthsAndSuffix(t *testing.T) {
	rows := []string{"alpha beta gamma", "delta epsilon", "zeta"}
	b, err := New(byteEnc{}, chatML, rows, Options{Suffix: "Sum up.", Separator: "\n\n", MinBody: 1})
	if err != nil {
		t.Fatal(err)
	}
	// prefix: <|im_start|> + "user\n" (5 bytes) = 6 tokens;
	// tail: "\n\n" + "Sum up." + <|im_end|> + "\n" + <|im_start|> + "assistant\n" = 2+7+1+1+1+10 = 22.
	if got := b.Overhead(); got != 28 {
		t.Fatalf("Overhead = %d, want 28", got)
	}
	tail := byteEnc{}.Encode("\n\nSum up.<|im_end|>\n<|im_start|>assistant\n")
	lengths := []int{29, 40, 100, 1000}
	ps, err := b.Build(1, lengths)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range ps {
		if len(p) != lengths[i] {
			t.Errorf("prompt %d: %d tokens, want %d", i, len(p), lengths[i])
		}
		if !slices.Equal(p[len(p)-len(tail):], tail) {
			t.Errorf("prompt %d does not end with separator+suffix+template tail", i)
		}
		if p[0] != 1000 {
			t.Errorf("prompt %d does not start with the template prefix", i)
		}
	}
	// prompt 0 (row 1, 29 tokens) has a 1-token body: the first byte of "delta epsilon".
	if ps[0][6] != 'd' {
		t.Errorf("prompt 0 body = %q, want 'd'", ps[0][6])
	}
	// prompt 2 uses row (1+2) mod 3 = 0 and repeats it: body 72 tokens = 16 + 2 + 16 + 2 + 16 + 2 + 16 + 2 of "alpha beta gamma\n\n"
	body := string(int32sToBytes(ps[2][6 : 100-22]))
	if want := strings.Repeat("alpha beta gamma\n\n", 4); body != want {
		t.Errorf("prompt 2 body = %q, want %q", body, want)
	}
}

func int32sToBytes(v []int32) []byte {
	b := make([]byte, len(v))
	for i, x := range v {
		b[i] = byte(x)
	}
	return b
}

func TestBuildRejectsTooShort(t *testing.T) {
	b, err := New(byteEnc{}, chatML, []string{"x"}, Options{Suffix: "S"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Build(0, []int{b.Overhead()}); err == nil {
		t.Fatal("length == overhead accepted; want an error (no body token)")
	}
	if got, want := b.MinLen(), b.Overhead()+32; got != want {
		t.Errorf("MinLen = %d, want %d (default MinBody 32)", got, want)
	}
}

func TestTemplateMustRenderContentOnce(t *testing.T) {
	twice := func(c string) (string, error) { return c + c, nil }
	if _, err := New(byteEnc{}, twice, []string{"x"}, Options{Suffix: "S"}); err == nil || !strings.Contains(err.Error(), "2 times") {
		t.Fatalf("err = %v, want 'rendered the user content 2 times'", err)
	}
	failing := func(string) (string, error) { return "", fmt.Errorf("line 3: boom") }
	if _, err := New(byteEnc{}, failing, []string{"x"}, Options{Suffix: "S"}); err == nil || !strings.Contains(err.Error(), "line 3: boom") {
		t.Fatalf("err = %v, want the template's message", err)
	}
}

// chunkCodec tokenizes text in 3-byte chunks from its start (one id per distinct chunk, the
// last chunk shorter): the tokenization of a repeated 8-byte row has no period of one repeat,
// so prompts are built by tokenizing the whole text.
type chunkCodec struct {
	mu  sync.Mutex
	ids map[string]int32
	str []string
}

func (c *chunkCodec) Encode(s string) []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ids == nil {
		c.ids = map[string]int32{}
	}
	var out []int32
	for i := 0; i < len(s); i += 3 {
		k := s[i:min(i+3, len(s))]
		id, ok := c.ids[k]
		if !ok {
			id = int32(len(c.str))
			c.ids[k], c.str = id, append(c.str, k)
		}
		out = append(out, id)
	}
	return out
}

func (c *chunkCodec) Decode(ids []int32, _ bool) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(c.str[id])
	}
	return b.String()
}

func TestNonPeriodicRowsAreTokenizedWhole(t *testing.T) {
	c := &chunkCodec{}
	b, err := New(c, nil, []string{"abcdefgh", "ijklmnop"}, Options{Suffix: "End.", MinBody: 1})
	if err != nil {
		t.Fatal(err)
	}
	p0, _, _ := b.planOf(0)
	p1, _, _ := b.planOf(1)
	if p0.periodic || p1.periodic {
		t.Fatal("3-byte chunks of a 10-byte repeat (row + \"\\n\\n\") found periodic")
	}
	for _, n := range []int{b.Overhead() + 1, 10, 11, 12, 100} {
		p, err := b.One(1, n)
		if err != nil {
			t.Fatalf("n %d: %v", n, err)
		}
		text := c.Decode(p, false)
		if len(p) != n || !slices.Equal(c.Encode(text), p) || !strings.HasPrefix(text, "ijk") || !strings.HasSuffix(text, "\n\nEnd.") {
			t.Errorf("n %d: %d tokens, text %q", n, len(p), text)
		}
	}
}
