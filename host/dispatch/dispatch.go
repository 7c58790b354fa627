// Package dispatch sends a cell's prompts to an OpenAI-compatible /v1/completions server
// over fasthttp (the only package of genload that imports it), in one of three request
// shapes, streams the responses through host/sse and returns a recording: a
// recording.Result, which holds no transport type (Result, Sequence, Request, RequestError
// and the other value types here are aliases of host/recording's).
//
// Every time in a Result is a monotonic offset from Result.Start, taken when bytes
// arrive; statistics are computed elsewhere (host/measure, from the recording alone).
package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/sse"
	"github.com/valyala/fasthttp"
)

// Mode is the recording type: see recording.Mode.
type Mode = recording.Mode

// The three request shapes: the recording's (see recording.ModeArray).
const (
	ModeArray  = recording.ModeArray
	ModeRouted = recording.ModeRouted
	ModeN      = recording.ModeN
)

// Worker is one server endpoint. URL is a base URL ("http://127.0.0.1:8000", optionally
// ending in "/v1"; a URL ending in "/completions" is used as is); "" means
// Options.Target. Headers are added to every request sent to it (e.g. routing headers).
type Worker struct {
	Name    string
	URL     string
	Headers map[string]string
}

// Router assigns prompts to workers: given the prompt lengths in tokens and the worker
// count W, it returns one worker index in [0, W) per prompt. The router plugin
// (host/plugin) implements it.
type Router interface {
	Route(ctx context.Context, promptLens []int, workers int) ([]int, error)
}

// Options configures a Client. Zero values are documented per field.
type Options struct {
	// Target is the base URL used by workers with an empty URL, and the only endpoint when
	// Workers is empty. Required unless every worker has a URL.
	Target string
	// Workers are the endpoints; empty means one worker at Target.
	Workers []Worker
	// Router picks workers in ModeRouted; nil means round robin (prompt i → worker i mod W).
	Router Router
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
}

// Client sends requests; it is safe for concurrent use, but one Send at a time gives the
// cleanest measurements. Close it to release connections.
type Client struct {
	opts    Options
	workers []endpoint
	tmpl    *bodyTemplate
	hc      *fasthttp.Client
	conns   connSet
	// big is the client with large read buffers that replaces hc for good once a response's
	// headers did not fit hc's (see readBufferSize); nil until then.
	big atomic.Pointer[fasthttp.Client]

	bufMu sync.Mutex
	bufs  [][]byte
}

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
	for i, w := range ws {
		base := w.URL
		if base == "" {
			base = opts.Target
		}
		u, err := completionsURL(base)
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
	return c, nil
}

// Per-connection read buffers. A connection holds one from sending a request to the end of
// its stream, so at 512 streams they are a large part of the client's memory (and of the
// heap the garbage collector paces itself on): 4 KiB, fasthttp's default. The buffer also
// bounds the response headers; a response whose headers do not fit fails with
// fasthttp.ErrSmallBuffer, and the Client then switches for good to bigReadBufferSize and
// sends the request again (once, not counted as a retry). In practice the first warmup
// pays for it.
const (
	readBufferSize    = 4 << 10
	bigReadBufferSize = 64 << 10
)

func (c *Client) newHTTPClient(readBuf int) *fasthttp.Client {
	return &fasthttp.Client{
		Name:                      "genload",
		StreamResponseBody:        true,
		MaxConnsPerHost:           1 << 16,
		MaxIdemponentCallAttempts: 1,
		ReadBufferSize:            readBuf,
		WriteBufferSize:           16 << 10,
		MaxIdleConnDuration:       4 * time.Second, // below uvicorn's 5 s keep-alive (vLLM, SGLang)
		Dial:                      c.dial,
	}
}

// httpClient returns the fasthttp client in use.
func (c *Client) httpClient() *fasthttp.Client {
	if b := c.big.Load(); b != nil {
		return b
	}
	return c.hc
}

