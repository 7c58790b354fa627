package perf

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/genload/genload/host/internal/clock"
	"github.com/genload/genload/host/internal/jsonscan"
)

// StepServer is the server of the paced-stream rows: a minimal /v1/completions server that
// streams one chunk per sequence per decode step of a fixed length, as a batching server
// does, so that every chunk reaches the client in its own read. It runs in its own process
// (genload-perf paced-serve, pinned to one core) so that a client's CPU and timestamps are
// its own.
//
// Every stream joins the global step clock at the next step after its request arrived: step
// k of the server starts at t0 + k·Step (t0 when the first stream of an idle server
// arrived), and in it one goroutine writes the next chunk of every stream, one write per
// connection (routed: one stream per request), or all the chunks of a request in writes of at
// most 32 KiB (array: one request of several prompts, one choice each). A chunk's text is its
// send time, StampWidth digits of Unix ns (CLOCK_REALTIME) taken right before the write that
// carries it, so that any client can compute its timestamp error. Chunks carry vLLM's fields
// and per-chunk usage (as vLLM with continuous_usage_stats); after the last token a usage-only
// chunk and [DONE]. The response is chunked (Transfer-Encoding), one HTTP chunk per write,
// as uvicorn sends it. The bytes a client receives depend on its request's prompts and
// max_tokens only, never on its other fields: every client gets the same stream.
//
// The server records the lateness of each step's start against its plan and whether the
// writes of a step ran past the next step's start (an overrun: the server, not the client,
// fell behind); GET /perf/stats returns them since the last call (StepStats, JSON) and
// starts a new record. GET /v1/models lists one model ("paced", max_model_len 262144);
// other paths answer 404.
type StepServer struct {
	ln   net.Listener
	step time.Duration

	stepMu  sync.Mutex // held by the loop through a step's writes and its record
	mu      sync.Mutex
	pending []*pacedStream
	wake    chan struct{}
	stats   pacedRecord

	stop chan struct{}
	wg   sync.WaitGroup
}

// StepStats is the server's record of its own pacing since the previous GET /perf/stats.
type StepStats struct {
	// Steps is the number of steps that wrote at least one chunk; Chunks the token chunks
	// written.
	Steps  int `json:"steps"`
	Chunks int `json:"chunks"`
	// LateP50US and LateP99US are quantiles of the lateness of a step's first write against
	// its planned start, µs.
	LateP50US float64 `json:"late_p50_us"`
	LateP99US float64 `json:"late_p99_us"`
	// Overruns is the number of steps whose writes took longer than a step.
	Overruns int `json:"overruns"`
	// Step is the server's step in µs.
	StepUS float64 `json:"step_us"`
}

// KeptPace reports whether the server kept its own schedule: at most 1 % of its steps
// overran and its p99 lateness stayed under half a step.
func (s StepStats) KeptPace() bool {
	return s.Steps > 0 && float64(s.Overruns) <= 0.01*float64(s.Steps) && s.LateP99US <= s.StepUS/2
}

type pacedRecord struct {
	late     []time.Duration
	chunks   int
	overruns int
}

// pacedStream is one response being streamed: its connection and the choices still to write.
type pacedStream struct {
	c       net.Conn
	choices int   // number of choices (prompts × n)
	prompt  []int // prompt tokens of choice i's prompt
	tokens  int   // max_tokens: chunks per choice
	next    int   // token index of the next step's chunks
	err     error // the write that failed
	done    chan error
}

