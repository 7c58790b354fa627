package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/genload/genload/host/sse"
	"github.com/valyala/fasthttp"
)

// do sends request p of a Do (its record out, its abort state ab) until an attempt succeeds
// or may not be retried, and copies the sequences of its last attempt into p.seqs. start is
// the Do's Result.Start, from which every time in out is an offset. Attempts beyond the
// first: one free retry (Retry.Free, not counted against Options.Retries) for a keep-alive
// connection the server had closed (staleConn) and one for response headers larger than the
// read buffer (smallBuffer, after growReadBuffers); then up to Options.Retries for a failure
// attempt reports as retryable, each after backoff. The outcome is in out: Err and its text
// Error, Attempts, Retries.
func (c *Client) do(ctx context.Context, start time.Time, p *call, out *Request, ab *abortState, maxTokens int, warm bool) {
	w := &c.workers[p.worker]
	out.Worker, out.WorkerName, out.URL, out.Prompts, out.BodyBytes = p.worker, w.name, w.url, p.prompts, p.bodyBytes()
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

// newRequest returns the POST of call p to worker w, with its headers and (unless p's body is
// streamed, which attempt sets) its body, and the response to read it into (release both
// with releaseRequest).
//
//go:noinline
func (c *Client) newRequest(w *endpoint, p *call) (*fasthttp.Request, *fasthttp.Response) {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	req.SetRequestURI(w.url)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	if c.ollama() {
		req.Header.Set("Accept", "application/x-ndjson")
	} else {
		req.Header.Set("Accept", "text/event-stream")
	}
	if c.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.APIKey)
	}
	for _, h := range w.headers {
		req.Header.Set(h[0], h[1])
	}
	if p.stream == nil {
		req.SetBodyRaw(p.body)
	}
	return req, resp
}

// releaseRequest gives req and resp back to fasthttp's pools.
func releaseRequest(req *fasthttp.Request, resp *fasthttp.Response) {
	fasthttp.ReleaseRequest(req)
	fasthttp.ReleaseResponse(resp)
}

// demuxPool recycles demuxes (their array of sequence records) across requests; the
// Marks and Text of the sequences are the caller's and never reused (sse.Demux.Reset).
var demuxPool = sync.Pool{New: func() any { return new(sse.Demux) }}

// putDemux resets d, so that the pooled demux keeps no reference to the Marks and Text the
// Result holds, and gives it back to demuxPool.
func putDemux(d *sse.Demux) {
	d.Reset(time.Time{}, 0)
	demuxPool.Put(d)
}

