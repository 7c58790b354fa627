package dispatch

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitFor polls cond every millisecond for up to 2 s and reports whether it came true.
func waitFor(cond func() bool) bool {
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// A request of a Client without spares waits for its connection to be dialled, and says how
// long; with SpareConns it goes out on a spare (no wait), a replacement is dialled at once,
// and Close closes every spare.
func TestSpareConnsTakeTheConnectOffTheRequestsPath(t *testing.T) {
	s := newFakeServer(t)
	plain, _ := New(Options{Target: s.URL})
	defer plain.Close()
	res, err := plain.Send(context.Background(), ModeRouted, prompts3[:1], 2)
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	if c := res.Requests[0].Connect; c <= 0 || c > time.Second {
		t.Errorf("without spares: the first request waited %v for its connection, want its dial time", c)
	}

	c, _ := New(Options{Target: s.URL, SpareConns: 2})
	if !waitFor(func() bool { return c.OpenConns() == 2 }) {
		t.Fatalf("%d connections open after New with 2 spares, want 2", c.OpenConns())
	}
	res, err = c.Send(context.Background(), ModeRouted, prompts3, 2)
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	took := 0
	for i, r := range res.Requests {
		if r.Connect == 0 {
			took++
		} else if r.Connect < 0 || r.Connect > time.Second {
			t.Errorf("request %d waited %v for its connection", i, r.Connect)
		}
	}
	// Three requests at once took the two spares (a third may have found a replacement
	// ready, or dialled), and the replacements are dialled: 3 pooled + 2 spares.
	if took < 2 {
		t.Errorf("%d of 3 requests went out on a spare, want at least the 2 ready", took)
	}
	sp := c.spares[strings.TrimPrefix(s.URL, "http://")]
	if !waitFor(func() bool { sp.mu.Lock(); defer sp.mu.Unlock(); return len(sp.ready) == 2 }) {
		t.Errorf("%d spares ready after the requests, want their 2 replacements", len(sp.ready))
	}
	c.Close()
	if !waitFor(func() bool { return c.OpenConns() == 0 }) {
		t.Errorf("%d connections open after Close", c.OpenConns())
	}
}

// pipeDialer dials in-memory connections and keeps them, for tests of spares.
type pipeDialer struct {
	set   connSet
	mu    sync.Mutex
	conns []*trackedConn
}

func (d *pipeDialer) dial(string) (*trackedConn, error) {
	a, _ := net.Pipe()
	t := &trackedConn{Conn: a, set: &d.set, key: &net.TCPAddr{}}
	d.mu.Lock()
	d.conns = append(d.conns, t)
	d.mu.Unlock()
	return t, nil
}

func (d *pipeDialer) dialled() []*trackedConn {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*trackedConn(nil), d.conns...)
}

// Spares are replaced before they reach their maximum age, take never returns one that is
// closed or too old, and close closes them and stops dialling.
func TestSparesAreReplacedBeforeTheirAge(t *testing.T) {
	d := &pipeDialer{set: connSet{m: map[net.Addr]net.Conn{}}}
	const age = 60 * time.Millisecond
	s := newSpares("x:1", 2, age, d.dial)
	if !waitFor(func() bool { return len(d.dialled()) == 2 }) {
		t.Fatalf("%d dialled, want 2", len(d.dialled()))
	}
	first := d.dialled()
	time.Sleep(2 * age)
	for i, c := range first {
		if !c.closed.Load() {
			t.Errorf("spare %d still open after twice its maximum age", i)
		}
	}
	if n := len(d.dialled()); n < 4 {
		t.Errorf("%d dialled after twice the age, want the 2 first and at least 2 replacements", n)
	}
	s.mu.Lock()
	ready := len(s.ready)
	s.mu.Unlock()
	if ready < 1 || ready > 2 {
		t.Errorf("%d spares ready after refreshes, want 1-2 (the 2 wanted, one maybe being replaced)", ready)
	}
	got := s.take()
	if got == nil || got.closed.Load() {
		t.Fatalf("take returned %v (closed: %v), want an open spare", got, got != nil && got.closed.Load())
	}
	got.closed.Store(true) // as if the server closed it: take passes over it
	s.mu.Lock()
	s.ready = append(s.ready, spare{got, time.Now()})
	s.mu.Unlock()
	again := s.take()
	if again == got || again == nil {
		t.Errorf("take returned %v after a closed spare, want another, open one", again)
	}
	s.close()
	waitFor(func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.dialing == 0 }) // dials begun before close close their own
	n := len(d.dialled())
	for i, c := range d.dialled() {
		if c != got && c != again && !c.closed.Load() {
			t.Errorf("connection %d open after close", i)
		}
	}
	if c := s.take(); c != nil {
		t.Error("take after close returned a spare")
	}
	time.Sleep(age)
	if m := len(d.dialled()); m != n {
		t.Errorf("%d dials after close", m-n)
	}
}

// A tracked connection leaves the Client's set at its first Close (a later one changes
// nothing), and records its connect time only when a request waits for it.
func TestTrackedConnLeavesItsSetAtItsFirstClose(t *testing.T) {
	s := newFakeServer(t)
	c, _ := New(Options{Target: s.URL})
	defer c.Close()
	addr := strings.TrimPrefix(s.URL, "http://")
	waited, err := c.dialNew(addr, true)
	if err != nil {
		t.Fatal(err)
	}
	spare, err := c.dialSpare(addr)
	if err != nil {
		t.Fatal(err)
	}
	if waited.connect <= 0 || spare.connect != 0 {
		t.Errorf("connect times %v (waited) and %v (spare), want the dial's and 0", waited.connect, spare.connect)
	}
	if n := c.OpenConns(); n != 2 {
		t.Fatalf("%d connections open, want 2", n)
	}
	_ = waited.Close()
	if n := c.OpenConns(); n != 1 {
		t.Fatalf("%d connections open after one Close, want 1", n)
	}
	_ = waited.Close()
	_ = spare.Close()
	if n := c.OpenConns(); n != 0 {
		t.Fatalf("%d connections open after both closed, want 0", n)
	}
}
