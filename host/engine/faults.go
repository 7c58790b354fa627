package engine

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Faults are failures injected on demand, for testing clients. Every field can also be set
// per request with a header (names in the field docs); a header overrides the flag for that
// request. Token counts refer to the tokens of the whole request (all choices).
type Faults struct {
	// Every applies the flag-configured faults to every Nth completion request: requests N,
	// 2N, 3N, … counted from 1 (1 = all). A run sends a warmup then a measured request per
	// cell, so an even N faults only measured requests and an odd N alternates.
	// Defaults to 1. Header-requested faults always apply.
	Every int
	// Status answers completion requests with this HTTP status (400, 404, 429, 500, 503, …)
	// and the dialect's error body, before any work. 0 = off (default).
	// Header: X-Genload-Fault-Status.
	Status int
	// ErrorAfter sends an in-stream error event (dialect shape, then [DONE] where the dialect
	// does) after this many tokens; non-streaming requests get a 500. -1 = off (default).
	// Header: X-Genload-Error-After.
	ErrorAfter int
	// ResetAfter resets the TCP connection (RST) after this many streamed tokens. -1 = off.
	// Header: X-Genload-Reset-After.
	ResetAfter int
	// CutAfter closes the connection after this many streamed tokens, in the middle of the
	// next event (half an event written, no chunked terminator). -1 = off.
	// Header: X-Genload-Cut-After.
	CutAfter int
	// FirstTokenDelay holds the first streamed token (and everything after it) for this
	// long, in wall time. 0 = off. Header: X-Genload-First-Token-Delay (Go duration).
	FirstTokenDelay time.Duration
	// StallAfter and StallFor pause the stream for StallFor after StallAfter tokens (0 = before
	// the first token); the tokens produced meanwhile arrive in a burst. Off when StallFor is 0.
	// Headers: X-Genload-Stall-After, X-Genload-Stall-For.
	StallAfter int
	StallFor   time.Duration
	// KeepAlive writes ": keep-alive" SSE comments whenever a stream has been silent this
	// long. 0 = off (default). Header: X-Genload-Keep-Alive.
	KeepAlive time.Duration
	// LoadingFor answers 503 "Loading model" on every route (llama.cpp: except /v1/models)
	// for this long after New; /health reports 503 meanwhile. 0 = off (default).
	LoadingFor time.Duration
}

// DefaultFaults returns no faults.
func DefaultFaults() Faults {
	return Faults{Every: 1, ErrorAfter: -1, ResetAfter: -1, CutAfter: -1}
}

func (f Faults) validate() error {
	var errs []error
	if f.Every < 1 {
		errs = append(errs, fmt.Errorf("[fault-every] must be >= 1, got %d", f.Every))
	}
	if f.Status != 0 && (f.Status < 400 || f.Status > 599) {
		errs = append(errs, fmt.Errorf("[fault-status] must be 0 or 400..599, got %d", f.Status))
	}
	if f.FirstTokenDelay < 0 || f.StallFor < 0 || f.KeepAlive < 0 || f.LoadingFor < 0 {
		errs = append(errs, errors.New("[fault-*] durations must be >= 0"))
	}
	return errors.Join(errs...)
}

func registerFaultFlags(fs *flag.FlagSet, f *Faults) {
	fs.IntVar(&f.Every, "fault-every", f.Every, "apply the fault flags to every Nth completion request (header faults always apply)")
	fs.IntVar(&f.Status, "fault-status", f.Status, "answer completions with this HTTP status and a dialect error body, 0 = off (header X-Genload-Fault-Status)")
	fs.IntVar(&f.ErrorAfter, "fault-error-after", f.ErrorAfter, "in-stream error event after N tokens, -1 = off (header X-Genload-Error-After)")
	fs.IntVar(&f.ResetAfter, "fault-reset-after", f.ResetAfter, "TCP reset after N streamed tokens, -1 = off (header X-Genload-Reset-After)")
	fs.IntVar(&f.CutAfter, "fault-cut-after", f.CutAfter, "cut the stream mid-event after N tokens, -1 = off (header X-Genload-Cut-After)")
	fs.DurationVar(&f.FirstTokenDelay, "fault-first-token-delay", f.FirstTokenDelay, "extra wall delay before the first streamed token (header X-Genload-First-Token-Delay)")
	fs.IntVar(&f.StallAfter, "fault-stall-after", f.StallAfter, "stall the stream after N tokens, with -fault-stall-for (header X-Genload-Stall-After)")
	fs.DurationVar(&f.StallFor, "fault-stall-for", f.StallFor, "stall duration, 0 = off (header X-Genload-Stall-For)")
	fs.DurationVar(&f.KeepAlive, "fault-keep-alive", f.KeepAlive, "send ': keep-alive' comments after this much silence, 0 = off (header X-Genload-Keep-Alive)")
	fs.DurationVar(&f.LoadingFor, "loading-for", f.LoadingFor, "answer 503 'Loading model' for this long after start")
}

// requestFaults resolves the faults of one request: flag faults (on every Nth request), then
// header overrides. Malformed header values are reported as an error (answered with 400).
func (e *Engine) requestFaults(r *http.Request) (Faults, error) {
	f := DefaultFaults()
	n := e.faultSeq.Add(1)
	if n%uint64(e.cfg.Faults.Every) == 0 { // requests N, 2N, 3N, … (1-based)
		f = e.cfg.Faults
	}
	h := r.Header
	var errs []error
	intHdr := func(name string, dst *int) {
		if v := h.Get(name); v != "" {
			x, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("header %s: %w", name, err))
				return
			}
			*dst = x
		}
	}
	durHdr := func(name string, dst *time.Duration) {
		if v := h.Get(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("header %s: %w", name, err))
				return
			}
			*dst = d
		}
	}
	intHdr("X-Genload-Fault-Status", &f.Status)
	intHdr("X-Genload-Error-After", &f.ErrorAfter)
	intHdr("X-Genload-Reset-After", &f.ResetAfter)
	intHdr("X-Genload-Cut-After", &f.CutAfter)
	durHdr("X-Genload-First-Token-Delay", &f.FirstTokenDelay)
	intHdr("X-Genload-Stall-After", &f.StallAfter)
	durHdr("X-Genload-Stall-For", &f.StallFor)
	durHdr("X-Genload-Keep-Alive", &f.KeepAlive)
	return f, errors.Join(errs...)
}

// statusError returns the dialect's error type name and message for an injected status.
func (e *Engine) statusError(status int) (typ, msg string) {
	msg = http.StatusText(status)
	if msg == "" {
		msg = "Error"
	}
	if typ, m, ok := e.wire.statusError(status, msg); ok {
		return typ, m
	}
	return openAIStatusError(status, msg)
}

// loading reports whether the engine still answers 503 "Loading model".
func (e *Engine) loading() bool {
	return e.cfg.Faults.LoadingFor > 0 && time.Since(e.startedAt) < e.cfg.Faults.LoadingFor
}

// withLoading wraps h with the loading-state 503.
func (e *Engine) withLoading(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e.loading() && !(e.wire.loadingModels && r.URL.Path == "/v1/models") {
			typ, _ := e.statusError(503)
			e.writeError(w, http.StatusServiceUnavailable, typ, "Loading model", "")
			return
		}
		h.ServeHTTP(w, r)
	})
}