// growReadBuffers switches to the client with big read buffers.
func (c *Client) growReadBuffers() {
	if c.big.Load() == nil {
		c.big.CompareAndSwap(nil, c.newHTTPClient(bigReadBufferSize))
	}
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

func sortHeaders(h [][2]string) {
	for i := 1; i < len(h); i++ {
		for j := i; j > 0 && h[j][0] < h[j-1][0]; j-- {
			h[j], h[j-1] = h[j-1], h[j]
		}
	}
}

// Close closes idle and open connections.
func (c *Client) Close() {
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

// Result is the recording type: see recording.Result. Its Err and Retried methods are
// recording's.
type Result = recording.Result

// Sequence is the recording type: see recording.Sequence.
type Sequence = recording.Sequence

// Request is the recording type: see recording.Request.
type Request = recording.Request

// ErrorKind is the recording type: see recording.ErrorKind.
type ErrorKind = recording.ErrorKind

// Error kinds: the recording's (see recording.KindTransport).
const (
	KindTransport = recording.KindTransport
	KindHTTP      = recording.KindHTTP
	KindServer    = recording.KindServer
	KindStream    = recording.KindStream
	KindTimeout   = recording.KindTimeout
	KindCanceled  = recording.KindCanceled
)

// RequestError is the recording type: see recording.RequestError.
type RequestError = recording.RequestError

// plan is one HTTP request to make.
type plan struct {
	worker  int
	prompts []int
	n       int
	body    []byte
	// seqs are the request's records in Result.Sequences (set by send, filled by do).
	seqs []Sequence
}

// want is the number of sequences the request yields: one per prompt, or n in ModeN.
func (p *plan) want(mode Mode) int {
	if mode == ModeN {
		return p.n
	}
	return len(p.prompts)
}

func (c *Client) plans(ctx context.Context, mode Mode, prompts promptSet, maxTokens int) ([]plan, error) {
	np := prompts.Len()
	if np == 0 {
		return nil, errors.New("dispatch: no prompts")
	}
	for i := range np {
		if prompts.Empty(i) {
			return nil, fmt.Errorf("dispatch: prompt %d is empty", i)
		}
	}
	all := make([]int, np)
	for i := range all {
		all[i] = i
	}
	switch mode {
	case ModeArray, "":
		b := c.getBuf(bodySize(prompts, all))
		return []plan{{worker: 0, prompts: all, n: 1, body: c.tmpl.appendBody(b, prompts, all, true, 1, maxTokens)}}, nil
	case ModeN:
		b := c.getBuf(bodySize(prompts, all[:1]))
		return []plan{{worker: 0, prompts: all, n: np, body: c.tmpl.appendBody(b, prompts, all[:1], false, np, maxTokens)}}, nil
	case ModeRouted:
		assign := make([]int, np)
		if c.opts.Router != nil {
			lens := make([]int, np)
			for i := range lens {
				lens[i] = prompts.Tokens(i)
			}
			a, err := c.opts.Router.Route(ctx, lens, len(c.workers))
			if err != nil {
				return nil, fmt.Errorf("dispatch: router: %w", err)
			}
			if len(a) != np {
				return nil, fmt.Errorf("dispatch: router returned %d workers for %d prompts", len(a), np)
			}
			for i, w := range a {
				if w < 0 || w >= len(c.workers) {
					return nil, fmt.Errorf("dispatch: router sent prompt %d to worker %d, want [0, %d)", i, w, len(c.workers))
				}
			}
			copy(assign, a)
		} else {
			for i := range assign {
				assign[i] = i % len(c.workers)
			}
		}
		ps := make([]plan, np)
		for i := range np {
			one := all[i : i+1]
			b := c.getBuf(bodySize(prompts, one))
			ps[i] = plan{worker: assign[i], prompts: one, n: 1, body: c.tmpl.appendBody(b, prompts, one, false, 1, maxTokens)}
		}
		return ps, nil
	}
	return nil, fmt.Errorf("dispatch: unknown mode %q (want array, routed or n)", mode)
}

func (c *Client) getBuf(size int) []byte {
	c.bufMu.Lock()
	defer c.bufMu.Unlock()
	best := -1
	for i, b := range c.bufs {
		if cap(b) >= size && (best < 0 || cap(b) < cap(c.bufs[best])) {
			best = i
		}
	}
	if best < 0 {
		if len(c.bufs) == 0 {
			return make([]byte, 0, size)
		}
		best = len(c.bufs) - 1
	}
	b := c.bufs[best]
	c.bufs = append(c.bufs[:best], c.bufs[best+1:]...)
	return b[:0]
}

func (c *Client) putBufs(ps []plan) {
	c.bufMu.Lock()
	defer c.bufMu.Unlock()
	for _, p := range ps {
		c.bufs = append(c.bufs, p.body[:0])
	}
	// keep at most 1024 buffers
	if len(c.bufs) > 1024 {
		c.bufs = c.bufs[len(c.bufs)-1024:]
	}
}

// Body returns the exact request bodies Send would post for these inputs (one per
// request), for inspection and tests.
func (c *Client) Body(mode Mode, prompts [][]int32, maxTokens int) ([][]byte, error) {
	ps, err := c.plans(context.Background(), mode, idPrompts(prompts), maxTokens)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(ps))
	for i, p := range ps {
		out[i] = append([]byte(nil), p.body...)
	}
	return out, nil
}

// Warmup sends the cell's prompts in the same shape and to the same workers as Send
// would, with max_tokens = 1, and waits for every stream to end. Transport errors, 429,
// 5xx — and in-stream errors with code 429 or ≥ 500 — are retried (Options.Retries,
// RetryDelay); any other failure returns at once, a 4xx with the server's message.
// The returned error joins the failures (each a *RequestError).
func (c *Client) Warmup(ctx context.Context, mode Mode, prompts [][]int32) error {
	res, err := c.send(ctx, mode, idPrompts(prompts), 1, true)
	if err != nil {
		return err
	}
	return res.Err()
}

// WarmupResult is Warmup returning the Result too (nil when nothing could be sent), for
// its requests' resends (Result.Retried) and statuses.
func (c *Client) WarmupResult(ctx context.Context, mode Mode, prompts [][]int32) (*Result, error) {
	res, err := c.send(ctx, mode, idPrompts(prompts), 1, true)
	if err != nil {
		return nil, err
	}
	return res, res.Err()
}

// WarmupTextResult is WarmupText returning the Result too, as WarmupResult.
func (c *Client) WarmupTextResult(ctx context.Context, mode Mode, prompts []string, lens []int) (*Result, error) {
	res, err := c.send(ctx, mode, textPrompts{prompts, lens}, 1, true)
	if err != nil {
		return nil, err
	}
	return res, res.Err()
}

// WarmupText is Warmup with string prompts (for servers that accept only strings, such
// as TGI). lens are the prompts' lengths in tokens, given to the Router (nil: byte
// lengths).
func (c *Client) WarmupText(ctx context.Context, mode Mode, prompts []string, lens []int) error {
	res, err := c.send(ctx, mode, textPrompts{prompts, lens}, 1, true)
	if err != nil {
		return err
	}
	return res.Err()
}

// SendText is Send with string prompts, JSON-escaped (invalid UTF-8 becomes U+FFFD).
// lens are the prompts' lengths in tokens, given to the Router (nil: byte lengths).
func (c *Client) SendText(ctx context.Context, mode Mode, prompts []string, lens []int, maxTokens int) (*Result, error) {
	if lens != nil && len(lens) != len(prompts) {
		return nil, fmt.Errorf("dispatch: %d lengths for %d prompts", len(lens), len(prompts))
	}
	return c.send(ctx, mode, textPrompts{prompts, lens}, maxTokens, false)
}

// Send makes the measured request(s) of a cell with max_tokens = maxTokens and streams
// them to the end. The error is non-nil only when nothing could be sent (empty prompts,
// unknown mode, router failure); failures of individual requests are in
// Result.Requests[i].Err (see Result.Err) and their sequences stay in the Result. Only
// failures before a response body started (transport, 429, 5xx) are retried.
//
// Canceling ctx aborts the streams at once (Kind KindCanceled) and closes every
// connection of the Client, including idle ones. After [DONE] a stream is read to its
// end so that its connection can be reused; TotalTimeout bounds that too.
func (c *Client) Send(ctx context.Context, mode Mode, prompts [][]int32, maxTokens int) (*Result, error) {
	return c.send(ctx, mode, idPrompts(prompts), maxTokens, false)
}

func (c *Client) send(ctx context.Context, mode Mode, prompts promptSet, maxTokens int, warm bool) (*Result, error) {
	if mode == "" {
		mode = ModeArray
	}
	ps, err := c.plans(ctx, mode, prompts, maxTokens)
	if err != nil {
		return nil, err
	}
	defer c.putBufs(ps)

	// Sequences: one per prompt (array, routed) or per choice (n), in prompt order; each
	// request owns a contiguous range of them (plan.seqs) and fills it when it ends (do). A
	// request that failed before its stream leaves empty records; indices a request did
	// not ask for are dropped.
	total := 0
	for ri := range ps {
		total += ps[ri].want(mode)
	}
	res := &Result{Mode: mode, MaxTokens: maxTokens, Requests: make([]Request, len(ps)), Sequences: make([]Sequence, total)}
	off := 0
	for ri := range ps {
		p := &ps[ri]
		for k := range p.want(mode) {
			prompt := 0
			if mode != ModeN {
				prompt = p.prompts[k]
			}
			res.Sequences[off+k] = Sequence{Sequence: sse.Sequence{Index: k}, Prompt: prompt, Request: ri}
		}
		p.seqs = res.Sequences[off : off+p.want(mode)]
		off += len(p.seqs)
	}

	// One context watch for the whole Send (not one per request): canceling ctx aborts the
	// streams under way, then closes every connection, which unblocks requests still
	// waiting for headers.
	aborts := make([]abortState, len(ps))
	if stallEnabled(&c.opts) {
		// A stream is stalled only when no stream of the Send received a byte: a server
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
	for i := range aborts {
		if aborts[i].stall != nil {
			stallPool.Put(aborts[i].stall)
		}
	}
	_, text := prompts.(textPrompts)
	addHints(res, text)
	return res, nil
}

// abortState records why a request's current attempt was aborted by a timer or the
// context. One per request of a Send; reset by every attempt.
type abortState struct {
	mu       sync.Mutex
	cause    *RequestError
	stream   fasthttp.ReadCloserWithError
	url      string
	status   int
	first    bool
	canceled error // the Send's context error, once it was canceled (kept across attempts)

	// stall is the stall watch, made at the first stream with stall detection on; anyByte
	// (shared by the Send's requests) and streams are its Send-wide inputs.
	stall   *stallWatch
	anyByte *atomic.Int64
	streams int
	// firstEv holds the first bytes of the stream's first event when it brought no token
	// (for errors about streams genload does not understand); written and read by the
	// request's goroutine.
	firstEv []byte
}

// keepFirst keeps the first bytes of the stream's first event.
//
//go:noinline
func (a *abortState) keepFirst(data []byte) {
	a.firstEv = append(a.firstEv[:0], data[:min(len(data), 160)]...)
}

// reset prepares the state for a new attempt.
func (a *abortState) reset() {
	a.mu.Lock()
	a.cause, a.stream, a.url, a.status, a.first = nil, nil, "", 0, false
	a.mu.Unlock()
	a.firstEv = a.firstEv[:0]
}

func (a *abortState) abort(e *RequestError) {
	a.mu.Lock()
	if a.cause == nil {
		a.cause = e
	}
	s := a.stream
	a.mu.Unlock()
	if s != nil {
		_ = s.CloseWithError(e)
	}
}

// cancel is called once when the Send's context is canceled: the stream under way, or the
// next one set, is aborted with KindCanceled.
func (a *abortState) cancel(err error) {
	a.mu.Lock()
	a.canceled = err
	s := a.stream
	var e *RequestError
	if s != nil {
		e = &RequestError{Kind: KindCanceled, URL: a.url, Status: a.status, Err: err}
		if a.cause == nil {
			a.cause = e
		}
	}
	a.mu.Unlock()
	if s != nil {
		_ = s.CloseWithError(e)
	}
}

// setStream registers the attempt's response stream (of url, HTTP status) so that timers
// and the context can abort it; if the context was already canceled it is aborted at once.
func (a *abortState) setStream(s fasthttp.ReadCloserWithError, url string, status int) {
	a.mu.Lock()
	a.stream, a.url, a.status = s, url, status
	err := a.canceled
	a.mu.Unlock()
	if err != nil {
		a.abort(&RequestError{Kind: KindCanceled, URL: url, Status: status, Err: err})
	}
}

func (a *abortState) get() *RequestError {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cause
}

var errTimedOut = errors.New("deadline exceeded")

// readerPool recycles SSE readers (and their buffers) across requests. Their default
// 16 KiB buffer is larger than the connection's read buffer, so bufio hands reads straight
// to the socket (16 KiB per read): with 4 KiB SSE buffers the same peak RSS cost ~8 % more
// CPU per chunk at C = 1. Only the streams being read hold one (a few even at 512 streams).
var readerPool = sync.Pool{New: func() any { return sse.NewReader(nil, 0) }}

// demuxPool recycles demuxes (their array of sequence records) across requests; the
// Marks and Text of the sequences are the caller's and never reused (sse.Demux.Reset).
var demuxPool = sync.Pool{New: func() any { return new(sse.Demux) }}

// do runs one planned request with retries and copies the sequences of its last attempt
// into p.seqs.
func (c *Client) do(ctx context.Context, start time.Time, p *plan, out *Request, ab *abortState, maxTokens int, warm bool) {
	w := &c.workers[p.worker]
	out.Worker, out.WorkerName, out.URL, out.Prompts, out.BodyBytes = p.worker, w.name, w.url, p.prompts, len(p.body)
	req, resp := c.newRequest(w, p)
	defer releaseRequest(req, resp)
	d := demuxPool.Get().(*sse.Demux)
	defer putDemux(d)
	var seqs []sse.Sequence
	stale := false // one free retry for a keep-alive connection the server had closed
	grown := false // one free retry with bigger read buffers for headers that did not fit
	for attempt := 0; ; attempt++ {
		out.Attempts++
		var retry bool
		var retryAfter time.Duration
		seqs, retry, retryAfter = c.attempt(ctx, start, p, req, resp, out, ab, d, maxTokens, warm)
		if out.Err != nil && !stale && ctx.Err() == nil && staleConn(out.Err) {
			stale = true
			attempt--
			out.Retries = append(out.Retries, Retry{Attempt: out.Attempts, Reason: "stale keep-alive connection: " + reason(out.Err), Free: true})
			continue
		}
		if out.Err != nil && !grown && ctx.Err() == nil && smallBuffer(out.Err) {
			grown = true
			c.growReadBuffers()
			attempt--
			out.Retries = append(out.Retries, Retry{Attempt: out.Attempts, Reason: fmt.Sprintf("response headers over %d KiB", readBufferSize>>10), Free: true})
			continue
		}
		if out.Err == nil || !retry || attempt >= c.opts.Retries || ctx.Err() != nil {
			break
		}
		why := reason(out.Err)
		if !c.backoff(ctx, attempt, retryAfter, out) {
			break
		}
		out.Retries = append(out.Retries, Retry{Attempt: out.Attempts, Reason: why, Wait: max(c.opts.RetryDelay<<min(attempt, 16), retryAfter)})
	}
	if out.Err != nil {
		out.Error = out.Err.Error()
	}
	for k := range min(len(seqs), len(p.seqs)) {
		p.seqs[k].Sequence = seqs[k]
	}
}

// newRequest returns the request of plan p to worker w (release both with releaseRequest).
//
//go:noinline
func (c *Client) newRequest(w *endpoint, p *plan) (*fasthttp.Request, *fasthttp.Response) {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	req.SetRequestURI(w.url)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.Header.Set("Accept", "text/event-stream")
	if c.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.APIKey)
	}
	for _, h := range w.headers {
		req.Header.Set(h[0], h[1])
	}
	req.SetBodyRaw(p.body)
	return req, resp
}

