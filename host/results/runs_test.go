package results

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
)

// writeRun writes a one-cell run with id and start time into dir as id.json and id.jsonl.
func writeRun(t *testing.T, dir, id string, started time.Time) (jsonPath, jsonlPath string) {
	t.Helper()
	h := Header{RunID: id, Model: "m"}
	h.Schema, h.Started = Schema, started
	w, err := Create(dir, h)
	if err != nil {
		t.Fatal(err)
	}
	c := Cell{Type: "cell", Cell: matrix.Cell{SeqLen: 500, Batch: 2}, Status: StatusOK, Figures: &measure.Figures{PerForward: measure.Summary{N: 2, Mean: time.Millisecond}}}
	if err := w.Cell(c); err != nil {
		t.Fatal(err)
	}
	j, err := w.Finish(StatusOK, nil)
	if err != nil {
		t.Fatal(err)
	}
	return j, w.Path()
}

// TestReadRunsRefusesOneRunTwice: the same run given twice — the same file, a renamed copy,
// or its .json beside its .jsonl — is refused, naming both files, the run and its start;
// two runs, also of one run id started at other times, are read.
func TestReadRunsRefusesOneRunTwice(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 12, 1, 22, 38, 21, 626343310, time.UTC)
	r1, r1l := writeRun(t, dir, "b2-r1", t0)
	r2, _ := writeRun(t, dir, "b2-r2", t0.Add(9*time.Second))
	b, err := os.ReadFile(r1)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(dir, "copy-b2.json")
	if err := os.WriteFile(cp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ a, b string }{{r1, r1}, {r1, cp}, {r1, r1l}} {
		_, err := ReadRuns([]string{tc.a, r2, tc.b})
		want := "the same run given twice: " + tc.a + " and " + tc.b + " are one run (run b2-r1, started 2026-12-01T22:38:21Z): give each run once (genload run --repeat N measures repeats)"
		if !errors.Is(err, ErrSameRun) || err.Error() != want || exitcode.Of(err) != exitcode.InvalidConfig {
			t.Errorf("%s twice: %v (exit %d)\nwant %s", filepath.Base(tc.b), err, exitcode.Of(err), want)
		}
	}
	// Another run that reused the id (genload run --run-id nightly each night) is another run.
	dir2 := t.TempDir()
	again, _ := writeRun(t, dir2, "b2-r1", t0.Add(24*time.Hour))
	if runs, err := ReadRuns([]string{r1, r2, again}); err != nil || len(runs) != 3 {
		t.Errorf("three runs: %v", err)
	}
	// One shard of a sharded run and another shard of it share id and start.
	s0 := &Run{Header: Header{RunID: "sh", Started: t0, Shard: &Shard{Index: 0, Count: 2}}}
	s1 := &Run{Header: Header{RunID: "sh", Started: t0, Shard: &Shard{Index: 1, Count: 2}}}
	if err := CheckDistinct([]*Run{s0, s1}, []string{"sh-0.json", "sh-1.json"}); err != nil {
		t.Errorf("two shards: %v", err)
	}
	if err := CheckDistinct([]*Run{s1, s1}, []string{"sh-1.json", "x.json"}); err == nil || !strings.Contains(err.Error(), "sh-1.json and x.json are one run (run sh, shard 1, started") {
		t.Errorf("one shard twice: %v", err)
	}
}

// TestReadFileSaysWhatItGot: a file that is not a run's JSON says so, naming the file; a figure
// that does not decode names its cell and where in it.
func TestReadFileSaysWhatItGot(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "c1.csv")
	if err := os.WriteFile(csv, []byte("run_id,seq_len,batch\nc1,500,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(csv)
	want := "results: " + csv + ": not a results file (want the <run-id>.json or .jsonl genload run writes; the .csv beside them is the run's table, for spreadsheets): line 1: invalid character 'r' looking for beginning of value"
	if !errors.Is(err, ErrNotResults) || err.Error() != want {
		t.Errorf("csv:\n got %v\nwant %s", err, want)
	}
	model := filepath.Join(dir, "model.json")
	if err := os.WriteFile(model, []byte(`{"schema": "genload.latmodel/v1", "form": "fixed+kv_read"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadFile(model)
	want = "results: " + model + `: not a results file (want the <run-id>.json or .jsonl genload run writes): its schema is "genload.latmodel/v1", a results file's header says "genload.run/v1"`
	if err == nil || err.Error() != want {
		t.Errorf("model file:\n got %v\nwant %s", err, want)
	}
	ab := filepath.Join(dir, "ab.json")
	if err := os.WriteFile(ab, []byte(`{"a": "a.toml", "b": "b.toml", "pairs": 3, "confidence": 0.95, "cells": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadFile(ab)
	want = "results: " + ab + ": not a results file (want the <run-id>.json or .jsonl genload run writes): it is the A/B comparison genload ab --json writes (3 pairs of a.toml and b.toml), not a run: genload report RUN… --ab " + ab + " reads it beside runs"
	if !errors.Is(err, ErrNotResults) || err.Error() != want {
		t.Errorf("ab --json file:\n got %v\nwant %s", err, want)
	}
	j, jl := writeRun(t, dir, "huge", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	for _, p := range []string{j, jl} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(strings.Replace(string(b), `"mean_ms": 1,`, `"mean_ms": 1e300,`, 1), `"mean_ms":1,`, `"mean_ms":1e300,`, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err = ReadFile(j)
	if want := "results: " + j + ": cell 1 of 1, L=500,B=2, figures.per_forward: summary: 1e+300 ms is beyond"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("huge .json:\n got %v\nwant %s…", err, want)
	}
	_, err = ReadFile(jl)
	if want := "results: " + jl + ":2: L=500,B=2, figures.per_forward: summary: 1e+300 ms is beyond"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("huge .jsonl:\n got %v\nwant %s…", err, want)
	}
}

// The footer counts the ok cells without a per-forward figure apart, within cells_ok.
func TestFooterCountsOKCellsWithoutFwd(t *testing.T) {
	dir := t.TempDir()
	h := Header{RunID: "f", Model: "m"}
	h.Schema, h.Started = Schema, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	w, err := Create(dir, h)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range []int{2, 0, 0} {
		c := Cell{Type: "cell", Cell: matrix.Cell{Index: i, SeqLen: 500, Batch: 2}, Status: StatusOK, Figures: &measure.Figures{PerForward: measure.Summary{N: n, Mean: time.Millisecond}}}
		if err := w.Cell(c); err != nil {
			t.Fatal(err)
		}
	}
	j, err := w.Finish(StatusOK, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ReadFile(j)
	if err != nil {
		t.Fatal(err)
	}
	if f := r.Footer; f == nil || f.OK != 3 || f.OKWithoutFwd != 2 {
		t.Fatalf("footer %+v: want 3 ok, 2 of them without fwd", f)
	}
}

// A results .json cut short names where it ends and the .jsonl to read instead.
func TestTruncatedResultsJSONSaysWhereItEnds(t *testing.T) {
	dir := t.TempDir()
	j, _ := writeRun(t, dir, "cut", time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
	b, err := os.ReadFile(j)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "trunc.json")
	os.WriteFile(cut, b[:len(b)/2], 0o644)
	_, err = ReadFile(cut)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("the document ends after %d bytes", len(b)/2)) || !strings.Contains(err.Error(), "trunc.jsonl beside it") {
		t.Errorf("cut short: %v", err)
	}
}
