package steplog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Follower reads a log file as it grows, into a Parser, surviving rotation: a file truncated
// in place (copytruncate: its size drops below what was read) is read again from its start,
// and a file replaced by a new one at the same path (rename and create) is read to its end
// before the new one is opened. Lines are numbered per file generation, and errors name it:
// "steps.log:12", then "steps.log (rotation 1):3". A partial last line is held until its
// newline arrives; one cut off by a truncation is a LineError (Stats.CutLines). Poll reads
// what is new; the caller decides when (a ticker while a run goes on, once at the end).
type Follower struct {
	path string
	p    *Parser
	f    *os.File
	off  int64
	gen  int
	line int
	part []byte
}

// Follow opens path for reading into p. Errors are the open's.
func Follow(path string, p *Parser) (*Follower, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("step log: %w", err)
	}
	return &Follower{path: path, p: p, f: f}, nil
}

func (w *Follower) name() string {
	if w.gen == 0 {
		return w.path
	}
	return fmt.Sprintf("%s (rotation %d)", w.path, w.gen)
}

// Poll reads everything appended since the last Poll, following a truncation or a
// replacement of the file. It returns an error only when the file cannot be read (a
// replaced file that cannot be opened yet is not an error: the next Poll tries again).
func (w *Follower) Poll() error {
	st, err := w.f.Stat()
	if err != nil {
		return fmt.Errorf("step log %s: %w", w.path, err)
	}
	if st.Size() < w.off { // truncated in place
		w.cut()
		w.p.st.Truncations++
		w.gen++
		w.off, w.line = 0, 0
	}
	if err := w.drain(); err != nil {
		return err
	}
	cur, err := os.Stat(w.path)
	if err != nil || os.SameFile(cur, st) {
		return nil // not replaced (or the new file is not there yet)
	}
	nf, err := os.Open(w.path)
	if err != nil {
		return nil
	}
	// the old file was read to its end above; a last line without newline ends with it
	w.flush()
	w.f.Close()
	w.f, w.off, w.line = nf, 0, 0
	w.gen++
	w.p.st.Replacements++
	return w.drain()
}

// drain reads from w.off to the end of the current file.
func (w *Follower) drain() error {
	buf := make([]byte, 64<<10)
	for {
		n, err := w.f.ReadAt(buf, w.off)
		if n > 0 {
			w.off += int64(n)
			w.feed(buf[:n])
		}
		if errors.Is(err, io.EOF) || n == 0 {
			return nil
		}
		if err != nil {
			return fmt.Errorf("step log %s: %w", w.name(), err)
		}
	}
}

// feed splits b into lines, holding a partial last one.
func (w *Follower) feed(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			w.part = append(w.part, b...)
			return
		}
		w.part = append(w.part, b[:i]...)
		w.line++
		w.p.Line(fmt.Sprintf("%s:%d", w.name(), w.line), strings.TrimRight(string(w.part), "\r"))
		w.part = w.part[:0]
		b = b[i+1:]
	}
}

// flush parses a held partial line as a whole line (the file it came from has ended).
func (w *Follower) flush() {
	if len(w.part) == 0 {
		return
	}
	w.line++
	w.p.Line(fmt.Sprintf("%s:%d", w.name(), w.line), string(w.part))
	w.part = w.part[:0]
}

// cut records a held partial line lost to a truncation.
func (w *Follower) cut() {
	if len(w.part) == 0 {
		return
	}
	w.line++
	w.p.fail(fmt.Sprintf("%s:%d", w.name(), w.line), string(w.part), errors.New("line cut off by a truncation of the file (its end was never written)"))
	w.p.st.Lines++
	w.p.st.CutLines++
	w.part = w.part[:0]
}

// Close parses a held partial last line and closes the file.
func (w *Follower) Close() error {
	w.flush()
	return w.f.Close()
}
