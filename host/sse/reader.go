// Package sse rebuilds server-sent events from an HTTP response body and decodes the
// /v1/completions chunks they carry into per-choice sequence records.
//
// The pipeline is Reader (bytes → events, each stamped with the monotonic time its last
// bytes arrived) → Decoder (event data → Chunk, fastjson, no allocation in the steady state)
// → Demux (chunks → one Sequence per choices[].index, plus usage, [DONE] and in-stream
// errors). Wire facts follow /v1/completions as served by vLLM, SGLang, llama.cpp and TGI
// (see the project's wire-format reference, §7 "client must handle").
//
// The same pipeline reads ollama's native POST /api/generate stream (generate.go):
// newline-delimited JSON objects instead of SSE events (Reader.Lines), each decoded into
// the Chunk of choice 0 (Decoder.DecodeGenerate, Demux.Generate), the final one carrying
// ollama's own counts and durations (GenerateMetrics).
package sse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// ErrTruncated reports a stream that ended (EOF) in the middle of an event: a partial
// line, or data lines not yet closed by a blank line. Compare with errors.Is.
var ErrTruncated = errors.New("stream truncated")

// DefaultBufferSize is the Reader's initial buffer in bytes (16 KiB). The buffer grows
// (doubling) to hold the longest line seen; there is no line-length limit unless
// Reader.MaxLine is set.
const DefaultBufferSize = 16 << 10

// Event is one dispatched server-sent event.
type Event struct {
	// Data is the event's data: the values of its `data:` lines joined with "\n"
	// (one leading space after the colon removed, "\r\n" endings stripped). It aliases
	// the Reader's buffer and is valid only until the next call to Next.
	Data []byte
	// At is the monotonic time at which the read that delivered the event's last bytes
	// (its terminating blank line) returned, taken before any decoding.
	At time.Time
}

// Reader splits an SSE byte stream into events, exactly across any read boundaries.
//
// Lines end at "\n"; a trailing "\r" is removed ("\r\n"). A lone "\r" is not treated as a
// line end (vLLM, SGLang, llama.cpp and TGI never send it). Lines starting with ":" are
// comments; `id:`, `event:`, `retry:` and unknown fields are ignored; an event with no
// `data:` line (for example a lone blank line) is not dispatched.
//
// A Reader is not safe for concurrent use.
type Reader struct {
	// Now returns the arrival stamp; nil means time.Now (monotonic clock reading).
	// Tests set it to replay recorded timings.
	Now func() time.Time
	// MaxLine limits one line's length in bytes; 0 means no limit. A longer line fails
	// Next with an error.
	MaxLine int
	// Lines makes every non-empty line an event of its own, its data the whole line (a
	// trailing "\r" removed): newline-delimited JSON, as ollama's native API streams it,
	// instead of SSE fields. At is then the stamp of the read that delivered the line's
	// "\n". At the end of the stream an unterminated last line is an event when it is
	// valid JSON (a server that omits the final newline), else a truncation. Reset keeps it.
	Lines bool

	src     io.Reader
	buf     []byte
	r, w    int // unparsed bytes are buf[r:w]
	scan    int // no '\n' in buf[r:scan]
	data    []byte
	hasData bool
	// inBuf: the event's only data line so far is buf[dOff:dEnd], not yet copied to data
	// (the common single-line event is returned without a copy).
	inBuf      bool
	dOff, dEnd int
	at         time.Time
	err        error
}

// NewReader returns a Reader on src with an initial buffer of size bytes
// (DefaultBufferSize when size ≤ 0).
func NewReader(src io.Reader, size int) *Reader {
	if size <= 0 {
		size = DefaultBufferSize
	}
	return &Reader{src: src, buf: make([]byte, size)}
}

// Reset makes the Reader read from src, keeping its buffers (no allocation).
func (rd *Reader) Reset(src io.Reader) {
	rd.src = src
	rd.r, rd.w, rd.scan = 0, 0, 0
	rd.data = rd.data[:0]
	rd.hasData, rd.inBuf = false, false
	rd.at = time.Time{}
	rd.err = nil
}

