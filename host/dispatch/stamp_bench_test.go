package dispatch

// Issue 8 row 2 — timestamp accuracy: the server stamps its monotonic send time into each
// chunk's text (16 digits, ns since benchBase); the client's arrival stamp minus it is the
// timestamp error. Two scenarios, each client in the same run:
//   step20ms: 512 streams emit one chunk each per global 20 ms tick (a batched decode step)
//   paced1ms: 64 streams each emit a chunk every 1 ms
// Reported: p50 and p99 of (receive − send) in µs. Server and client share the process
// (and the 2 cores), the same for every client. Run with -benchtime 1x.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fastjson"
)

var benchBase = time.Now()

const tsWidth = 16

func stampChunk(dst []byte, fin bool) []byte {
	dst = append(dst, `data: {"choices":[{"index":0,"text":"`...)
	ts := time.Since(benchBase).Nanoseconds()
	var d [tsWidth]byte
	for i := tsWidth - 1; i >= 0; i-- {
		d[i] = byte('0' + ts%10)
		ts /= 10
	}
	dst = append(dst, d[:]...)
	if fin {
		return append(dst, `","finish_reason":"length"}]}`+"\n\n"...)
	}
	return append(dst, `","finish_reason":null}]}`+"\n\n"...)
}

// pacedServer writes n stamped chunks per request, paced by wait(k) before chunk k.
type pacedServer struct {
	ln   net.Listener
	n    int
	wait func(k int)
	wg   sync.WaitGroup
}

func (s *pacedServer) bodyLen() int {
	a, b := len(stampChunk(nil, false)), len(stampChunk(nil, true))
	return (s.n-1)*a + b + len("data: [DONE]\n\n")
}

func (s *pacedServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer c.Close()
	br := bufio.NewReader(c)
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
		if _, err := br.Discard(cl); err != nil {
			return
		}
		if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " + strconv.Itoa(s.bodyLen()) + "\r\n\r\n")); err != nil {
			return
		}
		for k := 0; k < s.n; k++ {
			s.wait(k)
			buf = stampChunk(buf[:0], k == s.n-1)
			if k == s.n-1 {
				buf = append(buf, "data: [DONE]\n\n"...)
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}
}

func startPaced(b *testing.B, n int, wait func(int)) *pacedServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := &pacedServer{ln: ln, n: n, wait: wait}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go s.serve(c)
		}
	}()
	b.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

// ticker broadcasts a global step: wait blocks until the next tick.
type ticker struct {
	mu sync.Mutex
	ch chan struct{}
}

func newTicker(b *testing.B, every time.Duration) *ticker {
	t := &ticker{ch: make(chan struct{})}
	stop := make(chan struct{})
	go func() {
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				t.mu.Lock()
				close(t.ch)
				t.ch = make(chan struct{})
				t.mu.Unlock()
			}
		}
	}()
	b.Cleanup(func() { close(stop) })
	return t
}

func (t *ticker) wait(int) {
	t.mu.Lock()
	ch := t.ch
	t.mu.Unlock()
	<-ch
}

func parseTS(b []byte) time.Duration {
	v, _ := strconv.ParseInt(string(b), 10, 64)
	return time.Duration(v)
}

func reportErrors(b *testing.B, errs []time.Duration) {
	slices.Sort(errs)
	q := func(p float64) float64 {
		i := min(len(errs)-1, max(0, int(p*float64(len(errs))+0.5)-1))
		return float64(errs[i]) / 1e3
	}
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
	b.ReportMetric(float64(len(errs)), "samples")
}

