package dispatch

// The user-space cost of one paced chunk: every Read of the connection returns exactly one
// chunk of the chunked encoding (as a paced server's chunk arrives in its own read), from a
// connection held in memory, so the kernel's part (the read system call, the ACK, the
// wake-up), which is the same for every client, is left out. genload's Client.Send against
// the raw client's loop (bufio lines, chunked framing, fastjson, a time.Now per chunk) over
// the same bytes. go test ./host/dispatch -run '^$' -bench PacedChunk -count 6

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fastjson"
)

// pacedConn is an in-memory connection that answers one request with a chunked SSE stream
// of n vLLM-shaped token chunks (per-chunk usage, as the step server sends), one chunk per
// Read.
type pacedConn struct {
	pieces  [][]byte // the response: headers, then one piece per chunk
	pending []byte   // the rest of the current piece
	closed  bool
}

// pacedPieces caches the response of n chunks (built once, read by every connection).
var pacedPieces sync.Map

func newPacedConn(n int) *pacedConn {
	v, ok := pacedPieces.Load(n)
	if !ok {
		ps := [][]byte{[]byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")}
		for k := 1; k <= n; k++ {
			ps = append(ps, pacedChunkBytes(nil, k, k == n))
		}
		v, _ = pacedPieces.LoadOrStore(n, ps)
	}
	return &pacedConn{pieces: v.([][]byte)}
}

var pacedAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}

func (c *pacedConn) Write(b []byte) (int, error) { return len(b), nil }
func (c *pacedConn) Close() error                { c.closed = true; return nil }
func (c *pacedConn) LocalAddr() net.Addr         { return pacedAddr }
func (c *pacedConn) RemoteAddr() net.Addr        { return pacedAddr }
func (c *pacedConn) SetDeadline(time.Time) error { return nil }
func (c *pacedConn) SetReadDeadline(time.Time) error {
	return nil
}
func (c *pacedConn) SetWriteDeadline(time.Time) error { return nil }

func (c *pacedConn) Read(b []byte) (int, error) {
	if c.closed {
		return 0, net.ErrClosed
	}
	if len(c.pending) == 0 {
		if len(c.pieces) == 0 {
			return 0, io.EOF
		}
		c.pending, c.pieces = c.pieces[0], c.pieces[1:]
	}
	n := copy(b, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// pacedChunkBytes is token k's chunk (1-based) in the chunked encoding; the last also carries
// the usage chunk, [DONE] and the zero chunk.
func pacedChunkBytes(dst []byte, k int, last bool) []byte {
	fin := "null"
	if last {
		fin = `"length"`
	}
	data := fmt.Appendf(nil, `data: {"id":"cmpl-paced","object":"text_completion","created":1767000000,"model":"paced","choices":[{"index":0,"text":"1767000000%09d","logprobs":null,"finish_reason":%s,"stop_reason":null}],"usage":{"prompt_tokens":16,"total_tokens":%d,"completion_tokens":%d}}`+"\n\n", k, fin, 16+k, k)
	if last {
		data = fmt.Appendf(data, `data: {"id":"cmpl-paced","choices":[],"usage":{"prompt_tokens":16,"total_tokens":%d,"completion_tokens":%d}}`+"\n\ndata: [DONE]\n\n", 16+k, k)
	}
	dst = strconv.AppendInt(dst, int64(len(data)), 16)
	dst = append(append(append(dst, "\r\n"...), data...), "\r\n"...)
	if last {
		dst = append(dst, "0\r\n\r\n"...)
	}
	return dst
}

const pacedBenchChunks = 200

func BenchmarkPacedChunk(b *testing.B) {
	prompts := [][]int32{{1, 2, 3}}
	b.Run("genload", func(b *testing.B) {
		cl, err := New(Options{Target: "http://127.0.0.1:9", ContinuousUsage: true, StallSteps: 20, StallMin: 10 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		var mu sync.Mutex
		dial := func(string) (net.Conn, error) {
			mu.Lock()
			defer mu.Unlock()
			return &trackedConn{Conn: newPacedConn(pacedBenchChunks), set: &cl.conns, key: pacedAddr}, nil
		}
		cl.hc.Dial = dial
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			res, err := cl.Send(context.Background(), ModeRouted, prompts, pacedBenchChunks)
			if err != nil || res.Err() != nil {
				b.Fatal(err, res.Err())
			}
			if got := res.Sequences[0].Marks.Len(); got != pacedBenchChunks {
				b.Fatalf("%d marks, want %d", got, pacedBenchChunks)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*pacedBenchChunks), "ns/chunk")
	})
	b.Run("raw", func(b *testing.B) {
		var p fastjson.Parser
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			c := newPacedConn(pacedBenchChunks)
			n, err := rawPaced(c, &p)
			if err != nil || n != pacedBenchChunks {
				b.Fatal(n, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*pacedBenchChunks), "ns/chunk")
	})
}

// rawPaced is paced-raw's loop (host/perf/cmd/paced-raw) over c: headers, then chunk-size
// lines and the SSE lines of each chunk, a time.Now and a fastjson parse per data line.
func rawPaced(c net.Conn, p *fastjson.Parser) (int, error) {
	br := bufio.NewReaderSize(c, 16<<10)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if len(line) <= 2 {
			break
		}
	}
	stamps := make([]time.Time, 0, pacedBenchChunks)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		size, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
		if err != nil {
			return 0, err
		}
		if size == 0 {
			return len(stamps), nil
		}
		for read := int64(0); read < size; {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return 0, err
			}
			read += int64(len(line))
			if !bytes.HasPrefix(line, []byte("data: {")) {
				continue
			}
			now := time.Now()
			v, err := p.ParseBytes(line[6 : len(line)-1])
			if err != nil {
				return 0, err
			}
			for _, ch := range v.GetArray("choices") {
				if len(ch.GetStringBytes("text")) > 0 {
					stamps = append(stamps, now)
				}
			}
		}
		if _, err := br.Discard(2); err != nil {
			return 0, errors.New("chunk end")
		}
	}
}
