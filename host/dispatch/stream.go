package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/genload/genload/host/sse"
	"github.com/valyala/fasthttp"
)

// Responses genload does not understand fail with a KindStream RequestError that says what
// was expected and what came, quoting the first bytes.

// notStream fails a 200 response that is plainly not an SSE stream: Content-Type
// application/json (one completion: the server ignored "stream": true; or a JSON body
// without choices) or text/html (a proxy's or login page). Other or missing content types
// are read as SSE, and a body without events fails later (notUnderstood). For ollama's
// native API (ndjson) only an HTML page is not a stream: its objects are JSON, and a server
// that ignored "stream": true sends one final object, which reads as a stream of one.
//
//go:noinline
func notStream(resp *fasthttp.Response, body io.Reader, out *Request, ndjson bool) bool {
	raw := resp.Header.ContentType()
	json1, html := hasPrefixFold(raw, "application/json"), hasPrefixFold(raw, "text/html")
	if ndjson {
		json1 = false
	}
	if !json1 && !html {
		return false // text/event-stream, or read as such
	}
	ct := strings.ToLower(string(raw))
	b, _ := io.ReadAll(io.LimitReader(body, 64<<10))
	ctName := ct
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ctName = ct[:i]
	}
	var msg string
	var v struct {
		Choices json.RawMessage `json:"choices"`
	}
	switch {
	case json1 && json.Unmarshal(b, &v) == nil && len(v.Choices) > 0:
		msg = fmt.Sprintf("expected an SSE stream (Content-Type text/event-stream), got one %s completion: the server ignored \"stream\": true; body: %s", ctName, firstBytes(b))
	case json1:
		msg = fmt.Sprintf("expected an SSE stream (Content-Type text/event-stream) of completion chunks, got %s without \"choices\": %s", ctName, firstBytes(b))
	default:
		msg = fmt.Sprintf("expected an SSE stream (Content-Type text/event-stream) of completion chunks, got %s: %s", ctName, firstBytes(b))
	}
	out.Err = &RequestError{Kind: KindStream, URL: out.URL, Status: out.Status, Err: errors.New(msg)}
	return true
}

// hasPrefixFold reports whether b begins with the lower-case ASCII prefix p, ignoring case
// (no allocation: it runs on every response).
func hasPrefixFold(b []byte, p string) bool {
	if len(b) < len(p) {
		return false
	}
	for i := range len(p) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != p[i] {
			return false
		}
	}
	return true
}

// firstBytes returns up to 160 bytes of b on one line, for messages.
func firstBytes(b []byte) string {
	if len(b) > 160 {
		b = b[:160]
	}
	return strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "\uFFFD")), " ")
}

// readStream reads the SSE stream of body (ollama's newline-delimited JSON with APIOllama)
// into d, every read stamped as an offset from start, and returns its sequences (aliasing d
// until its next Reset) and the stream's error. With stall detection on (Options.Stall,
// StallSteps) ab's stall watch is the reader's clock from the stream's start to its end.
func (c *Client) readStream(start time.Time, p *call, body io.Reader, ab *abortState, d *sse.Demux, maxTokens int, out *Request) ([]sse.Sequence, error) {
	rd := c.openStream(start, p, body, d, maxTokens)
	if stallEnabled(&c.opts) {
		if ab.stall == nil {
			ab.stall = stallPool.Get().(*stallWatch)
		}
		rd.Now = ab.stall.reset(&c.opts, start, out.Sent, d, d.Expect, ab.anyByte, ab.streams, ab, out.URL, out.Status)
		defer ab.stall.stop()
	}
	serr := c.stream(rd, d, ab)
	return closeStream(start, rd, d, maxTokens, out, p.small), serr
}

// readerPool recycles SSE readers (and their buffers) across requests. Their default
// 16 KiB buffer is larger than the connection's read buffer, so bufio hands reads straight
// to the socket (16 KiB per read): with 4 KiB SSE buffers the same burst cost ~8 % more CPU
// per chunk at C = 1. A stream holds its reader from its first byte to its end, so a Do of
// many streams takes its readers from smallReaderPool instead: at 1,024 streams 16 KiB
// readers are 16 MB of heap (resident only where bytes were read, but counted by the
// collector, which sizes the heap on them), and a stream's share of the bytes falls as the
// streams grow (a paced stream reads one chunk of a few hundred bytes per read whatever the
// buffer).
var readerPool = sync.Pool{New: func() any { return sse.NewReader(nil, 0) }}

// smallReaderPool holds the smallReaderSize SSE readers of Do calls of at least
// smallReaderStreams streams (a reader still grows to hold a longer line).
var smallReaderPool = sync.Pool{New: func() any { return sse.NewReader(nil, smallReaderSize) }}

// smallReaderSize is the buffer of smallReaderPool's readers: 1 KiB holds a paced chunk
// with vLLM's per-chunk usage (about 400 bytes) and reads from the connection's 4 KiB buffer,
// not the socket, so a burst costs more copies, not more system calls; 4 KiB readers were
// 4 MB of heap at 1,024 streams and 16 MB at 4,096, which the collector doubles.
const smallReaderSize = 1 << 10