// attempt sends request p once and reads its response to the end of the stream into d,
// recording in out its times (Sent, Header, End: offsets from start), Write, Status, usage,
// captured headers and error (a *RequestError, nil on success). retry reports whether the
// failure may be retried and retryAfter how long the server asked to wait (Retry-After, 0
// when it did not). The returned sequences alias d until its next Reset.
func (c *Client) attempt(ctx context.Context, start time.Time, p *call, req *fasthttp.Request, resp *fasthttp.Response,
	out *Request, ab *abortState, d *sse.Demux, maxTokens int, warm bool) (seqs []sse.Sequence, retry bool, retryAfter time.Duration) {
	// The phases are separate functions, the rare paths kept out of line, so that the frames
	// under a blocked read stay small: with them one goroutine per stream fits a 4 KiB stack
	// instead of 8 KiB (2 MB less at 512 streams).
	out.Err, out.Status, out.Done, out.HasUsage, out.Usage, out.Headers, out.Write, out.Connect = nil, 0, false, false, sse.Usage{}, nil, 0, 0
	ab.reset()
	if ctx.Err() != nil {
		out.Err = &RequestError{Kind: KindCanceled, URL: out.URL, Err: ctx.Err()}
		return nil, false, 0
	}
	if p.stream != nil { // generated as it is written, from its start at every attempt
		p.stream.rewind()
		req.SetBodyStream(p.stream, p.stream.size)
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
	out.Write, out.Connect = c.connTimes(resp)
	out.Status = resp.StatusCode()
	body := resp.BodyStream()
	defer resp.CloseBodyStream()
	if out.Status != fasthttp.StatusOK || body == nil {
		retry, retryAfter = statusError(resp, body, out)
		return nil, retry, retryAfter
	}
	t1, t2 := c.armStream(resp, body, sent, ab, out)
	defer stopTimers(t1, t2)
	if notStream(resp, body, out, c.ollama()) {
		return nil, false, 0
	}
	if !warm && p.body != nil && (p.small || cap(p.body) >= 1<<20) {
		// A measured request whose stream has begun is not sent again (only a warmup's
		// in-stream error is retried): in a Do of many requests, or for a large body, the
		// body is dropped rather than held until the end of every stream of the Do (19 MB at
		// 4,096 requests of 1,000 tokens). A few small bodies go back to the Client's
		// buffers for the next Do, as before.
		req.SetBodyRaw(nil)
		p.body = nil
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
		notUnderstood(resp, d, ab, out, c.ollama())
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

// headerError records in out.Err a failure before the response headers arrived: KindCanceled
// when ctx ended, KindTimeout when a deadline passed (Timeout "connect", or the header-phase
// one, "first_token" or "total"), else KindTransport. It reports whether the failure may be
// retried: a connect timeout or a transport error.
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

// isDialTimeout reports a TCP connect that timed out (Options.ConnectTimeout).
func isDialTimeout(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial" && oe.Timeout()
}

// statusError records in out.Err a non-200 response (KindHTTP, with the server's message read
// by sse.ParseError from at most 64 KiB of its body; an HTML page is said on one line, with a
// hint) or a 200 without a body (KindStream). It reports whether the failure may be retried
// (429 and 5xx) and after how long the server asked to wait (Retry-After in whole seconds; 0
// when absent).
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
	re := &RequestError{Kind: KindHTTP, URL: u, Status: out.Status, Message: se.Message, Err: se}
	if ct := string(resp.Header.ContentType()); isHTML(ct, msg) {
		// An HTML page (a web server or proxy that is not the OpenAI-compatible server): what
		// was seen on one line, not the page.
		seen := htmlPage(msg)
		se.Message, re.Message, re.Hint = seen, seen, adviceNotOpenAI
		if proxied(out.Status) {
			re.Hint = adviceProxy
		}
	}
	out.Err = re
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
// stream is registered with ab (the Do's context watch aborts it when canceled); and the
// first-token and total timeouts get timers, counted from sent, which abort the stream with a
// KindTimeout error (Timeout "first_token" or "total", Err errTimedOut); they are returned
// for the caller to stop (nil if unset). A body that cannot be closed with an error
// (not a fasthttp.ReadCloserWithError) is neither registered nor timed.
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

// errTimedOut is the Err of a request that the total or first-token timer aborted.
var errTimedOut = errors.New("deadline exceeded")

// stopTimers stops the timers armStream started.
func stopTimers(a, b *time.Timer) {
	if a != nil {
		a.Stop()
	}
	if b != nil {
		b.Stop()
	}
}

// abortState records why a request's current attempt was aborted by a timer or the
// context. One per request of a Do; reset by every attempt.
type abortState struct {
	mu       sync.Mutex
	cause    *RequestError
	stream   fasthttp.ReadCloserWithError
	url      string
	status   int
	first    bool
	canceled error // the Do's context error, once it was canceled (kept across attempts)

	// stall is the stall watch, made at the first stream with stall detection on; anyByte
	// (shared by the Do's requests) and streams are its Do-wide inputs.
	stall   *stallWatch
	anyByte *atomic.Int64
	streams int
	// firstEv holds the first bytes of the stream's first event when it brought no token
	// (for errors about streams genload does not understand); written and read by the
	// request's goroutine.
	firstEv []byte
}

// reset prepares the state for a new attempt.
func (a *abortState) reset() {
	a.mu.Lock()
	a.cause, a.stream, a.url, a.status, a.first = nil, nil, "", 0, false
	a.mu.Unlock()
	a.firstEv = a.firstEv[:0]
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

// abort ends the attempt with e: the first cause recorded wins, and the stream, if one is
// registered, is closed with e so that its blocked read returns.
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

// cancel is called once when the Do's context is canceled: the stream under way, or the
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

// keepFirst keeps the first 160 bytes of the stream's first event, for notUnderstood.
//
//go:noinline
func (a *abortState) keepFirst(data []byte) {
	a.firstEv = append(a.firstEv[:0], data[:min(len(data), 160)]...)
}

// get returns why the attempt was aborted, nil if it was not.
func (a *abortState) get() *RequestError {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cause
}
