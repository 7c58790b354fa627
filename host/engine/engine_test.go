package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/genload/genload/host/internal/logtest"
)

// newTestEngine starts an engine with no sleeping (TimeScale 0) behind an httptest server.
func newTestEngine(t *testing.T, mod func(*Config)) (*Engine, *httptest.Server) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.TimeScale = 0
	if mod != nil {
		mod(&cfg)
	}
	e, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.Handler())
	t.Cleanup(func() { srv.Close(); e.Close() })
	return e, srv
}

func post(t *testing.T, url, body string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// sseData splits an SSE body into its data payloads.
func sseData(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	for _, ev := range strings.Split(string(body), "\n\n") {
		if ev == "" {
			continue
		}
		if !strings.HasPrefix(ev, "data: ") {
			t.Fatalf("event without data: %q", ev)
		}
		out = append(out, strings.TrimPrefix(ev, "data: "))
	}
	return out
}

type chunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index        int             `json:"index"`
		Text         string          `json:"text"`
		FinishReason *string         `json:"finish_reason"`
		StopReason   json.RawMessage `json:"stop_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

func TestStreamWireShape(t *testing.T) {
	_, srv := newTestEngine(t, nil)
	// Two id prompts of 5 and 3 tokens, 3 tokens each: 2×3 token chunks, a usage chunk, [DONE].
	resp, body := post(t, srv.URL+"/v1/completions",
		`{"model":"genload-sim","prompt":[[1,2,3,4,5],[6,7,8]],"max_tokens":3,"ignore_eos":true,"temperature":0,"stream":true,"stream_options":{}}`,
		"X-Request-Id", "abc123")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if got := resp.Header.Get("Content-Type"); !strings.HasPrefix(got, "text/event-stream") {
		t.Errorf("content type %q", got)
	}
	if got := resp.Header.Get("X-Request-Id"); got != "abc123" {
		t.Errorf("x-request-id %q", got)
	}
	data := sseData(t, body)
	if len(data) != 2*3+2 {
		t.Fatalf("got %d events, want 8:\n%s", len(data), body)
	}
	if data[len(data)-1] != "[DONE]" {
		t.Fatalf("last event %q", data[len(data)-1])
	}
	perChoice := map[int]int{}
	finished := map[int]string{}
	for _, d := range data[:6] {
		var c chunk
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatalf("%v: %s", err, d)
		}
		if c.ID != "cmpl-abc123" || c.Object != "text_completion" || c.Model != "genload-sim" {
			t.Errorf("header fields: %s", d)
		}
		if len(c.Choices) != 1 || c.Usage != nil {
			t.Fatalf("want one choice and no usage: %s", d)
		}
		ch := c.Choices[0]
		if string(ch.StopReason) != "null" {
			t.Errorf("stop_reason %s", ch.StopReason)
		}
		if _, done := finished[ch.Index]; done {
			t.Errorf("chunk after finish for choice %d", ch.Index)
		}
		perChoice[ch.Index]++
		if ch.FinishReason != nil {
			finished[ch.Index] = *ch.FinishReason
			if perChoice[ch.Index] != 3 {
				t.Errorf("finish on chunk %d of choice %d", perChoice[ch.Index], ch.Index)
			}
		}
		if ch.Text == "" {
			t.Errorf("empty text in %s", d)
		}
	}
	if finished[0] != "length" || finished[1] != "length" {
		t.Errorf("finish reasons %v", finished)
	}
	var u chunk
	if err := json.Unmarshal([]byte(data[6]), &u); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(data[6], `"choices":[]`) || u.Usage == nil {
		t.Fatalf("usage chunk: %s", data[6])
	}
	// prompt tokens 5 + 3 = 8; completion 2 × 3 = 6.
	if u.Usage.PromptTokens != 8 || u.Usage.CompletionTokens != 6 || u.Usage.TotalTokens != 14 {
		t.Errorf("usage %+v", *u.Usage)
	}
	if u.Usage.PromptTokensDetails == nil || u.Usage.PromptTokensDetails.CachedTokens != 0 {
		t.Errorf("cached tokens: %s", data[6])
	}
}

func TestStreamUsageOptions(t *testing.T) {
	_, srv := newTestEngine(t, nil)
	cases := []struct {
		name       string
		opts       string
		wantEvents int // 2 token chunks + usage? + [DONE]
		continuous bool
	}{
		{"no stream_options: no usage", ``, 3, false},
		{"empty stream_options enables usage", `,"stream_options":{}`, 4, false},
		{"include_usage false", `,"stream_options":{"include_usage":false}`, 3, false},
		{"continuous usage", `,"stream_options":{"include_usage":true,"continuous_usage_stats":true}`, 4, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, body := post(t, srv.URL+"/v1/completions", `{"prompt":[9,9,9,9],"max_tokens":2,"ignore_eos":true,"stream":true`+tc.opts+`}`)
			data := sseData(t, body)
			if len(data) != tc.wantEvents {
				t.Fatalf("got %d events: %s", len(data), body)
			}
			var c chunk
			json.Unmarshal([]byte(data[1]), &c)
			if tc.continuous {
				// second token chunk: prompt 4, completion 2 so far
				if c.Usage == nil || c.Usage.PromptTokens != 4 || c.Usage.CompletionTokens != 2 {
					t.Errorf("continuous usage: %s", data[1])
				}
			} else if c.Usage != nil {
				t.Errorf("unexpected usage: %s", data[1])
			}
		})
	}
}

type completion struct {
	ID      string `json:"id"`
	Choices []struct {
		Index        int    `json:"index"`
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

func TestNonStreamPromptForms(t *testing.T) {
	_, srv := newTestEngine(t, nil)
	cases := []struct {
		name        string
		prompt      string
		n           int
		wantPrompt  int // each prompt counted once (byte tokenizer: 1 token per byte)
		wantChoices int
	}{
		{"string", `"hello"`, 1, 5, 1},
		{"list of strings", `["hello","hi"]`, 2, 7, 4},
		{"ids", `[1,2,3]`, 3, 3, 3},
		{"list of ids", `[[1,2],[3,4,5],[6]]`, 1, 6, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, srv.URL+"/v1/completions",
				fmt.Sprintf(`{"prompt":%s,"n":%d,"max_tokens":4,"ignore_eos":true}`, tc.prompt, tc.n))
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			var c completion
			if err := json.Unmarshal(body, &c); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(c.ID, "cmpl-") || len(c.ID) != 5+32 {
				t.Errorf("id %q", c.ID)
			}
			if len(c.Choices) != tc.wantChoices {
				t.Fatalf("choices %d: %s", len(c.Choices), body)
			}
			for i, ch := range c.Choices {
				if ch.Index != i || ch.FinishReason != "length" || len(ch.Text) < 4 {
					t.Errorf("choice %d: %+v", i, ch)
				}
			}
			// completion = choices × 4 tokens
			if c.Usage.PromptTokens != tc.wantPrompt || c.Usage.CompletionTokens != 4*tc.wantChoices ||
				c.Usage.TotalTokens != tc.wantPrompt+4*tc.wantChoices {
				t.Errorf("usage %+v", c.Usage)
			}
		})
	}
}

func TestDefaultMaxTokensAndEOS(t *testing.T) {
	_, srv := newTestEngine(t, func(c *Config) { c.EOSProbability = 1 })
	// EOS probability 1 without ignore_eos: every choice stops at its first token (text "").
	_, body := post(t, srv.URL+"/v1/completions", `{"prompt":[1,2,3],"n":3}`)
	var c completion
	json.Unmarshal(body, &c)
	for _, ch := range c.Choices {
		if ch.FinishReason != "stop" || ch.Text != "" {
			t.Errorf("choice %+v", ch)
		}
	}
	if c.Usage.CompletionTokens != 3 {
		t.Errorf("completion tokens %d, want 3 (one EOS each)", c.Usage.CompletionTokens)
	}
	// With ignore_eos and no max_tokens: 16 tokens (the default).
	_, body = post(t, srv.URL+"/v1/completions", `{"prompt":[1,2,3],"ignore_eos":true}`)
	json.Unmarshal(body, &c)
	if c.Usage.CompletionTokens != 16 || c.Choices[0].FinishReason != "length" {
		t.Errorf("default max_tokens: %s", body)
	}
}

func TestErrors(t *testing.T) {
	_, srv := newTestEngine(t, func(c *Config) { c.MaxModelLen = 100 })
	cases := []struct {
		name, body string
		status     int
		typ, param string
		msgHas     string
	}{
		{"empty string", `{"prompt":""}`, 400, "BadRequestError", "prompt", "empty"},
		{"empty list", `{"prompt":[]}`, 400, "BadRequestError", "prompt", "empty"},
		{"empty id list", `{"prompt":[[]]}`, 400, "BadRequestError", "prompt", "empty"},
		{"invalid json", `{"prompt":[1,2`, 400, "BadRequestError", "", "invalid JSON"},
		{"unknown model", `{"model":"nope","prompt":"x"}`, 404, "NotFoundError", "model", "The model `nope` does not exist."},
		// 95 prompt tokens + 10 requested > 100
		{"too long", `{"prompt":[` + strings.Repeat("1,", 94) + `1],"max_tokens":10}`, 400, "BadRequestError", "input_tokens",
			"You passed 95 input tokens and requested 10 output tokens. However, the model's context length is only 100 tokens, resulting in a maximum input length of 90 tokens."},
		{"token out of vocab", `{"prompt":[-1]}`, 400, "BadRequestError", "prompt", "out of vocabulary"},
		{"stream options without stream", `{"prompt":"x","stream_options":{}}`, 400, "BadRequestError", "stream_options", "stream=True"},
		{"negative temperature", `{"prompt":"x","temperature":-0.5}`, 400, "BadRequestError", "temperature", "non-negative, got -0.5"},
		{"min_tokens above max_tokens", `{"prompt":"x","max_tokens":5,"min_tokens":6}`, 400, "BadRequestError", "min_tokens", "max_tokens=5, got 6"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, srv.URL+"/v1/completions", tc.body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
					Code    int     `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			param := ""
			if e.Error.Param != nil {
				param = *e.Error.Param
			}
			if e.Error.Type != tc.typ || e.Error.Code != tc.status || param != tc.param || !strings.Contains(e.Error.Message, tc.msgHas) {
				t.Errorf("error %s", body)
			}
		})
	}
}

