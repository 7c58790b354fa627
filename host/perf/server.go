package perf

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// StampWidth is the number of decimal digits of the send stamp (Unix ns, CLOCK_REALTIME) that a
// paced server writes as each chunk's text. Wall-clock stamps compare across processes; over
// a run of seconds the clock's slew is far below a microsecond.
const StampWidth = 19

// Server is a fast SSE server for the split-process benchmarks: it runs in its own process
// (genload-perf serve, pinned to one core) so that the client's CPU and timestamps are measured
// without the server sharing its process. Each connection is served by one goroutine that
// reads a request (headers + Content-Length body, request ignored) and writes a
// /v1/completions stream with a Content-Length body.
type Server struct {
	ln    net.Listener
	burst []byte // prebuilt response (burst mode)
	n     int
	wait  func(k int)
	wg    sync.WaitGroup
	stop  chan struct{}
}

// NewBurstServer listens on addr and answers every request at once with n token chunks (vLLM
// completions shape, about 165 B each, the size of a real vLLM token chunk), a finish chunk, a
// usage chunk and [DONE], written in 32 KiB pieces: the server costs almost nothing, the client
// is the limit.
func NewBurstServer(addr string, n int) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("perf: burst server listen %s: %w", addr, err)
	}
	body := BurstBody(n)
	s := &Server{ln: ln, n: n, stop: make(chan struct{})}
	s.burst = append([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"), body...)
	go s.accept()
	return s, nil
}

// NewPacedServer listens on addr and answers every request with n stamped chunks, calling
// wait(k) before chunk k; each chunk's text is its send time as StampWidth digits of Unix ns,
// taken just before the write.
func NewPacedServer(addr string, n int, wait func(k int)) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("perf: paced server listen %s: %w", addr, err)
	}
	s := &Server{ln: ln, n: n, wait: wait, stop: make(chan struct{})}
	go s.accept()
	return s, nil
}

// StepWait returns a wait function for NewPacedServer that blocks until the next tick of one
// global ticker of period every, shared by all streams (a batched decode step), and a stop
// function for the ticker.
func StepWait(every time.Duration) (wait func(int), stop func()) {
	var mu sync.Mutex
	ch := make(chan struct{})
	done := make(chan struct{})
	go func() {
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				mu.Lock()
				close(ch)
				ch = make(chan struct{})
				mu.Unlock()
			}
		}
	}()
	return func(int) {
		mu.Lock()
		c := ch
		mu.Unlock()
		<-c
	}, func() { close(done) }
}

// Addr is the listening address, host:port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops accepting and waits for the open connections to end.
func (s *Server) Close() error {
	err := s.ln.Close()
	close(s.stop)
	s.wg.Wait()
	return err
}

func (s *Server) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go s.serve(c)
	}
}

// BurstBody is the SSE body of a burst stream of n token chunks.
func BurstBody(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n-1; i++ {
		fmt.Fprintf(&b, "data: {\"id\":\"cmpl-bench\",\"object\":\"text_completion\",\"created\":1767000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\" tok%d\",\"logprobs\":null,\"finish_reason\":null}]}\n\n", i%1000)
	}
	b.WriteString("data: {\"id\":\"cmpl-bench\",\"object\":\"text_completion\",\"created\":1767000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\" end\",\"logprobs\":null,\"finish_reason\":\"length\"}]}\n\n")
	fmt.Fprintf(&b, "data: {\"id\":\"cmpl-bench\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n", n, n+3)
	return b.Bytes()
}

// AppendStampChunk appends one stamped chunk (finish_reason "length" when fin) carrying the
// current Unix ns as its text.
func AppendStampChunk(dst []byte, fin bool) []byte {
	dst = append(dst, `data: {"choices":[{"index":0,"text":"`...)
	ts := time.Now().UnixNano()
	var d [StampWidth]byte
	for i := StampWidth - 1; i >= 0; i-- {
		d[i] = byte('0' + ts%10)
		ts /= 10
	}
	dst = append(dst, d[:]...)
	if fin {
		return append(dst, `","finish_reason":"length"}]}`+"\n\n"...)
	}
	return append(dst, `","finish_reason":null}]}`+"\n\n"...)
}

func (s *Server) pacedLen() int {
	a, b := len(AppendStampChunk(nil, false)), len(AppendStampChunk(nil, true))
	return (s.n-1)*a + b + len("data: [DONE]\n\n")
}

func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	defer c.Close()
	go func() { <-s.stop; c.Close() }()
	br := bufio.NewReaderSize(c, 4<<10)
	buf := make([]byte, 0, 256)
	for {
		cl := 0
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(line) <= 2 {
				break
			}
			if k, v, ok := bytes.Cut(bytes.TrimSpace(line), []byte(":")); ok && bytes.EqualFold(k, []byte("content-length")) {
				cl, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
			}
		}
		if _, err := io.CopyN(io.Discard, br, int64(cl)); err != nil {
			return
		}
		if s.burst != nil {
			for p := s.burst; len(p) > 0; {
				n := min(len(p), 32<<10)
				if _, err := c.Write(p[:n]); err != nil {
					return
				}
				p = p[n:]
			}
			continue
		}
		if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " + strconv.Itoa(s.pacedLen()) + "\r\n\r\n")); err != nil {
			return
		}
		for k := 0; k < s.n; k++ {
			s.wait(k)
			buf = AppendStampChunk(buf[:0], k == s.n-1)
			if k == s.n-1 {
				buf = append(buf, "data: [DONE]\n\n"...)
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}
}

// ServeAll starts the four servers of the split benchmarks on loopback and returns their
// addresses as environment assignments (GENLOAD_PERF_BURST1000, GENLOAD_PERF_BURST100,
// GENLOAD_PERF_STEP20MS, GENLOAD_PERF_PACED1MS = host:port) and a function that closes them.
func ServeAll() (env []string, closeAll func(), err error) {
	var servers []*Server
	stepWait, stopStep := StepWait(20 * time.Millisecond)
	closeAll = func() {
		stopStep()
		for _, s := range servers {
			_ = s.Close()
		}
	}
	specs := []struct {
		env string
		mk  func() (*Server, error)
	}{
		{"GENLOAD_PERF_BURST1000", func() (*Server, error) { return NewBurstServer("127.0.0.1:0", 1000) }},
		{"GENLOAD_PERF_BURST100", func() (*Server, error) { return NewBurstServer("127.0.0.1:0", 100) }},
		{"GENLOAD_PERF_STEP20MS", func() (*Server, error) { return NewPacedServer("127.0.0.1:0", 20, stepWait) }},
		{"GENLOAD_PERF_PACED1MS", func() (*Server, error) {
			return NewPacedServer("127.0.0.1:0", 200, func(int) { time.Sleep(time.Millisecond) })
		}},
	}
	for _, sp := range specs {
		s, err := sp.mk()
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		servers = append(servers, s)
		env = append(env, sp.env+"="+s.Addr())
	}
	return env, closeAll, nil
}
