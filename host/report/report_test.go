package report

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/internal/resultstest"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/results"
)

func TestWriterRoundTripsThroughJSONLAndJSON(t *testing.T) {
	dir := t.TempDir()
	h := results.Header{RunID: "r1", Started: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC), Model: "m", Config: config.Default(),
		Plugins: map[string]results.PluginInfo{"lengths": {Name: "gamma", Version: "1.0.0"}}}
	w, err := results.Create(dir, h)
	if err != nil {
		t.Fatal(err)
	}
	c1, c2 := resultstest.Cell(0, 1000, 2, 1234567*time.Nanosecond), resultstest.Cell(1, 2000, 2, 2*time.Millisecond)
	c2.Status, c2.Error, c2.Figures = results.StatusError, "POST http://x/v1/completions: HTTP 500: boom", nil
	for _, c := range []results.Cell{c1, c2} {
		if err := w.Cell(c); err != nil {
			t.Fatal(err)
		}
	}
	// Before Finish, the JSONL already holds the header and both cells.
	mid, err := results.ReadFile(w.Path())
	if err != nil || len(mid.Cells) != 2 || mid.Footer != nil {
		t.Fatalf("mid-run read: %v, %d cells, footer %v", err, len(mid.Cells), mid.Footer)
	}
	jsonPath, csvPath, err := Finish(w, results.StatusError, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{w.Path(), jsonPath} {
		r, err := results.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if r.Footer == nil || r.Footer.OK != 1 || r.Footer.Failed != 1 || r.Header.Schema != results.Schema {
			t.Fatalf("%s: footer %+v", p, r.Footer)
		}
		// Durations are float64 milliseconds that keep nanoseconds (measure.Summary.MarshalJSON):
		// 1.234567 ms reads back as 1,234,567 ns, not rounded to the microsecond.
		if got := r.Cells[0].Figures.PerForward.Mean; got != 1234567*time.Nanosecond {
			t.Errorf("%s: per-forward mean %v, want 1.234567ms", p, got)
		}
		if !reflect.DeepEqual(r.Cells[0].Figures, c1.Figures) {
			t.Errorf("%s: figures differ after the round trip:\n got %+v\nwant %+v", p, r.Cells[0].Figures, c1.Figures)
		}
		if !reflect.DeepEqual(r.Cells[0].Lengths, c1.Lengths) || r.Cells[1].Error != c2.Error {
			t.Errorf("%s: cells differ after the round trip", p)
		}
	}
	f, _ := os.Open(csvPath)
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	errCol := slices.Index(CSVHeader(), "error")
	if len(recs) != 3 || len(recs[0]) != len(CSVHeader()) || recs[1][2] != "1000" || recs[2][errCol] != c2.Error {
		t.Errorf("csv = %v", recs)
	}
}

