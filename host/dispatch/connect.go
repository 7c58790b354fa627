package dispatch

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Per-connection read buffers. A connection holds one from sending a request to the end of
// its stream, so at 512 streams they are a large part of the client's memory (and of the
// heap the garbage collector paces itself on): 4 KiB, fasthttp's default. The buffer also
// bounds the response headers; a response whose headers do not fit fails with
// fasthttp.ErrSmallBuffer, and the Client then switches for good to bigReadBufferSize and
// sends the request again (once, not counted as a retry). In practice the first warmup
// pays for it.
const (
	readBufferSize    = 4 << 10
	bigReadBufferSize = 64 << 10
)

// newHTTPClient returns a fasthttp client with read buffers of readBuf bytes that streams
// response bodies, writes through a 16 KiB buffer, dials through c.dial (so that every
// connection is tracked), makes one attempt per call (retries are do's) and closes a
// connection idle for 4 s.
func (c *Client) newHTTPClient(readBuf int) *fasthttp.Client {
	return &fasthttp.Client{
		Name:                      "genload",
		StreamResponseBody:        true,
		MaxConnsPerHost:           1 << 16,
		MaxIdemponentCallAttempts: 1,
		ReadBufferSize:            readBuf,
		WriteBufferSize:           16 << 10,
		MaxIdleConnDuration:       4 * time.Second, // below uvicorn's 5 s keep-alive (vLLM, SGLang)
		Dial:                      c.dial,
	}
}

// httpClient returns the fasthttp client in use.
func (c *Client) httpClient() *fasthttp.Client {
	if b := c.big.Load(); b != nil {
		return b
	}
	return c.hc
}

// growReadBuffers switches to the client with big read buffers.
func (c *Client) growReadBuffers() {
	if c.big.Load() == nil {
		c.big.CompareAndSwap(nil, c.newHTTPClient(bigReadBufferSize))
	}
}

// connSet tracks open connections by their local address, so that a streaming
// request's connection can get its read deadline replaced and so that a canceled
// context can close connections still waiting for headers.
type connSet struct {
	mu sync.Mutex
	m  map[net.Addr]net.Conn // by the connection's LocalAddr value (pointer identity)
}

// dial returns a connection to addr for the HTTP client: a spare dialled ahead when there is
// one (Options.SpareConns), else a new one (dialNew), whose connect time the request that
// asked for it waited.
func (c *Client) dial(addr string) (net.Conn, error) {
	if s := c.spares[addr]; s != nil {
		if t := s.take(); t != nil {
			return t, nil
		}
	}
	t, err := c.dialNew(addr, true)
	if err != nil {
		return nil, err // not t: a nil *trackedConn in a net.Conn is not a nil net.Conn
	}
	return t, nil
}

// dialNew connects to addr over TCP (within Options.ConnectTimeout) and registers the
// connection in c.conns until it is closed; it records how long connecting took when a
// request waits for it (waited), and 0 for a spare dialled ahead of need.
func (c *Client) dialNew(addr string, waited bool) (*trackedConn, error) {
	d := net.Dialer{Timeout: c.opts.ConnectTimeout}
	began := time.Now()
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	t := &trackedConn{Conn: conn, set: &c.conns, key: conn.LocalAddr()}
	if waited {
		t.connect = time.Since(began)
	}
	c.conns.mu.Lock()
	c.conns.m[t.key] = t
	c.conns.mu.Unlock()
	return t, nil
}

// dialSpare is dialNew for a spare: no request waits for its connect.
func (c *Client) dialSpare(addr string) (*trackedConn, error) { return c.dialNew(addr, false) }

// trackedConn is a connection of the Client's connSet that records when its writes of a
// request began and ended.
type trackedConn struct {
	net.Conn
	set *connSet
	key net.Addr
	// from is when the first Write since the last Read began and wrote when the last Write
	// returned, as offsets from writeBase (ns): a request's writes are consecutive, then its
	// response is read, so after its round trip they span its Request.Write; read marks that a
	// Read came since the last Write.
	from, wrote atomic.Int64
	read        atomic.Bool
	// connect is how long dialling it took; the first request to go out on it waited for
	// that (connTimes), and taken marks that one has.
	connect time.Duration
	taken   atomic.Bool
	// closed is set by the first Close, which removes the connection from its set.
	closed atomic.Bool
}

// writeBase is the origin of trackedConn.wrote (monotonic).
var writeBase = time.Now()

// Write writes to the connection and records when the writes of a request began and ended.
func (t *trackedConn) Write(b []byte) (int, error) {
	if t.from.Load() == 0 || t.read.Swap(false) {
		t.from.Store(int64(time.Since(writeBase)))
	}
	n, err := t.Conn.Write(b)
	t.wrote.Store(int64(time.Since(writeBase)))
	return n, err
}

// Read reads from the connection and marks that the next Write begins a new request.
func (t *trackedConn) Read(b []byte) (int, error) {
	if !t.read.Load() {
		t.read.Store(true)
	}
	return t.Conn.Read(b)
}

// connTimes returns, for the request just sent on the connection resp came on, how long it
// took to write (from the start of its first write to the return of its last; connecting,
// before it, left out) and how long it waited for that connection to be dialled (the
// connection's dial time for the first request to go out on it, else 0); 0, 0 when the
// connection is not known.
//
//go:noinline
func (c *Client) connTimes(resp *fasthttp.Response) (write, connect time.Duration) {
	tc, ok := c.conns.get(resp.LocalAddr()).(*trackedConn)
	if !ok {
		return 0, 0
	}
	if !tc.taken.Swap(true) {
		connect = tc.connect
	}
	return tc.writeSpan(), connect
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

// writeSpan returns how long the last request's writes took, from the start of the first to
// the return of the last (0 before any).
func (t *trackedConn) writeSpan() time.Duration {
	f, w := t.from.Load(), t.wrote.Load()
	if f == 0 || w < f {
		return 0
	}
	return time.Duration(w - f)
}

// Close removes the connection from its set (the first time) and closes it.
func (t *trackedConn) Close() error {
	if !t.closed.Swap(true) {
		t.set.mu.Lock()
		delete(t.set.m, t.key)
		t.set.mu.Unlock()
	}
	return t.Conn.Close()
}

// closeAll closes every tracked connection, idle or busy: a request waiting for headers on
// one fails at once.
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
