package dispatch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/genload/genload/host/sse"
	"github.com/valyala/fasthttp"
)

// Responses genload does not understand fail with a KindStream RequestError that says what
// was expected and what came, quoting the first bytes.

// firstBytes returns up to 160 bytes of b on one line, for messages.
func firstBytes(b []byte) string {
	if len(b) > 160 {
		b = b[:160]
	}
	return strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "\uFFFD")), " ")
}

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

// exactStall replaces the token count of a stall error, published by the stream's last read
// before that read's events were decoded, with the exact count.
func exactStall(cause *RequestError, d *sse.Demux) {
	var se *StallError
	if cause.Timeout == "stall" && errors.As(cause.Err, &se) {
		se.Token = d.Marks() / max(se.Sequences, 1)
	}
}
