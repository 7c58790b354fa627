package dispatch

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/valyala/fasthttp"
)

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