// Next returns the next event with data. At a clean end of stream it returns io.EOF; if
// the stream ends inside an event it returns an error wrapping ErrTruncated; a read
// error from the source is returned as is (wrapped with the bytes read so far).
func (rd *Reader) Next() (Event, error) {
	for {
		i := bytes.IndexByte(rd.buf[rd.scan:rd.w], '\n')
		if i < 0 {
			rd.scan = rd.w
			if rd.err != nil {
				return rd.end()
			}
			if err := rd.fill(); err != nil {
				return Event{}, err
			}
			continue
		}
		end := rd.scan + i
		line := rd.buf[rd.r:end]
		rd.r = end + 1
		rd.scan = rd.r
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if rd.Lines {
			if len(line) == 0 {
				continue
			}
			return Event{Data: line, At: rd.at}, nil
		}
		if len(line) == 0 {
			if !rd.hasData {
				continue
			}
			ev := Event{Data: rd.data, At: rd.at}
			if rd.inBuf {
				ev.Data = rd.buf[rd.dOff:rd.dEnd]
			}
			rd.data = rd.data[:0]
			rd.hasData, rd.inBuf = false, false
			return ev, nil
		}
		if line[0] == ':' {
			continue // comment, e.g. ": keep-alive"
		}
		field, value := line, line[len(line):]
		if c := bytes.IndexByte(line, ':'); c >= 0 {
			field, value = line[:c], line[c+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		if string(field) != "data" {
			continue // id, event, retry, unknown fields
		}
		if !rd.hasData {
			rd.dOff = cap(rd.buf) - cap(value)
			rd.dEnd = rd.dOff + len(value)
			rd.hasData, rd.inBuf = true, true
			continue
		}
		rd.materialize()
		rd.data = append(rd.data, '\n')
		rd.data = append(rd.data, value...)
	}
}

// materialize copies a data line still in buf into data.
func (rd *Reader) materialize() {
	if rd.inBuf {
		rd.data = append(rd.data[:0], rd.buf[rd.dOff:rd.dEnd]...)
		rd.inBuf = false
	}
}

// end reports the state at the end of the source. An unfinished event that is the
// `[DONE]` sentinel alone (its blank line, or its whole line end, never came) is returned
// as an event, then io.EOF: the stream said it was done, and whether it is complete is for
// its sequences to tell (Demux.Run). Any other unfinished event is a truncation. With Lines,
// an unterminated last line that is valid JSON is returned as an event.
func (rd *Reader) end() (Event, error) {
	pending := rd.buf[rd.r:rd.w]
	if n := len(pending); n > 0 && pending[n-1] == '\r' {
		pending = pending[:n-1]
	}
	if !errors.Is(rd.err, io.EOF) {
		return Event{}, fmt.Errorf("sse: read: %w", rd.err)
	}
	if rd.Lines && len(pending) > 0 {
		if json.Valid(pending) {
			rd.r, rd.scan = rd.w, rd.w
			return Event{Data: pending, At: rd.at}, nil
		}
		return Event{}, fmt.Errorf("sse: %w: ended inside a line (%d bytes without a newline, not a JSON value)", ErrTruncated, len(pending))
	}
	if len(pending) > 0 || rd.hasData {
		rd.materialize()
		if data, ok := unterminatedDone(rd.hasData, rd.data, pending); ok {
			rd.r, rd.scan = rd.w, rd.w
			rd.data = rd.data[:0]
			rd.hasData = false
			return Event{Data: data, At: rd.at}, nil
		}
		return Event{}, fmt.Errorf("sse: %w: ended inside an event (%d bytes of an unfinished line, %d bytes of data)",
			ErrTruncated, len(pending), len(rd.data))
	}
	return Event{}, io.EOF
}

// unterminatedDone returns the data of an event cut at the end of the stream when it is the
// `[DONE]` sentinel alone: either its data line ended and only the blank line is missing
// (hasData, data, nothing pending), or its data line is the unfinished line itself.
func unterminatedDone(hasData bool, data, pending []byte) ([]byte, bool) {
	switch {
	case hasData && len(pending) == 0:
		return data, isDone(data)
	case !hasData && len(pending) > 0:
		field, value, ok := bytes.Cut(pending, []byte(":"))
		if !ok || string(field) != "data" {
			return nil, false
		}
		return value, isDone(value)
	}
	return nil, false
}

// fill compacts the buffer, grows it when full, and performs one read, stamping the
// arrival time when bytes came in.
func (rd *Reader) fill() error {
	rd.materialize() // compaction and growth move buf
	if rd.r > 0 {
		n := copy(rd.buf, rd.buf[rd.r:rd.w])
		rd.scan -= rd.r
		rd.r, rd.w = 0, n
	}
	if rd.w == len(rd.buf) {
		if rd.MaxLine > 0 && rd.w >= rd.MaxLine {
			return fmt.Errorf("sse: line longer than %d bytes", rd.MaxLine)
		}
		nb := make([]byte, 2*len(rd.buf))
		copy(nb, rd.buf[:rd.w])
		rd.buf = nb
	}
	for empty := 0; ; empty++ {
		n, err := rd.src.Read(rd.buf[rd.w:])
		if n > 0 {
			if rd.Now != nil {
				rd.at = rd.Now()
			} else {
				rd.at = time.Now()
			}
			rd.w += n
		}
		if err != nil {
			rd.err = err
			return nil
		}
		if n > 0 {
			return nil
		}
		if empty == 100 {
			rd.err = io.ErrNoProgress
			return nil
		}
	}
}