// smallReaderStreams is the number of requests of a Do from which its streams read through
// smallReaderPool.
const smallReaderStreams = 64

// openStream readies a pooled SSE reader on body and resets d for the plan's sequences.
//
//go:noinline
func (c *Client) openStream(start time.Time, p *call, body io.Reader, d *sse.Demux, maxTokens int) *sse.Reader {
	pool := &readerPool
	if p.small {
		pool = &smallReaderPool
	}
	rd := pool.Get().(*sse.Reader)
	rd.Reset(body)
	rd.Lines = c.ollama() // newline-delimited JSON
	d.KeepText, d.MarkCap, d.Generate = c.opts.KeepText, min(maxTokens+1, 4096), c.ollama()
	expect := len(p.prompts)
	if p.n > 1 {
		expect = p.n
	}
	d.Reset(start, expect)
	return rd
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

// hasMark reports whether d has seen a token-bearing chunk (the first token came).
func hasMark(d *sse.Demux) bool { return d.Marks() > 0 }

// firstToken records the first token (offset at from the Do's start) for the timers.
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

// closeStream returns rd to its pool, records the stream's end in out (End, Done and the
// request's usage) and returns d's sequences, finalized against maxTokens.
//
//go:noinline
func closeStream(start time.Time, rd *sse.Reader, d *sse.Demux, maxTokens int, out *Request, small bool) []sse.Sequence {
	rd.Reset(nil)
	rd.Now = nil
	if small {
		smallReaderPool.Put(rd)
	} else {
		readerPool.Put(rd)
	}
	out.End = time.Since(start)
	out.Done = d.Done
	out.Usage, out.HasUsage = d.RequestUsage()
	seqs := d.Finalize(maxTokens)
	d.Release()
	return seqs
}

// captureHeaders copies into out.Headers the response headers named by
// Options.GenerationDurationHeader and SpeculationAcceptanceHeader, when present. It runs
// after the stream, so that a value sent as a trailer has arrived.
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

// exactStall replaces the token count of a stall error, published by the stream's last read
// before that read's events were decoded, with the exact count.
func exactStall(cause *RequestError, d *sse.Demux) {
	var se *StallError
	if cause.Timeout == "stall" && errors.As(cause.Err, &se) {
		se.Token = d.Marks() / max(se.Sequences, 1)
	}
}

// streamError records in out.Err why the stream failed: KindCanceled when ctx ended,
// KindServer for an error event of the server, KindTimeout for the total read deadline,
// KindStream for a truncated or malformed stream, else KindTransport. It reports whether the
// failure may be retried (a warm-up's in-stream 429 or 5xx).
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

// isTimeout reports a net.Error that is a timeout (a read deadline that passed).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// notUnderstood rewrites the error of a stream that ended unfinished without a single
// token: what was expected, and the first event (or that there was none).
//
//go:noinline
func notUnderstood(resp *fasthttp.Response, d *sse.Demux, ab *abortState, out *Request, ndjson bool) {
	var re *RequestError
	if !errors.As(out.Err, &re) || re.Kind != KindStream || !errors.Is(re.Err, sse.ErrUnfinished) || d.Marks() > 0 {
		return
	}
	ct := string(resp.Header.ContentType())
	switch {
	case ndjson && d.Events == 0:
		re.Err = fmt.Errorf("expected newline-delimited JSON objects of /api/generate; the body (Content-Type %s) had none: %w", ct, re.Err)
	case ndjson:
		re.Err = fmt.Errorf("expected /api/generate objects with \"response\" text; %d objects brought no token, the first: %s: %w",
			d.Events, firstBytes(ab.firstEv), re.Err)
	case d.Events == 0:
		re.Err = fmt.Errorf("expected SSE \"data:\" events of completion chunks; the body (Content-Type %s) had none: %w", ct, re.Err)
	case d.Events == 1 && d.Done:
		re.Err = fmt.Errorf("expected completion chunks before [DONE]; the stream had only [DONE]: %w", re.Err)
	default:
		re.Err = fmt.Errorf("expected completion chunks with choices[].text; %d events brought no token, the first: %s: %w",
			d.Events, firstBytes(ab.firstEv), re.Err)
	}
}

// stallEnabled reports whether o asks for stall detection.
func stallEnabled(o *Options) bool { return o.Stall > 0 || o.StallSteps > 0 }

// stallWatch detects a stream that stops sending. The stream's goroutine publishes, on every
// read that returns bytes, the read's time and the token chunks counted so far (one atomic
// store, in the sse.Reader's clock hook: nothing per chunk); one timer per stream, armed at
// the first token, wakes when the limit since the last published byte would pass, and either
// aborts the stream or sleeps again for the rest of the limit. The timer is never reset per
// chunk.
type stallWatch struct {
	// pub packs the last byte's offset from base in µs (high 40 bits: 12 days) and the
	// token chunks seen before that read (low 24 bits, saturating).
	pub  atomic.Uint64
	base time.Time
	d    *sse.Demux // read only by the stream's goroutine (in now)
	nseq int
	// anyByte is the last byte's offset from base in µs over every stream of the Do
	// (nil: this stream alone), published at most once per ms per stream; streams counts
	// them.
	anyByte *atomic.Int64
	streams int

	steps      int
	min, fixed time.Duration

	mu      sync.Mutex
	sent    time.Duration // offset of the request's send
	first   time.Duration // offset of the first token chunk
	t       *time.Timer
	stopped bool
	ab      *abortState
	url     string
	status  int
	clock   func() time.Time // s.now as a func value, made once per watch
}

// stallMarkBits is the width of the token-chunk count in stallWatch.pub.
const stallMarkBits = 24

// stallPool recycles stall watches (their timer and hook) across Do calls. A watch's timer
// callback that started before stop returned may still run once after the watch was reused;
// under the watch's mutex it finds either a stopped watch or the new stream's state, so at
// worst it re-arms the timer that arm resets anyway.
var stallPool = sync.Pool{New: func() any { return new(stallWatch) }}

// reset readies the watch for a new stream of nseq sequences read into d, with times from
// base. It returns the clock hook to give the stream's sse.Reader.
func (s *stallWatch) reset(o *Options, base time.Time, sent time.Duration, d *sse.Demux, nseq int, anyByte *atomic.Int64, streams int,
	ab *abortState, url string, status int) func() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.base, s.sent, s.d, s.nseq = base, sent, d, max(nseq, 1)
	s.anyByte, s.streams = anyByte, streams
	s.steps, s.min, s.fixed = o.StallSteps, o.StallMin, o.Stall
	s.ab, s.url, s.status = ab, url, status
	s.first, s.stopped = 0, false
	s.pub.Store(0)
	if s.clock == nil {
		s.clock = s.now
	}
	return s.clock
}

