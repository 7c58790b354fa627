package dispatch

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/sse"
	"github.com/genload/genload/host/tokenizer"
)

// ollama's native body: one text prompt, raw, streamed, max_tokens as num_predict with the
// temperature and seed in options, to /api/generate of each worker's base URL.
func TestOllamaBody(t *testing.T) {
	seed := int64(7)
	c, err := New(Options{Target: "http://h:11434/v1", Model: "qwen3:8b", Temperature: 0, Seed: &seed, API: APIOllama,
		Workers: []Worker{{URL: "http://a:1"}, {URL: "http://b:2/"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.workers[0].url != "http://a:1/api/generate" || c.workers[1].url != "http://b:2/api/generate" {
		t.Errorf("URLs %q, %q", c.workers[0].url, c.workers[1].url)
	}
	bs, err := c.Body(routedPlan(t, nil, []string{"a \"q\"", "b"}, []int{0, 1}, 48, false))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"qwen3:8b","prompt":"a \"q\"","raw":true,"stream":true,"options":{"num_predict":48,"temperature":0,"seed":7}}`
	if len(bs) != 2 || string(bs[0]) != want {
		t.Errorf("body\n got %s\nwant %s", bs[0], want)
	}
	if _, err := c.Body(routedPlan(t, [][]int32{{1, 2}}, nil, []int{0}, 4, false)); err == nil || !strings.Contains(err.Error(), `prompt.format = "text"`) {
		t.Errorf("token ids: %v", err)
	}
	arr, err := c.shaped(ModeArray, nil, []string{"a", "b"}, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Body(arr); err == nil || !strings.Contains(err.Error(), `mode = "routed"`) {
		t.Errorf("an array: %v", err)
	}
	if _, err := New(Options{Target: "http://h:1", API: "grpc"}); err == nil || !strings.Contains(err.Error(), `"grpc"`) {
		t.Errorf("unknown API: %v", err)
	}
	if u, _ := generateURL("http://h:11434/api/generate"); u != "http://h:11434/api/generate" {
		t.Errorf("an /api/generate URL becomes %q", u)
	}
}

// Against the built-in engine's ollama dialect: every routed sequence gets one mark per
// object at its arrival, its exact count from eval_count, and ollama's metrics; ProbeOllama
// finds the version there, and not on a vLLM-dialect engine.
func TestOllamaStream(t *testing.T) {
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatal(err)
	}
	start := func(dialect string) string {
		cfg := engine.DefaultConfig()
		cfg.Dialect, cfg.TimeScale, cfg.EOSProbability = dialect, 0.02, 0
		cfg.VocabSize = max(cfg.VocabSize, tok.VocabSize())
		eng, err := engine.New(cfg, tok)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { eng.Close() })
		u, err := eng.Start("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	u := start(engine.DialectOllama)
	ctx := context.Background()
	if v, err := ProbeOllama(ctx, u+"/v1", "", time.Second); err != nil || v == "" {
		t.Errorf("ProbeOllama: %q, %v", v, err)
	}
	if v, err := ProbeOllama(ctx, start(engine.DialectVLLM), "", time.Second); err == nil || !strings.Contains(err.Error(), "status 404") {
		t.Errorf("ProbeOllama on vLLM: %q, %v", v, err)
	}
	c, err := New(Options{Target: u, Model: engine.DefaultConfig().ModelName, API: APIOllama, KeepText: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.SendText(ctx, ModeRouted, []string{"the river and the stone bridge", "a quiet harbour"}, 30)
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	for i, s := range res.Sequences {
		q := res.Requests[s.Request]
		if !strings.HasSuffix(q.URL, "/api/generate") || !q.Done || !q.HasUsage || q.Usage.CompletionTokens != 30 || q.Usage.PromptTokens == 0 {
			t.Errorf("request %d: %+v", s.Request, q)
		}
		if s.CompletionTokens != 30 || s.TokenSource != sse.TokensChoiceUsage || !s.Finished || s.FinishReason != "length" || len(s.Text) == 0 {
			t.Errorf("sequence %d: %d tokens from %s, finish %q, %d bytes", i, s.CompletionTokens, s.TokenSource, s.FinishReason, len(s.Text))
		}
		if n := s.Marks.Len(); n < 20 || n > 29 {
			t.Errorf("sequence %d: %d marks for 30 tokens of 1–3 each", i, n)
		}
		last := s.Marks.Get(s.Marks.Len() - 1).At
		if !s.HasGenerate || s.Generate.EvalCount != 30 || s.Generate.EvalDuration <= 0 || s.Generate.EvalDuration > last {
			t.Errorf("sequence %d: metrics %+v (last mark at %v)", i, s.Generate, last)
		}
	}
	// an unknown model: the server's {"error"} and its status
	c2, _ := New(Options{Target: u, Model: "nope", API: APIOllama})
	defer c2.Close()
	res, _ = c2.SendText(ctx, ModeRouted, []string{"hi"}, 3)
	var re *RequestError
	if err := res.Err(); err == nil || !errors.As(err, &re) || re.Status != http.StatusNotFound || !strings.Contains(re.Message, "not found") {
		t.Errorf("unknown model: %v", err)
	}
}
