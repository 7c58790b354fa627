package dispatch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/genload/genload/host/internal/jsonenc"
	"github.com/genload/genload/host/plan"
)

// recorded is one request as the test server received it.
type recorded struct {
	path    string
	body    []byte
	headers http.Header
}

// fakeServer streams max_tokens one-token chunks per choice (interleaved), the finish on
// the last one, a usage-only chunk and [DONE]. Hooks can replace the response.
type fakeServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
	// hook, when set, handles attempt k (0-based, over all requests) and returns true if it
	// wrote the response.
	hook func(k int, w http.ResponseWriter, r *http.Request) bool
}

func newFakeServer(t *testing.T) *fakeServer {
	f := &fakeServer{}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) recorded() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	k := len(f.reqs)
	f.reqs = append(f.reqs, recorded{path: r.URL.Path, body: body, headers: r.Header.Clone()})
	hook := f.hook
	f.mu.Unlock()
	if hook != nil && hook(k, w, r) {
		return
	}
	var req struct {
		Prompt    json.RawMessage `json:"prompt"`
		N         int             `json:"n"`
		MaxTokens int             `json:"max_tokens"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad json","code":400}}`, 400)
		return
	}
	var arr [][]int
	var strs []string
	prompts, promptTokens := 1, 0
	if json.Unmarshal(req.Prompt, &arr) == nil {
		prompts = len(arr)
		for _, p := range arr {
			promptTokens += len(p)
		}
	} else if json.Unmarshal(req.Prompt, &strs) == nil {
		prompts = len(strs) // string prompts: one "token" per byte
		for _, p := range strs {
			promptTokens += len(p)
		}
	} else {
		var one []int
		var str string
		if json.Unmarshal(req.Prompt, &one) == nil {
			promptTokens = len(one)
		} else if json.Unmarshal(req.Prompt, &str) == nil {
			promptTokens = len(str)
		}
	}
	choices := prompts * max(req.N, 1)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Generation-Duration", "0.5")
	w.WriteHeader(200)
	fl := w.(http.Flusher)
	for tok := 0; tok < req.MaxTokens; tok++ {
		for c := 0; c < choices; c++ {
			fin := "null"
			if tok == req.MaxTokens-1 {
				fin = `"length"`
			}
			fmt.Fprintf(w, "data: {\"id\":\"cmpl-x\",\"choices\":[{\"index\":%d,\"text\":\" t%d\",\"finish_reason\":%s}]}\n\n", c, tok, fin)
		}
		fl.Flush()
	}
	fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n",
		promptTokens, choices*req.MaxTokens, promptTokens+choices*req.MaxTokens)
}

// routedPlan is the routed plan of prompts with prompt i going to workers[i] (a cell's plan
// carries the worker of each prompt: dispatch asks no router).
func routedPlan(t *testing.T, prompts [][]int32, texts []string, workers []int, maxTokens int, warm bool) *plan.Plan {
	t.Helper()
	p := &plan.Plan{Shape: ModeRouted, IDs: prompts, Texts: texts, Workers: workers, MaxTokens: maxTokens, Warmup: warm}
	rs, err := plan.Requests(ModeRouted, p.Prompts(), p.Prompts(), workers)
	if err != nil {
		t.Fatal(err)
	}
	p.Requests = rs
	return p
}