func releaseRequest(req *fasthttp.Request, resp *fasthttp.Response) {
	fasthttp.ReleaseRequest(req)
	fasthttp.ReleaseResponse(resp)
}

func putDemux(d *sse.Demux) {
	d.Reset(time.Time{}, 0)
	demuxPool.Put(d)
}

// backoff waits before retry attempt+1: RetryDelay doubled per attempt, or the server's
// Retry-After if longer. It returns false (with out.Err set) if ctx ended first.
//
//go:noinline
func (c *Client) backoff(ctx context.Context, attempt int, retryAfter time.Duration, out *Request) bool {
	d := max(c.opts.RetryDelay<<min(attempt, 16), retryAfter)
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	select {
	case <-ctx.Done():
		t.Stop()
	case <-t.C:
	}
	if ctx.Err() != nil {
		out.Err = &RequestError{Kind: KindCanceled, URL: out.URL, Err: ctx.Err()}
		return false
	}
	return true
}

// attempt sends once and streams the response. retry reports whether the failure may be
// retried.
// The returned sequences alias d until its next Reset.
func (c *Client) attempt(ctx context.Context, start time.Time, p *plan, req *fasthttp.Request, resp *fasthttp.Response,
	out *Request, ab *abortState, d *sse.Demux, maxTokens int, warm bool) (seqs []sse.Sequence, retry bool, retryAfter time.Duration) {
	// The phases are separate functions, the rare paths kept out of line, so that the frames
	// under a blocked read stay small: with them one goroutine per stream fits a 4 KiB stack
	// instead of 8 KiB (2 MB less at 512 streams).
	out.Err, out.Status, out.Done, out.HasUsage, out.Usage, out.Headers = nil, 0, false, false, sse.Usage{}, nil
	ab.reset()
	if ctx.Err() != nil {
		out.Err = &RequestError{Kind: KindCanceled, URL: out.URL, Err: ctx.Err()}
		return nil, false, 0
	}
	sent := time.Now()
	out.Sent = sent.Sub(start)
	if err := c.roundTrip(req, resp); err != nil {
		out.Header = time.Since(start)
		out.End = out.Header
		retry = c.headerError(ctx, err, out)
		return nil, retry, 0
	}
	out.Header = time.Since(start)
	out.End = out.Header
	out.Status = resp.StatusCode()
	body := resp.BodyStream()
	defer resp.CloseBodyStream()
	if out.Status != fasthttp.StatusOK || body == nil {
		retry, retryAfter = statusError(resp, body, out)
		return nil, retry, retryAfter
	}
	t1, t2 := c.armStream(resp, body, sent, ab, out)
	defer stopTimers(t1, t2)
	if notStream(resp, body, out) {
		return nil, false, 0
	}
	seqs, serr := c.readStream(start, p, body, ab, d, maxTokens, out)
	c.captureHeaders(resp, out)
	if cause := ab.get(); cause != nil {
		out.Err = cause
		exactStall(cause, d)
		return seqs, false, 0
	}
	if serr != nil {
		retry = streamError(ctx, serr, out, warm)
		notUnderstood(resp, d, ab, out)
	}
	return seqs, retry, 0
}

