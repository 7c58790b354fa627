// Package dispatch sends a cell's plan (host/plan: its prompts, the worker of each, the request
// shape and max_tokens) to OpenAI-compatible /v1/completions servers over fasthttp (the only
// package of genload that imports it), streams the responses through host/sse and returns a
// recording: a recording.Result, which holds no transport type (Result, Sequence, Request,
// RequestError and the other value types here are aliases of host/recording's). Dispatch
// decides nothing about a cell: which prompt goes where, and in which shape, is in the plan.
//
// Every time in a Result is a monotonic offset from Result.Start, taken when bytes
// arrive; statistics are computed elsewhere (host/measure, from the recording alone).
//
// The files follow a request's life, and read in this order: client.go (the Client, its
// options, and Do, which runs the stages below for every request of a plan), body.go (build
// the bodies), send.go (wait for the send time, then the attempts: the round trip, its
// errors before a stream, the timers and abort state that bound the stream), connect.go (the
// connections, and the time a request took to write), stream.go (read the SSE stream, or
// ollama's NDJSON, stamping every read; the stall watch; the stream's errors), finish.go (how
// a request ends: whether a failure is retried, and the hint each failure gets). Beside
// them: load.go (the client's own load over a Do), probe.go, models.go and messages.go (what
// a server accepts, before a run), aliases.go (the recording's types). With Options.API
// ollama the same path posts to ollama's native /api/generate instead and reads its
// newline-delimited JSON stream (body.go's appendGenerate, sse's line mode).
package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/genload/genload/host/internal/clock"
	"github.com/genload/genload/host/plan"
	"github.com/genload/genload/host/sse"
	"github.com/valyala/fasthttp"
)

// Worker is one server endpoint. URL is a base URL ("http://127.0.0.1:8000", optionally
// ending in "/v1"; a URL ending in "/completions" is used as is); "" means
// Options.Target. Headers are added to every request sent to it (e.g. routing headers).
type Worker struct {
	Name    string
	URL     string
	Headers map[string]string
}

// Options configures a Client. Zero values are documented per field.
type Options struct {
	// Target is the base URL used by workers with an empty URL, and the only endpoint when
	// Workers is empty. Required unless every worker has a URL.
	Target string
	// Workers are the endpoints; empty means one worker at Target.
	Workers []Worker
	// Model is the body's "model"; "" omits the field.
	Model string
	// Temperature is the body's "temperature" (default 0: greedy).
	Temperature float64
	// Seed is the body's "seed"; nil omits it.
	Seed *int64
	// APIKey is sent as "Authorization: Bearer <key>"; "" sends no header. It never
	// appears in errors, logs or results.
	APIKey string
	// Retries is how many times a request is re-sent after a transport error, HTTP 429
	// or 5xx before its response body started (default 0: none). The wait before retry k
	// (1-based) is RetryDelay·2^(k−1), at least the server's Retry-After (seconds).
	// Other 4xx fail at once with the server's message.
	Retries int
	// RetryDelay is the first retry's wait (default 0: immediate).
	RetryDelay time.Duration
	// ConnectTimeout bounds a TCP connect (0 = none).
	ConnectTimeout time.Duration
	// SpareConns keeps that many TCP connections to each endpoint dialled ahead of need,
	// from New to Close (0: none): when the Client needs a new connection it takes a spare
	// and dials a replacement in the background, so that a request sent at an instant (a
	// replay's) does not wait for a TCP connect; a spare unused for 1.5–2.3 s is replaced
	// before a server's keep-alive timeout can close it. A TLS handshake still happens on
	// the request's path.
	SpareConns int
	// FirstTokenTimeout bounds the time from sending a request to its first token-bearing
	// chunk (0 = none).
	FirstTokenTimeout time.Duration
	// TotalTimeout bounds the time from sending a request to the end of its stream
	// (0 = none).
	TotalTimeout time.Duration
	// StallSteps, StallMin and Stall detect a stream that stops sending after its first
	// token (before it, FirstTokenTimeout applies): the stream fails with a timeout of kind
	// "stall" (a *StallError) when no byte arrives for Stall, or, when Stall is 0, for
	// max(StallMin, StallSteps × the stream's observed step time), the step being (time of
	// the last byte − time of the first token) ÷ tokens per sequence since (until a second
	// token, the time to the first token stands in for it). StallSteps = 0 and Stall = 0
	// (the zero Options) disable it. Cost: one atomic store per read, no timer reset per
	// chunk.
	StallSteps int
	StallMin   time.Duration
	Stall      time.Duration
	// GenerationDurationHeader and SpeculationAcceptanceHeader name response headers (or
	// trailers) whose values are copied into Request.Headers when present ("" = not
	// captured). See host/measure for how they are used.
	GenerationDurationHeader, SpeculationAcceptanceHeader string
	// ExtraBody adds top-level body fields (JSON-encoded once, keys sorted); a key that
	// genload also writes (e.g. "temperature", "stream_options") replaces genload's value.
	// "prompt" is rejected.
	ExtraBody map[string]any
	// ContinuousUsage adds "continuous_usage_stats":true to stream_options, so servers that
	// support it (vLLM, recent SGLang) report per-chunk token counts.
	ContinuousUsage bool
	// Logprobs is the body's "logprobs": how many most likely tokens the server lists per
	// generated token (default 0: the field is omitted; must not be negative). With 1 or
	// more, vLLM and SGLang list one entry per generated token in each chunk
	// (logprobs.tokens) and llama.cpp one per chunk (logprobs.content), which sse counts as
	// the chunk's exact token delta; TGI ignores it. It costs bytes on the wire and server
	// work per token.
	Logprobs int
	// KeepText keeps each sequence's generated text in the Result.
	KeepText bool
	// API is the server API the requests use: APIOpenAI ("", the default: POST
	// /v1/completions, SSE) or APIOllama (ollama's native POST /api/generate, one text
	// prompt per request, streamed as newline-delimited JSON whose final object carries the
	// server's own eval_count and eval_duration; see ollamaBody).
	API API
}