// NewStepServer listens on addr and paces every stream at step (> 0).
func NewStepServer(addr string, step time.Duration) (*StepServer, error) {
	if step <= 0 {
		return nil, fmt.Errorf("perf: paced server step %v, want > 0", step)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("perf: paced server listen %s: %w", addr, err)
	}
	s := &StepServer{ln: ln, step: step, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	s.wg.Add(2)
	go s.accept()
	go s.loop()
	return s, nil
}

// Addr is the listening address, host:port.
func (s *StepServer) Addr() string { return s.ln.Addr().String() }

// Close stops the server and waits for its goroutines; open streams end.
func (s *StepServer) Close() error {
	err := s.ln.Close()
	close(s.stop)
	s.wg.Wait()
	return err
}

// Stats returns the pacing record since the previous call and starts a new one; a step
// under way is waited for (a client that read its last chunk finds it counted).
func (s *StepServer) Stats() StepStats {
	s.stepMu.Lock()
	defer s.stepMu.Unlock()
	s.mu.Lock()
	r := s.stats
	s.stats = pacedRecord{}
	s.mu.Unlock()
	st := StepStats{Steps: len(r.late), Chunks: r.chunks, Overruns: r.overruns, StepUS: float64(s.step) / 1e3}
	if len(r.late) > 0 {
		slices.Sort(r.late)
		st.LateP50US = float64(quantileDur(r.late, 0.5)) / 1e3
		st.LateP99US = float64(quantileDur(r.late, 0.99)) / 1e3
	}
	return st
}

// quantileDur is the nearest-rank q-quantile of sorted xs.
func quantileDur(xs []time.Duration, q float64) time.Duration {
	i := min(len(xs)-1, max(0, int(q*float64(len(xs))+0.5)-1))
	return xs[i]
}

func (s *StepServer) accept() {
	defer s.wg.Done()
	var conns sync.WaitGroup
	defer conns.Wait()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		conns.Add(1)
		go func() {
			defer conns.Done()
			s.serveConn(c)
		}()
	}
}

// serveConn reads requests on c one after another; a completions request is handed to the
// step loop and the connection waits until its stream was written.
func (s *StepServer) serveConn(c net.Conn) {
	defer c.Close()
	go func() { <-s.stop; c.Close() }()
	br := bufio.NewReaderSize(c, 16<<10)
	var body []byte
	for {
		method, path, cl, err := readRequestHead(br)
		if err != nil {
			return
		}
		if cap(body) < cl {
			body = make([]byte, cl)
		}
		body = body[:cl]
		if _, err := io.ReadFull(br, body); err != nil {
			return
		}
		switch {
		case method == "POST" && path == "/v1/completions":
			st, err := parseCompletion(body)
			if err != nil {
				if writeSimple(c, "400 Bad Request", `{"error":{"message":"`+err.Error()+`"}}`) != nil {
					return
				}
				continue
			}
			st.c, st.done = c, make(chan error, 1)
			if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")); err != nil {
				return
			}
			s.mu.Lock()
			s.pending = append(s.pending, st)
			s.mu.Unlock()
			select {
			case s.wake <- struct{}{}:
			default:
			}
			if err := <-st.done; err != nil {
				return
			}
		case method == "GET" && path == "/v1/models":
			if writeSimple(c, "200 OK", `{"object":"list","data":[{"id":"paced","object":"model","owned_by":"genload-perf","max_model_len":262144}]}`) != nil {
				return
			}
		case method == "GET" && path == "/perf/stats":
			b, _ := json.Marshal(s.Stats())
			if writeSimple(c, "200 OK", string(b)) != nil {
				return
			}
		default:
			if writeSimple(c, "404 Not Found", `{"error":{"message":"not found"}}`) != nil {
				return
			}
		}
	}
}

func writeSimple(c net.Conn, status, body string) error {
	_, err := c.Write([]byte("HTTP/1.1 " + status + "\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body))
	return err
}

// readRequestHead reads a request line and headers; it returns the method, the path without
// its query and the Content-Length (0 when absent).
func readRequestHead(br *bufio.Reader) (method, path string, cl int, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return "", "", 0, err
	}
	f := bytes.Fields(line)
	if len(f) < 2 {
		return "", "", 0, fmt.Errorf("bad request line %q", line)
	}
	method, path = string(f[0]), string(f[1])
	if i := bytes.IndexByte(f[1], '?'); i >= 0 {
		path = string(f[1][:i])
	}
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return "", "", 0, err
		}
		if len(line) <= 2 {
			return method, path, cl, nil
		}
		if k, v, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(bytes.TrimSpace(k), []byte("content-length")) {
			cl, err = strconv.Atoi(string(bytes.TrimSpace(v)))
			if err != nil || cl < 0 {
				return "", "", 0, fmt.Errorf("bad Content-Length %q", v)
			}
		}
	}
}

