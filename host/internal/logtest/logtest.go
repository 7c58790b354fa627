// Package logtest holds what tests of the engine and of the client against it share to read
// the engine's logs: a goroutine-safe buffer to give Config.StepLog or Config.SeqLog, and a
// reader of their "word key=value …" lines (the step log's "step=N active=A … wall_ms=W",
// the sequence log's "seq req=R … last_ms=B").
package logtest

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// LockedBuffer is a bytes.Buffer safe for one writer goroutine (the engine's scheduler or
// handlers) and readers in the test. The zero value is empty and ready.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p; it never fails.
func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns a copy of everything written so far.
func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Reset drops everything written so far (e.g. the lines of a warmup before the measured
// part of a test).
func (l *LockedBuffer) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Reset()
}

// Line is one log line: its fields that are not key=value (Words, in order) and its
// key=value fields (a later repeat of a key wins).
type Line struct {
	Text   string
	Words  []string
	Values map[string]string
}

// ParseLine splits one log line at whitespace into words and key=value fields.
func ParseLine(s string) Line {
	l := Line{Text: s, Values: map[string]string{}}
	for _, f := range strings.Fields(s) {
		if k, v, ok := strings.Cut(f, "="); ok {
			l.Values[k] = v
		} else {
			l.Words = append(l.Words, f)
		}
	}
	return l
}

// Lines parses every non-empty line of log.
func Lines(log string) []Line {
	var out []Line
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			out = append(out, ParseLine(sc.Text()))
		}
	}
	return out
}

// Int returns the integer value of key, 0 when the line has no such key; a value that is
// not an integer fails the test, naming the line.
func (l Line) Int(tb testing.TB, key string) int {
	tb.Helper()
	v, ok := l.Values[key]
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		tb.Fatalf("log line %q: %s: %v", l.Text, key, err)
	}
	return n
}

// Float returns the number value of key, 0 when the line has no such key; a value that is
// not a number fails the test, naming the line.
func (l Line) Float(tb testing.TB, key string) float64 {
	tb.Helper()
	v, ok := l.Values[key]
	if !ok {
		return 0
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		tb.Fatalf("log line %q: %s: %v", l.Text, key, err)
	}
	return x
}
