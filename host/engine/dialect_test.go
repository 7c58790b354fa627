package engine

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestDialectStreams checks each dialect's chunk shapes for one id/text prompt of 2 tokens.
func TestDialectStreams(t *testing.T) {
	cases := []struct {
		dialect string
		body    string
		// want lists substrings of the events in order (one entry per event)
		want []string
	}{
		{DialectVLLM, `{"prompt":[1,2,3],"max_tokens":2,"ignore_eos":true,"stream":true,"stream_options":{}}`, []string{
			`"choices":[{"index":0,"text":`, // token 1: finish null, stop_reason null
			`"finish_reason":"length","stop_reason":null}]}`,
			`"choices":[],"usage":{"prompt_tokens":3,"total_tokens":5,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":0}}}`,
			`[DONE]`,
		}},
		{DialectSGLang, `{"model":"whatever","prompt":[1,2,3],"max_tokens":2,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, []string{
			`"model":"whatever","choices":[{"index":0,"text":`,
			`"finish_reason":"length","matched_stop":null}],"usage":null}`,
			`"choices":[],"usage":{"prompt_tokens":3,"total_tokens":5,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":0},"reasoning_tokens":0}}`,
			`[DONE]`,
		}},
		{DialectLlamaCpp, `{"prompt":[1,2,3],"max_tokens":2,"ignore_eos":true,"stream":true}`, []string{
			`"id":"chatcmpl-`,
			`"finish_reason":null}]}`, // the last token's chunk still has finish null
			`"text":"","logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":3,"total_tokens":5,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":0}},"timings":{"cache_n":0,"prompt_n":3,`,
			`[DONE]`,
		}},
		{DialectTGI, `{"prompt":"abc","max_tokens":2,"stream":true}`, []string{
			`"id":"","object":"text_completion"`,
			`"finish_reason":"length"}],"usage":{"prompt_tokens":3,"total_tokens":5,"completion_tokens":2}}`,
			`[DONE]`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.dialect, func(t *testing.T) {
			_, srv := newTestEngine(t, func(c *Config) { c.Dialect = tc.dialect })
			resp, body := post(t, srv.URL+"/v1/completions", tc.body)
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			data := sseData(t, body)
			if len(data) != len(tc.want) {
				t.Fatalf("%d events, want %d:\n%s", len(data), len(tc.want), body)
			}
			for i, w := range tc.want {
				if !strings.Contains(data[i], w) {
					t.Errorf("event %d = %s\nwant substring %s", i, data[i], w)
				}
			}
			if tc.dialect == DialectTGI && !strings.Contains(data[0], `"finish_reason":""`) {
				t.Errorf("TGI non-final chunk: %s", data[0])
			}
		})
	}
}

func TestDialectErrors(t *testing.T) {
	cases := []struct {
		dialect, body string
		status        int
		exact         string // whole body, or "" to check substring
		has           string
	}{
		{DialectSGLang, `{"prompt":[]}`, 400, `{"object":"error","message":"Prompt cannot be empty.","type":"BadRequestError","param":"prompt","code":400}`, ""},
		{DialectLlamaCpp, `{"prompt":[` + strings.Repeat("1,", 99) + `1]}`, 400,
			`{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":100,"n_ctx":100}}`, ""},
		{DialectTGI, `{"prompt":[1,2]}`, 422, "", `"error_type":"validation"`},
		// 5 prompts > TGI max_client_batch_size 4
		{DialectTGI, `{"prompt":["a","b","c","d","e"]}`, 422, "", `maximum allowed batch size of 4`},
		// 98 + 10 > 100
		{DialectTGI, `{"prompt":"` + strings.Repeat("x", 98) + `","max_tokens":10}`, 422,
			`{"error":"` + "`inputs` tokens + `max_new_tokens` must be <= 100. Given: 98 `inputs` tokens and 10 `max_new_tokens`" + `","error_type":"validation"}`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.dialect+" "+tc.has, func(t *testing.T) {
			_, srv := newTestEngine(t, func(c *Config) { c.Dialect = tc.dialect; c.MaxModelLen = 100 })
			resp, body := post(t, srv.URL+"/v1/completions", tc.body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if tc.exact != "" && string(body) != tc.exact {
				t.Errorf("body %s\nwant %s", body, tc.exact)
			}
			if tc.has != "" && !strings.Contains(string(body), tc.has) {
				t.Errorf("body %s lacks %s", body, tc.has)
			}
		})
	}
}

func TestDialectEndpoints(t *testing.T) {
	cases := []struct {
		dialect, tokenize, detokenize, owner, metric string
	}{
		{DialectVLLM, `{"count":2,"max_model_len":131072,"token_strs":null,"tokens":[104,105]}`, `{"prompt":"hi"}`, "vllm", "vllm:num_requests_running"},
		{DialectSGLang, `{"count":2,"max_model_len":131072,"tokens":[104,105]}`, `{"text":"hi"}`, "sglang", "sglang:num_running_reqs"},
		{DialectLlamaCpp, `{"tokens":[104,105]}`, `{"content":"hi"}`, "llamacpp", "llamacpp:requests_processing"},
		{DialectTGI, `[{"id":104,"start":0,"stop":0,"text":"h"},{"id":105,"start":0,"stop":0,"text":"i"}]`, `{"prompt":"hi"}`, "tgi", "tgi_batch_current_size"},
	}
	for _, tc := range cases {
		t.Run(tc.dialect, func(t *testing.T) {
			_, srv := newTestEngine(t, func(c *Config) { c.Dialect = tc.dialect })
			_, b := post(t, srv.URL+"/tokenize", `{"prompt":"hi","content":"hi","inputs":"hi"}`)
			if string(b) != tc.tokenize {
				t.Errorf("tokenize %s", b)
			}
			_, b = post(t, srv.URL+"/detokenize", `{"tokens":[104,105]}`)
			if string(b) != tc.detokenize {
				t.Errorf("detokenize %s", b)
			}
			resp, _ := http.Get(srv.URL + "/v1/models")
			var m struct {
				Data []struct {
					OwnedBy string `json:"owned_by"`
				} `json:"data"`
			}
			json.NewDecoder(resp.Body).Decode(&m)
			resp.Body.Close()
			if len(m.Data) != 1 || m.Data[0].OwnedBy != tc.owner {
				t.Errorf("models %+v", m)
			}
			resp, _ = http.Get(srv.URL + "/metrics")
			mb, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(mb), tc.metric) || !strings.Contains(string(mb), "genload_engine_step_duration_seconds") {
				t.Errorf("metrics lack %s", tc.metric)
			}
		})
	}
}

