package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"regexp"
	"strings"
	"time"

	"github.com/genload/genload/host/internal/jsonenc"
	"github.com/valyala/fasthttp"
)

// Shape is a /v1/completions prompt shape, a request shape (Mode) with a prompt format.
type Shape string

// The four prompt shapes, in genload's order of preference: exact token ids before text, one
// request for the batch before one per prompt.
const (
	// ShapeIDLists is "prompt": [[ids…], [ids…]] (mode "array", format "tokens").
	ShapeIDLists Shape = "id-lists"
	// ShapeIDs is "prompt": [ids…], one request per prompt (mode "routed", format "tokens").
	ShapeIDs Shape = "ids"
	// ShapeStrings is "prompt": ["text", "text"] (mode "array", format "text").
	ShapeStrings Shape = "strings"
	// ShapeString is "prompt": "text", one request per prompt (mode "routed", format "text").
	ShapeString Shape = "string"
)

// Shapes lists every Shape in order of preference.
var Shapes = []Shape{ShapeIDLists, ShapeIDs, ShapeStrings, ShapeString}

// Mode returns the request shape that sends s.
func (s Shape) Mode() Mode {
	if s == ShapeIDLists || s == ShapeStrings {
		return ModeArray
	}
	return ModeRouted
}

// Text reports whether s carries text (not token ids).
func (s Shape) Text() bool { return s == ShapeStrings || s == ShapeString }

// Describe names s in the server's terms: "an array of token-id lists", "one token-id list",
// "an array of strings", "a string".
func (s Shape) Describe() string {
	switch s {
	case ShapeIDLists:
		return "an array of token-id lists"
	case ShapeIDs:
		return "one token-id list"
	case ShapeStrings:
		return "an array of strings"
	}
	return "a string"
}

// ShapeResult is what a server answered to one prompt shape.
type ShapeResult struct {
	Shape Shape `json:"shape"`
	// Accepted: every sequence of the tiny request finished with no error.
	Accepted bool `json:"accepted"`
	// Error is the failure (with its hint) when not Accepted.
	Error string `json:"error,omitempty"`
	// Err is the failure as an error (a joined *RequestError), nil when Accepted.
	Err error `json:"-"`
	// Usage: the stream carried usage (a final usage chunk, or usage on its choices);
	// ContinuousUsage: every token chunk carried a running completion_tokens.
	Usage           bool `json:"usage"`
	ContinuousUsage bool `json:"continuous_usage"`
}

// Capabilities is what the capability probe found out about one server.
type Capabilities struct {
	// URL is the /v1/completions URL probed.
	URL string `json:"url"`
	// Shapes has one result per probed shape, in the order probed.
	Shapes []ShapeResult `json:"shapes"`
	// Metrics: GET /metrics answered 200 with Prometheus text; MetricsError says why not.
	Metrics      bool   `json:"metrics"`
	MetricsError string `json:"metrics_error,omitempty"`
	// Tokenize is the server's tokenize endpoint, nil when none answered; TokenizeError
	// says why.
	Tokenize      *TokenCounter `json:"tokenize,omitempty"`
	TokenizeError string        `json:"tokenize_error,omitempty"`
}

// Shape returns the result for s, nil when s was not probed.
func (c *Capabilities) Shape(s Shape) *ShapeResult {
	for i := range c.Shapes {
		if c.Shapes[i].Shape == s {
			return &c.Shapes[i]
		}
	}
	return nil
}

// ProbeMaxTokens is the max_tokens of the probe's requests: 2, so that a running per-chunk
// usage can be told from a final one.
const ProbeMaxTokens = 2