// parseCompletion reads a completions body in place (a body of 33 M token ids is read
// without building a value per id): its prompts (token-id arrays or strings; a string counts
// a token per 4 bytes), n and max_tokens (default 16).
func parseCompletion(body []byte) (*pacedStream, error) {
	i := jsonscan.SkipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, fmt.Errorf("body is not a JSON object")
	}
	st := &pacedStream{tokens: 16}
	n := 1
	var lens []int
	var perr error
	_, ok := jsonscan.Object(body, i+1, func(key []byte, j int) (int, bool) {
		switch string(key) {
		case "max_tokens", "n":
			v, end, ok := jsonscan.Uint(body, j)
			if !ok {
				perr = fmt.Errorf("%s is not a non-negative integer", key)
				return end, false
			}
			if string(key) == "n" {
				n = max(1, int(v))
			} else {
				st.tokens = int(v)
			}
			return end, true
		case "prompt":
			var end int
			lens, end, perr = promptLengths(body, j)
			return end, perr == nil
		}
		return jsonscan.SkipValue(body, j, 1)
	})
	switch {
	case perr != nil:
		return nil, fmt.Errorf("body: %w", perr)
	case !ok:
		return nil, fmt.Errorf("body: malformed JSON")
	case lens == nil:
		return nil, fmt.Errorf("no prompt")
	case st.tokens < 1:
		return nil, fmt.Errorf("max_tokens %d, want >= 1", st.tokens)
	}
	for _, l := range lens {
		for range n {
			st.prompt = append(st.prompt, max(l, 1))
		}
	}
	st.choices = len(st.prompt)
	if st.choices == 0 {
		return nil, fmt.Errorf("no prompts")
	}
	return st, nil
}

// promptLengths reads the prompt value at b[i]: one prompt (an array of ids or a string) or an
// array of them; it returns each prompt's length in tokens and the index after the value.
func promptLengths(b []byte, i int) ([]int, int, error) {
	one := func(i int) (int, int, error) {
		switch {
		case i < len(b) && b[i] == '"':
			end, ok := jsonscan.StringEnd(b, i+1)
			if !ok {
				return 0, end, fmt.Errorf("prompt string not closed")
			}
			return (end - i - 2) / 4, end, nil
		case i < len(b) && b[i] == '[':
			ids := 0
			for j := i + 1; j < len(b); j++ {
				switch c := b[j]; {
				case c == ']':
					return ids, j + 1, nil
				case jsonscan.IsNumByte(c):
					if j == i+1 || !jsonscan.IsNumByte(b[j-1]) {
						ids++
					}
				case c != ',' && !jsonscan.IsSpace(c):
					return 0, j, fmt.Errorf("prompt: %q in an array of token ids", c)
				}
			}
			return 0, len(b), fmt.Errorf("prompt array not closed")
		}
		return 0, i, fmt.Errorf("prompt is neither a string nor an array")
	}
	if i >= len(b) || b[i] != '[' {
		l, end, err := one(i)
		return []int{l}, end, err
	}
	j := jsonscan.SkipSpace(b, i+1)
	if j < len(b) && (b[j] == '[' || b[j] == '"') { // an array of prompts
		var lens []int
		for {
			l, end, err := one(j)
			if err != nil {
				return nil, end, err
			}
			lens = append(lens, l)
			j = jsonscan.SkipSpace(b, end)
			if j < len(b) && b[j] == ',' {
				j = jsonscan.SkipSpace(b, j+1)
				continue
			}
			if j < len(b) && b[j] == ']' {
				return lens, j + 1, nil
			}
			return nil, j, fmt.Errorf("prompt: malformed array of prompts")
		}
	}
	l, end, err := one(i)
	return []int{l}, end, err
}