// now is the sse.Reader clock hook: it returns time.Now and publishes it.
func (s *stallWatch) now() time.Time {
	t := time.Now()
	us := uint64(t.Sub(s.base) / time.Microsecond)
	m := uint64(min(s.d.Marks(), 1<<stallMarkBits-1))
	s.pub.Store(us<<stallMarkBits | m)
	if a := s.anyByte; a != nil && int64(us) > a.Load()+1000 {
		a.Store(int64(us)) // racing streams may store a slightly older time: harmless at ms
	}
	return t
}

// arm starts the timer at the first token (offset first from base).
func (s *stallWatch) arm(first time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.first = first
	lim, _ := s.limit(first, 0)
	if s.t == nil {
		s.t = time.AfterFunc(lim, s.check)
	} else {
		s.t.Reset(lim)
	}
}

// limit returns the allowed silence after the last byte at offset last, with marks token
// chunks counted before it, and the observed step (0 when unknown). Until a second token
// gives a step, the time to the first token stands in for it (a prefill takes at least one
// step): long, so that a slow first decode step is not taken for a stall.
func (s *stallWatch) limit(last time.Duration, marks int) (lim, step time.Duration) {
	if k := marks / s.nseq; k >= 1 && last > s.first {
		step = (last - s.first) / time.Duration(k)
	}
	if s.fixed > 0 {
		return s.fixed, step
	}
	proxy := step
	if proxy == 0 {
		proxy = max(s.first-s.sent, 0)
	}
	return max(s.min, time.Duration(s.steps)*proxy), step
}

// check runs on the timer: it aborts the stream when no byte came for the limit, else
// sleeps until the limit after the last byte would pass.
func (s *stallWatch) check() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	p := s.pub.Load()
	last := max(time.Duration(p>>stallMarkBits)*time.Microsecond, s.first)
	marks := int(p & (1<<stallMarkBits - 1))
	lim, step := s.limit(last, marks)
	if s.anyByte != nil {
		last = max(last, time.Duration(s.anyByte.Load())*time.Microsecond)
	}
	idle := time.Since(s.base) - last
	if idle < lim {
		s.t.Reset(lim - idle)
		s.mu.Unlock()
		return
	}
	s.stopped = true
	e := &StallError{Limit: lim, Token: marks / s.nseq, Sequences: s.nseq, Streams: s.streams, Step: step}
	if s.fixed == 0 {
		e.Steps, e.Min = s.steps, s.min
	}
	ab, u, status := s.ab, s.url, s.status
	s.mu.Unlock()
	ab.abort(&RequestError{Kind: KindTimeout, URL: u, Status: status, Timeout: "stall", Err: e})
}

// stop disarms the watch (the stream ended); a check already running does nothing more.
func (s *stallWatch) stop() {
	s.mu.Lock()
	s.stopped = true
	if s.t != nil {
		s.t.Stop()
	}
	s.mu.Unlock()
}
