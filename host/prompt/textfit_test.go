package prompt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/tokenizer"
)

// textBuilder is a Builder for text mode: the template as the server sees it.
func textBuilder(t testing.TB, tok *tokenizer.Tokenizer) *Builder {
	t.Helper()
	var tmpl Template
	if tok.HasChatTemplate() {
		tmpl = func(c string) (string, error) {
			return tok.ApplyChatTemplateText([]tokenizer.Message{{Role: "user", Content: c}}, true)
		}
	}
	b, err := New(tok, tmpl, corpusTexts(t), Options{Suffix: testSuffix})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// countFunc is a Counter from a function (fake servers).
type countFunc func(string) int

func (f countFunc) Count(_ context.Context, s string) (int, error) { return f(s), nil }

// engineCounter asks the built-in engine's POST /tokenize (vLLM shape: {"count": n}).
type engineCounter struct{ url string }

func (c engineCounter) Count(ctx context.Context, text string) (int, error) {
	body, _ := json.Marshal(map[string]any{"prompt": text, "add_special_tokens": true})
	req, _ := http.NewRequestWithContext(ctx, "POST", c.url+"/tokenize", bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out struct {
		Count int `json:"count"`
	}
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("POST %s/tokenize: %s", c.url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, fmt.Errorf("POST %s/tokenize: %w", c.url, err)
	}
	return out.Count, nil
}

func TestTextFitLocal(t *testing.T) {
	tok := loadForTest(t, "embedded")
	b := textBuilder(t, tok)
	f := NewTextFitter(b, tok, TextOptions{Recheck: true})
	lengths := []int{b.MinLen(), 1000, 4321, 32000}
	ps, err := f.Build(context.Background(), 7, lengths)
	if err != nil {
		t.Fatal(err)
	}
	// Without Recheck the ids' length stands for the re-encoding: the same texts.
	fast, err := NewTextFitter(b, tok, TextOptions{}).Build(context.Background(), 7, lengths)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range ps {
		if got := len(tok.Encode(p.Text)); p.Tokens != lengths[i] || got != lengths[i] || p.Verified || p.Tries != 1 {
			t.Errorf("prompt %d: %+v (text %.40q…), re-encoded %d tokens, want %d in 1 try, unverified", i, p.Tokens, p.Text, got, lengths[i])
		}
		if fast[i] != p {
			t.Errorf("prompt %d: without Recheck %d tokens in %d tries, a different text", i, fast[i].Tokens, fast[i].Tries)
		}
	}
}

// TestTextFitAgainstEngine fits text prompts with the built-in engine's /tokenize and checks
// that the engine's own completions usage counts exactly the target for each.
func TestTextFitAgainstEngine(t *testing.T) {
	tok := loadForTest(t, "embedded")
	cfg := engine.DefaultConfig()
	cfg.TimeScale = 0
	e, err := engine.New(cfg, tok)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.Handler())
	defer func() { srv.Close(); e.Close() }()
	b := textBuilder(t, tok)
	f := NewTextFitter(b, tok, TextOptions{Counter: engineCounter{srv.URL}})
	lengths := []int{b.MinLen(), 777, 3000}
	ps, err := f.Build(context.Background(), 40, lengths)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range ps {
		if p.Tokens != lengths[i] || !p.Verified || p.Tries != 1 {
			t.Errorf("prompt %d: %d tokens verified %v in %d tries, want %d verified in 1", i, p.Tokens, p.Verified, p.Tries, lengths[i])
		}
		body, _ := json.Marshal(map[string]any{"prompt": p.Text, "max_tokens": 1})
		resp, err := http.Post(srv.URL+"/v1/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			} `json:"usage"`
		}
		err = json.NewDecoder(resp.Body).Decode(&c)
		resp.Body.Close()
		if err != nil || c.Usage.PromptTokens != lengths[i] {
			t.Errorf("prompt %d: the engine's usage says %d prompt tokens (%v), want %d", i, c.Usage.PromptTokens, err, lengths[i])
		}
	}
}

// TestTextFitCorrects: a server that adds a BOS the local files do not announce is fitted in
// two tries; one whose template is known (Extra) in one; one that cannot be fitted is reported.
func TestTextFitCorrects(t *testing.T) {
	tok := loadForTest(t, "embedded")
	b := textBuilder(t, tok)
	local := func(s string) int { return len(tok.Encode(s)) }
	ctx := context.Background()

	bos := NewTextFitter(b, tok, TextOptions{Counter: countFunc(func(s string) int { return local(s) + 1 })})
	p, err := bos.One(ctx, 3, 2000)
	if err != nil || p.Tokens != 2000 || p.Tries != 2 || local(p.Text) != 1999 {
		t.Errorf("server adding a BOS: %d tokens in %d tries, text %d tokens locally (%v); want 2000 in 2, 1999 locally", p.Tokens, p.Tries, local(p.Text), err)
	}

	tmpl := NewTextFitter(b, tok, TextOptions{Counter: countFunc(local), Extra: 9})
	p, err = tmpl.One(ctx, 3, 2000)
	if err != nil || p.Tokens != 2000 || p.Tries != 1 || local(p.Text) != 1991 {
		t.Errorf("server templating (+9 known): %d tokens in %d tries, text %d tokens locally (%v); want 2000 in 1, 1991 locally", p.Tokens, p.Tries, local(p.Text), err)
	}

	// A server that counts every prompt an even number of tokens cannot reach 2001.
	even := NewTextFitter(b, tok, TextOptions{Counter: countFunc(func(s string) int { return local(s) &^ 1 })})
	if _, err := even.One(ctx, 3, 2001); err == nil || !strings.Contains(err.Error(), "no text prompt of 2001 tokens as the server counts it after 4 tries") {
		t.Errorf("err = %v, want the unreachable length reported", err)
	}
}

// TestTextFitLlama31BOSOnce: Llama 3.1's template writes <|begin_of_text|> and its tokenizer
// adds it to text; the fitted text holds none, and the server's ids hold it once, n in all.
func TestTextFitLlama31BOSOnce(t *testing.T) {
	tok := loadForTest(t, "llama3_1")
	sp := tok.TextSpecials()
	b := textBuilder(t, tok)
	f := NewTextFitter(b, tok, TextOptions{Added: len(sp.Before) + len(sp.After), Recheck: true})
	for _, n := range []int{b.MinLen(), 1000, 8000} {
		p, err := f.One(context.Background(), 11, n)
		if err != nil {
			t.Fatal(err)
		}
		server := append(slices.Clone(sp.Before), tok.Encode(p.Text)...)
		bos := 0
		for _, id := range server {
			if id == 128000 {
				bos++
			}
		}
		if len(server) != n || p.Tokens != n || bos != 1 || strings.HasPrefix(p.Text, "<|begin_of_text|>") {
			t.Errorf("n %d: the server sees %d tokens (fitter says %d) with %d BOS; text starts %.30q", n, len(server), p.Tokens, bos, p.Text)
		}
	}
}

func TestDetectTemplating(t *testing.T) {
	for _, tc := range []struct {
		probes     []Probe
		extra      int
		templates  bool
		consistent bool
		msg        string
	}{
		{[]Probe{{1009, 1000}, {4009, 4000}}, 9, true, true, "the server templates completions prompts (+9 tokens), as many as the chat template's own 9: send the content untemplated"},
		{[]Probe{{1005, 1000}}, 5, true, true, "the server templates completions prompts (+5 tokens)"},
		{[]Probe{{1001, 1000}, {4001, 4000}}, 1, false, true, "the server adds 1 special token(s) of its own to completions prompts (a BOS, or BOS and EOS)"},
		{[]Probe{{1000, 1000}}, 0, false, true, "the server counts completions prompts as sent"},
		{[]Probe{{990, 1000}, {3960, 4000}}, 0, false, false, "the server counts prompts differently from the expected count by -10 of 1000, -40 of 4000 tokens: another tokenizer or truncation, no constant correction"},
		{[]Probe{{4096, 6000}}, -1904, false, true, "the server counts completions prompts 1904 tokens shorter than sent: truncation or another tokenizer"},
	} {
		got := DetectTemplating(9, tc.probes...)
		if got.Extra != tc.extra || got.Templates != tc.templates || got.Consistent != tc.consistent || got.Message != tc.msg {
			t.Errorf("%v: %+v, want extra %d templates %v consistent %v %q", tc.probes, got, tc.extra, tc.templates, tc.consistent, tc.msg)
		}
	}
}

func TestUnverifiedMargin(t *testing.T) {
	// 2 (BOS, EOS) + 8 (template) + ⌈40704 / 200⌉ = 204.
	if got := UnverifiedMargin(40960-256, 8); got != 214 {
		t.Errorf("UnverifiedMargin = %d, want 214", got)
	}
}