// ProbeShapes sends one tiny request per shape in shapes (max_tokens = ProbeMaxTokens) to
// the Client's first worker, with ids (two short prompts, as token ids) or texts (the same
// prompts as text), and reports which shapes the server accepts and whether it streams
// usage. The requests are the Client's own (model, extra_body, stream_options…), without
// retries. An error is returned only when nothing could be sent.
func (c *Client) ProbeShapes(ctx context.Context, shapes []Shape, ids [][]int32, texts []string) ([]ShapeResult, error) {
	if len(ids) == 0 || len(ids) != len(texts) {
		return nil, fmt.Errorf("dispatch: probe needs as many text prompts as id prompts, got %d and %d", len(texts), len(ids))
	}
	o := c.opts
	o.Retries = 0
	if len(o.Workers) > 1 {
		o.Workers = o.Workers[:1]
	}
	pc, err := New(o)
	if err != nil {
		return nil, err
	}
	defer pc.Close()
	out := make([]ShapeResult, 0, len(shapes))
	for _, s := range shapes {
		if c.ollama() && s != ShapeString {
			msg := "ollama's native API takes one text prompt per request"
			out = append(out, ShapeResult{Shape: s, Error: msg, Err: errors.New(msg)})
			continue
		}
		pi, pt := ids, []string(nil)
		if s.Text() {
			pi, pt = nil, texts
		}
		if s.Mode() == ModeRouted {
			// one prompt is enough to see a single prompt accepted
			if s.Text() {
				pt = texts[:1]
			} else {
				pi = ids[:1]
			}
		}
		p, err := pc.shaped(s.Mode(), pi, pt, ProbeMaxTokens, true)
		if err != nil {
			return nil, err
		}
		res, err := pc.Do(ctx, p)
		if err != nil {
			return nil, err
		}
		r := ShapeResult{Shape: s, Err: res.Err()}
		if r.Err != nil {
			r.Error = r.Err.Error()
		} else {
			r.Accepted = true
		}
		r.Usage, r.ContinuousUsage = usageOf(res)
		out = append(out, r)
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
	}
	return out, nil
}

// usageOf reports whether every request of res carried usage (a final usage chunk or usage
// on its choices), and whether every token chunk carried a running completion_tokens that
// grew (continuous usage; all-zero counts on every chunk are not).
func usageOf(res *Result) (usage, continuous bool) {
	usage, continuous = len(res.Requests) > 0, true
	marks := 0
	for i := range res.Requests {
		usage = usage && res.Requests[i].HasUsage
	}
	for i := range res.Sequences {
		s := &res.Sequences[i].Sequence
		for k := range s.Marks.Len() {
			marks++
			if s.Marks.Get(k).Tokens < 1 {
				continuous = false
			}
		}
	}
	return usage, continuous && marks > 0
}