// roundTrip sends req and reads the response headers under the header-phase deadline: the
// earlier of first-token and total.
//
//go:noinline
func (c *Client) roundTrip(req *fasthttp.Request, resp *fasthttp.Response) error {
	t, _ := c.headerTimeout()
	req.SetTimeout(t)
	return c.httpClient().Do(req, resp)
}

// headerTimeout returns the header-phase deadline (0: none) and which timeout it is,
// "first_token" or "total".
func (c *Client) headerTimeout() (time.Duration, string) {
	var hdrTimeout time.Duration
	var hdrKind string
	if t := c.opts.FirstTokenTimeout; t > 0 {
		hdrTimeout, hdrKind = t, "first_token"
	}
	if t := c.opts.TotalTimeout; t > 0 && (hdrTimeout == 0 || t < hdrTimeout) {
		hdrTimeout, hdrKind = t, "total"
	}
	return hdrTimeout, hdrKind
}

// headerError records a failure before the response headers arrived and reports whether it
// may be retried.
//
//go:noinline
func (c *Client) headerError(ctx context.Context, err error, out *Request) (retry bool) {
	u := out.URL
	var ne net.Error
	switch {
	case ctx.Err() != nil:
		out.Err = &RequestError{Kind: KindCanceled, URL: u, Err: ctx.Err()}
		return false
	case errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout) || (errors.As(err, &ne) && ne.Timeout()):
		_, kind := c.headerTimeout()
		if errors.Is(err, fasthttp.ErrDialTimeout) || isDialTimeout(err) {
			kind = "connect"
		}
		out.Err = &RequestError{Kind: KindTimeout, URL: u, Timeout: kind, Err: err}
		return kind == "connect"
	default:
		out.Err = &RequestError{Kind: KindTransport, URL: u, Err: err}
		return true
	}
}