func TestTGIHeaders(t *testing.T) {
	_, srv := newTestEngine(t, func(c *Config) { c.Dialect = DialectTGI })
	resp, body := post(t, srv.URL+"/v1/completions", `{"prompt":"hello","max_tokens":3}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	// prompt "hello" = 5 byte tokens, 3 generated, 5 characters
	for k, v := range map[string]string{"x-prompt-tokens": "5", "x-generated-tokens": "3", "x-compute-characters": "5", "x-compute-type": "gpu+optimized"} {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	for _, k := range []string{"x-total-time", "x-queue-time", "x-inference-time", "x-time-per-token", "x-validation-time"} {
		if resp.Header.Get(k) == "" {
			t.Errorf("missing %s", k)
		}
	}
	if !strings.HasPrefix(string(body), `{"object":"text_completion","id":"","created":`) {
		t.Errorf("body %s", body)
	}
}

// The ollama dialect: one string per prompt, chunks of 1–3 tokens (1.2 on average), usage
// only as the request's total in a final chunk, logprobs and continuous usage not read, and
// neither /tokenize nor /metrics.
func TestOllamaDialect(t *testing.T) {
	// ollama reads no ignore_eos: the engine draws no EOS here
	_, u := quirkEngine(t, "", func(c *Config) { c.Dialect, c.EOSProbability = DialectOllama, 0 })
	if resp, b := post(t, u+"/v1/completions", `{"prompt":[1,2,3],"max_tokens":4}`); resp.StatusCode != 400 || !strings.Contains(string(b), "cannot unmarshal") {
		t.Errorf("token ids: %d %s", resp.StatusCode, b)
	}
	for _, p := range []string{"/tokenize", "/metrics"} {
		var resp *http.Response
		if p == "/metrics" {
			r, err := http.Get(u + p)
			if err != nil {
				t.Fatal(err)
			}
			r.Body.Close()
			resp = r
		} else {
			resp, _ = post(t, u+p, `{"prompt":"hi"}`)
		}
		if resp.StatusCode != 404 {
			t.Errorf("%s: status %d, want 404", p, resp.StatusCode)
		}
	}
	data, cs := chunks(t, u, `{"prompt":"the river","max_tokens":400,"ignore_eos":true,"stream":true,"logprobs":1,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`)
	if !strings.Contains(data[0], `"system_fingerprint":"fp_ollama"`) {
		t.Errorf("first chunk %s", data[0])
	}
	text, n := 0, 0
	for i, c := range cs {
		if c == nil {
			continue
		}
		if len(c.Choices) == 0 {
			if c.Usage == nil || c.Usage.CompletionTokens != 400 || i != len(cs)-2 {
				t.Errorf("chunk %d: usage %+v, want the total 400 in the last chunk before [DONE]", i, c.Usage)
			}
			continue
		}
		if c.Usage != nil || string(c.Choices[0].Logprobs) != "null" {
			t.Errorf("chunk %d carries usage %+v or logprobs %s", i, c.Usage, c.Choices[0].Logprobs)
		}
		n++
		text += len(c.Choices[0].Text)
	}
	if mean := 400 / float64(n); mean < 1.1 || mean > 1.3 {
		t.Errorf("%d chunks for 400 tokens: %.2f tokens per chunk, want 1.1–1.3", n, mean)
	}
	if text == 0 {
		t.Errorf("no text")
	}
}