func TestDeterminism(t *testing.T) {
	run := func(seed string) string {
		_, srv := newTestEngine(t, nil)
		_, body := post(t, srv.URL+"/v1/completions", `{"prompt":[[5,6,7],[8,9]],"max_tokens":12,"ignore_eos":true`+seed+`}`)
		var c completion
		json.Unmarshal(body, &c)
		return c.Choices[0].Text + "|" + c.Choices[1].Text
	}
	a, b := run(`,"seed":7`), run(`,"seed":7`)
	if a != b {
		t.Errorf("same seed differs: %q vs %q", a, b)
	}
	if c := run(`,"seed":8`); c == a {
		t.Errorf("different seed gave the same text %q", c)
	}
}

func TestModelsHealthTokenize(t *testing.T) {
	_, srv := newTestEngine(t, nil)
	resp, err := http.Get(srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Data []struct {
			ID          string `json:"id"`
			OwnedBy     string `json:"owned_by"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	json.NewDecoder(resp.Body).Decode(&m)
	resp.Body.Close()
	if len(m.Data) != 1 || m.Data[0].ID != "genload-sim" || m.Data[0].OwnedBy != "vllm" || m.Data[0].MaxModelLen != 131072 {
		t.Errorf("models %+v", m)
	}
	resp, _ = http.Get(srv.URL + "/health")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(b) != 0 {
		t.Errorf("health %d %q", resp.StatusCode, b)
	}
	_, b = post(t, srv.URL+"/tokenize", `{"prompt":"abc","return_token_strs":true}`)
	// byte tokenizer: a=97 b=98 c=99
	if string(b) != `{"count":3,"max_model_len":131072,"token_strs":["a","b","c"],"tokens":[97,98,99]}` {
		t.Errorf("tokenize %s", b)
	}
	_, b = post(t, srv.URL+"/detokenize", `{"tokens":[104,105]}`)
	if string(b) != `{"prompt":"hi"}` {
		t.Errorf("detokenize %s", b)
	}
}

// stepLog parses step-log lines into (prefill_tokens, decode, fwd_ms).
type stepLine struct {
	decode, prefill, experts int
	fwdMs                    float64
}

func parseSteps(t *testing.T, log string) []stepLine {
	t.Helper()
	var out []stepLine
	for _, l := range logtest.Lines(log) {
		out = append(out, stepLine{decode: l.Int(t, "decode"), prefill: l.Int(t, "prefill_tokens"),
			experts: l.Int(t, "experts"), fwdMs: l.Float(t, "fwd_ms")})
	}
	return out
}

// idList renders a prompt of n ids starting at first (distinct when first differs by ≥ n).
func idList(first, n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa((first + i) % 50000))
	}
	b.WriteByte(']')
	return b.String()
}

// decodeCost runs one request and returns the mean simulated duration of its pure decode
// steps and the mean distinct experts per decode step.
func decodeCost(t *testing.T, profile string, prompts []string) (ms, experts float64) {
	log := &logtest.LockedBuffer{}
	_, srv := newTestEngine(t, func(c *Config) { c.Profile = profile; c.StepLog = log })
	resp, body := post(t, srv.URL+"/v1/completions", `{"prompt":[`+strings.Join(prompts, ",")+`],"max_tokens":20,"ignore_eos":true,"temperature":0}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	n := 0
	for _, s := range parseSteps(t, log.String()) {
		if s.prefill == 0 && s.decode == len(prompts) {
			ms += s.fwdMs
			experts += float64(s.experts)
			n++
		}
	}
	if n != 19 { // 20 tokens: the first comes from the prefill step
		t.Fatalf("%d pure decode steps, want 19:\n%s", n, log.String())
	}
	return ms / float64(n), experts / float64(n)
}

func TestDistinctPromptsCostMoreThanIdentical(t *testing.T) {
	// 16 prompts of 256 tokens each: identical ones generate identical tokens (temperature 0,
	// same seed) and so activate the same experts; distinct ones activate many more.
	var same, distinct []string
	for i := 0; i < 16; i++ {
		same = append(same, idList(1000, 256))
		distinct = append(distinct, idList(1000+i*300, 256))
	}
	msSame, exSame := decodeCost(t, "moe-30b-a3b", same)
	msDistinct, exDistinct := decodeCost(t, "moe-30b-a3b", distinct)
	// One token activates 48 layers × 8 experts = 384 pairs; 16 distinct tokens activate up to
	// 6144 × (1 − (120/128)^16) ≈ 3940 pairs.
	if exSame < 384 || exSame > 400 {
		t.Errorf("identical prompts: %.0f experts per step, want ≈384", exSame)
	}
	if exDistinct < 2500 {
		t.Errorf("distinct prompts: %.0f experts per step, want ≫ 384", exDistinct)
	}
	if !(msDistinct > msSame+5) { // ≥ 2000 extra pairs × 3.5 µs = 7 ms
		t.Errorf("step time distinct %.3f ms vs identical %.3f ms", msDistinct, msSame)
	}
}

func TestRaggedBatchCostsMoreThanUniform(t *testing.T) {
	// Same total context (2 × 2000 tokens) but the ragged batch's longest context is 3000:
	// the kv_tail term adds (3000 − 2000) × 24.3 ns ≈ 0.024 ms per decode step (dense-8b).
	msUniform, _ := decodeCost(t, "dense-8b", []string{idList(1, 2000), idList(3000, 2000)})
	msRagged, _ := decodeCost(t, "dense-8b", []string{idList(1, 1000), idList(3000, 3000)})
	if d := msRagged - msUniform; d < 0.02 || d > 0.03 {
		t.Errorf("ragged %.4f ms − uniform %.4f ms = %.4f, want ≈0.024", msRagged, msUniform, d)
	}
}

func TestPrefixCacheShortensTTFT(t *testing.T) {
	log := &logtest.LockedBuffer{}
	_, srv := newTestEngine(t, func(c *Config) { c.StepLog = log; c.Profile = "dense-8b" })
	body := `{"prompt":` + idList(7, 1000) + `,"max_tokens":1,"ignore_eos":true}`
	ttft := func() (float64, int) {
		start := len(parseSteps(t, log.String()))
		_, b := post(t, srv.URL+"/v1/completions", body)
		var c completion
		json.Unmarshal(b, &c)
		ms := 0.0
		for _, s := range parseSteps(t, log.String())[start:] {
			ms += s.fwdMs // max_tokens 1: every step of the request is before its first token
		}
		return ms, c.Usage.PromptTokensDetails.CachedTokens
	}
	cold, cachedCold := ttft()
	warm, cachedWarm := ttft()
	// 1000 tokens = 62 full blocks of 16 → 992 cached; 8 tokens left to prefill.
	if cachedCold != 0 || cachedWarm != 992 {
		t.Errorf("cached tokens cold %d warm %d, want 0 and 992", cachedCold, cachedWarm)
	}
	// cold ≈ 6.9 + 1000 × 26.8 µs + 500k pairs × 1.31 ns ≈ 34.3 ms; warm ≈ 6.9 + 0.2 + 0.01 ms
	if !(cold > 30 && warm < 8) {
		t.Errorf("simulated TTFT cold %.2f ms, warm %.2f ms", cold, warm)
	}
	e := srv // reset drops cached blocks: the next request is cold again
	post(t, e.URL+"/reset_prefix_cache", "")
	if again, c := ttft(); c != 0 || again < 30 {
		t.Errorf("after reset: ttft %.2f ms cached %d", again, c)
	}
}

func TestMetricsNames(t *testing.T) {
	_, srv := newTestEngine(t, nil)
	post(t, srv.URL+"/v1/completions", `{"prompt":[1,2,3],"max_tokens":5,"ignore_eos":true}`)
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	s := string(b)
	for _, want := range []string{
		`vllm:num_requests_running{model_name="genload-sim",engine="0"} `, // 0 or 1: set after the last step's commit
		`vllm:num_requests_waiting{model_name="genload-sim",engine="0"} 0`,
		`vllm:kv_cache_usage_perc{`,
		// 5 steps: one prefill (3 tokens), four decodes (1 token each)
		`vllm:iteration_tokens_total_count{model_name="genload-sim",engine="0"} 5`,
		`vllm:iteration_tokens_total_sum{model_name="genload-sim",engine="0"} 7`,
		`vllm:time_to_first_token_seconds_count{model_name="genload-sim",engine="0"} 1`,
		`vllm:e2e_request_latency_seconds_count{model_name="genload-sim",engine="0"} 1`,
		`vllm:prefix_cache_queries_total{model_name="genload-sim",engine="0"} 3`,
		`vllm:prefix_cache_hits_total{`,
		`vllm:generation_tokens_total{model_name="genload-sim",engine="0"} 5`,
		`vllm:spec_decode_num_drafts_total{`,
		`genload_engine_steps_total 5`,
		`genload_engine_step_duration_seconds_count 5`,
		`genload_engine_step_simulated_seconds_bucket{le="+Inf"} 5`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestEcho(t *testing.T) {
	_, srv := newTestEngine(t, nil)
	// byte tokenizer: ids 104,105 decode to "hi"; the text prompt echoes verbatim
	for _, tc := range []struct{ prompt, want string }{{`[104,105]`, "hi"}, {`"hey"`, "hey"}} {
		_, b := post(t, srv.URL+"/v1/completions", `{"prompt":`+tc.prompt+`,"echo":true,"max_tokens":3,"ignore_eos":true,"n":2}`)
		var c completion
		json.Unmarshal(b, &c)
		for _, ch := range c.Choices {
			if !strings.HasPrefix(ch.Text, tc.want) || len(ch.Text) <= len(tc.want) {
				t.Errorf("echo %s: choice text %q", tc.prompt, ch.Text)
			}
		}
		_, b = post(t, srv.URL+"/v1/completions", `{"prompt":`+tc.prompt+`,"echo":true,"max_tokens":3,"ignore_eos":true,"stream":true}`)
		if data := sseData(t, b); !strings.Contains(data[0], `"text":"`+tc.want) {
			t.Errorf("stream echo: first chunk %s", data[0])
		}
	}
}
