package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

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

// reason is err's text without the "POST <url>: " prefix.
func reason(err error) string {
	var re *RequestError
	if errors.As(err, &re) {
		return strings.TrimPrefix(re.Error(), "POST "+re.URL+": ")
	}
	return err.Error()
}

// smallBuffer reports response headers larger than the connection's read buffer.
func smallBuffer(err error) bool {
	var sb *fasthttp.ErrSmallBuffer
	return errors.As(err, &sb)
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

// addHints gives every failed request of res the hint that its message calls for, and
// rewrites its Error text to carry it.
func addHints(res *Result, text bool) {
	for i := range res.Requests {
		q := &res.Requests[i]
		if q.Err != nil {
			addHint(q, res.Mode, text)
		}
	}
}

// addHint gives the failed request q its hint (out of addHints' loop: the error's variable
// escapes, and only failures should pay for it).
func addHint(q *Request, mode Mode, text bool) {
	var re *RequestError
	if !errors.As(q.Err, &re) || re.Hint != "" {
		return
	}
	msg := re.Message
	if msg == "" && re.Err != nil {
		msg = re.Err.Error()
	}
	switch {
	case re.Kind == KindHTTP && re.Status == fasthttp.StatusRequestEntityTooLarge:
		re.Hint = bodyHint(q.BodyBytes, mode, true)
	case re.Kind == KindTransport && re.Status == 0 && q.BodyBytes >= sizedBody && resetBeforeResponse(re.Err):
		re.Hint = bodyHint(q.BodyBytes, mode, q.BodyBytes > largeBody)
	case re.Kind == KindStream && strings.HasPrefix(msg, "expected "):
		// a response genload did not understand: the message says what came
	default:
		re.Hint = Hint(msg, mode, text)
	}
	q.Error = re.Error()
}

// largeBody is the body size above which a reset or EOF before any response byte is
// reported as a probable body-size limit (servers and proxies commonly limit bodies to
// 1 MB, e.g. nginx's client_max_body_size default); from sizedBody on, the error still gives
// the body size, since limits of 16–100 kB exist too.
const (
	largeBody = 1 << 20
	sizedBody = 16 << 10
)

// bodyHint returns the hint for a request of n body bytes that a server or proxy refused for
// its size (sure: a 413, or a reset of a body over largeBody) or perhaps for it.
func bodyHint(n int, mode Mode, sure bool) string {
	fix := `mode = "routed" (one prompt per request) or a smaller B`
	if mode == ModeRouted {
		fix = "shorter prompts (smaller L), or raise the server's or proxy's body limit"
	}
	size := fmt.Sprintf("%.1f MB", float64(n)/1e6)
	if n < 1e6 {
		size = fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	if !sure {
		return fmt.Sprintf("the request body was %s: if a server or proxy limits body size, it drops larger requests this way; then use %s", size, fix)
	}
	return fmt.Sprintf("the request body was %s: a server or proxy with a body-size limit drops larger requests this way; use %s", size, fix)
}

// resetBeforeResponse reports a connection reset, closed or ended before any response byte.
func resetBeforeResponse(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, fasthttp.ErrConnectionClosed)
}

// Hint returns the advice for a server message msg answered to a request of this mode and
// prompt format (text: string prompts), naming the setting(s) to change; "" when the
// message is not a known one.
func Hint(msg string, mode Mode, text bool) string {
	for _, k := range knownMessages {
		for _, m := range k.match {
			if strings.Contains(msg, m) {
				return k.hint(mode, text)
			}
		}
	}
	return ""
}

// A knownMessage is a server message genload has met and the setting that avoids it.
type knownMessage struct {
	// any of these substrings (case-sensitive) identifies the message
	match []string
	// hint returns the advice for a request of this mode and prompt format; "" when the
	// message does not concern them
	hint func(mode Mode, text bool) string
}

// knownMessages is the table of server messages with a known fix, first match wins. Each
// entry's source: TGI's Prompt enum ("untagged enum Prompt", and its 422 for token ids), the
// Go OpenAI layers that type prompt as a string (ollama: "cannot unmarshal array into Go
// struct field CompletionRequest.prompt of type string"), TGI's max_client_batch_size,
// llama.cpp's n ≠ 1 rejection, HTTP 413 bodies, and genload's own unfinished-stream errors
// (a choice index out of range, or choices missing).
var knownMessages = []knownMessage{
	{match: []string{"prompt of type string", "prompt must be a string"}, hint: func(mode Mode, text bool) string {
		if mode != ModeArray && text {
			return ""
		}
		fix := []string{}
		if mode == ModeArray {
			fix = append(fix, `mode = "routed"`)
		}
		if !text {
			fix = append(fix, `prompt.format = "text"`)
		}
		return fmt.Sprintf("%s rejected: the server accepts only a single string prompt: set %s (or \"auto\")",
			rejected(mode, text, mode == ModeArray, !text), strings.Join(fix, " and "))
	}},
	{match: []string{"untagged enum Prompt", "Token ids are not supported", "token ids are not supported"}, hint: func(mode Mode, text bool) string {
		if text {
			return ""
		}
		return rejected(mode, text, false, true) + ` rejected: the server accepts only text prompts: set prompt.format = "text" (or "auto")`
	}},
	{match: []string{"maximum allowed batch size", "max_client_batch_size"}, hint: func(mode Mode, text bool) string {
		if mode != ModeArray {
			return ""
		}
		return rejected(mode, text, true, false) + ` rejected: the server limits the prompts of one request: set mode = "routed" (or "auto"), one request per prompt`
	}},
	{match: []string{"Only one completion choice is allowed"}, hint: func(mode Mode, text bool) string {
		if mode != ModeN {
			return ""
		}
		return rejected(mode, text, true, false) + ` rejected: the server generates one choice per prompt: set mode = "array" or "routed" (or "auto")`
	}},
	{match: []string{"is out of range for"}, hint: func(Mode, bool) string {
		return "the server numbered its choices otherwise than 0 … B−1 in prompt order (as from 1), or answered more choices than prompts: genload cannot match them to its prompts; the server or a proxy between must number them from 0"
	}},
	{match: []string{"sequences unfinished, [DONE] seen: true"}, hint: func(mode Mode, text bool) string {
		if mode == ModeN {
			return `the server ended the stream without finishing every choice: it may ignore n ([mode] = "n"): set mode = "array" or "routed"`
		}
		return "the server ended the stream without finishing every choice: it stopped early, or answered fewer choices than prompts"
	}},
}

// rejected names the configured settings among mode/format that the server refused:
// `[mode] = "array" / [prompt.format] = "tokens"`.
func rejected(mode Mode, text, modeBad, formatBad bool) string {
	var parts []string
	if modeBad {
		parts = append(parts, fmt.Sprintf("[mode] = %q", string(mode)))
	}
	if formatBad {
		f := "tokens"
		if text {
			f = "text"
		}
		parts = append(parts, fmt.Sprintf("[prompt.format] = %q", f))
	}
	return strings.Join(parts, " / ")
}
