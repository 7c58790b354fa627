package dispatch

import (
	"net/url"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// spareMaxAge is how long a spare connection waits for a request before it is closed and
// replaced: below the 4 s after which the Client closes an idle connection of its own
// (MaxIdleConnDuration) and uvicorn's 5 s keep-alive (vLLM, SGLang), so that no server has
// closed a spare by the time it is taken.
const spareMaxAge = 3 * time.Second

// spares keeps want connections to one address dialled ahead of need (Options.SpareConns):
// the Client's dial takes one when the HTTP client needs a new connection, and a replacement
// is dialled in the background at once. Every spare is a tracked connection of the Client
// (Client.OpenConns counts it, Client.Close and a canceled Do close it) whose connect time is
// 0: no request waited for it.
type spares struct {
	addr   string
	want   int
	maxAge time.Duration // spareMaxAge but in tests
	dial   func(addr string) (*trackedConn, error)

	mu      sync.Mutex
	ready   []spare // oldest first
	dialing int
	closed  bool
	stop    chan struct{}
}

// spare is a connection dialled ahead, and when it was.
type spare struct {
	c  *trackedConn
	at time.Time
}

// newSpares starts keeping want connections to addr (host:port) dialled through dial, each
// replaced before it is maxAge old (spareMaxAge), until close.
func newSpares(addr string, want int, maxAge time.Duration, dial func(string) (*trackedConn, error)) *spares {
	s := &spares{addr: addr, want: want, maxAge: maxAge, dial: dial, stop: make(chan struct{})}
	s.mu.Lock()
	s.fill()
	s.mu.Unlock()
	go s.refresh()
	return s
}

// take returns the newest spare still open and younger than maxAge (closing the older
// ones it passes), nil when there is none, and dials replacements.
func (s *spares) take() *trackedConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	var got *trackedConn
	for len(s.ready) > 0 && got == nil {
		sp := s.ready[len(s.ready)-1]
		s.ready = s.ready[:len(s.ready)-1]
		if sp.c.closed.Load() || time.Since(sp.at) >= s.maxAge {
			_ = sp.c.Close()
			continue
		}
		got = sp.c
	}
	s.fill()
	return got
}

// fill starts the dials that bring the spares ready or on their way up to want (s.mu held).
func (s *spares) fill() {
	for !s.closed && len(s.ready)+s.dialing < s.want {
		s.dialing++
		go s.dialOne()
	}
}

// dialOne dials one spare. A failed dial is not tried again here (a server that is down
// would be dialled in a loop): the next take, or the next refresh, tries again.
func (s *spares) dialOne() {
	c, err := s.dial(s.addr)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dialing--
	if err != nil {
		return
	}
	if s.closed {
		_ = c.Close()
		return
	}
	s.ready = append(s.ready, spare{c, time.Now()})
	for len(s.ready) > s.want { // a refresh's replacement is in: the oldest goes
		_ = s.ready[0].c.Close()
		s.ready = s.ready[1:]
	}
}

// refresh dials, every maxAge/4 until close, a replacement for each spare older than
// maxAge/2 (dialOne closes the oldest when one is in): a spare is replaced before it is
// 3/4 maxAge old plus a dial, and the spares ready do not drop below want for a refresh; a
// spare whose replacement could not be dialled is closed at maxAge.
func (s *spares) refresh() {
	t := time.NewTicker(s.maxAge / 4)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.mu.Lock()
		n := 0
		for n < len(s.ready) && time.Since(s.ready[n].at) >= s.maxAge {
			_ = s.ready[n].c.Close()
			n++
		}
		s.ready = s.ready[n:]
		for _, sp := range s.ready {
			if time.Since(sp.at) >= s.maxAge/2 && !s.closed {
				s.dialing++
				go s.dialOne()
			}
		}
		s.fill()
		s.mu.Unlock()
	}
}

// close stops the refresh and closes the spares ready; a dial under way closes its own.
func (s *spares) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	close(s.stop)
	for _, sp := range s.ready {
		_ = sp.c.Close()
	}
	s.ready = nil
}

// dialAddr is the host:port the HTTP client dials for the request URL u (fasthttp's: the
// scheme's port when the URL names none).
func dialAddr(u string) (string, error) {
	p, err := url.Parse(u)
	if err != nil {
		return "", err
	}
	return fasthttp.AddMissingPort(p.Host, p.Scheme == "https"), nil
}