// loop is the step clock: while streams are active it runs one step every s.step, writing
// the next chunk of every stream; idle, it waits for a stream. A step starts one step after
// the previous one's planned start, or one step after its actual start when that was late
// (a late wake-up does not shorten the next interval), or as soon as the previous one's
// writes end when they took longer than a step (an overrun: the server fell behind).
func (s *StepServer) loop() {
	defer s.wg.Done()
	var active, ended []*pacedStream
	var buf []byte
	var planned time.Time
	for {
		s.mu.Lock()
		active = append(active, s.pending...)
		clear(s.pending)
		s.pending = s.pending[:0]
		s.mu.Unlock()
		if len(active) == 0 {
			select {
			case <-s.stop:
				return
			case <-s.wake:
			}
			planned = time.Now().Add(s.step) // the first step one step after the request
			continue
		}
		if !clock.SleepUntil(planned, s.stop) {
			for _, st := range active {
				st.done <- io.ErrClosedPipe
			}
			return
		}
		s.stepMu.Lock() // Stats waits for a step under way to be recorded
		start := time.Now()
		chunks := 0
		live := active[:0]
		for _, st := range active {
			buf, st.err = st.writeStep(buf)
			chunks += st.choices
			if st.err != nil || st.next == st.tokens {
				ended = append(ended, st)
				continue
			}
			live = append(live, st)
		}
		clear(active[len(live):])
		active = live
		end := time.Now()
		overrun := end.Sub(start) > s.step
		s.mu.Lock()
		s.stats.late = append(s.stats.late, start.Sub(planned))
		s.stats.chunks += chunks
		if overrun {
			s.stats.overruns++
		}
		s.mu.Unlock()
		s.stepMu.Unlock()
		for _, st := range ended { // after the record: a client that saw its end sees its step counted
			st.done <- st.err
		}
		clear(ended)
		ended = ended[:0]
		planned = planned.Add(s.step)
		if late := start.Add(s.step); late.After(planned) {
			planned = late
		}
		if overrun {
			planned = end
		}
	}
}

// chunkHead is the room kept before a write's data for its chunk-size line.
const chunkHead = 10

// writeStep writes the stream's chunks of its next token (one per choice; the last token
// also its usage chunk, [DONE] and the chunked encoding's end) in writes of at most 32 KiB.
func (st *pacedStream) writeStep(buf []byte) ([]byte, error) {
	k := st.next
	st.next++
	last := st.next == st.tokens
	const piece = 32 << 10
	buf = append(buf[:0], make([]byte, chunkHead)...)
	for i := range st.choices {
		if len(buf) > piece-512 {
			if err := writeHTTPChunk(st.c, buf, false); err != nil {
				return buf, err
			}
			buf = buf[:chunkHead]
		}
		buf = appendPacedChunk(buf, i, st.prompt[i], k+1, last)
	}
	if last {
		pt, ct := 0, 0
		for _, p := range st.prompt {
			pt += p
			ct += st.tokens
		}
		buf = fmt.Appendf(buf, `data: {"id":"cmpl-paced","object":"text_completion","created":1767000000,"model":"paced","choices":[],"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d}}`+"\n\ndata: [DONE]\n\n", pt, pt+ct, ct)
	}
	return buf, writeHTTPChunk(st.c, buf, last)
}

// writeHTTPChunk writes buf[chunkHead:] as one chunk of the chunked encoding, in one write:
// its size line goes into the room before the data, its CRLF after it; final adds the
// zero-size chunk that ends the body.
func writeHTTPChunk(c net.Conn, buf []byte, final bool) error {
	n := len(buf) - chunkHead
	var hdr [chunkHead]byte
	h := strconv.AppendInt(hdr[:0], int64(n), 16)
	h = append(h, '\r', '\n')
	start := chunkHead - len(h)
	copy(buf[start:], h)
	out := append(buf, '\r', '\n')
	if final {
		out = append(out, "0\r\n\r\n"...)
	}
	_, err := c.Write(out[start:])
	return err
}

// appendPacedChunk appends choice i's chunk of token k (1-based) of a prompt of p tokens,
// stamped now; finish_reason "length" on the last token.
func appendPacedChunk(dst []byte, i, p, k int, last bool) []byte {
	dst = append(dst, `data: {"id":"cmpl-paced","object":"text_completion","created":1767000000,"model":"paced","choices":[{"index":`...)
	dst = strconv.AppendInt(dst, int64(i), 10)
	dst = append(dst, `,"text":"`...)
	ts := time.Now().UnixNano()
	var d [StampWidth]byte
	for j := StampWidth - 1; j >= 0; j-- {
		d[j] = byte('0' + ts%10)
		ts /= 10
	}
	dst = append(dst, d[:]...)
	if last {
		dst = append(dst, `","logprobs":null,"finish_reason":"length","stop_reason":null}],"usage":{"prompt_tokens":`...)
	} else {
		dst = append(dst, `","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":{"prompt_tokens":`...)
	}
	dst = strconv.AppendInt(dst, int64(p), 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, int64(p+k), 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, int64(k), 10)
	return append(dst, "}}\n\n"...)
}

// StepEnv names the address of the StepServer of step d: "STEP<µs>US", e.g. STEP1000US.
func StepEnv(d time.Duration) string { return fmt.Sprintf("STEP%dUS", d.Microseconds()) }