// Probe runs the whole capability probe against the Client's first worker: ProbeShapes,
// then GET /metrics and the tokenize endpoint (ProbeTokenize) with texts[0]. timeout bounds
// each of the last two (0 = 10 s).
func (c *Client) Probe(ctx context.Context, shapes []Shape, ids [][]int32, texts []string, timeout time.Duration) (*Capabilities, error) {
	caps := &Capabilities{URL: c.workers[0].url}
	var err error
	if caps.Shapes, err = c.ProbeShapes(ctx, shapes, ids, texts); err != nil {
		return caps, err
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	base := baseURL(c.workers[0].url)
	if err := probeMetrics(ctx, base, c.opts.APIKey, timeout); err != nil {
		caps.MetricsError = err.Error()
	} else {
		caps.Metrics = true
	}
	tc, err := ProbeTokenize(ctx, base, c.opts.APIKey, texts[0], timeout)
	if err != nil {
		caps.TokenizeError = err.Error()
	} else {
		caps.Tokenize = tc
	}
	return caps, nil
}

// baseURL is the server root of a /v1/completions or /api/generate URL (or of a base URL).
func baseURL(u string) string {
	u = strings.TrimRight(u, "/")
	if v, ok := strings.CutSuffix(u, "/api/generate"); ok {
		return v
	}
	u = strings.TrimSuffix(u, "/completions")
	return strings.TrimSuffix(u, "/v1")
}

// doSimple makes one non-streamed request and returns status and body (bounded to 1 MiB).
func doSimple(ctx context.Context, method, url, apiKey string, body []byte, timeout time.Duration) (int, []byte, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(url)
	req.Header.SetMethod(method)
	if body != nil {
		req.Header.SetContentType("application/json")
		req.SetBodyRaw(body)
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		timeout = time.Until(d)
	}
	if err := fasthttp.DoTimeout(req, resp, timeout); err != nil {
		if errors.Is(err, fasthttp.ErrTimeout) {
			return 0, nil, fmt.Errorf("%s %s: no answer within %v", method, url, timeout)
		}
		return 0, nil, fmt.Errorf("%s %s: %v", method, url, err)
	}
	b := resp.Body()
	if len(b) > 1<<20 {
		b = b[:1<<20]
	}
	return resp.StatusCode(), append([]byte(nil), b...), nil
}

// ProbeOllama asks the server at base (its base URL, optionally ending in /v1) for GET
// /api/version, which ollama answers {"version":"0.6.8"}: it returns the version when the
// answer is 200 with a JSON object whose "version" is a non-empty string, else an error
// saying what came (unreachable, the status, or the body). apiKey is sent as a Bearer token
// and never appears in errors; timeout bounds the request (0 = 10 s).
func ProbeOllama(ctx context.Context, base, apiKey string, timeout time.Duration) (string, error) {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	u := baseURL(base) + "/api/version"
	st, b, err := doSimple(ctx, fasthttp.MethodGet, u, apiKey, nil, timeout)
	if err != nil {
		return "", err
	}
	if st != fasthttp.StatusOK {
		return "", fmt.Errorf("GET %s: status %d", u, st)
	}
	var v struct {
		Version *string `json:"version"`
	}
	if json.Unmarshal(b, &v) != nil || v.Version == nil || *v.Version == "" {
		return "", fmt.Errorf("GET %s: status 200 but not ollama's {\"version\": …}: %s", u, firstBytes(b))
	}
	return *v.Version, nil
}

// probeMetrics checks that GET <base>/metrics answers 200 with Prometheus text.
func probeMetrics(ctx context.Context, base, apiKey string, timeout time.Duration) error {
	u := base + "/metrics"
	st, b, err := doSimple(ctx, fasthttp.MethodGet, u, apiKey, nil, timeout)
	switch {
	case err != nil:
		return err
	case st != fasthttp.StatusOK:
		return fmt.Errorf("GET %s: status %d", u, st)
	case !strings.Contains(string(b), "# TYPE") && !strings.Contains(string(b), "# HELP"):
		return fmt.Errorf("GET %s: status 200 but not Prometheus text: %s", u, firstBytes(b))
	}
	return nil
}

// TokenCounter counts tokens with a server's own tokenizer through its tokenize endpoint,
// as the server tokenizes a completion prompt (special tokens such as BOS included). It is
// safe for concurrent use.
type TokenCounter struct {
	// URL is the endpoint (".../tokenize").
	URL string `json:"url"`
	// Dialect is the request shape the endpoint took: "prompt" ({"prompt",
	// "add_special_tokens": true} → {"count"|"tokens"}: vLLM, SGLang, genload's engine),
	// "content" ({"content", "add_special": true} → {"tokens"}: llama.cpp, whose default
	// leaves out the BOS its completions add) or "inputs" ({"inputs"} → [{id…}]: TGI).
	Dialect string `json:"dialect"`
	apiKey  string
	timeout time.Duration
}

// tokenizeDialects are tried in order; each returns the body for text.
var tokenizeDialects = []struct {
	name string
	body func(text string) []byte
}{
	{"prompt", func(t string) []byte {
		return append(jsonenc.AppendString([]byte(`{"prompt":`), t), `,"add_special_tokens":true}`...)
	}},
	{"content", func(t string) []byte {
		return append(jsonenc.AppendString([]byte(`{"content":`), t), `,"add_special":true}`...)
	}},
	{"inputs", func(t string) []byte { return append(jsonenc.AppendString([]byte(`{"inputs":`), t), '}') }},
}

// ProbeTokenize finds the tokenize endpoint of the server at base (POST <base>/tokenize,
// in the shapes of vLLM/SGLang, llama.cpp and TGI, tried in that order) by counting text
// (which must not be empty): the first shape answering a count > 0 wins. The error lists
// what each shape got.
func ProbeTokenize(ctx context.Context, base, apiKey, text string, timeout time.Duration) (*TokenCounter, error) {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	var why []string
	for _, d := range tokenizeDialects {
		tc := &TokenCounter{URL: base + "/tokenize", Dialect: d.name, apiKey: apiKey, timeout: timeout}
		n, err := tc.Count(ctx, text)
		if err == nil && n > 0 {
			return tc, nil
		}
		if err == nil {
			err = fmt.Errorf("%s: 0 tokens", d.name)
		}
		why = append(why, err.Error())
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("no tokenize endpoint: %s", strings.Join(why, "; "))
}

// Count returns the number of tokens the server makes of text as a completion prompt. The
// error names the URL, the status and what came back.
func (t *TokenCounter) Count(ctx context.Context, text string) (int, error) {
	var body []byte
	for _, d := range tokenizeDialects {
		if d.name == t.Dialect {
			body = d.body(text)
		}
	}
	if body == nil {
		return 0, fmt.Errorf("dispatch: unknown tokenize dialect %q", t.Dialect)
	}
	st, b, err := doSimple(ctx, fasthttp.MethodPost, t.URL, t.apiKey, body, t.timeout)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", t.Dialect, err)
	}
	if st != fasthttp.StatusOK {
		return 0, fmt.Errorf("%s: POST %s: status %d: %s", t.Dialect, t.URL, st, serverMessage(b))
	}
	if t.Dialect == "inputs" {
		var list []json.RawMessage
		if err := json.Unmarshal(b, &list); err != nil {
			return 0, fmt.Errorf("%s: POST %s: expected a JSON list of tokens, got: %s", t.Dialect, t.URL, firstBytes(b))
		}
		return len(list), nil
	}
	var v struct {
		Count  *int              `json:"count"`
		Tokens []json.RawMessage `json:"tokens"`
	}
	if err := json.Unmarshal(b, &v); err != nil || v.Count == nil && v.Tokens == nil {
		return 0, fmt.Errorf("%s: POST %s: expected {\"count\"} or {\"tokens\"}, got: %s", t.Dialect, t.URL, firstBytes(b))
	}
	if v.Count != nil {
		return *v.Count, nil
	}
	return len(v.Tokens), nil
}

// titleRe finds an HTML page's <title>.
var titleRe = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)

