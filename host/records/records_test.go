package records

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/sse"
)

// A recording's sequences become records with times from the file's origin: the request sent
// 2 ms after the recording's start, which began 10 ms after the origin, and chunks at 5 and
// 7 ms give sent 12, chunks 15 and 17, TTFT 3, E2E (end at 9 ms) 7; written and read back the
// same, and a cut last line is an error naming its line.
func TestRecordsFromARecordingRoundTrip(t *testing.T) {
	origin := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var s sse.Sequence
	s.Marks.Append(sse.Mark{At: 5 * time.Millisecond, Tokens: 1})
	s.Marks.Append(sse.Mark{At: 7 * time.Millisecond, Tokens: -1})
	s.FinishReason, s.CompletionTokens, s.TokenSource = "length", 2, sse.TokensRequestUsage
	res := &recording.Result{Start: origin.Add(10 * time.Millisecond), MaxTokens: 2,
		Sequences: []recording.Sequence{{Sequence: s}},
		Requests: []recording.Request{{Status: 200, Sent: 2 * time.Millisecond, End: 9 * time.Millisecond, HasUsage: true,
			Usage: sse.Usage{PromptTokens: 40, CachedTokens: 32, HasCached: true}}}}
	rs := FromResult(res, origin, []int{40}, func(r *Record) { r.Cell, r.Phase = "L=40,B=1", "measured" })
	if len(rs) != 1 {
		t.Fatalf("%d records", len(rs))
	}
	r := rs[0]
	if r.SentMs != 12 || r.Chunks[0] != (Chunk{15, 1}) || r.Chunks[1] != (Chunk{17, -1}) || *r.TTFTMs != 3 || *r.E2EMs != 7 ||
		r.PromptTokens != 40 || *r.UsagePromptTokens != 40 || *r.CachedTokens != 32 || !r.OK() || r.Cell != "L=40,B=1" {
		t.Fatalf("record %+v", r)
	}
	path := filepath.Join(t.TempDir(), "r.jsonl")
	w, err := Create(path, Header{Source: "run", ID: "x", Started: origin})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rs...); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(path, Header{}); err == nil {
		t.Error("an existing records file was overwritten")
	}
	f, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Header.Schema != Schema || !f.Header.Started.Equal(origin) || len(f.Records) != 1 || f.Records[0].Chunks[1] != r.Chunks[1] {
		t.Fatalf("read back %+v", f)
	}
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, b[:len(b)-10], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); err == nil || !strings.Contains(err.Error(), "r.jsonl:2:") {
		t.Errorf("cut line: %v", err)
	}
}