func TestReadFileIgnoresTheTornLastLineOfAKilledRun(t *testing.T) {
	dir := t.TempDir()
	w, err := results.Create(dir, results.Header{RunID: "k"})
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Cell(resultstest.Cell(0, 1000, 1, time.Millisecond))
	// A kill in the middle of a write leaves a partial line without its newline.
	f, _ := os.OpenFile(filepath.Join(dir, "k.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"type":"cell","cell":{"ind`)
	f.Close()
	r, err := results.ReadFile(filepath.Join(dir, "k.jsonl"))
	if err != nil || len(r.Cells) != 1 {
		t.Fatalf("%v, %d cells", err, len(r.Cells))
	}
}

func TestTableShowsEveryCellWarningAndError(t *testing.T) {
	c1, c2 := resultstest.Cell(0, 1000, 8, 1500*time.Microsecond), resultstest.Cell(1, 64000, 64, 7700*time.Microsecond)
	c2.Warnings = []string{"9 of 64 lengths clamped to [50, 130972]"}
	c3 := results.Cell{Cell: matrix.Cell{Index: 2, SeqLen: 1000, Batch: 2}, Status: results.StatusError, Error: "warmup: HTTP 503"}
	var b bytes.Buffer
	Table(&b, &results.Run{Header: results.Header{RunID: "t", Model: "m", Config: config.Default()}, Cells: []results.Cell{c1, c2, c3}})
	out := b.String()
	for _, want := range []string{
		"|     L |  B | len min/mean/max  | fwd ms mean |",
		"|  1000 |  8 | 500/1000/1500     |       1.500 |",
		"| 64000 | 64 | 32000/64000/96000 |       7.700 |",
		"ok ⚠ |", "error |",
		"⚠ L=64000,B=64: 9 of 64 lengths clamped", "✗ L=1000,B=2: warmup: HTTP 503",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// A partial cell (7 of 8 sequences counted, one early stop) shows counted 7/8 and status
// "partial" in the table, and counted 7 with early_stop_sequences 1 in the CSV, its warnings
// column the kinds of its two warnings; a cell whose counts came from chunks shows its tokens
// as a lower bound.
func TestPartialCellCountedColumn(t *testing.T) {
	c1, c2 := resultstest.Cell(0, 1000, 8, 1500*time.Microsecond), resultstest.Cell(1, 2000, 8, 2*time.Millisecond)
	c2.Status, c2.Figures.Counted, c2.Figures.PerForward.N, c2.Figures.EarlyStop = results.StatusPartial, 7, 7, 1
	c2.Warnings = []string{"left out: 1 of 8 sequences stopped early", "realised mean length 1990 is -0.5 % off L = 2000 (1 of 8 lengths clamped)"}
	c1.Figures.TokensUnverified = 8
	run := &results.Run{Header: results.Header{RunID: "p", Model: "m", Config: config.Default()}, Cells: []results.Cell{c1, c2}}
	var b bytes.Buffer
	WriteTable(&b, run, TableOptions{Wide: true}) // tokens is a wide column
	out := b.String()
	for _, want := range []string{"| tokens | B seen | counted |    status |", "|   ≥800 |      ? |     8/8 |        ok |", "|    800 |      ? |     7/8 | partial ⚠ |"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	recs := csvOf(t, run)
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for i, want := range []map[string]string{
		{"counted": "8", "batch": "8", "status": "ok", "completion_tokens": "800", "tokens_unverified": "8", "early_stop_sequences": "0", "warnings": ""},
		{"counted": "7", "batch": "8", "status": "partial", "completion_tokens": "800", "tokens_unverified": "0", "early_stop_sequences": "1",
			"warnings": "other; lengths-off-target"},
	} {
		for k, v := range want {
			if j, ok := col[k]; !ok || recs[i+1][j] != v {
				t.Errorf("csv row %d %s = %q, want %q", i, k, recs[i+1][min(j, len(recs[i+1])-1)], v)
			}
		}
	}
	if !results.Measured(results.StatusPartial) || !results.Measured(results.StatusOK) || results.Measured(results.StatusError) || results.Measured(results.StatusInterrupted) {
		t.Error("Measured")
	}
}

// A cell of status error keeps its figures in the record (what the server did instead: here
// prompts it truncated), but the table shows – for them and the CSV leaves them blank: they are
// not the cell's figures at its L.
func TestErrorCellsFiguresAreNotShown(t *testing.T) {
	ok, bad := resultstest.Cell(0, 1000, 2, 1500*time.Microsecond), resultstest.Cell(1, 4000, 2, 494*time.Microsecond)
	bad.Status, bad.Error = results.StatusError, "prompts truncated by the server"
	run := &results.Run{Header: results.Header{RunID: "e", Model: "m", Config: config.Default()}, Cells: []results.Cell{ok, bad}}
	var b bytes.Buffer
	Table(&b, run)
	var okRow, badRow string
	for _, l := range strings.Split(b.String(), "\n") {
		switch {
		case strings.HasPrefix(l, "| 1000 |"):
			okRow = l
		case strings.HasPrefix(l, "| 4000 |"):
			badRow = l
		}
	}
	if !strings.Contains(okRow, "1.500") || strings.Contains(badRow, "0.494") || !strings.Contains(badRow, "–") || !strings.Contains(badRow, "error") {
		t.Errorf("rows:\n%s\n%s", okRow, badRow)
	}
	recs := csvOf(t, run)
	col := slices.Index(recs[0], "per_forward_mean_ms")
	if col < 0 || recs[1][col] == "" || recs[2][col] != "" {
		t.Errorf("per_forward_mean_ms: %q (ok) and %q (error), want a value and blank", recs[1][col], recs[2][col])
	}
	if bad.Figures.PerForward.Mean != 494*time.Microsecond {
		t.Error("the record lost its figures")
	}
}

// csvOf is run's CSV as WriteCSV writes it, read back: the header row, then a row per cell.
func csvOf(t *testing.T, run *results.Run) [][]string {
	t.Helper()
	path := filepath.Join(t.TempDir(), run.Header.RunID+".csv")
	if err := WriteCSV(path, run); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}
