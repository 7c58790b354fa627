package dispatch

// Benchmarks for PERF.md rows 1 and 3 (client cost), each with its baselines in the same
// run: go test ./host/dispatch -run '^$' -bench . -benchtime 3x
//
// Row 1 — streamed chunk cost: C concurrent streams of N token chunks served in bursts
// (prebuilt bytes, Content-Length body, so the server costs almost nothing and is the
// same for every client). Reported per chunk: wall ns, process CPU ns (getrusage,
// client + the cheap server), allocations and bytes.
//   genload: Client.Send in ModeRouted (fasthttp + sse.Reader + fastjson + demux)
//   nethttp: net/http + bufio.Scanner + encoding/json into a small struct + time.Now
//   raw:     net.Conn + bufio.Reader lines + fastjson + time.Now (the floor)
// Row 3 — request body for 64 prompts × 64,000 token ids: genload's appendBody into a
// reused buffer vs encoding/json.Marshal of the same request.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fastjson"

	"github.com/genload/genload/host/perf"
)

// newBurstServer starts host/perf's burst server (the same one `make perf` runs in its own
// process): every request is answered at once with chunks token chunks, written in 32 KiB pieces.
func newBurstServer(b *testing.B, chunks int) *perf.Server {
	s, err := perf.NewBurstServer("127.0.0.1:0", chunks)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// perChunk runs fn (one op = c streams × n chunks) b.N times and reports per-chunk costs.
func perChunk(b *testing.B, c, n int, fn func()) {
	fn() // connect and warm up outside the measurement
	var ms0, ms1 runtime.MemStats
	var ru0, ru1 syscall.Rusage
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ResetTimer()
	for range b.N {
		fn()
	}
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	runtime.ReadMemStats(&ms1)
	chunks := float64(b.N * c * n)
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/chunks, "ns/chunk")
	b.ReportMetric(float64(cpu.Nanoseconds())/chunks, "cpu-ns/chunk")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/chunks, "allocs/chunk")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/chunks, "B/chunk")
	b.ReportMetric(chunks/b.Elapsed().Seconds(), "chunks/s")
}

var benchShapes = []struct{ c, n int }{{1, 1000}, {64, 1000}, {512, 100}}

func BenchmarkChunkCost(b *testing.B) {
	for _, sh := range benchShapes {
		srv := newBurstServer(b, sh.n)
		prompts := make([][]int32, sh.c)
		for i := range prompts {
			prompts[i] = []int32{1, 2, 3}
		}
		// genload as a run configures it by default (stall detection on: 20 steps, at least
		// 10 s, the cost of the clock hook per read), and without stall detection.
		for _, v := range []struct {
			name string
			o    Options
		}{{"genload", Options{StallSteps: 20, StallMin: 10 * time.Second}}, {"genload-nostall", Options{}}} {
			b.Run(fmt.Sprintf("%s/C=%d/N=%d", v.name, sh.c, sh.n), func(b *testing.B) {
				o := v.o
				o.Target = "http://" + srv.Addr()
				cl, err := New(o)
				if err != nil {
					b.Fatal(err)
				}
				defer cl.Close()
				perChunk(b, sh.c, sh.n, func() {
					res, err := cl.Send(context.Background(), ModeRouted, prompts, sh.n)
					if err != nil || res.Err() != nil {
						b.Fatal(err, res.Err())
					}
				})
			})
		}
		b.Run(fmt.Sprintf("nethttp/C=%d/N=%d", sh.c, sh.n), func(b *testing.B) {
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024, MaxConnsPerHost: 0}}
			defer hc.CloseIdleConnections()
			perChunk(b, sh.c, sh.n, func() { parallel(b, sh.c, sh.n, func() int { return netHTTPStream(b, hc, "http://"+srv.Addr()) }) })
		})
		b.Run(fmt.Sprintf("raw/C=%d/N=%d", sh.c, sh.n), func(b *testing.B) {
			pool := &rawPool{addr: srv.Addr()}
			defer pool.close()
			perChunk(b, sh.c, sh.n, func() { parallel(b, sh.c, sh.n, func() int { return rawStream(b, pool) }) })
		})
	}
}

func parallel(b *testing.B, c, n int, fn func() int) {
	var wg sync.WaitGroup
	for range c {
		wg.Go(func() {
			if got := fn(); got != n {
				b.Errorf("stream had %d token chunks, want %d", got, n)
			}
		})
	}
	wg.Wait()
}

var benchBody = []byte(`{"prompt":[1,2,3],"n":1,"max_tokens":1000,"stream":true}`)

