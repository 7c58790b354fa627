package engine

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// steps returns genload_engine_steps_total from /metrics.
func steps(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "genload_engine_steps_total "); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	t.Fatal("no genload_engine_steps_total")
	return 0
}

func TestSpeculativeDecodingForwardsPerToken(t *testing.T) {
	body := `{"prompt":[1,2,3,4],"max_tokens":200,"ignore_eos":true,"temperature":0,"seed":3}`
	run := func(k int, acc float64) (text string, fwd int, hdr string) {
		_, srv := newTestEngine(t, func(c *Config) { c.SpecTokens = k; c.SpecAcceptance = acc })
		resp, b := post(t, srv.URL+"/v1/completions", body)
		var c completion
		json.Unmarshal(b, &c)
		if c.Usage.CompletionTokens != 200 {
			t.Fatalf("k=%d: %d tokens", k, c.Usage.CompletionTokens)
		}
		return c.Choices[0].Text, steps(t, srv.URL), resp.Header.Get("Speculation-Acceptance")
	}
	plain, fPlain, hPlain := run(0, 0.7)
	spec, fSpec, hSpec := run(3, 0.7)
	all, fAll, hAll := run(3, 1)
	// Without speculation: 1 prefill step + 199 decode steps.
	if fPlain != 200 || hPlain != "" {
		t.Errorf("plain: %d forward passes, acceptance header %q", fPlain, hPlain)
	}
	// Acceptance 1, k = 3: every decode step yields 4 tokens: 1 + ceil(199/4) = 51 steps.
	if fAll != 51 || hAll != "1.0000" {
		t.Errorf("full acceptance: %d forward passes (want 51), header %q", fAll, hAll)
	}
	// α = 0.7, k = 3: E[tokens/step] = (1 − 0.7⁴)/(1 − 0.7) = 2.53 → about 199/2.53 ≈ 79 decode steps.
	if fSpec < 65 || fSpec > 95 {
		t.Errorf("α=0.7: %d forward passes, want ≈80", fSpec)
	}
	a, err := strconv.ParseFloat(hSpec, 64)
	// accepted fraction of drafts: E[a]/k = (0.7+0.49+0.343)/3 = 0.511
	if err != nil || a < 0.4 || a > 0.62 {
		t.Errorf("α=0.7: acceptance header %q", hSpec)
	}
	// Speculation never changes the generated tokens.
	if spec != plain || all != plain {
		t.Errorf("speculative decoding changed the text")
	}
}

func TestSpeculativeStreamTrailersAndChunks(t *testing.T) {
	_, srv := newTestEngine(t, func(c *Config) { c.SpecTokens = 3; c.SpecAcceptance = 1 })
	req, _ := http.NewRequest("POST", srv.URL+"/v1/completions",
		strings.NewReader(`{"prompt":[1,2,3],"max_tokens":9,"ignore_eos":true,"stream":true,"stream_options":{},"perf_metrics_in_response":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	data := sseData(t, b)
	// 9 tokens: 1 from prefill, then 4 + 4 per decode step → 3 token chunks, usage, [DONE]
	if len(data) != 5 {
		t.Fatalf("%d events: %s", len(data), b)
	}
	if !strings.Contains(data[3], `"perf_metrics":{"generation-duration":`) || !strings.Contains(data[3], `"speculation-acceptance":1.0000`) {
		t.Errorf("usage chunk %s", data[3])
	}
	if resp.Trailer.Get("Speculation-Acceptance") != "1.0000" || resp.Trailer.Get("Generation-Duration") == "" {
		t.Errorf("trailers %v", resp.Trailer)
	}
}