// API names a server API (Options.API).
type API string

// The APIs a Client speaks.
const (
	// APIOpenAI is POST /v1/completions, streamed as server-sent events.
	APIOpenAI API = "openai"
	// APIOllama is ollama's native POST /api/generate, streamed as newline-delimited JSON.
	APIOllama API = "ollama"
)

// Client sends requests; it is safe for concurrent use, but one Do (or Send, Warmup) at a
// time gives the cleanest measurements. Close it to release connections.
type Client struct {
	opts    Options
	workers []endpoint
	tmpl    *bodyTemplate
	hc      *fasthttp.Client
	conns   connSet
	// spares are the connections dialled ahead, by dial address (Options.SpareConns; nil
	// when none).
	spares map[string]*spares
	// big is the client with large read buffers that replaces hc for good once a response's
	// headers did not fit hc's (see readBufferSize); nil until then.
	big atomic.Pointer[fasthttp.Client]

	bufMu sync.Mutex
	bufs  [][]byte
}

// endpoint is a Worker as New resolved it: its name, the URL requests are posted to, and its
// headers sorted by name.
type endpoint struct {
	name    string
	url     string
	headers [][2]string
}

// New validates opts and returns a Client. Errors name the offending worker or field.
func New(opts Options) (*Client, error) {
	ws := opts.Workers
	if len(ws) == 0 {
		ws = []Worker{{Name: "target"}}
	}
	c := &Client{opts: opts}
	endpointURL := completionsURL
	switch opts.API {
	case "", APIOpenAI:
	case APIOllama:
		endpointURL = generateURL
	default:
		return nil, fmt.Errorf("dispatch: API %q: want %q or %q", opts.API, APIOpenAI, APIOllama)
	}
	for i, w := range ws {
		base := w.URL
		if base == "" {
			base = opts.Target
		}
		u, err := endpointURL(base)
		if err != nil {
			return nil, fmt.Errorf("dispatch: worker %d (%q): %w", i, w.Name, err)
		}
		e := endpoint{name: w.Name, url: u}
		for k, v := range w.Headers {
			e.headers = append(e.headers, [2]string{k, v})
		}
		sortHeaders(e.headers)
		c.workers = append(c.workers, e)
	}
	t, err := newBodyTemplate(&opts)
	if err != nil {
		return nil, err
	}
	c.tmpl = t
	c.conns.m = map[net.Addr]net.Conn{}
	c.hc = c.newHTTPClient(readBufferSize)
	if opts.SpareConns > 0 {
		c.spares = map[string]*spares{}
		for _, w := range c.workers {
			addr, err := dialAddr(w.url)
			if err == nil && c.spares[addr] == nil {
				c.spares[addr] = newSpares(addr, opts.SpareConns, spareMaxAge, c.dialSpare)
			}
		}
	}
	return c, nil
}

