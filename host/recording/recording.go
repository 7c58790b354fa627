// Package recording holds what host/dispatch records of one cell, with no transport types in
// it: a Result (the recording of one plan sent by dispatch.Client.Do) has, per sequence, the
// arrival offset and token count of every token-bearing chunk, its completion-token count and
// where that count came from (sse.TokenSource), its finish reason and when it arrived; per HTTP
// request, when it was sent, when its headers and its end arrived, its status, usage, the
// server timing headers captured, its retries and its failure (a *RequestError). It is plain
// values (offsets, counts, strings, the sse parser's per-sequence records), so that
// host/measure, host/results and host/report, which compute, write and print figures from it,
// link no HTTP client.
//
// Every time in a Result is a monotonic offset (a time.Duration, in ns) from Result.Start,
// taken when the bytes arrived. A Result marshals to JSON and back with every value measure
// reads (offsets, marks, counts and their sources, usage, headers), so one can be written to
// disk and replayed into measure.Compute in tests without a server. Request.Err is not
// marshalled (Request.Error keeps its text): a test replaying a failed request sets Err again
// for measure to count it as failed.
package recording

import (
	"errors"
	"fmt"
	"time"

	"github.com/genload/genload/host/sse"
)

// Mode is the request shape of a cell.
type Mode string

// The three request shapes.
const (
	// ModeArray (the default, also for ""): one request whose prompt is the B token-id
	// arrays, n = 1, sent to worker 0. Sequence i is prompt i (choices[].index = i).
	ModeArray Mode = "array"
	// ModeRouted: B concurrent requests, n = 1, request i carrying prompt i as one token-id
	// array, sent to the worker the cell's plan names for it (host/plan: the router plugin's
	// choice, made before anything is sent). Sequence i is prompt i.
	ModeRouted Mode = "routed"
	// ModeN (legacy): one request of the plan's single prompt with n = B, sent to worker 0.
	// Sequence i is choice i. (Recordings made before plans list prompts 0 … B−1 in its
	// Request.Prompts; the prompt sent was prompt 0 alone.)
	ModeN Mode = "n"
)

// Result is what one plan sent (dispatch.Client.Do) recorded.
type Result struct {
	// Mode is the request shape used; MaxTokens the max_tokens sent.
	Mode      Mode `json:"mode"`
	MaxTokens int  `json:"max_tokens"`
	// Start is the monotonic origin of every offset below: taken after the bodies were
	// built, right before the first request was sent.
	Start time.Time `json:"start"`
	// Sequences has one record per sequence: B of them, sequence i being prompt i
	// (ModeArray, ModeRouted) or choice i of prompt 0 (ModeN). A failed request's
	// sequences are present with whatever arrived before the failure.
	Sequences []Sequence `json:"sequences"`
	// Requests are the HTTP requests made (1 in ModeArray and ModeN, B in ModeRouted).
	Requests []Request `json:"requests"`
	// Client is what the client process itself spent on the plan (ClientLoad).
	Client ClientLoad `json:"client"`
}

// Sequence is one generated sequence. Times in the embedded sse.Sequence (Marks[].At,
// FinishAt) are offsets from Result.Start.
type Sequence struct {
	sse.Sequence
	// Prompt is the index of the prompt it continues; Request the index into
	// Result.Requests of the request that carried it.
	Prompt  int `json:"prompt"`
	Request int `json:"request"`
}

