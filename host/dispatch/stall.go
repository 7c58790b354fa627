package dispatch

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/sse"
)

// StallError is the recording type: see recording.StallError.
type StallError = recording.StallError

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
	// anyByte is the last byte's offset from base in µs over every stream of the Send
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

const stallMarkBits = 24

// stallPool recycles stall watches (their timer and hook) across Sends. A watch's timer
// callback that started before stop returned may still run once after the watch was reused;
// under the watch's mutex it finds either a stopped watch or the new stream's state, so at
// worst it re-arms the timer that arm resets anyway.
var stallPool = sync.Pool{New: func() any { return new(stallWatch) }}

// enabled reports whether o asks for stall detection.
func stallEnabled(o *Options) bool { return o.Stall > 0 || o.StallSteps > 0 }

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

// stop disarms the watch (the stream ended); a check already running does nothing more.
func (s *stallWatch) stop() {
	s.mu.Lock()
	s.stopped = true
	if s.t != nil {
		s.t.Stop()
	}
	s.mu.Unlock()
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
