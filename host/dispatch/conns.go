package dispatch

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// request's connection can get its read deadline replaced and so that a canceled
// context can close connections still waiting for headers.
type connSet struct {
	mu sync.Mutex
	m  map[net.Addr]net.Conn // by the connection's LocalAddr value (pointer identity)
}

type trackedConn struct {
	net.Conn
	set  *connSet
	key  net.Addr
	once sync.Once
	// wrote is when the last Write returned, as an offset from writeBase (ns); read after a
	// request's round trip for its Request.Write.
	wrote atomic.Int64
}

// writeBase is the origin of trackedConn.wrote (monotonic).
var writeBase = time.Now()

// Write writes to the connection and records when it returned.
func (t *trackedConn) Write(b []byte) (int, error) {
	n, err := t.Conn.Write(b)
	t.wrote.Store(int64(time.Since(writeBase)))
	return n, err
}

// wroteAt returns when the last Write returned (the zero Time before any).
func (t *trackedConn) wroteAt() time.Time {
	if w := t.wrote.Load(); w > 0 {
		return writeBase.Add(time.Duration(w))
	}
	return time.Time{}
}

func (t *trackedConn) Close() error {
	t.once.Do(func() {
		t.set.mu.Lock()
		delete(t.set.m, t.key)
		t.set.mu.Unlock()
	})
	return t.Conn.Close()
}

// get returns the tracked connection whose LocalAddr() is l (the same value fasthttp
// copied into the Response), nil if none.
func (s *connSet) get(l net.Addr) net.Conn {
	if l == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[l]
}

func (s *connSet) closeAll() {
	s.mu.Lock()
	cs := make([]net.Conn, 0, len(s.m))
	for _, c := range s.m {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
	}
}

func (c *Client) dial(addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: c.opts.ConnectTimeout}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	t := &trackedConn{Conn: conn, set: &c.conns, key: conn.LocalAddr()}
	c.conns.mu.Lock()
	c.conns.m[t.key] = t
	c.conns.mu.Unlock()
	return t, nil
}