// Request is one HTTP request of a plan. Durations are offsets from Result.Start.
type Request struct {
	Worker     int    `json:"worker"`
	WorkerName string `json:"worker_name"`
	URL        string `json:"url"`
	// Prompts are the prompt indices it carried.
	Prompts []int `json:"prompts"`
	// Attempts counts sends: 1 + retries used + one free resend when a pooled keep-alive
	// connection turned out closed by the server before any response byte.
	Attempts int `json:"attempts"`
	// Retries lists why each attempt but the last was sent again (len = Attempts − 1).
	Retries []Retry `json:"retries,omitempty"`
	// BodyBytes is the size of the request body in bytes.
	BodyBytes int `json:"body_bytes"`
	// Sent is when the last attempt was sent; Header when its response headers arrived;
	// End when its stream ended (or failed).
	Sent   time.Duration `json:"sent_ns"`
	Header time.Duration `json:"header_ns"`
	End    time.Duration `json:"end_ns"`
	// Write is how long the last attempt took to write its request (headers and body) to
	// the connection: from the start of its first write (after connecting) to the return of
	// its last, the body then being in the kernel's send buffer (0 when not measured).
	Write time.Duration `json:"write_ns,omitempty"`
	// Connect is how long the last attempt waited, after Sent, for a new TCP connection to
	// open before it could write (0 when it went out on a connection already open: a pooled
	// one, or a spare dialled ahead of need, dispatch's Options.SpareConns).
	Connect time.Duration `json:"connect_ns,omitempty"`
	// Status is the HTTP status of the last attempt (0 when none arrived).
	Status int `json:"status"`
	// Usage is the request's usage (usage-only chunk, else the sum of per-choice usage),
	// valid when HasUsage.
	Usage    sse.Usage `json:"usage"`
	HasUsage bool      `json:"has_usage"`
	// Done reports that [DONE] arrived.
	Done bool `json:"done"`
	// Headers holds the values of dispatch's Options.GenerationDurationHeader and
	// SpeculationAcceptanceHeader found in the response headers or trailers, by the
	// configured name.
	Headers map[string]string `json:"headers,omitempty"`
	// Err is the request's failure (a *RequestError), nil on success; Error its text.
	Err   error  `json:"-"`
	Error string `json:"error,omitempty"`
}

// Err joins the errors of all failed requests (nil when every request succeeded).
func (r *Result) Err() error {
	var errs []error
	for i := range r.Requests {
		if r.Requests[i].Err != nil {
			errs = append(errs, r.Requests[i].Err)
		}
	}
	return errors.Join(errs...)
}

// ErrorKind classifies a RequestError.
type ErrorKind string

// Error kinds.
const (
	KindTransport ErrorKind = "transport" // connect/write/read failure
	KindHTTP      ErrorKind = "http"      // non-200 status
	KindServer    ErrorKind = "server"    // in-stream {"error":…} event
	KindStream    ErrorKind = "stream"    // truncated or malformed stream
	KindTimeout   ErrorKind = "timeout"   // Timeout names which one
	KindCanceled  ErrorKind = "canceled"  // the context was canceled
)

// RequestError is a failed request. Its text is
// "POST <url>: <kind detail>: <server message or cause>"; it never contains the API key.
type RequestError struct {
	Kind ErrorKind
	URL  string
	// Status is the HTTP status (0 before headers arrived).
	Status int
	// Message is the server's message (error.message, then message, then error string)
	// for KindHTTP and KindServer.
	Message string
	// Timeout is "connect", "first_token", "total" or "stall" (Err is then a *StallError)
	// for KindTimeout.
	Timeout string
	// Err is the underlying error (a *sse.ServerError for KindServer).
	Err error
	// Hint is advice for a failure whose fix is known (the setting to change: see Hint),
	// "" otherwise.
	Hint string
}

// Error returns "POST <url>: status <n>: <server message>" (KindHTTP), "POST <url>:
// status 200: in-stream server error: …" (KindServer), "POST <url>: <which> timeout: …"
// (KindTimeout) or "POST <url>: <kind>: <cause>", followed by " (<hint>)" when Hint is set.
func (e *RequestError) Error() string {
	var s string
	switch e.Kind {
	case KindHTTP:
		s = fmt.Sprintf("POST %s: status %d: %s", e.URL, e.Status, e.Message)
	case KindServer:
		s = fmt.Sprintf("POST %s: status %d: in-stream %v", e.URL, e.Status, e.Err)
	case KindTimeout:
		s = fmt.Sprintf("POST %s: %s timeout: %v", e.URL, e.Timeout, e.Err)
	default:
		s = fmt.Sprintf("POST %s: %s: %v", e.URL, e.Kind, e.Err)
	}
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	return s
}

