package engine

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

const streamBody = `{"prompt":[1,2,3],"max_tokens":5,"ignore_eos":true,"stream":true,"stream_options":{}}`

// rawStream posts a streaming request with headers and returns the body read until EOF or
// error, and that error.
func rawStream(t *testing.T, url string, hdr ...string) (*http.Response, string, error) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/v1/completions", strings.NewReader(streamBody))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

func TestFaultStatus(t *testing.T) {
	cases := []struct {
		dialect string
		status  int
		body    string
	}{
		{DialectVLLM, 500, `{"error":{"message":"Internal Server Error","type":"InternalServerError","param":null,"code":500}}`},
		{DialectVLLM, 429, `{"error":{"message":"Too Many Requests","type":"RateLimitError","param":null,"code":429}}`},
		{DialectSGLang, 503, `{"object":"error","message":"The request queue is full.","type":"SERVICE_UNAVAILABLE","param":null,"code":503}`},
		{DialectLlamaCpp, 503, `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`},
		{DialectTGI, 429, `{"error":"Model is overloaded","error_type":"overloaded"}`},
	}
	for _, tc := range cases {
		t.Run(tc.dialect, func(t *testing.T) {
			_, srv := newTestEngine(t, func(c *Config) { c.Dialect = tc.dialect })
			resp, body := post(t, srv.URL+"/v1/completions", `{"prompt":"x"}`, "X-Genload-Fault-Status", strconv.Itoa(tc.status))
			if resp.StatusCode != tc.status || string(body) != tc.body {
				t.Errorf("got %d %s\nwant %d %s", resp.StatusCode, body, tc.status, tc.body)
			}
		})
	}
}

func TestFaultEveryNth(t *testing.T) {
	_, srv := newTestEngine(t, func(c *Config) { c.Faults.Status = 503; c.Faults.Every = 3 })
	var got []int
	for i := 0; i < 6; i++ {
		resp, _ := post(t, srv.URL+"/v1/completions", `{"prompt":"x","max_tokens":1}`)
		got = append(got, resp.StatusCode)
	}
	// requests 3 and 6 (every 3rd, counted from 1) fail
	if want := []int{200, 200, 503, 200, 200, 503}; !equalInts(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestFaultErrorMidStream(t *testing.T) {
	cases := []struct {
		dialect  string
		events   int // 2 tokens + error (+ [DONE])
		errShape string
	}{
		{DialectVLLM, 4, `{"error":{"message":"injected error after 2 tokens","type":"InternalServerError","param":null,"code":500}}`},
		{DialectSGLang, 4, `{"error":{"object":"error","message":"injected error after 2 tokens","type":"InternalServerError","param":null,"code":500}}`},
		{DialectLlamaCpp, 3, `{"error":{"code":500,"message":"injected error after 2 tokens","type":"server_error"}}`},
		{DialectTGI, 4, `{"error":{"message":"injected error after 2 tokens","http_status_code":500}}`},
	}
	for _, tc := range cases {
		t.Run(tc.dialect, func(t *testing.T) {
			_, srv := newTestEngine(t, func(c *Config) { c.Dialect = tc.dialect })
			body := `{"prompt":"abc","max_tokens":5,"stream":true}`
			resp, b := post(t, srv.URL+"/v1/completions", body, "X-Genload-Error-After", "2")
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			data := sseData(t, b)
			if len(data) != tc.events {
				t.Fatalf("%d events: %s", len(data), b)
			}
			if data[2] != tc.errShape {
				t.Errorf("error event %s\nwant %s", data[2], tc.errShape)
			}
			if tc.dialect != DialectLlamaCpp && data[3] != "[DONE]" {
				t.Errorf("no [DONE] after error")
			}
		})
	}
}

// An injected error while chunks are held (bunch-first) sends the held chunks first: the
// client sees every token it was streamed before the error event.
func TestFaultErrorReleasesHeldChunks(t *testing.T) {
	_, srv := newTestEngine(t, func(c *Config) { c.Quirks.BunchFirst = 5 })
	resp, b := post(t, srv.URL+"/v1/completions", `{"prompt":"abc","max_tokens":8,"ignore_eos":true,"stream":true}`, "X-Genload-Error-After", "2")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	data := sseData(t, b)
	if len(data) != 4 || !strings.HasPrefix(data[0], `{"id":`) || !strings.HasPrefix(data[1], `{"id":`) ||
		!strings.Contains(data[2], "injected error after 2 tokens") || data[3] != "[DONE]" {
		t.Errorf("want 2 token chunks, the error, [DONE]; got %d events: %s", len(data), b)
	}
}

func TestFaultResetAndCut(t *testing.T) {
	_, srv := newTestEngine(t, nil)
	// reset after 2 tokens: the client sees two events, then a read error
	_, body, err := rawStream(t, srv.URL, "X-Genload-Reset-After", "2")
	if err == nil {
		t.Errorf("reset: no read error, body %q", body)
	}
	if n := strings.Count(body, "data: "); n != 2 {
		t.Errorf("reset: %d events before the reset, want 2: %q", n, body)
	}
	// cut after 3 tokens: three whole events, then half an event, then unexpected EOF
	_, body, err = rawStream(t, srv.URL, "X-Genload-Cut-After", "3")
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut: error %v, want unexpected EOF", err)
	}
	if n := strings.Count(body, "\n\n"); n != 3 || strings.HasSuffix(body, "\n\n") || !strings.HasSuffix(body[:strings.LastIndex(body, "data: ")], "\n\n") {
		t.Errorf("cut: body %q", body)
	}
}

func TestFaultKeepAliveAndStall(t *testing.T) {
	// Real time scale so the stream is slow enough for a keep-alive: 5 decode steps of the
	// moe profile ≈ 3.5 ms simulated each; with time scale 20 that is ≈ 70 ms per step, and a
	// 20 ms keep-alive interval fires between steps.
	_, srv := newTestEngine(t, func(c *Config) { c.TimeScale = 20 })
	_, body, err := rawStream(t, srv.URL, "X-Genload-Keep-Alive", "20ms")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, ": keep-alive\n\n") || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Errorf("body %q", body)
	}
	// Stall after 1 token for 50 ms: tokens still all arrive, the stream still completes.
	_, srv2 := newTestEngine(t, nil)
	start := time.Now()
	_, body, err = rawStream(t, srv2.URL, "X-Genload-Stall-After", "1", "X-Genload-Stall-For", "50ms", "X-Genload-First-Token-Delay", "10ms")
	if err != nil || strings.Count(body, `"text":`) != 5 || time.Since(start) < 60*time.Millisecond {
		t.Errorf("stall: err %v, body %q, took %v", err, body, time.Since(start))
	}
}