// completionsURL turns a base URL into the /v1/completions URL.
func completionsURL(base string) (string, error) {
	if base == "" {
		return "", errors.New("no URL (set target or the worker's url)")
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("bad URL %q: %w", base, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("bad URL %q: want http://host:port", base)
	}
	p := strings.TrimRight(u.Path, "/")
	switch {
	case strings.HasSuffix(p, "/completions"):
	case strings.HasSuffix(p, "/v1"):
		p += "/completions"
	default:
		p += "/v1/completions"
	}
	u.Path = p
	return u.String(), nil
}

// generateURL turns a base URL (optionally ending in /v1, /v1/completions or /api/generate)
// into ollama's native /api/generate URL.
func generateURL(base string) (string, error) {
	if _, err := completionsURL(base); err != nil { // the same checks
		return "", err
	}
	u, _ := url.Parse(base)
	u.Path = baseURL(u.Path) + "/api/generate"
	return u.String(), nil
}

// sortHeaders sorts name-value pairs by name in place (insertion sort: a worker has a few), so
// that a worker's headers are set in the same order at every request.
func sortHeaders(h [][2]string) {
	for i := 1; i < len(h); i++ {
		for j := i; j > 0 && h[j][0] < h[j-1][0]; j-- {
			h[j], h[j-1] = h[j-1], h[j]
		}
	}
}

// ollama reports whether the Client speaks ollama's native API.
func (c *Client) ollama() bool { return c.opts.API == APIOllama }

// Close closes idle, open and spare connections.
func (c *Client) Close() {
	for _, s := range c.spares {
		s.close()
	}
	c.hc.CloseIdleConnections()
	if b := c.big.Load(); b != nil {
		b.CloseIdleConnections()
	}
	c.conns.closeAll()
}

// OpenConns returns the number of TCP connections the Client holds open (idle or busy),
// for leak checks.
func (c *Client) OpenConns() int {
	c.conns.mu.Lock()
	defer c.conns.mu.Unlock()
	return len(c.conns.m)
}

// Send is Do of the plan plan.ForPrompts(mode, prompts) over the Client's workers: the measured
// request(s) of token-id prompts with max_tokens = maxTokens.
func (c *Client) Send(ctx context.Context, mode Mode, prompts [][]int32, maxTokens int) (*Result, error) {
	p, err := c.shaped(mode, prompts, nil, maxTokens, false)
	if err != nil {
		return nil, err
	}
	return c.Do(ctx, p)
}

// SendText is Send with string prompts, JSON-escaped (invalid UTF-8 becomes U+FFFD).
func (c *Client) SendText(ctx context.Context, mode Mode, prompts []string, maxTokens int) (*Result, error) {
	if prompts == nil {
		prompts = []string{}
	}
	p, err := c.shaped(mode, nil, prompts, maxTokens, false)
	if err != nil {
		return nil, err
	}
	return c.Do(ctx, p)
}

// Warmup sends the prompts as Send would, with max_tokens = 1, as a warmup (in-stream 429
// and 5xx retried too), and waits for every stream to end. The returned error joins the
// failures (each a *RequestError).
func (c *Client) Warmup(ctx context.Context, mode Mode, prompts [][]int32) error {
	return c.warm(ctx, mode, prompts, nil)
}

// WarmupText is Warmup with string prompts (for servers that accept only strings, such
// as TGI).
func (c *Client) WarmupText(ctx context.Context, mode Mode, prompts []string) error {
	if prompts == nil {
		prompts = []string{}
	}
	return c.warm(ctx, mode, nil, prompts)
}

// warm is Warmup of the token-id prompts ids, or of the string prompts texts.
func (c *Client) warm(ctx context.Context, mode Mode, ids [][]int32, texts []string) error {
	p, err := c.shaped(mode, ids, texts, 1, true)
	if err != nil {
		return err
	}
	res, err := c.Do(ctx, p)
	if err != nil {
		return err
	}
	return res.Err()
}

// shaped is plan.ForPrompts over the Client's workers.
func (c *Client) shaped(mode Mode, ids [][]int32, texts []string, maxTokens int, warm bool) (*plan.Plan, error) {
	p, err := plan.ForPrompts(mode, ids, texts, len(c.workers), maxTokens)
	if err != nil {
		return nil, fmt.Errorf("dispatch: %w", err)
	}
	p.Warmup = warm
	return p, nil
}

// Body returns the exact request bodies Do would post for plan p (one per request), for
// inspection and tests.
func (c *Client) Body(p *plan.Plan) ([][]byte, error) {
	ps, err := c.calls(p)
	if err != nil {
		return nil, err
	}
	defer c.putBufs(ps)
	out := make([][]byte, len(ps))
	for i, q := range ps {
		if q.stream != nil {
			b, err := io.ReadAll(q.stream)
			if err != nil {
				return nil, err
			}
			out[i] = b
			continue
		}
		out[i] = append([]byte(nil), q.body...)
	}
	return out, nil
}

// Do sends plan p's requests (each to its worker, with max_tokens = p.MaxTokens) and streams
// them to the end. The error is non-nil only when nothing could be sent (no prompts, an empty
// prompt, a request naming a worker or prompt that does not exist); failures of individual
// requests are in Result.Requests[i].Err (see Result.Err) and their sequences stay in the
// Result, B of them in request order (sequence k of a request continues its prompt
// Prompts[k / N]). Failures before a response body started (transport, 429, 5xx) are retried
// (Options.Retries, RetryDelay); a warmup plan (p.Warmup) also retries an in-stream error with
// code 429 or ≥ 500.
//
// Result.Client records the client's own load: the time to build the bodies, each request's
// write time (Request.Write) against its TTFT, the process's CPU share and the scheduler's
// latency while the streams ran (recording.ClientLoad.Bottleneck says when they limited the
// figures).
//
// Canceling ctx aborts the streams at once (Kind KindCanceled) and closes every
// connection of the Client, including idle ones. After [DONE] a stream is read to its
// end so that its connection can be reused; TotalTimeout bounds that too.
func (c *Client) Do(ctx context.Context, p *plan.Plan) (*Result, error) {
	tb := time.Now()
	ps, err := c.calls(p)
	if err != nil {
		return nil, err
	}
	build := time.Since(tb)
	defer c.putBufs(ps)
	mode := p.Shape
	if mode == "" {
		mode = ModeArray
	}
	maxTokens, warm := p.MaxTokens, p.Warmup

	// Sequences: each request owns a contiguous range of them (call.seqs) and fills it when it
	// ends (do). A request that failed before its stream leaves empty records; indices a
	// request did not ask for are dropped.
	total := 0
	for ri := range ps {
		total += ps[ri].want()
	}
	res := &Result{Mode: mode, MaxTokens: maxTokens, Requests: make([]Request, len(ps)), Sequences: make([]Sequence, total)}
	off := 0
	for ri := range ps {
		q := &ps[ri]
		for k := range q.want() {
			res.Sequences[off+k] = Sequence{Sequence: sse.Sequence{Index: k}, Prompt: q.prompts[k/q.n], Request: ri}
		}
		q.seqs = res.Sequences[off : off+q.want()]
		q.small = len(ps) >= smallReaderStreams
		off += len(q.seqs)
	}

	// One context watch for the whole Do (not one per request): canceling ctx aborts the
	// streams under way, then closes every connection, which unblocks requests still
	// waiting for headers.
	aborts := make([]abortState, len(ps))
	if stallEnabled(&c.opts) {
		// A stream is stalled only when no stream of the Do received a byte: a server
		// that prefills other requests' prompts pauses this one but sends their tokens.
		anyByte := new(atomic.Int64)
		for i := range aborts {
			aborts[i].anyByte, aborts[i].streams = anyByte, len(ps)
		}
	}
	stop := context.AfterFunc(ctx, func() {
		for i := range aborts {
			aborts[i].cancel(ctx.Err())
		}
		c.conns.closeAll()
	})
	defer stop()

	if !p.SendAt.IsZero() {
		clock.HoldUntilContext(ctx, p.SendAt) // a replay's instant: its P kept for the last 1 ms
	}
	load := startLoad()
	res.Start = time.Now()
	var wg sync.WaitGroup
	for i := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.do(ctx, res.Start, &ps[i], &res.Requests[i], &aborts[i], maxTokens, warm)
		}()
	}
	wg.Wait()
	load.finish(res, build)
	for i := range aborts {
		if aborts[i].stall != nil {
			stallPool.Put(aborts[i].stall)
		}
	}
	addHints(res, p.Texts != nil)
	return res, nil
}
