package dispatch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/genload/genload/host/plan"
)

// rawServer accepts connections and, for each request (read whole), calls serve with the
// connection, the request and its body; serve writes a raw HTTP response. It returns the
// base URL.
func rawServer(t *testing.T, serve func(c net.Conn, r *http.Request, body []byte)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					body, _ := io.ReadAll(req.Body)
					serve(c, req, body)
					select {
					case <-done:
						return
					default:
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

const sseHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"

// chunked writes s as one chunk of the chunked encoding.
func chunked(c net.Conn, s string) { fmt.Fprintf(c, "%x\r\n%s\r\n", len(s), s) }

func tokenEvents(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "data: {\"choices\":[{\"index\":0,\"text\":\" t%d\",\"finish_reason\":null}]}\n\n", i)
	}
	return b.String()
}

// A server that stops sending after 5 tokens (connection open) fails the request with a
// stall timeout saying so, instead of hanging; the sequence keeps its 5 tokens.
func TestStallFixedLimit(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	u := rawServer(t, func(c net.Conn, _ *http.Request, _ []byte) {
		io.WriteString(c, sseHead)
		chunked(c, tokenEvents(5))
		<-hold
	})
	c, err := New(Options{Target: u, Stall: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Send(context.Background(), ModeArray, prompts3[:1], 100)
	if err != nil {
		t.Fatal(err)
	}
	var re *RequestError
	if !errors.As(res.Err(), &re) || re.Kind != KindTimeout || re.Timeout != "stall" {
		t.Fatalf("err = %v, want a stall timeout", res.Err())
	}
	want := regexp.MustCompile(`^POST ` + regexp.QuoteMeta(u) + `/v1/completions: stall timeout: no byte for 0\.3 s after token 5; ` +
		`the stream's step was (not known yet|[0-9]+\.[0-9] ms) \(limit \[timeouts\] stall\)$`)
	if !want.MatchString(re.Error()) {
		t.Fatalf("message %q does not match %s", re.Error(), want)
	}
	if n := res.Sequences[0].Marks.Len(); n != 5 {
		t.Fatalf("sequence kept %d token chunks, want 5", n)
	}
}

// The N × step rule: a stream of steady tokens whose server then stops is ended after
// max(StallMin, StallSteps × step); the error carries the rule's numbers.
func TestStallStepRule(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	u := rawServer(t, func(c net.Conn, _ *http.Request, _ []byte) {
		io.WriteString(c, sseHead)
		for i := range 10 {
			chunked(c, fmt.Sprintf("data: {\"choices\":[{\"index\":0,\"text\":\" t%d\",\"finish_reason\":null}]}\n\n", i))
			time.Sleep(2 * time.Millisecond)
		}
		<-hold
	})
	c, _ := New(Options{Target: u, StallSteps: 20, StallMin: time.Second})
	defer c.Close()
	res, _ := c.Send(context.Background(), ModeArray, prompts3[:1], 100)
	var re *RequestError
	var se *StallError
	if !errors.As(res.Err(), &re) || re.Timeout != "stall" || !errors.As(re.Err, &se) {
		t.Fatalf("err = %v, want a stall timeout", res.Err())
	}
	if se.Token != 10 || se.Sequences != 1 || se.Steps != 20 || se.Min != time.Second || se.Step <= 0 {
		t.Fatalf("stall = %+v, want token 10 of 1 sequence, rule 20 × step ≥ 1s, a known step", *se)
	}
	if want := max(se.Min, 20*se.Step); se.Limit != want {
		t.Fatalf("limit %v, want max(1s, 20 × %v) = %v", se.Limit, se.Step, want)
	}
	if !strings.Contains(re.Error(), "after token 10; the stream's step was ") ||
		!strings.HasSuffix(re.Error(), "(limit max([timeouts] stall_min 1s, stall_steps 20 × step))") {
		t.Fatalf("message %q", re.Error())
	}
}

// The limit and the message from given times (no clock): step = (last − first) ÷ tokens
// per sequence since the first; the floor; the first-token latency before a step is known.
func TestStallLimitAndMessage(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	s := &stallWatch{nseq: 1, steps: 20, min: 2 * time.Second, sent: 0, first: ms(100)}
	lim, step := s.limit(ms(100)+36*ms(5.1), 36)
	if step != ms(5.1) || lim != 2*time.Second {
		t.Fatalf("limit, step = %v, %v; want 2s (the floor), 5.1ms", lim, step)
	}
	if lim, _ := s.limit(ms(100)+10*ms(200), 10); lim != 4*time.Second {
		t.Fatalf("limit %v, want 20 × 200ms = 4s", lim)
	}
	s.min = 0
	if lim, step := s.limit(ms(100), 0); step != 0 || lim != 20*ms(100) {
		t.Fatalf("before a step: limit %v step %v, want 20 × the first-token latency 100ms = 2s", lim, step)
	}
	s8 := &stallWatch{nseq: 8, steps: 20, first: ms(100)}
	if _, step := s8.limit(ms(100)+10*ms(5), 80); step != ms(5) {
		t.Fatalf("8 sequences, 80 token chunks over 50 ms: step %v, want 5ms", step)
	}
	e := &StallError{Limit: 2 * time.Second, Token: 37, Sequences: 1, Step: ms(5.1), Steps: 20, Min: 2 * time.Second}
	if got, want := e.Error(), "no byte for 2.0 s after token 37; the stream's step was 5.1 ms (limit max([timeouts] stall_min 2s, stall_steps 20 × step))"; got != want {
		t.Fatalf("message\n got %q\nwant %q", got, want)
	}
	e = &StallError{Limit: 1500 * time.Millisecond, Token: 3, Sequences: 8}
	if got, want := e.Error(), "no byte for 1.5 s after token 3 of each of 8 sequences; the stream's step was not known yet (limit [timeouts] stall)"; got != want {
		t.Fatalf("message\n got %q\nwant %q", got, want)
	}
}

// A healthy stream with stall detection on ends normally, and its timer is stopped.
func TestStallQuietOnHealthyStream(t *testing.T) {
	s := newFakeServer(t)
	c, _ := New(Options{Target: s.URL, StallSteps: 20, StallMin: 2 * time.Second})
	defer c.Close()
	res, err := c.Send(context.Background(), ModeArray, prompts3, 20)
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	for i, sq := range res.Sequences {
		if sq.Marks.Len() != 20 {
			t.Fatalf("sequence %d: %d marks", i, sq.Marks.Len())
		}
	}
}

// A reset before any response byte on a large body says the body size and what to change;
// on a small body it does not.
func TestBodySizeHint(t *testing.T) {
	u := rawServer(t, func(c net.Conn, r *http.Request, body []byte) {
		if len(body) > 1<<20 {
			c.(*net.TCPConn).SetLinger(0) // RST, as a server over its body limit does
			c.Close()
			return
		}
		body2 := tokenEvents(1)[:0] + "data: {\"choices\":[{\"index\":0,\"text\":\"a\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n"
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body2), body2)
	})
	c, _ := New(Options{Target: u})
	defer c.Close()
	big := make([]int32, 120_000) // about 0.7 MB as ids "100000," …
	for i := range big {
		big[i] = 100000 + int32(i)
	}
	prompts := [][]int32{big, big}
	res, err := c.Send(context.Background(), ModeArray, prompts, 1)
	if err != nil {
		t.Fatal(err)
	}
	var re *RequestError
	if !errors.As(res.Err(), &re) || re.Kind != KindTransport {
		t.Fatalf("err = %v, want a transport error", res.Err())
	}
	q := res.Requests[0]
	wantHint := fmt.Sprintf("(the request body was %.1f MB: a server or proxy with a body-size limit drops larger requests this way; use mode = \"routed\" (one prompt per request) or a smaller B)", float64(q.BodyBytes)/1e6)
	if q.BodyBytes < 1<<20 || !strings.HasSuffix(re.Error(), wantHint) || q.Error != re.Error() {
		t.Fatalf("body %d bytes, error %q, want suffix %q", q.BodyBytes, re.Error(), wantHint)
	}
	// the same prompts one per request fit: no error, no hint
	res, _ = c.Send(context.Background(), ModeRouted, [][]int32{{1, 2}}, 1)
	if res.Err() != nil {
		t.Fatal(res.Err())
	}
	// a server that says 413 gets the same hint, whatever the size
	u = rawServer(t, func(c net.Conn, _ *http.Request, _ []byte) {
		body := `{"error":{"message":"Request Entity Too Large"}}`
		fmt.Fprintf(c, "HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	})
	c2, _ := New(Options{Target: u})
	defer c2.Close()
	res, _ = c2.Send(context.Background(), ModeRouted, prompts, 1)
	want := fmt.Sprintf("POST %s/v1/completions: status 413: Request Entity Too Large (the request body was %.1f kB: a server or proxy with a body-size limit drops larger requests this way; use shorter prompts (smaller L), or raise the server's or proxy's body limit)",
		u, float64(res.Requests[0].BodyBytes)/1e3) // one prompt of 120,000 ids: under 1 MB, so in kB
	if res.Requests[0].Error != want {
		t.Fatalf("413:\n got %q\nwant %q", res.Requests[0].Error, want)
	}
}

// Resends are recorded per request with their reason; Result.Retried sums them.
func TestRetriesRecorded(t *testing.T) {
	s := newFakeServer(t)
	s.hook = func(k int, w http.ResponseWriter, r *http.Request) bool {
		if k < 2 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(503)
			io.WriteString(w, `{"error":{"message":"model loading","code":503}}`)
			return true
		}
		return false
	}
	c, _ := New(Options{Target: s.URL, Retries: 3})
	defer c.Close()
	res, err := c.Send(context.Background(), ModeArray, prompts3[:1], 2)
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	q := res.Requests[0]
	if q.Attempts != 3 || len(q.Retries) != 2 || q.Retries[0].Attempt != 1 || q.Retries[1].Attempt != 2 ||
		q.Retries[0].Reason != "status 503: model loading" || q.Retries[0].Free {
		t.Fatalf("attempts %d, retries %+v", q.Attempts, q.Retries)
	}
	st := res.Retried()
	if st.Count != 2 || st.Free != 0 || st.Reasons["status 503: model loading"] != 2 {
		t.Fatalf("retried = %+v", st)
	}
	// the warmup's recording says the same
	var n atomic.Int32
	s.hook = func(k int, w http.ResponseWriter, r *http.Request) bool {
		if n.Add(1) == 1 {
			w.WriteHeader(502)
			io.WriteString(w, "bad gateway")
			return true
		}
		return false
	}
	wp, err := plan.ForPrompts(ModeArray, prompts3[:1], nil, 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	wres, err := c.Do(context.Background(), wp.ForWarmup())
	if err != nil || wres.Err() != nil {
		t.Fatal(err, wres.Err())
	}
	if st := wres.Retried(); st.Count != 1 || st.Reasons["status 502: bad gateway"] != 1 {
		t.Fatalf("warmup retried = %+v", st)
	}
}

// Responses genload does not understand: the error names the URL and request, what was
// expected and what came.
func TestNotUnderstood(t *testing.T) {
	cases := []struct {
		name string
		ct   string
		body string
		want string
	}{
		{"html page", "text/html; charset=utf-8", "<html><body>Please log in</body></html>",
			"stream: expected an SSE stream (Content-Type text/event-stream) of completion chunks, got text/html: <html><body>Please log in</body></html>"},
		{"one JSON completion", "application/json", `{"id":"c","choices":[{"index":0,"text":"hello","finish_reason":"length"}]}`,
			`stream: expected an SSE stream (Content-Type text/event-stream), got one application/json completion: the server ignored "stream": true; body: {"id":"c","choices":[{"index":0,"text":"hello","finish_reason":"length"}]}`},
		{"JSON without choices", "application/json", `{"status":"ok"}`,
			`stream: expected an SSE stream (Content-Type text/event-stream) of completion chunks, got application/json without "choices": {"status":"ok"}`},
		{"chat chunks", "text/event-stream", "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n",
			`stream: expected completion chunks with choices[].text; 2 events brought no token, the first: {"choices":[{"index":0,"delta":{"content":"hi"}}]}: stream truncated: ended before every sequence finished (1 of 1 sequences unfinished, [DONE] seen: true)`},
		{"no events", "text/plain", "hello\nworld\n",
			`stream: expected SSE "data:" events of completion chunks; the body (Content-Type text/plain) had none: stream truncated: ended before every sequence finished (1 of 1 sequences unfinished, [DONE] seen: false)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := rawServer(t, func(c net.Conn, _ *http.Request, _ []byte) {
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s", tc.ct, len(tc.body), tc.body)
			})
			c, _ := New(Options{Target: u})
			defer c.Close()
			res, err := c.Send(context.Background(), ModeArray, prompts3[:1], 4)
			if err != nil {
				t.Fatal(err)
			}
			want := "POST " + u + "/v1/completions: " + tc.want
			if res.Err() == nil || res.Err().Error() != want {
				t.Fatalf("error\n got %v\nwant %s", res.Err(), want)
			}
		})
	}
}

// Known server messages get the setting to change, for the shape that was sent.
func TestHintsForKnownMessages(t *testing.T) {
	const ollama = "json: cannot unmarshal array into Go struct field CompletionRequest.prompt of type string"
	cases := []struct {
		msg  string
		mode Mode
		text bool
		want string
	}{
		{ollama, ModeArray, false, `[mode] = "array" / [prompt.format] = "tokens" rejected: the server accepts only a single string prompt: set mode = "routed" and prompt.format = "text" (or "auto")`},
		{ollama, ModeArray, true, `[mode] = "array" rejected: the server accepts only a single string prompt: set mode = "routed" (or "auto")`},
		{ollama, ModeRouted, false, `[prompt.format] = "tokens" rejected: the server accepts only a single string prompt: set prompt.format = "text" (or "auto")`},
		{ollama, ModeRouted, true, ""},
		{"Failed to deserialize the JSON body into the target type: prompt: data did not match any variant of untagged enum Prompt", ModeRouted, false,
			`[prompt.format] = "tokens" rejected: the server accepts only text prompts: set prompt.format = "text" (or "auto")`},
		{"Input validation error: `inputs` must have less than 4 prompts: maximum allowed batch size is 4", ModeArray, true,
			`[mode] = "array" rejected: the server limits the prompts of one request: set mode = "routed" (or "auto"), one request per prompt`},
		{"Only one completion choice is allowed", ModeN, false,
			`[mode] = "n" rejected: the server generates one choice per prompt: set mode = "array" or "routed" (or "auto")`},
		{"stream truncated: ended before every sequence finished (1 of 3 sequences unfinished, [DONE] seen: true)", ModeN, false,
			`the server ended the stream without finishing every choice: it may ignore n ([mode] = "n"): set mode = "array" or "routed"`},
		{"stream truncated: ended before every sequence finished (1 of 3 sequences unfinished, [DONE] seen: true)", ModeArray, false,
			"the server ended the stream without finishing every choice: it stopped early, or answered fewer choices than prompts"},
		{"stream truncated: ended before every sequence finished (1 of 3 sequences unfinished, [DONE] seen: false)", ModeArray, false, ""},
		{"something else", ModeArray, false, ""},
	}
	for _, tc := range cases {
		if got := Hint(tc.msg, tc.mode, tc.text); got != tc.want {
			t.Errorf("Hint(%q, %s, text %v)\n got %q\nwant %q", tc.msg, tc.mode, tc.text, got, tc.want)
		}
	}
	// and on the wire: a Go server that types prompt as a string
	u := rawServer(t, func(c net.Conn, _ *http.Request, _ []byte) {
		body := `{"error":{"message":"` + ollama + `","type":"invalid_request_error"}}`
		fmt.Fprintf(c, "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	})
	c, _ := New(Options{Target: u})
	defer c.Close()
	res, _ := c.Send(context.Background(), ModeArray, prompts3[:2], 1)
	want := "POST " + u + "/v1/completions: status 400: " + ollama +
		` ([mode] = "array" / [prompt.format] = "tokens" rejected: the server accepts only a single string prompt: set mode = "routed" and prompt.format = "text" (or "auto"))`
	if res.Err() == nil || res.Err().Error() != want || res.Requests[0].Error != want {
		t.Fatalf("error\n got %v\nwant %s", res.Err(), want)
	}
}

// /v1/models answered with something that is not an OpenAI-compatible server's JSON: one line
// that says what came (an HTML page and its title, a body that is not JSON) and what the target
// should be; a JSON error of an OpenAI-compatible server keeps its own message.
func TestModelsNotUnderstood(t *testing.T) {
	const hint = ": this is not an OpenAI-compatible server (check the target: the base URL of a vLLM, SGLang, llama.cpp or TGI server, such as http://127.0.0.1:8000)"
	cases := []struct {
		name, status, ctype, body string
		want                      string // after "GET <url>/v1/models"
	}{
		{"login page", "200 OK", "text/html", "<html><body>Sign in</body></html>", ` answered HTTP 200 with an HTML page reading "Sign in"` + hint},
		{"plain HTTP server", "404 File not found", "text/html;charset=utf-8",
			"<!DOCTYPE HTML>\n<html lang=\"en\">\n<head>\n<title>Error response</title>\n</head>\n<body>\n<h1>Error response</h1>\n</body>\n</html>\n",
			` answered HTTP 404 with an HTML page titled "Error response"` + hint},
		{"text", "200 OK", "text/plain", "hello\nworld", ` answered HTTP 200 with text/plain, not JSON: "hello world"` + hint},
		{"empty", "200 OK", "", "", " answered HTTP 200 with an empty body" + hint},
		{"proxy error page", "502 Bad Gateway", "text/html", "<html><head><title>502 Bad Gateway</title></head></html>",
			` answered HTTP 502 with an HTML page titled "502 Bad Gateway", not an OpenAI-compatible server's JSON error: a proxy in front of the server? (the server may be down or still loading)`},
		{"JSON error", "404 Not Found", "application/json", `{"error":{"message":"no such route"}}`, ": HTTP 404: no such route"},
		{"JSON, not a list", "200 OK", "application/json", `{"models":[]}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := rawServer(t, func(conn net.Conn, _ *http.Request, _ []byte) {
				ct := ""
				if c.ctype != "" {
					ct = "Content-Type: " + c.ctype + "\r\n"
				}
				fmt.Fprintf(conn, "HTTP/1.1 %s\r\n%sContent-Length: %d\r\n\r\n%s", c.status, ct, len(c.body), c.body)
			})
			models, err := ListModels(context.Background(), u, "", time.Second)
			if c.want == "" {
				if err != nil || len(models) != 0 {
					t.Fatalf("models %v, err %v; want none, no error", models, err)
				}
				return
			}
			if want := "GET " + u + "/v1/models" + c.want; err == nil || err.Error() != want {
				t.Fatalf("err\n got %v\nwant %s", err, want)
			}
		})
	}
}

// Routed: a stream paused while the server serves the other requests (a prefill-first
// server prefilling their prompts) is not a stall as long as some stream of the Send
// receives bytes; when every stream stops, each fails naming the streams.
func TestStallIsSendWide(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	stopAll := make(chan struct{}, 2)
	u := rawServer(t, func(c net.Conn, _ *http.Request, body []byte) {
		io.WriteString(c, sseHead)
		paused := strings.Contains(string(body), `"prompt":[1]`)
		one := func(i int, fin string) string {
			return fmt.Sprintf("data: {\"choices\":[{\"index\":0,\"text\":\" t%d\",\"finish_reason\":%s}]}\n\n", i, fin)
		}
		stall := false
		select {
		case <-stopAll:
			stall = true
		default:
		}
		if paused {
			chunked(c, one(0, "null"))
			time.Sleep(900 * time.Millisecond) // silent on this stream, 3 × the limit
			if stall {
				<-hold
			}
			chunked(c, one(1, `"length"`)+"data: [DONE]\n\n")
		} else {
			for i := range 60 { // 60 × 15 ms = 900 ms of tokens on the other stream
				chunked(c, one(i, "null"))
				time.Sleep(15 * time.Millisecond)
			}
			if stall {
				<-hold
			}
			chunked(c, one(60, `"length"`)+"data: [DONE]\n\n")
		}
		io.WriteString(c, "0\r\n\r\n")
	})
	c, _ := New(Options{Target: u, Stall: 300 * time.Millisecond})
	defer c.Close()
	res, err := c.Send(context.Background(), ModeRouted, [][]int32{{1}, {2}}, 2)
	if err != nil || res.Err() != nil {
		t.Fatalf("a stream paused while the other streamed: %v %v", err, res.Err())
	}
	// both streams stop: the paused one fails once the other has gone quiet too
	stopAll <- struct{}{}
	stopAll <- struct{}{}
	res, _ = c.Send(context.Background(), ModeRouted, [][]int32{{1}, {2}}, 2)
	for i, q := range res.Requests {
		var se *StallError
		if !errors.As(q.Err, &se) || se.Streams != 2 || !strings.Contains(q.Error, "stall timeout: no byte on any of the 2 streams for 0.3 s after token ") {
			t.Fatalf("request %d: %v", i, q.Err)
		}
	}
}

// In a Do of many requests a measured request's body is dropped once its stream has begun
// (it is never sent again), so the bodies of a Do are not held until its last stream ends; a
// warmup keeps its bodies (an in-stream error is retried) and returns them to the Client's
// buffers at the end, and so does a Do of a few small requests.
func TestMeasuredBodiesDroppedAtStreamStart(t *testing.T) {
	s := newFakeServer(t)
	c, _ := New(Options{Target: s.URL})
	defer c.Close()
	few, err := plan.ForPrompts(ModeRouted, prompts3, nil, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.Do(context.Background(), few); err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	if len(c.bufs) != len(prompts3) {
		t.Fatalf("%d bodies back in the Client's buffers after a Do of %d small requests, want all", len(c.bufs), len(prompts3))
	}
	c.bufs = nil
	many := make([][]int32, smallReaderStreams)
	for i := range many {
		many[i] = []int32{int32(i), 7}
	}
	p, err := plan.ForPrompts(ModeRouted, many, nil, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Do(context.Background(), p)
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	if len(c.bufs) != 0 {
		t.Fatalf("%d bodies back in the Client's buffers after a measured Do, want 0 (dropped when their streams began)", len(c.bufs))
	}
	for _, q := range res.Requests {
		if q.BodyBytes == 0 {
			t.Fatalf("request without its body size: %+v", q)
		}
	}
	wres, err := c.Do(context.Background(), p.ForWarmup())
	if err != nil || wres.Err() != nil {
		t.Fatal(err, wres.Err())
	}
	if len(c.bufs) != len(many) {
		t.Fatalf("%d bodies back after a warmup of %d requests", len(c.bufs), len(many))
	}
}