// statusError records a non-200 response (or one without a body) and reports whether it may
// be retried and after how long the server asked to wait.
//
//go:noinline
func statusError(resp *fasthttp.Response, body io.Reader, out *Request) (retry bool, retryAfter time.Duration) {
	u := out.URL
	if out.Status == fasthttp.StatusOK {
		out.Err = &RequestError{Kind: KindStream, URL: u, Status: out.Status, Err: errors.New("no response body")}
		return false, 0
	}
	var msg []byte
	if body != nil {
		msg, _ = io.ReadAll(io.LimitReader(body, 64<<10))
	} else {
		msg = resp.Body()
	}
	se := sse.ParseError(msg)
	out.Err = &RequestError{Kind: KindHTTP, URL: u, Status: out.Status, Message: se.Message, Err: se}
	if out.Status == fasthttp.StatusTooManyRequests || out.Status >= 500 {
		if s, err := strconv.Atoi(strings.TrimSpace(string(resp.Header.Peek("Retry-After")))); err == nil && s > 0 {
			retryAfter = time.Duration(s) * time.Second
		}
		return true, retryAfter
	}
	return false, 0
}

// armStream prepares a 200 response's stream: the header-phase deadline stays on the
// connection while streaming, so it is replaced with the total deadline (or none); the
// stream is registered with ab (the Send's context watch aborts it when canceled); and the
// first-token and total timeouts get timers, returned for the caller to stop (nil if unset).
//
//go:noinline
func (c *Client) armStream(resp *fasthttp.Response, body io.Reader, sent time.Time, ab *abortState, out *Request) (total, first *time.Timer) {
	if conn := c.conns.get(resp.LocalAddr()); conn != nil {
		var dl time.Time
		if t := c.opts.TotalTimeout; t > 0 {
			dl = sent.Add(t)
		}
		_ = conn.SetReadDeadline(dl)
	}
	rc, ok := body.(fasthttp.ReadCloserWithError)
	if !ok {
		return nil, nil
	}
	u, status := out.URL, out.Status
	ab.setStream(rc, u, status)
	if t := c.opts.TotalTimeout; t > 0 {
		total = time.AfterFunc(time.Until(sent.Add(t)), func() {
			ab.abort(&RequestError{Kind: KindTimeout, URL: u, Status: status, Timeout: "total", Err: errTimedOut})
		})
	}
	if t := c.opts.FirstTokenTimeout; t > 0 {
		first = time.AfterFunc(time.Until(sent.Add(t)), func() {
			ab.mu.Lock()
			got := ab.first
			ab.mu.Unlock()
			if !got {
				ab.abort(&RequestError{Kind: KindTimeout, URL: u, Status: status, Timeout: "first_token", Err: errTimedOut})
			}
		})
	}
	return total, first
}