// Unwrap returns the underlying error (a *sse.ServerError for KindHTTP and KindServer).
func (e *RequestError) Unwrap() error { return e.Err }

// Retry is one re-send of a request: which attempt failed, and why.
type Retry struct {
	// Attempt is the 1-based attempt that failed.
	Attempt int `json:"attempt"`
	// Reason is that attempt's failure (the error without "POST <url>: "), prefixed with
	// "stale keep-alive connection: " for the free resend on a connection the server had
	// closed while idle, or "response headers over 4 KiB" for the free resend with larger
	// read buffers.
	Reason string `json:"reason"`
	// Wait is the backoff before the resend (0 for free resends).
	Wait time.Duration `json:"wait_ns,omitempty"`
	// Free resends are not counted against dispatch's Options.Retries.
	Free bool `json:"free,omitempty"`
}

// RetryStats sums the resends of a plan (the measured requests or the warmup) over its requests.
type RetryStats struct {
	// Count is the number of resends counted against dispatch's Options.Retries; Free the others
	// (stale keep-alive connections, larger header buffers).
	Count int `json:"count"`
	Free  int `json:"free,omitempty"`
	// Reasons counts resends by reason (Retry.Reason).
	Reasons map[string]int `json:"reasons,omitempty"`
}

// Retried returns the resends of every request of r; the zero RetryStats when none.
func (r *Result) Retried() RetryStats {
	var st RetryStats
	for i := range r.Requests {
		for _, rt := range r.Requests[i].Retries {
			if rt.Free {
				st.Free++
			} else {
				st.Count++
			}
			if st.Reasons == nil {
				st.Reasons = map[string]int{}
			}
			st.Reasons[rt.Reason]++
		}
	}
	return st
}

// StallError is a stream that stopped sending after its first token: no byte arrived for
// Limit, on it nor on any other stream of the same plan. It is the Err of a RequestError of
// Kind KindTimeout, Timeout "stall".
type StallError struct {
	// Limit is the silence that ended the stream: dispatch's Options.Stall, else
	// max(Options.StallMin, Options.StallSteps × Step).
	Limit time.Duration
	// Token is the last token seen, counted per sequence (token-bearing chunks of the
	// stream ÷ Sequences).
	Token int
	// Sequences is the number of sequences the stream carries; Streams the number of
	// streams (requests) of the plan.
	Sequences int
	Streams   int
	// Step is the stream's observed step time: (time of the last byte − time of the first
	// token) ÷ tokens per sequence after the first; 0 when not known yet (one token: the
	// limit then used the time to the first token in its place).
	Step time.Duration
	// Steps and Min are the rule's Options.StallSteps and StallMin (0, 0 with a fixed Stall).
	Steps int
	Min   time.Duration
}

// Error returns e.g. "no byte for 2.0 s after token 37; the stream's step was 5.1 ms
// (limit max([timeouts] stall_min 2s, stall_steps 20 × step))"; with several streams, "no
// byte on any of the 8 streams for 2.0 s after token 37; …".
func (e *StallError) Error() string {
	none := "no byte"
	if e.Streams > 1 {
		none = fmt.Sprintf("no byte on any of the %d streams", e.Streams)
	}
	after := fmt.Sprintf("after token %d", e.Token)
	if e.Sequences > 1 {
		after = fmt.Sprintf("after token %d of each of %d sequences", e.Token, e.Sequences)
	}
	step := "the stream's step was not known yet"
	if e.Step > 0 {
		step = fmt.Sprintf("the stream's step was %.1f ms", float64(e.Step)/1e6)
	}
	rule := "[timeouts] stall"
	if e.Steps > 0 {
		rule = fmt.Sprintf("max([timeouts] stall_min %v, stall_steps %d × step)", e.Min, e.Steps)
	}
	return fmt.Sprintf("%s for %.1f s %s; %s (limit %s)", none, e.Limit.Seconds(), after, step, rule)
}
