package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// segments delivers one segment per Read call (never merging two), like a network that
// splits the stream exactly at the given boundaries.
type segments struct {
	segs [][]byte
	i    int
}

func (s *segments) Read(p []byte) (int, error) {
	for s.i < len(s.segs) && len(s.segs[s.i]) == 0 {
		s.i++
	}
	if s.i == len(s.segs) {
		return 0, io.EOF
	}
	n := copy(p, s.segs[s.i])
	s.segs[s.i] = s.segs[s.i][n:]
	return n, nil
}

func split(parts ...string) *segments {
	s := &segments{}
	for _, p := range parts {
		s.segs = append(s.segs, []byte(p))
	}
	return s
}

// stepClock returns base + 1 ms × k at its k-th call (k = 1, 2, …): the k-th read that
// returned bytes is stamped k ms.
func stepClock(base time.Time) func() time.Time {
	k := 0
	return func() time.Time {
		k++
		return base.Add(time.Duration(k) * time.Millisecond)
	}
}

// schedClock stamps the k-th read with at[k-1] milliseconds after base.
func schedClock(base time.Time, at ...float64) func() time.Time {
	k := 0
	return func() time.Time {
		v := at[k]
		k++
		return base.Add(time.Duration(v * float64(time.Millisecond)))
	}
}

func events(t *testing.T, rd *Reader) ([]string, error) {
	t.Helper()
	var out []string
	for {
		ev, err := rd.Next()
		if err != nil {
			return out, err
		}
		out = append(out, string(ev.Data))
	}
}

func TestReaderFraming(t *testing.T) {
	cases := []struct {
		name  string
		parts []string
		want  []string
	}{
		{"no space after colon", []string{"data:{\"a\":1}\n\n"}, []string{`{"a":1}`}},
		{"crlf endings", []string{"data: x\r\n\r\ndata: y\r\n\r\n"}, []string{"x", "y"}},
		// only one space after the colon is removed: "data:  {" keeps one space
		{"two spaces keep one", []string{"data:  {\"a\":1}\n\n"}, []string{` {"a":1}`}},
		{"multi-line data joined with LF", []string{"data: a\ndata: b\ndata:\n\n"}, []string{"a\nb\n"}},
		{"id retry event comments ignored", []string{"id: 7\nretry: 10\nevent: x\n: ping\ndata: v\n\n"}, []string{"v"}},
		{"empty events skipped", []string{"\n\n\n: ping\n\ndata: v\n\n\n"}, []string{"v"}},
		// a bare "data" line is the data field with an empty value; "foo" is an unknown field
		{"field without colon", []string{"data\nfoo\ndata: z\n\n"}, []string{"\nz"}},
		{"crlf split between reads", []string{"data: x\r", "\n\r", "\n"}, []string{"x"}},
		{"byte by byte", strings.Split("data: {\"t\":\"é\"}\n\ndata: [DONE]\n\n", ""), []string{`{"t":"é"}`, "[DONE]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rd := NewReader(split(tc.parts...), 4)
			got, err := events(t, rd)
			if !errors.Is(err, io.EOF) {
				t.Fatalf("end error = %v, want io.EOF", err)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("events = %q, want %q", got, tc.want)
			}
		})
	}
}

// One 200 KB event delivered in 64 KiB reads, followed in the same (last) read by two
// more events: all three byte-exact.
func TestReaderLargeEventAcrossReads(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 200_000/16) // 200,000 bytes
	stream := []byte("data: ")
	stream = append(stream, big...)
	stream = append(stream, "\n\ndata: second\n\ndata: third\n\n"...)
	var parts []string
	for len(stream) > 0 {
		n := min(64<<10, len(stream))
		parts = append(parts, string(stream[:n]))
		stream = stream[n:]
	}
	// 200,006+30 bytes in 64 KiB pieces: 4 reads, the last holds the end of the big event
	// and both small ones.
	if len(parts) != 4 {
		t.Fatalf("setup: %d parts", len(parts))
	}
	clock := stepClock(time.Unix(0, 0))
	rd := NewReader(split(parts...), 64<<10) // one read per 64 KiB part
	rd.Now = clock
	var got [][]byte
	var at []time.Time
	for {
		ev, err := rd.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
		got = append(got, bytes.Clone(ev.Data))
		at = append(at, ev.At)
	}
	if len(got) != 3 || !bytes.Equal(got[0], big) || string(got[1]) != "second" || string(got[2]) != "third" {
		t.Fatalf("got %d events, first %d bytes equal=%v", len(got), len(got[0]), bytes.Equal(got[0], big))
	}
	// all three completed in the 4th read → stamped 4 ms
	for i, a := range at {
		if a.Sub(time.Unix(0, 0)) != 4*time.Millisecond {
			t.Errorf("event %d stamped %v, want 4ms (the read that completed it)", i, a.Sub(time.Unix(0, 0)))
		}
	}
}

func TestReaderTruncated(t *testing.T) {
	cases := []struct {
		name  string
		parts []string
		trunc bool
	}{
		{"partial line", []string{"data: {\"choi"}, true},
		{"data without blank line", []string{"data: x\n"}, true},
		{"clean end", []string{"data: x\n\n"}, false},
		{"clean end with trailing comment", []string{"data: x\n\n: bye\n"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := events(t, NewReader(split(tc.parts...), 0))
			if got := errors.Is(err, ErrTruncated); got != tc.trunc {
				t.Fatalf("err = %v, truncated = %v, want %v", err, got, tc.trunc)
			}
			if tc.trunc && !strings.Contains(err.Error(), "stream truncated") {
				t.Fatalf("message %q lacks %q", err, "stream truncated")
			}
		})
	}
}

func TestReaderReadError(t *testing.T) {
	boom := errors.New("connection reset")
	rd := NewReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotestErr{boom}), 0)
	ev, err := rd.Next()
	if err != nil || string(ev.Data) != "a" {
		t.Fatalf("first = %q, %v", ev.Data, err)
	}
	if _, err = rd.Next(); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want wrapped %v", err, boom)
	}
}

type iotestErr struct{ err error }

func (e iotestErr) Read([]byte) (int, error) { return 0, e.err }

func TestReaderMaxLine(t *testing.T) {
	rd := NewReader(strings.NewReader("data: "+strings.Repeat("x", 100)+"\n\n"), 16)
	rd.MaxLine = 64
	if _, err := rd.Next(); err == nil || !strings.Contains(err.Error(), "longer than 64") {
		t.Fatalf("err = %v", err)
	}
}