// stopTimers stops the timers armStream started.
func stopTimers(a, b *time.Timer) {
	if a != nil {
		a.Stop()
	}
	if b != nil {
		b.Stop()
	}
}

// readStream reads the SSE stream of body into d and returns its sequences (aliasing d until
// its next Reset) and the stream's error.
func (c *Client) readStream(start time.Time, p *plan, body io.Reader, ab *abortState, d *sse.Demux, maxTokens int, out *Request) ([]sse.Sequence, error) {
	rd := c.openStream(start, p, body, d, maxTokens)
	if stallEnabled(&c.opts) {
		if ab.stall == nil {
			ab.stall = stallPool.Get().(*stallWatch)
		}
		rd.Now = ab.stall.reset(&c.opts, start, out.Sent, d, d.Expect, ab.anyByte, ab.streams, ab, out.URL, out.Status)
		defer ab.stall.stop()
	}
	serr := c.stream(rd, d, ab)
	return closeStream(start, rd, d, maxTokens, out), serr
}

// openStream readies a pooled SSE reader on body and resets d for the plan's sequences.
//
//go:noinline
func (c *Client) openStream(start time.Time, p *plan, body io.Reader, d *sse.Demux, maxTokens int) *sse.Reader {
	rd := readerPool.Get().(*sse.Reader)
	rd.Reset(body)
	d.KeepText, d.MarkCap = c.opts.KeepText, min(maxTokens+1, 4096)
	expect := len(p.prompts)
	if p.n > 1 {
		expect = p.n
	}
	d.Reset(start, expect)
	return rd
}