// body returns the bodies of plan.ForPrompts(mode, prompts) over workers.
func body(t *testing.T, c *Client, mode Mode, prompts [][]int32, workers, maxTokens int) [][]byte {
	t.Helper()
	p, err := plan.ForPrompts(mode, prompts, nil, workers, maxTokens)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Body(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var prompts3 = [][]int32{{1, 2, 3}, {40, 50}, {600}}

// The three request shapes and their warmups, as a recording server receives them:
// body bytes, headers and which worker got which prompt.
func TestRequestShapes(t *testing.T) {
	a, b := newFakeServer(t), newFakeServer(t)
	seed := int64(7)
	c, err := New(Options{
		Workers: []Worker{
			{Name: "a", URL: a.URL, Headers: map[string]string{"X-Service-Index": "0"}},
			{Name: "b", URL: b.URL + "/v1", Headers: map[string]string{"X-Service-Index": "1"}},
		},
		Model: "m", Seed: &seed, APIKey: "sk-secret",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const tail = `,"temperature":0,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true},"seed":7}`
	cases := []struct {
		mode  Mode
		wantA []string // bodies worker a receives (max_tokens M substituted)
		wantB []string
		seqs  int
	}{
		{ModeArray, []string{`{"model":"m","prompt":[[1,2,3],[40,50],[600]],"n":1,"max_tokens":M` + tail}, nil, 3},
		// the plan: prompt 0 → b, 1 → a, 2 → b
		{ModeRouted, []string{`{"model":"m","prompt":[40,50],"n":1,"max_tokens":M` + tail},
			[]string{`{"model":"m","prompt":[1,2,3],"n":1,"max_tokens":M` + tail, `{"model":"m","prompt":[600],"n":1,"max_tokens":M` + tail}, 3},
		{ModeN, []string{`{"model":"m","prompt":[1,2,3],"n":3,"max_tokens":M` + tail}, nil, 3},
	}
	for _, tc := range cases {
		for _, warm := range []bool{true, false} {
			name := string(tc.mode) + "/send"
			if warm {
				name = string(tc.mode) + "/warmup"
			}
			t.Run(name, func(t *testing.T) {
				a.reqs, b.reqs = nil, nil
				maxTok := "4"
				var res *Result
				if warm {
					maxTok = "1"
				}
				p, err := plan.ForPrompts(tc.mode, prompts3, nil, 2, 4)
				if tc.mode == ModeRouted {
					p = routedPlan(t, prompts3, nil, []int{1, 0, 1}, 4, false)
				}
				if err != nil {
					t.Fatal(err)
				}
				if warm {
					p = p.ForWarmup()
				}
				res, err = c.Do(context.Background(), p)
				if err != nil || res.Err() != nil {
					t.Fatal(err, res.Err())
				}
				if warm {
					res = nil
				}
				check := func(srv *fakeServer, want []string, hdr string) {
					got := srv.recorded()
					var bodies []string
					for _, r := range got {
						bodies = append(bodies, string(r.body))
						if r.path != "/v1/completions" || r.headers.Get("Authorization") != "Bearer sk-secret" ||
							r.headers.Get("Content-Type") != "application/json" || r.headers.Get("X-Service-Index") != hdr {
							t.Errorf("path %s headers %v", r.path, r.headers)
						}
					}
					var ws []string
					for _, w := range want {
						ws = append(ws, strings.Replace(w, "max_tokens\":M", "max_tokens\":"+maxTok, 1))
					}
					// routed requests arrive concurrently: compare as sets
					if strings.Join(sorted(bodies), "\n") != strings.Join(sorted(ws), "\n") {
						t.Errorf("worker %s bodies:\n%s\nwant:\n%s", hdr, strings.Join(bodies, "\n"), strings.Join(ws, "\n"))
					}
				}
				check(a, tc.wantA, "0")
				check(b, tc.wantB, "1")
				if res != nil {
					if len(res.Sequences) != tc.seqs {
						t.Fatalf("%d sequences", len(res.Sequences))
					}
					for i, s := range res.Sequences {
						// 4 one-token chunks each; the fake's usage covers the request's choices
						if s.Marks.Len() != 4 || !s.Finished || s.CompletionTokens != 4 {
							t.Errorf("sequence %d: %d marks, finished %v, %d tokens (%s)", i, s.Marks.Len(), s.Finished, s.CompletionTokens, s.TokenSource)
						}
						wantPrompt := i
						if tc.mode == ModeN {
							wantPrompt = 0
						}
						if s.Prompt != wantPrompt {
							t.Errorf("sequence %d prompt %d", i, s.Prompt)
						}
					}
					if tc.mode == ModeRouted {
						// prompt 0 and 2 to worker 1 (b), prompt 1 to worker 0 (a)
						for i, w := range []int{1, 0, 1} {
							if r := res.Requests[res.Sequences[i].Request]; r.Worker != w || r.Prompts[0] != i {
								t.Errorf("prompt %d went to worker %d", i, r.Worker)
							}
						}
					}
				}
			})
		}
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// Round robin without a router; extra_body overrides genload's fields; continuous usage.
func TestRoundRobinAndExtraBody(t *testing.T) {
	a, b := newFakeServer(t), newFakeServer(t)
	c, err := New(Options{
		Target: a.URL, Workers: []Worker{{Name: "a"}, {Name: "b", URL: b.URL}},
		ExtraBody: map[string]any{"temperature": 0.5, "top_k": 1}, ContinuousUsage: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bodies := body(t, c, ModeRouted, prompts3, 2, 2)
	want := `{"prompt":[1,2,3],"n":1,"max_tokens":2,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true},"temperature":0.5,"top_k":1}`
	if string(bodies[0]) != want {
		t.Fatalf("body\n%s\nwant\n%s", bodies[0], want)
	}
	res, err := c.Send(context.Background(), ModeRouted, prompts3, 2)
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	// prompts 0, 2 → worker 0 (a, the target); prompt 1 → worker 1 (b)
	if len(a.recorded()) != 2 || len(b.recorded()) != 1 {
		t.Fatalf("a got %d, b got %d", len(a.recorded()), len(b.recorded()))
	}
	if got := res.Requests[0].Headers["Generation-Duration"]; got != "" {
		t.Fatalf("captured an unconfigured header: %q", got)
	}
}

// "logprobs":N is written after the seed and before extra_body keys, only when asked (the
// default body is unchanged), and extra_body may replace it; a negative value is refused.
func TestBodyLogprobs(t *testing.T) {
	seed := int64(7)
	cases := []struct {
		name string
		o    Options
		want string
	}{
		{"not asked", Options{}, `{"prompt":[1,2,3],"n":1,"max_tokens":2,"temperature":0,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`},
		{"one", Options{Logprobs: 1, Seed: &seed, ExtraBody: map[string]any{"top_k": 1}},
			`{"prompt":[1,2,3],"n":1,"max_tokens":2,"temperature":0,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true},"seed":7,"logprobs":1,"top_k":1}`},
		{"extra_body replaces it", Options{Logprobs: 1, ExtraBody: map[string]any{"logprobs": 5}},
			`{"prompt":[1,2,3],"n":1,"max_tokens":2,"temperature":0,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true},"logprobs":5}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Target = "http://127.0.0.1:1"
			c, err := New(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			bodies := body(t, c, ModeRouted, prompts3, 1, 2)
			if string(bodies[0]) != tc.want {
				t.Fatalf("body\n%s\nwant\n%s", bodies[0], tc.want)
			}
		})
	}
	if _, err := New(Options{Target: "http://127.0.0.1:1", Logprobs: -1}); err == nil || !strings.Contains(err.Error(), "logprobs -1") {
		t.Fatalf("negative logprobs: err = %v", err)
	}
}

// Same prompts → byte-identical body; the fast id encoder matches encoding/json for ids
// around every digit-count boundary, beyond the table, and negative.
func TestBodyDeterministicAndIDs(t *testing.T) {
	c, err := New(Options{Target: "http://127.0.0.1:1", Model: "q\"uote"})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	ids := []int32{0, 9, 10, 99, 100, 999, 1000, 99999, 100000, 262143, 262144, 1 << 30, 2147483647, -1, -2147483648}
	for range 5000 {
		ids = append(ids, int32(r.IntN(300000)))
	}
	want, _ := json.Marshal(ids)
	if got := appendIDs(nil, ids); !bytes.Equal(got, want) {
		t.Fatalf("appendIDs differs from encoding/json:\n%s\n%s", got[:80], want[:80])
	}
	if got := appendIDs([]byte("x"), []int32{5}); string(got) != "x[5]" {
		t.Fatalf("got %q", got)
	}
	b1 := body(t, c, ModeArray, [][]int32{ids, ids[:7]}, 1, 100)
	b2 := body(t, c, ModeArray, [][]int32{ids, ids[:7]}, 1, 100)
	if !bytes.Equal(b1[0], b2[0]) {
		t.Fatal("bodies differ")
	}
	var v struct {
		Model  string    `json:"model"`
		Prompt [][]int32 `json:"prompt"`
	}
	if err := json.Unmarshal(b1[0], &v); err != nil || v.Model != "q\"uote" || len(v.Prompt[0]) != len(ids) || v.Prompt[1][6] != ids[6] {
		t.Fatalf("body does not round-trip: %v", err)
	}
}

// 5xx is retried (count honoured); a 4xx fails at once with the server's message, URL
// and status.
func TestRetries(t *testing.T) {
	cases := []struct {
		name     string
		status   []int // status of attempts 0, 1, … (200 → normal stream)
		retries  int
		attempts int
		ok       bool
		msg      string
	}{
		{"503 twice then ok", []int{503, 503, 200}, 3, 3, true, ""},
		{"503 beyond retries", []int{503, 503, 503}, 1, 2, false, "status 503: queue full"},
		{"429 then ok", []int{429, 200}, 1, 2, true, ""},
		{"400 not retried", []int{400, 200}, 3, 1, false, "status 400: You passed 9 input tokens"},
		{"404 not retried", []int{404, 200}, 3, 1, false, "status 404: The model `x` does not exist."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newFakeServer(t)
			s.hook = func(k int, w http.ResponseWriter, r *http.Request) bool {
				st := 200
				if k < len(tc.status) {
					st = tc.status[k]
				}
				switch st {
				case 200:
					return false
				case 503:
					http.Error(w, `{"object":"error","message":"queue full","type":"SERVICE_UNAVAILABLE","code":503}`, st)
				case 429:
					w.Header().Set("Retry-After", "0")
					http.Error(w, `{"error":"Model is overloaded","error_type":"overloaded"}`, st)
				case 404:
					http.Error(w, `{"error":{"message":"The model `+"`x`"+` does not exist.","type":"NotFoundError","param":"model","code":404}}`, st)
				default:
					http.Error(w, `{"error":{"message":"You passed 9 input tokens and requested 4 output tokens.","type":"BadRequestError","param":"input_tokens","code":400}}`, st)
				}
				return true
			}
			c, _ := New(Options{Target: s.URL, Retries: tc.retries, RetryDelay: time.Millisecond, APIKey: "sk-planted"})
			defer c.Close()
			err := c.Warmup(context.Background(), ModeArray, prompts3)
			if got := len(s.recorded()); got != tc.attempts {
				t.Fatalf("%d attempts, want %d", got, tc.attempts)
			}
			if tc.ok != (err == nil) {
				t.Fatalf("err = %v", err)
			}
			if !tc.ok {
				if !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), s.URL+"/v1/completions") {
					t.Fatalf("error %q lacks %q or the URL", err, tc.msg)
				}
				if strings.Contains(err.Error(), "sk-planted") {
					t.Fatal("API key leaked into the error")
				}
				var re *RequestError
				if !errors.As(err, &re) || re.Kind != KindHTTP {
					t.Fatalf("not a KindHTTP RequestError: %#v", err)
				}
			}
		})
	}
}

// Transport errors (nothing listening) are retried, then reported as transport errors.
func TestTransportErrorRetried(t *testing.T) {
	s := httptest.NewServer(http.NotFoundHandler())
	u := s.URL
	s.Close()
	c, _ := New(Options{Target: u, Retries: 2})
	defer c.Close()
	res, err := c.Send(context.Background(), ModeArray, prompts3, 2)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Requests[0]
	var re *RequestError
	if r.Attempts != 3 || !errors.As(r.Err, &re) || re.Kind != KindTransport {
		t.Fatalf("attempts %d err %v", r.Attempts, r.Err)
	}
}

// An in-stream error after some tokens fails the request with the server's message;
// sequences keep what arrived; a warmup does not retry a 4xx-coded in-stream error.
func TestInStreamError(t *testing.T) {
	s := newFakeServer(t)
	s.hook = func(k int, w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"text\":\"a\",\"finish_reason\":null}]}\n\n")
		io.WriteString(w, "data: {\"error\":{\"message\":\"Input validation error\",\"http_status_code\":422}}\n\ndata: [DONE]\n\n")
		return true
	}
	c, _ := New(Options{Target: s.URL, Retries: 3})
	defer c.Close()
	res, err := c.Send(context.Background(), ModeArray, prompts3[:1], 4)
	if err != nil {
		t.Fatal(err)
	}
	var re *RequestError
	if !errors.As(res.Err(), &re) || re.Kind != KindServer || re.Message != "Input validation error" || re.Status != 200 {
		t.Fatalf("err = %v", res.Err())
	}
	if len(res.Sequences) != 1 || res.Sequences[0].Marks.Len() != 1 {
		t.Fatalf("sequences %+v", res.Sequences)
	}
	if err := c.Warmup(context.Background(), ModeArray, prompts3[:1]); err == nil || len(s.recorded()) != 2 {
		t.Fatalf("warmup err %v after %d requests (want 1 send + 1 warmup)", err, len(s.recorded()))
	}
}

// Timeouts are reported as their own category; a canceled context as canceled.
func TestTimeoutsAndCancel(t *testing.T) {
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	s := newFakeServer(t)
	s.hook = func(k int, w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("X-Case") == "headers-late" {
			select {
			case <-block:
			case <-r.Context().Done():
			}
			return true
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		io.WriteString(w, ": ping\n\n") // a comment is not a first token
		w.(http.Flusher).Flush()
		select {
		case <-block:
		case <-r.Context().Done():
		}
		return true
	}
	cases := []struct {
		name, hdr string
		opts      Options
		cancel    bool
		kind      ErrorKind
		which     string
	}{
		{"first token, headers sent", "", Options{FirstTokenTimeout: 50 * time.Millisecond}, false, KindTimeout, "first_token"},
		{"first token, headers late", "headers-late", Options{FirstTokenTimeout: 50 * time.Millisecond}, false, KindTimeout, "first_token"},
		{"total", "", Options{TotalTimeout: 50 * time.Millisecond}, false, KindTimeout, "total"},
		{"cancel while streaming", "", Options{}, true, KindCanceled, ""},
		{"cancel before headers", "headers-late", Options{}, true, KindCanceled, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			o.Target = s.URL
			o.Workers = []Worker{{Headers: map[string]string{"X-Case": tc.hdr}}}
			c, _ := New(o)
			defer c.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				time.AfterFunc(50*time.Millisecond, cancel)
			}
			res, err := c.Send(ctx, ModeArray, prompts3[:1], 4)
			if err != nil {
				t.Fatal(err)
			}
			var re *RequestError
			if !errors.As(res.Err(), &re) || re.Kind != tc.kind || re.Timeout != tc.which {
				t.Fatalf("err = %v (%#v)", res.Err(), re)
			}
		})
	}
}

// One context watch per Send aborts every request of a routed cell: the ones streaming and
// the one still waiting for headers; each keeps its sequence record.
func TestCancelRoutedAbortsEveryRequest(t *testing.T) {
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	s := newFakeServer(t)
	s.hook = func(k int, w http.ResponseWriter, r *http.Request) bool {
		if !bytes.Contains(s.recorded()[k].body, []byte(`[600]`)) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\n")
			w.(http.Flusher).Flush()
		}
		select {
		case <-block:
		case <-r.Context().Done():
		}
		return true
	}
	c, _ := New(Options{Target: s.URL})
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(100*time.Millisecond, cancel)
	res, err := c.Send(ctx, ModeRouted, prompts3, 4)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res.Requests {
		var re *RequestError
		if !errors.As(r.Err, &re) || re.Kind != KindCanceled {
			t.Errorf("request %d: err = %v, want canceled", i, r.Err)
		}
	}
	if len(res.Sequences) != 3 {
		t.Fatalf("%d sequences, want 3", len(res.Sequences))
	}
	for i, sq := range res.Sequences {
		wantMarks := 1
		if i == 2 {
			wantMarks = 0
		}
		if sq.Prompt != i || sq.Request != i || sq.Marks.Len() != wantMarks {
			t.Errorf("sequence %d: prompt %d request %d, %d marks (want %d)", i, sq.Prompt, sq.Request, sq.Marks.Len(), wantMarks)
		}
	}
	if n := c.OpenConns(); n != 0 {
		t.Errorf("%d connections open after cancel", n)
	}
}

// Response headers larger than the 4 KiB read buffer: the request is sent again once with
// big buffers (not counted as a retry), and the Client keeps them.
func TestLargeResponseHeaders(t *testing.T) {
	s := newFakeServer(t)
	big := strings.Repeat("x", 6000)
	s.hook = func(k int, w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("X-Big", big)
		return false
	}
	c, _ := New(Options{Target: s.URL})
	defer c.Close()
	for i := range 2 {
		res, err := c.Send(context.Background(), ModeArray, prompts3[:1], 4)
		if err != nil || res.Err() != nil {
			t.Fatal(err, res.Err())
		}
		want := 2 - i // the first Send pays the resend, the second does not
		if a := res.Requests[0].Attempts; a != want || res.Sequences[0].Marks.Len() != 4 {
			t.Fatalf("send %d: %d attempts (want %d), %d marks", i, a, want, res.Sequences[0].Marks.Len())
		}
	}
}

func TestNewErrors(t *testing.T) {
	cases := []struct {
		o    Options
		want string
	}{
		{Options{}, "no URL"},
		{Options{Target: "127.0.0.1:80"}, `bad URL "127.0.0.1:80"`},
		{Options{Target: "ftp://h:1"}, "want http://host:port"},
		{Options{Target: "http://h", ExtraBody: map[string]any{"prompt": 1}}, `extra_body key "prompt"`},
		{Options{Target: "http://h", ExtraBody: map[string]any{"x": func() {}}}, `extra_body key "x"`},
	}
	for _, tc := range cases {
		if _, err := New(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want %q", tc.o, err, tc.want)
		}
	}
	c, _ := New(Options{Target: "http://127.0.0.1:1"})
	for _, tc := range []struct {
		mode    Mode
		prompts [][]int32
		want    string
	}{
		{ModeArray, nil, "no prompts"},
		{ModeArray, [][]int32{{1}, {}}, "prompt 1 is empty"},
		{"bogus", prompts3, `unknown request shape "bogus"`},
	} {
		if _, err := c.Send(context.Background(), tc.mode, tc.prompts, 1); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Send(%q) = %v, want %q", tc.mode, err, tc.want)
		}
	}
	c2, _ := New(Options{Target: "http://127.0.0.1:1", Workers: []Worker{{}, {}}})
	if _, err := c2.Do(context.Background(), routedPlan(t, prompts3, nil, []int{0, 5, 1}, 1, false)); err == nil ||
		!strings.Contains(err.Error(), "request 1 goes to worker 5, want [0, 2)") {
		t.Errorf("a plan naming worker 5 of 2: %v", err)
	}
	for _, tc := range []struct {
		p    *plan.Plan
		want string
	}{
		{&plan.Plan{IDs: prompts3}, "the plan has no requests"},
		{&plan.Plan{IDs: prompts3, Requests: []plan.Request{{Prompts: []int{0, 3}, Array: true, N: 1}}}, "request 0 carries prompt 3 of 3"},
		{&plan.Plan{IDs: prompts3, Requests: []plan.Request{{Prompts: []int{0, 1}, N: 1}}}, "request 0 has 2 prompts and n = 1"},
		{&plan.Plan{IDs: prompts3, Requests: []plan.Request{{Prompts: []int{0}, N: 0}}}, "request 0 has 1 prompts and n = 0"},
	} {
		if _, err := c2.Do(context.Background(), tc.p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Do(%+v) = %v, want %q", tc.p.Requests, err, tc.want)
		}
	}
}

// A routed request that fails before its stream still yields its sequence record (empty,
// unfinished), so Result.Sequences always has B entries in prompt order.
func TestFailedRequestKeepsSequenceSlots(t *testing.T) {
	s := newFakeServer(t)
	s.hook = func(k int, w http.ResponseWriter, r *http.Request) bool {
		if bytes.Contains(s.recorded()[k].body, []byte(`"prompt":[40,50]`)) {
			http.Error(w, `{"error":{"message":"nope","code":400}}`, 400)
			return true
		}
		return false
	}
	c, _ := New(Options{Target: s.URL})
	defer c.Close()
	res, err := c.Send(context.Background(), ModeRouted, prompts3, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sequences) != 3 {
		t.Fatalf("%d sequences", len(res.Sequences))
	}
	for i, s := range res.Sequences {
		failed := res.Requests[s.Request].Err != nil
		if s.Prompt != i || failed != (i == 1) || s.Finished == failed {
			t.Errorf("sequence %d: prompt %d failed %v finished %v", i, s.Prompt, failed, s.Finished)
		}
	}
}

// Configured server-timing headers are captured by their configured name (the fake sends
// "Generation-Duration: 0.5"); absent ones are not invented.
func TestCaptureHeaders(t *testing.T) {
	s := newFakeServer(t)
	c, _ := New(Options{Target: s.URL, GenerationDurationHeader: "generation-duration", SpeculationAcceptanceHeader: "speculation-acceptance"})
	defer c.Close()
	res, err := c.Send(context.Background(), ModeArray, prompts3, 2)
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	h := res.Requests[0].Headers
	if len(h) != 1 || h["generation-duration"] != "0.5" {
		t.Fatalf("headers %v", h)
	}
	if u := res.Requests[0]; !u.HasUsage || u.Usage.CompletionTokens != 6 || u.Usage.PromptTokens != 6 || !u.Done {
		t.Fatalf("usage %+v done %v", u.Usage, u.Done)
	}
}

// String prompts (TGI accepts only these): JSON-escaped like encoding/json, in the same
// three shapes; each prompt goes to the worker its plan names.
func TestTextPrompts(t *testing.T) {
	texts := []string{"plain", "quote \" back \\ nl \n tab \t ctl \x01 中", "bad \xff utf8"}
	for _, s := range texts {
		want, _ := json.Marshal(s)
		if got := jsonenc.AppendString(nil, s); string(got) != string(want) {
			t.Errorf("jsonenc.AppendString(%q) = %s, want %s", s, got, want)
		}
	}
	s := newFakeServer(t)
	c, _ := New(Options{Target: s.URL, Workers: []Worker{{}, {}}})
	defer c.Close()
	wres, err := c.Do(context.Background(), routedPlan(t, nil, texts, []int{1, 0, 1}, 2, false).ForWarmup())
	if err != nil || wres.Err() != nil {
		t.Fatal(err, wres.Err())
	}
	for i, w := range []int{1, 0, 1} {
		if q := wres.Requests[i]; q.Worker != w || q.Prompts[0] != i || wres.MaxTokens != 1 {
			t.Fatalf("request %d: prompt %v to worker %d with max_tokens %d, want prompt %d to %d with 1", i, q.Prompts, q.Worker, wres.MaxTokens, i, w)
		}
	}
	s.reqs = nil
	res, err := c.SendText(context.Background(), ModeArray, texts, 2)
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	var body struct {
		Prompt []string `json:"prompt"`
	}
	if err := json.Unmarshal(s.recorded()[0].body, &body); err != nil || len(body.Prompt) != 3 || body.Prompt[1] != texts[1] || body.Prompt[2] != "bad \uFFFD utf8" {
		t.Fatalf("prompt %q (%v)", body.Prompt, err)
	}
	if _, err := c.SendText(context.Background(), ModeArray, []string{"a", ""}, 1); err == nil || !strings.Contains(err.Error(), "prompt 1 is empty") {
		t.Fatalf("empty text: %v", err)
	}
}

// A keep-alive connection that the server closed while idle is resent once for free
// (Retries = 0): the request succeeds on a new connection with 2 attempts.
func TestStaleKeepAliveResent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	body := "data: {\"choices\":[{\"index\":0,\"text\":\"a\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n"
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close() // answer one request, then close the "keep-alive" connection
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
				time.Sleep(20 * time.Millisecond)
			}()
		}
	}()
	c, _ := New(Options{Target: "http://" + ln.Addr().String()})
	defer c.Close()
	for i := range 2 {
		res, err := c.Send(context.Background(), ModeArray, prompts3[:1], 1)
		if err != nil || res.Err() != nil {
			t.Fatalf("send %d: %v %v", i, err, res.Err())
		}
		// send 0 dials; send 1 reuses the pooled connection, which the server closes
		// without answering, then resends on a new one
		if want := i + 1; res.Requests[0].Attempts != want {
			t.Fatalf("send %d: %d attempts, want %d", i, res.Requests[0].Attempts, want)
		}
	}
}

// Server misbehaviour catalogue: each case fails the request with its own kind
// and a message saying what happened.
func TestServerFaults(t *testing.T) {
	tok := "data: {\"choices\":[{\"index\":0,\"text\":\"a\",\"finish_reason\":null}]}\n\n"
	cases := []struct {
		name string
		// serve writes a raw HTTP response (after the request was read) on conn
		serve func(c net.Conn)
		kind  ErrorKind
		want  string
	}{
		{"reset mid-stream", func(c net.Conn) {
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(tok), tok)
			c.(*net.TCPConn).SetLinger(0) // RST
		}, KindTransport, "sse: read"},
		{"truncated stream", func(c net.Conn) {
			body := tok + `data: {"choices":[{"ind`
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		}, KindStream, "stream truncated"},
		{"ended before finish", func(c net.Conn) {
			body := tok + "data: [DONE]\n\n"
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		}, KindStream, "1 of 1 sequences unfinished"},
		{"choices numbered from 1", func(c net.Conn) {
			body := "data: {\"choices\":[{\"index\":1,\"text\":\"a\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n"
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		}, KindStream, "(1 of 1 sequences unfinished, [DONE] seen: true; choices[].index 1 is out of range for 1 prompt (0 … 0)) (the server numbered its choices otherwise than 0 … B−1 in prompt order (as from 1)"},
		{"non-JSON event", func(c net.Conn) {
			body := "data: <html>oops</html>\n\n"
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		}, KindStream, "malformed chunk \"<html>oops</html>\""},
		{"non-JSON 502", func(c net.Conn) {
			body := "<html>bad gateway</html>"
			fmt.Fprintf(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		}, KindHTTP, `status 502: an HTML page reading "bad gateway" (not an OpenAI-compatible server's JSON error: a proxy in front of the server? (the server may be down or still loading))`},
		{"huge error body", func(c net.Conn) {
			body := strings.Repeat("x", 1<<20)
			fmt.Fprintf(c, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		}, KindHTTP, "status 500: " + strings.Repeat("x", 512)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// one response per connection, then close: a cut or reset stream ends there
			u := rawServer(t, func(c net.Conn, _ *http.Request, _ []byte) { tc.serve(c); c.Close() })
			c, _ := New(Options{Target: u})
			defer c.Close()
			res, err := c.Send(context.Background(), ModeArray, prompts3[:1], 4)
			if err != nil {
				t.Fatal(err)
			}
			var re *RequestError
			if !errors.As(res.Err(), &re) || re.Kind != tc.kind || !strings.Contains(re.Error(), tc.want) {
				t.Fatalf("err = %v (kind %v), want kind %s containing %q", res.Err(), kindOf(re), tc.kind, tc.want)
			}
			if len(re.Error()) > 2048 {
				t.Fatalf("message of %d bytes", len(re.Error()))
			}
		})
	}
}

func kindOf(re *RequestError) ErrorKind {
	if re == nil {
		return ""
	}
	return re.Kind
}

// An https target served by a plain-HTTP server fails as a transport error naming the URL.
func TestTLSError(t *testing.T) {
	s := newFakeServer(t)
	c, _ := New(Options{Target: strings.Replace(s.URL, "http://", "https://", 1), ConnectTimeout: time.Second})
	defer c.Close()
	res, err := c.Send(context.Background(), ModeArray, prompts3[:1], 1)
	if err != nil {
		t.Fatal(err)
	}
	var re *RequestError
	if !errors.As(res.Err(), &re) || re.Kind != KindTransport || !strings.Contains(re.Error(), "https://") {
		t.Fatalf("err = %v", res.Err())
	}
}