// NotOpenAI words, on one line, a response that shows the target is not an OpenAI-compatible
// server — an HTML page or any body that is not JSON — as what was seen: "GET
// http://h:8000/v1/models answered HTTP 404 with an HTML page titled \"Error response\": this
// is not an OpenAI-compatible server (…)"; for a 5xx status other than 501 it suggests a
// proxy in front of a server that is down or loading instead. It returns "" for a JSON body
// (an OpenAI-compatible server's error or answer). status is the HTTP status, contentType the
// Content-Type ("" for none).
func NotOpenAI(method, url string, status int, contentType string, body []byte) string {
	seen, ok := nonJSON(contentType, body)
	if !ok {
		return ""
	}
	if proxied(status) {
		return fmt.Sprintf("%s %s answered HTTP %d with %s, %s", method, url, status, seen, adviceProxy)
	}
	return fmt.Sprintf("%s %s answered HTTP %d with %s: %s", method, url, status, seen, adviceNotOpenAI)
}

// The advice NotOpenAI and a streamed request's error give about a body that is not JSON.
const (
	adviceNotOpenAI = "this is not an OpenAI-compatible server (check the target: the base URL of a vLLM, SGLang, llama.cpp or TGI server, such as http://127.0.0.1:8000)"
	adviceProxy     = "not an OpenAI-compatible server's JSON error: a proxy in front of the server? (the server may be down or still loading)"
)