// closeStream returns rd to its pool, records the stream's end in out and returns d's
// sequences.
//
//go:noinline
func closeStream(start time.Time, rd *sse.Reader, d *sse.Demux, maxTokens int, out *Request) []sse.Sequence {
	rd.Reset(nil)
	rd.Now = nil
	readerPool.Put(rd)
	out.End = time.Since(start)
	out.Done = d.Done
	out.Usage, out.HasUsage = d.RequestUsage()
	seqs := d.Finalize(maxTokens)
	d.Release()
	return seqs
}

// streamError records a failed stream and reports whether it may be retried (a warm-up's
// in-stream 429 or 5xx).
//
//go:noinline
func streamError(ctx context.Context, serr error, out *Request, warm bool) (retry bool) {
	u := out.URL
	if ctx.Err() != nil {
		out.Err = &RequestError{Kind: KindCanceled, URL: u, Status: out.Status, Err: ctx.Err()}
		return false
	}
	var se *sse.ServerError
	switch {
	case errors.As(serr, &se):
		out.Err = &RequestError{Kind: KindServer, URL: u, Status: out.Status, Message: se.Message, Err: se}
		return warm && (se.Code == 429 || se.Code >= 500)
	case isTimeout(serr):
		// the only read deadline set while streaming is the total one
		out.Err = &RequestError{Kind: KindTimeout, URL: u, Status: out.Status, Timeout: "total", Err: serr}
	case errors.Is(serr, sse.ErrTruncated) || errors.Is(serr, sse.ErrMalformed):
		out.Err = &RequestError{Kind: KindStream, URL: u, Status: out.Status, Err: serr}
	case errors.Is(serr, io.ErrUnexpectedEOF):
		// The body ended inside a chunk of the chunked encoding: the server stopped
		// mid-stream, which is a truncated stream, not a failed connection.
		out.Err = &RequestError{Kind: KindStream, URL: u, Status: out.Status, Err: fmt.Errorf("%w (%v)", sse.ErrTruncated, serr)}
	default:
		out.Err = &RequestError{Kind: KindTransport, URL: u, Status: out.Status, Err: serr}
	}
	return false
}

