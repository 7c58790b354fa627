package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// fuzzSeeds are the committed seed inputs: every framing case of the tests.
var fuzzSeeds = []string{
	"data: {\"choices\":[{\"index\":0,\"text\":\" a  b\",\"finish_reason\":null}]}\n\n",
	"data:{\"a\":1}\r\n\r\ndata:  x\n\n: ping\nid: 1\nretry: 5\n\n",
	"data: a\ndata: b\ndata\n\ndata: [DONE]\n\n",
	"data: {\"error\":{\"message\":\"m\",\"http_status_code\":422}}\n\n",
	"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2,\"prompt_tokens_details\":null}}\n\n",
	"data: {\"choices\":[{\"index\":3,\"text\":\"中\",\"finish_reason\":\"length\"}],\"usage\":{\"completion_tokens\":1}}\n\n",
	"data: {\"choi",
	"\r\r\n\n\n",
	"",
}

// splitReader returns input in pieces whose sizes cycle through sizes (each ≥ 1).
type splitReader struct {
	in    []byte
	sizes []byte
	k     int
}

func (s *splitReader) Read(p []byte) (int, error) {
	if len(s.in) == 0 {
		return 0, io.EOF
	}
	n := 1
	if len(s.sizes) > 0 {
		n = int(s.sizes[s.k%len(s.sizes)])%64 + 1
		s.k++
	}
	n = min(n, len(p), len(s.in))
	copy(p, s.in[:n])
	s.in = s.in[n:]
	return n, nil
}

func readAll(r io.Reader, bufSize int) (evs []string, end error) {
	rd := NewReader(r, bufSize)
	for {
		ev, err := rd.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, string(ev.Data))
	}
}

// FuzzReader: any input, split at any read boundaries and read with any initial buffer
// size, gives the same events and the same ending (clean EOF vs truncated) as reading it
// whole; it never panics or hangs.
func FuzzReader(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), []byte{0, 5, 63})
	}
	f.Fuzz(func(t *testing.T, in, sizes []byte) {
		want, wantEnd := readAll(strings.NewReader(string(in)), len(in)+1)
		got, gotEnd := readAll(&splitReader{in: append([]byte(nil), in...), sizes: sizes}, 1)
		if strings.Join(got, "\x00|") != strings.Join(want, "\x00|") {
			t.Fatalf("split read %q != whole read %q", got, want)
		}
		if errors.Is(gotEnd, io.EOF) != errors.Is(wantEnd, io.EOF) || errors.Is(gotEnd, ErrTruncated) != errors.Is(wantEnd, ErrTruncated) {
			t.Fatalf("endings differ: %v vs %v", gotEnd, wantEnd)
		}
	})
}

// FuzzDemux: any input through Reader and Demux never panics; marks are in arrival order,
// Finalize yields non-negative counts, and mark deltas keep their contract with the count.
func FuzzDemux(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	for _, parts := range [][]string{
		{ev(0, "a", -1, zero, ""), ev(0, "b", -1, zero, "length"), usageOnly(2), done},
		{ev(0, "a", 1, 1, ""), ev(1, "ab", 2, 2, ""), ev(0, "b", 0, 1, "length"), ev(1, "", 1, 3, "length"), usageOnly(5), done},
		{ev(0, "a", -2, 3, ""), ev(0, "b", -3, 2, ""), ev(2, "c", -1, -1, "length"), usageOnly(9), done},
	} {
		f.Add([]byte(strings.Join(parts, "")))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		rd := NewReader(&splitReader{in: in, sizes: []byte{7}}, 1)
		k := 0
		rd.Now = func() time.Time { k++; return t0.Add(time.Duration(k)) }
		d := &Demux{KeepText: true}
		d.Reset(t0, 0)
		_ = d.Run(rd)
		for _, s := range d.Finalize(4) {
			for i := 1; i < s.Marks.Len(); i++ {
				if s.Marks.Get(i).At < s.Marks.Get(i-1).At {
					t.Fatalf("marks out of order: %+v", s.Marks.Slice())
				}
			}
			if s.CompletionTokens < 0 {
				t.Fatalf("negative count %d from %s", s.CompletionTokens, s.TokenSource)
			}
			// the deltas' contract (Mark.Tokens): never 0 with text, summing to at most an
			// exact count, to it when all are known; an exact count covers the text chunks
			sum, known, texts := 0, 0, 0
			for _, m := range s.Marks.All() {
				if m.Tokens < -1 || m.Tokens == 0 && m.Text > 0 {
					t.Fatalf("mark %+v", m)
				}
				if m.Tokens >= 0 {
					sum += int(m.Tokens)
					known++
				}
				if m.Text > 0 {
					texts++
				}
			}
			if s.TokenSource.Exact() && (sum > s.CompletionTokens || known == s.Marks.Len() && known > 0 && sum != s.CompletionTokens || s.CompletionTokens < texts) {
				t.Fatalf("%d tokens from %s, %d text marks, deltas sum %d over %d of %d marks", s.CompletionTokens, s.TokenSource, texts, sum, known, s.Marks.Len())
			}
		}
	})
}
