package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/internal/resultstest"
	"github.com/genload/genload/host/results"
)

var update = flag.Bool("update", false, "rewrite host/report/testdata/golden from the current writers")

// goldenRun writes a run of three cells — ok, partial, error — through a Writer into dir and
// returns its JSONL bytes (the footer's finish time and elapsed time fixed) and the Run.
func goldenRun(t *testing.T, dir string) ([]byte, *results.Run) {
	t.Helper()
	cfg := config.Default()
	cfg.Labels = map[string]any{"gpu_count": int64(8), "deployment": "golden"}
	h := results.Header{RunID: "golden", Started: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC), Genload: "test", Target: "http://127.0.0.1:8000",
		TargetKind: "external", Model: "m", Context: 8192, ContextSource: "server /v1/models max_model_len", Tokenizer: "qwen3",
		Corpus: "embedded", CorpusRows: 256, PromptOverhead: 20, MinLen: 52, MaxLen: 8092, Config: cfg,
		Plugins: map[string]results.PluginInfo{"lengths": {Name: "gamma", Version: "1.0.0", Kind: "lengths", SHA256: "00"}}}
	w, err := results.Create(dir, h)
	if err != nil {
		t.Fatal(err)
	}
	ok := resultstest.Cell(0, 1000, 2, 1234567*time.Nanosecond)
	partial := resultstest.Cell(1, 1000, 8, 2*time.Millisecond)
	partial.Status, partial.Figures.Counted, partial.Figures.PerForward.N, partial.Figures.EarlyStop = results.StatusPartial, 7, 7, 1
	partial.Warnings = []string{"fwd over 7 of 8 sequences: left out: 1 of 8 sequences stopped early"}
	partial.Retries = &results.Retries{Measured: 1, Reasons: map[string]int{"status 503": 1}}
	failed := resultstest.Cell(2, 2000, 2, 0)
	failed.Status, failed.Error, failed.Figures = results.StatusError, "POST http://127.0.0.1:8000/v1/completions: status 500: boom", nil
	for _, c := range []results.Cell{ok, partial, failed} {
		if err := w.Cell(c); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := Finish(w, results.StatusError, nil); err != nil {
		t.Fatal(err)
	}
	run := w.Run()
	run.Footer.Finished, run.Footer.Elapsed = time.Date(2026, 12, 1, 8, 1, 0, 0, time.UTC), results.Millis(time.Minute)
	b, err := os.ReadFile(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	foot, err := json.Marshal(run.Footer)
	if err != nil {
		t.Fatal(err)
	}
	lines[len(lines)-1] = foot
	return append(bytes.Join(lines, []byte("\n")), '\n'), run
}

// The on-disk contract — JSONL, JSON, CSV — and the table are pinned by golden files: a change
// to any of them fails here until `go test ./host/report -run Golden -update` rewrites them,
// and the diff shows what changed for readers of results files.
func TestGoldenOutputs(t *testing.T) {
	dir := t.TempDir()
	jsonl, run := goldenRun(t, dir)
	jsonPath, csvPath := filepath.Join(dir, "g.json"), filepath.Join(dir, "g.csv")
	if err := results.WriteJSON(jsonPath, run); err != nil {
		t.Fatal(err)
	}
	if err := WriteCSV(csvPath, run); err != nil {
		t.Fatal(err)
	}
	var table, wide bytes.Buffer
	Table(&table, run)
	WriteTable(&wide, run, TableOptions{Wide: true})
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for name, got := range map[string][]byte{"run.jsonl": jsonl, "run.json": read(jsonPath), "run.csv": read(csvPath), "table.md": table.Bytes(), "table-wide.md": wide.Bytes()} {
		path := filepath.Join("testdata", "golden", name)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the golden file (first differing line %q); if the change is meant, run go test ./host/report -run Golden -update and review the diff",
				name, firstDiff(got, want))
		}
	}
}

// firstDiff returns the first line of got that differs from want's.
func firstDiff(got, want []byte) string {
	g, w := bufio.NewScanner(bytes.NewReader(got)), bufio.NewScanner(bytes.NewReader(want))
	g.Buffer(nil, 1<<24)
	w.Buffer(nil, 1<<24)
	for g.Scan() {
		if !w.Scan() || g.Text() != w.Text() {
			return g.Text()
		}
	}
	return "(got is shorter)"
}

// What a Writer writes, ReadFile reads back whole, from the JSONL and the JSON file alike, and
// a Resume of it continues with the same run.
func TestWriterReadFileResumeRoundTrip(t *testing.T) {
	dir := t.TempDir()
	_, run := goldenRun(t, dir)
	jsonPath := filepath.Join(dir, "golden.json")
	if err := results.WriteJSON(jsonPath, run); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(run.Cells)
	for _, p := range []string{filepath.Join(dir, "golden.jsonl"), jsonPath} {
		r, err := results.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := json.Marshal(r.Cells); !bytes.Equal(got, want) {
			t.Errorf("%s: cells differ after ReadFile:\n got %s\nwant %s", p, got, want)
		}
		hg, _ := json.Marshal(r.Header)
		hw, _ := json.Marshal(run.Header)
		if !bytes.Equal(hg, hw) {
			t.Errorf("%s: header differs after ReadFile:\n got %s\nwant %s", p, hg, hw)
		}
	}
	w, err := results.Resume(filepath.Join(dir, "golden.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(w.Run().Cells); !bytes.Equal(got, want) {
		t.Errorf("resumed writer's cells differ:\n got %s\nwant %s", got, want)
	}
}