// stream runs the demux. Up to the first token it goes event by event, to keep the first
// event's bytes (for errors), mark the first token for the first-token timer and arm the
// stall watch; then d.Run reads the rest with nothing added per chunk.
func (c *Client) stream(rd *sse.Reader, d *sse.Demux, ab *abortState) error {
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return d.Run(rd) // at EOF: Run sees EOF again and checks completion
		}
		if err != nil {
			return err
		}
		first := d.Events == 0
		if err := d.Feed(ev); err != nil {
			return err
		}
		if first && !hasMark(d) {
			ab.keepFirst(ev.Data)
		}
		if hasMark(d) {
			c.firstToken(ab, ev.At.Sub(d.Base))
			return d.Run(rd)
		}
		if d.Done {
			return d.Run(rd)
		}
	}
}

// firstToken records the first token (offset at from the Send's start) for the timers.
//
//go:noinline
func (c *Client) firstToken(ab *abortState, at time.Duration) {
	if c.opts.FirstTokenTimeout > 0 {
		ab.mu.Lock()
		ab.first = true
		ab.mu.Unlock()
	}
	if stallEnabled(&c.opts) {
		ab.stall.arm(at)
	}
}

func hasMark(d *sse.Demux) bool { return d.Marks() > 0 }

// staleConn reports a failure before any response byte on a pooled connection that the
// server had closed while idle (fasthttp.ErrConnectionClosed, or EOF / reset while writing).
func staleConn(err error) bool {
	var re *RequestError
	if !errors.As(err, &re) || re.Kind != KindTransport || re.Status != 0 {
		return false
	}
	return errors.Is(err, fasthttp.ErrConnectionClosed) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// smallBuffer reports response headers larger than the connection's read buffer.
func smallBuffer(err error) bool {
	var sb *fasthttp.ErrSmallBuffer
	return errors.As(err, &sb)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isDialTimeout(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial" && oe.Timeout()
}

func (c *Client) captureHeaders(resp *fasthttp.Response, out *Request) {
	for _, name := range []string{c.opts.GenerationDurationHeader, c.opts.SpeculationAcceptanceHeader} {
		if name == "" {
			continue
		}
		v := resp.Header.Peek(name)
		if len(v) == 0 {
			continue
		}
		if out.Headers == nil {
			out.Headers = map[string]string{}
		}
		out.Headers[name] = string(v)
	}
}

// connSet tracks open connections by local+remote address, so that a streaming
// request's connection can get its read deadline replaced and so that a canceled
// context can close connections still waiting for headers.
type connSet struct {
	mu sync.Mutex
	m  map[net.Addr]net.Conn // by the connection's LocalAddr value (pointer identity)
}

type trackedConn struct {
	net.Conn
	set  *connSet
	key  net.Addr
	once sync.Once
}

func (t *trackedConn) Close() error {
	t.once.Do(func() {
		t.set.mu.Lock()
		delete(t.set.m, t.key)
		t.set.mu.Unlock()
	})
	return t.Conn.Close()
}

// get returns the tracked connection whose LocalAddr() is l (the same value fasthttp
// copied into the Response), nil if none.
func (s *connSet) get(l net.Addr) net.Conn {
	if l == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[l]
}

func (s *connSet) closeAll() {
	s.mu.Lock()
	cs := make([]net.Conn, 0, len(s.m))
	for _, c := range s.m {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
	}
}

func (c *Client) dial(addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: c.opts.ConnectTimeout}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	t := &trackedConn{Conn: conn, set: &c.conns, key: conn.LocalAddr()}
	c.conns.mu.Lock()
	c.conns.m[t.key] = t
	c.conns.mu.Unlock()
	return t, nil
}