// proxied reports a status that a proxy answers for a server behind it that is down or still
// loading (a 5xx other than 501 Not Implemented, which is the server's own "no such method").
func proxied(status int) bool { return status >= 500 && status != fasthttp.StatusNotImplemented }

// nonJSON describes a body that is not a JSON object or array on one line — "an empty body",
// "an HTML page titled \"Error response\"", "text/plain, not JSON: \"busy\"" — and reports
// whether it is one.
func nonJSON(contentType string, body []byte) (string, bool) {
	trimmed := bytes.TrimSpace(body)
	if json.Valid(trimmed) && len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		return "", false
	}
	switch {
	case len(trimmed) == 0:
		return "an empty body", true
	case isHTML(contentType, trimmed):
		return htmlPage(body), true
	}
	ct := contentType
	if ct == "" {
		ct = "no Content-Type"
	}
	return fmt.Sprintf("%s, not JSON: %q", ct, short(firstBytes(trimmed))), true
}

// htmlPage describes an HTML page by its title — "an HTML page titled \"Error response\"" —
// else by the start of its text: "an HTML page reading \"bad gateway\"".
func htmlPage(body []byte) string {
	if m := titleRe.FindSubmatch(body); m != nil {
		if t := strings.Join(strings.Fields(html.UnescapeString(string(m[1]))), " "); t != "" {
			return fmt.Sprintf("an HTML page titled %q", short(t))
		}
	}
	text := strings.Join(strings.Fields(html.UnescapeString(tagRe.ReplaceAllString(string(body[:min(len(body), 4096)]), " "))), " ")
	if text == "" {
		return "an HTML page"
	}
	if r := []rune(text); len(r) > 80 {
		text = string(r[:80]) + "…"
	}
	return fmt.Sprintf("an HTML page reading %q", text)
}

// tagRe matches an HTML tag, a comment or a doctype.
var tagRe = regexp.MustCompile(`(?s)<!--.*?-->|<[^>]*>`)

// isHTML reports a body an HTML page: by its Content-Type or its first bytes.
func isHTML(contentType string, body []byte) bool {
	lower := bytes.ToLower(bytes.TrimSpace(body[:min(len(body), 512)]))
	return strings.HasPrefix(strings.ToLower(contentType), "text/html") || bytes.HasPrefix(lower, []byte("<!doctype html")) || bytes.HasPrefix(lower, []byte("<html"))
}

// NotOpenAIAnswer returns, for a failed request whose server answered with an HTML page (a
// web server or proxy that is not an OpenAI-compatible server), an error of the one line
// NotOpenAI gives for it — "POST http://h/v1/completions answered HTTP 501 with an HTML page
// titled \"Error response\": this is not an OpenAI-compatible server (…)" — wrapping err,
// and true; err itself and false for any other error.
func NotOpenAIAnswer(err error) (error, bool) {
	var re *RequestError
	if !errors.As(err, &re) || re.Kind != KindHTTP || (re.Hint != adviceNotOpenAI && re.Hint != adviceProxy) {
		return err, false
	}
	sep := ": "
	if re.Hint == adviceProxy {
		sep = ", "
	}
	return &notOpenAIError{fmt.Sprintf("POST %s answered HTTP %d with %s%s%s", re.URL, re.Status, re.Message, sep, re.Hint), err}, true
}

// notOpenAIError is NotOpenAIAnswer's error: its line, and the request's error.
type notOpenAIError struct {
	msg string
	err error
}

// Error is the one-line message.
func (e *notOpenAIError) Error() string { return e.msg }

// Unwrap returns the request's error.
func (e *notOpenAIError) Unwrap() error { return e.err }
