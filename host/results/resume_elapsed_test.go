package results

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/genload/genload/host/matrix"
)

// After genload run --resume, the footer's elapsed time (read by genload gpu-time and the
// HTML report) is the wall time of every session, not only the last one's: a no-op resume of a
// 1m48s run once made it "1 run 3ms wall".
func TestResumeKeepsTheRunsWallTime(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir, Header{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Cell(Cell{Cell: matrix.Cell{SeqLen: 1000, Batch: 1}, Status: StatusOK})
	time.Sleep(60 * time.Millisecond)
	if _, err := w.Finish("ok", nil); err != nil {
		t.Fatal(err)
	}
	first, err := ReadFile(filepath.Join(dir, "r.jsonl"))
	if err != nil || first.Footer == nil {
		t.Fatalf("%v, footer %v", err, first.Footer)
	}
	w2, err := Resume(filepath.Join(dir, "r.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w2.Finish("ok", nil); err != nil {
		t.Fatal(err)
	}
	r, err := ReadFile(filepath.Join(dir, "r.json"))
	if err != nil || r.Footer == nil {
		t.Fatalf("%v, footer %v", err, r.Footer)
	}
	if time.Duration(r.Footer.Elapsed) < time.Duration(first.Footer.Elapsed) {
		t.Errorf("after a resume the run's elapsed is %v, less than the %v of its first session",
			time.Duration(r.Footer.Elapsed), time.Duration(first.Footer.Elapsed))
	}
}

// A session killed before its footer counts from the header's start to the end of its last
// cell record.
func TestResumeOfAKilledRunCountsItsRecordedCells(t *testing.T) {
	dir := t.TempDir()
	start := time.Now().Add(-time.Hour).UTC()
	w, err := Create(dir, Header{RunID: "k", Started: start})
	if err != nil {
		t.Fatal(err)
	}
	c := Cell{Cell: matrix.Cell{SeqLen: 1000, Batch: 1}, Status: StatusOK}
	c.Started, c.Elapsed = start.Add(10*time.Second), Millis(5*time.Second)
	if err := w.Cell(c); err != nil {
		t.Fatal(err)
	}
	w.f.Close() // killed: no footer
	w2, err := Resume(filepath.Join(dir, "k.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w2.Finish("ok", nil); err != nil {
		t.Fatal(err)
	}
	r, err := ReadFile(filepath.Join(dir, "k.json"))
	if err != nil || r.Footer == nil {
		t.Fatalf("%v, footer %v", err, r.Footer)
	}
	if got := time.Duration(r.Footer.Elapsed); got < 15*time.Second || got > 16*time.Second {
		t.Errorf("elapsed %v, want 15 s (header start to the end of the last cell) plus this session's", got)
	}
}