func BenchmarkTimestampError(b *testing.B) {
	scenarios := []struct {
		name string
		c, n int
		wait func(b *testing.B) func(int)
	}{
		{"step20ms/C=512/N=20", 512, 20, func(b *testing.B) func(int) { return newTicker(b, 20*time.Millisecond).wait }},
		{"paced1ms/C=64/N=200", 64, 200, func(*testing.B) func(int) { return func(int) { time.Sleep(time.Millisecond) } }},
	}
	for _, sc := range scenarios {
		b.Run("genload/"+sc.name, func(b *testing.B) {
			srv := startPaced(b, sc.n, sc.wait(b))
			cl, err := New(Options{Target: "http://" + srv.ln.Addr().String(), KeepText: true})
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			prompts := make([][]int32, sc.c)
			for i := range prompts {
				prompts[i] = []int32{1}
			}
			var errs []time.Duration
			for range b.N {
				res, err := cl.Send(context.Background(), ModeRouted, prompts, sc.n)
				if err != nil || res.Err() != nil {
					b.Fatal(err, res.Err())
				}
				origin := res.Start.Sub(benchBase)
				for _, s := range res.Sequences {
					for k, m := range s.Marks {
						errs = append(errs, origin+m.At-parseTS(s.Text[k*tsWidth:(k+1)*tsWidth]))
					}
				}
			}
			reportErrors(b, errs)
		})
		b.Run("nethttp/"+sc.name, func(b *testing.B) {
			srv := startPaced(b, sc.n, sc.wait(b))
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}
			defer hc.CloseIdleConnections()
			u := "http://" + srv.ln.Addr().String() + "/v1/completions"
			var mu sync.Mutex
			var errs []time.Duration
			for range b.N {
				var wg sync.WaitGroup
				for range sc.c {
					wg.Go(func() {
						local, err := nethttpStampErrors(hc, u, func() time.Duration { return time.Since(benchBase) })
						if err != nil {
							b.Error(err)
							return
						}
						mu.Lock()
						errs = append(errs, local...)
						mu.Unlock()
					})
				}
				wg.Wait()
			}
			reportErrors(b, errs)
		})
		b.Run("raw/"+sc.name, func(b *testing.B) {
			srv := startPaced(b, sc.n, sc.wait(b))
			pool := &rawPool{addr: srv.ln.Addr().String()}
			defer pool.close()
			var mu sync.Mutex
			var errs []time.Duration
			for range b.N {
				var wg sync.WaitGroup
				for range sc.c {
					wg.Go(func() {
						rc := pool.get()
						defer pool.put(rc)
						local, err := rawStampErrors(rc, func() time.Duration { return time.Since(benchBase) })
						if err != nil {
							b.Error(err)
							return
						}
						mu.Lock()
						errs = append(errs, local...)
						mu.Unlock()
					})
				}
				wg.Wait()
			}
			reportErrors(b, errs)
		})
	}
}

// rawStampErrors sends rawReq on rc, reads the response with the raw client (status line and
// headers, then Content-Length bytes of SSE lines) and returns, per data event, now() taken
// when its line was read minus the server's send stamp carried in the event's text.
func rawStampErrors(rc *rawConn, now func() time.Duration) ([]time.Duration, error) {
	if _, err := rc.c.Write(rawReq); err != nil {
		return nil, err
	}
	cl := 0
	for {
		line, err := rc.br.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		if len(line) <= 2 {
			break
		}
		if bytes.HasPrefix(line, []byte("Content-Length: ")) {
			cl, _ = strconv.Atoi(string(bytes.TrimSpace(line[16:])))
		}
	}
	var out []time.Duration
	var p fastjson.Parser
	for read := 0; read < cl; {
		line, err := rc.br.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		read += len(line)
		if !bytes.HasPrefix(line, []byte("data: {")) {
			continue
		}
		t := now()
		v, err := p.ParseBytes(line[6 : len(line)-1])
		if err != nil {
			return nil, err
		}
		out = append(out, t-parseTS(v.GetArray("choices")[0].GetStringBytes("text")))
	}
	return out, nil
}

// nethttpStampErrors posts benchBody to u with the net/http baseline client (bufio.Scanner,
// encoding/json) and returns, per data event, now() taken when its line was scanned minus the
// server's send stamp carried in the event's text.
func nethttpStampErrors(hc *http.Client, u string, now func() time.Duration) ([]time.Duration, error) {
	resp, err := hc.Post(u, "application/json", bytes.NewReader(benchBody))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var out []time.Duration
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("data: {")) {
			continue
		}
		t := now()
		var c struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(line[6:], &c); err != nil {
			return nil, err
		}
		out = append(out, t-parseTS([]byte(c.Choices[0].Text)))
	}
	return out, sc.Err()
}