// netHTTPStream is the net/http + encoding/json baseline; it returns the token chunks.
func netHTTPStream(b *testing.B, hc *http.Client, u string) int {
	resp, err := hc.Post(u+"/v1/completions", "application/json", bytes.NewReader(benchBody))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	type chunk struct {
		Choices []struct {
			Index        int     `json:"index"`
			Text         string  `json:"text"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	var arrivals []time.Time
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("data: ")) {
			continue
		}
		now := time.Now()
		data := line[6:]
		if string(data) == "[DONE]" {
			break
		}
		var c chunk
		if err := json.Unmarshal(data, &c); err != nil {
			b.Fatal(err)
		}
		if len(c.Choices) > 0 && c.Choices[0].Text != "" {
			arrivals = append(arrivals, now)
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return len(arrivals)
}

// rawPool keeps idle raw connections for reuse.
type rawPool struct {
	addr string
	mu   sync.Mutex
	idle []*rawConn
}

type rawConn struct {
	c  net.Conn
	br *bufio.Reader
	p  fastjson.Parser
	at []time.Time
}

func (p *rawPool) get() *rawConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.idle); n > 0 {
		rc := p.idle[n-1]
		p.idle = p.idle[:n-1]
		return rc
	}
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		panic(err)
	}
	return &rawConn{c: c, br: bufio.NewReaderSize(c, 32<<10)}
}

func (p *rawPool) put(rc *rawConn) { p.mu.Lock(); p.idle = append(p.idle, rc); p.mu.Unlock() }

func (p *rawPool) close() {
	for _, rc := range p.idle {
		rc.c.Close()
	}
}

var rawReq = []byte("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(benchBody)) + "\r\n\r\n" + string(benchBody))

// rawStream is the floor: raw TCP, bufio lines, fastjson, a timestamp per event.
func rawStream(b *testing.B, pool *rawPool) int {
	rc := pool.get()
	defer pool.put(rc)
	if _, err := rc.c.Write(rawReq); err != nil {
		b.Fatal(err)
	}
	cl := 0
	for {
		line, err := rc.br.ReadSlice('\n')
		if err != nil {
			b.Fatal(err)
		}
		if len(line) <= 2 {
			break
		}
		if bytes.HasPrefix(line, []byte("Content-Length: ")) {
			cl, _ = strconv.Atoi(string(bytes.TrimSpace(line[16:])))
		}
	}
	rc.at = rc.at[:0]
	for read := 0; read < cl; {
		line, err := rc.br.ReadSlice('\n')
		if err != nil {
			b.Fatal(err)
		}
		read += len(line)
		if !bytes.HasPrefix(line, []byte("data: ")) {
			continue
		}
		now := time.Now()
		data := line[6 : len(line)-1]
		if string(data) == "[DONE]" {
			continue
		}
		v, err := rc.p.ParseBytes(data)
		if err != nil {
			b.Fatal(err)
		}
		for _, ch := range v.GetArray("choices") {
			if len(ch.GetStringBytes("text")) > 0 {
				rc.at = append(rc.at, now)
			}
		}
	}
	return len(rc.at)
}

// Row 3: the /v1/completions body for 64 prompts × 64,000 token ids (4.1 M ids).
func BenchmarkBody64x64k(b *testing.B) {
	prompts := make([][]int32, 64)
	for i := range prompts {
		p := make([]int32, 64000)
		for k := range p {
			p[k] = int32((i*7919 + k*104729) % 151936)
		}
		prompts[i] = p
	}
	c, err := New(Options{Target: "http://127.0.0.1:1", Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("genload", func(b *testing.B) {
		ps := idPrompts(prompts)
		all := make([]int, len(prompts))
		for i := range all {
			all[i] = i
		}
		buf := make([]byte, 0, bodySize(ps, all))
		buf = c.tmpl.appendBody(buf[:0], ps, all, true, 1, 100) // builds the id table once
		b.SetBytes(int64(len(buf)))
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			buf = c.tmpl.appendBody(buf[:0], ps, all, true, 1, 100)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64*64000), "ns/id")
	})
	b.Run("encoding_json", func(b *testing.B) {
		type body struct {
			Model         string         `json:"model"`
			Prompt        [][]int32      `json:"prompt"`
			N             int            `json:"n"`
			MaxTokens     int            `json:"max_tokens"`
			Temperature   float64        `json:"temperature"`
			IgnoreEOS     bool           `json:"ignore_eos"`
			Stream        bool           `json:"stream"`
			StreamOptions map[string]any `json:"stream_options"`
		}
		v := body{"m", prompts, 1, 100, 0, true, true, map[string]any{"include_usage": true}}
		out, _ := json.Marshal(v)
		b.SetBytes(int64(len(out)))
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64*64000), "ns/id")
	})
}