func TestLoading(t *testing.T) {
	e, srv := newTestEngine(t, func(c *Config) { c.Faults.LoadingFor = time.Hour })
	resp, body := post(t, srv.URL+"/v1/completions", `{"prompt":"x"}`)
	if resp.StatusCode != 503 || !strings.Contains(string(body), "Loading model") {
		t.Errorf("loading: %d %s", resp.StatusCode, body)
	}
	r2, err := http.Get(srv.URL + "/health")
	if err != nil || r2.StatusCode != 503 {
		t.Errorf("health while loading: %v %v", err, r2.StatusCode)
	}
	r2.Body.Close()
	e.startedAt = e.startedAt.Add(-2 * time.Hour) // loading is over
	if r3, _ := http.Get(srv.URL + "/health"); r3.StatusCode != 200 {
		t.Errorf("health after loading: %d", r3.StatusCode)
	}
}

func TestEarlyEOS(t *testing.T) {
	// Without ignore_eos at EOS probability 0.2, a 200-token request ends early with "stop";
	// with ignore_eos it runs to max_tokens.
	_, srv := newTestEngine(t, func(c *Config) { c.EOSProbability = 0.2 })
	resp, body := post(t, srv.URL+"/v1/completions", `{"prompt":"x","max_tokens":200,"stream":true}`)
	_ = resp
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	var last string
	n := 0
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"finish_reason":"`) {
			last = sc.Text()
		}
		if strings.HasPrefix(sc.Text(), "data: {") {
			n++
		}
	}
	if !strings.Contains(last, `"finish_reason":"stop"`) || n >= 200 {
		t.Errorf("early EOS: %d chunks, last %s", n, last)
	}
}

func TestStreamInterval(t *testing.T) {
	_, srv := newTestEngine(t, nil)
	// 7 tokens coalesced by 3: chunks carry 3, 3 and 1 tokens (continuous usage counts 3, 6, 7).
	_, b := post(t, srv.URL+"/v1/completions", `{"prompt":[1,2],"max_tokens":7,"ignore_eos":true,"stream":true,"stream_interval":3,"stream_options":{"continuous_usage_stats":true}}`)
	data := sseData(t, b)
	if len(data) != 5 {
		t.Fatalf("%d events: %s", len(data), b)
	}
	for i, want := range []string{`"completion_tokens":3}`, `"completion_tokens":6}`, `"completion_tokens":7}`} {
		if !strings.Contains(data[i], want) {
			t.Errorf("chunk %d: %s, want %s", i, data[i], want)
		}
	}
	if !strings.Contains(data[2], `"finish_reason":"length"`) {
		t.Errorf("last chunk %s", data[2])
	}
}
