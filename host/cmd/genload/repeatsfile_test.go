package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/tokenizer"
)

// rowOf returns the markdown row of cell (l, b) in the section of out that starts at head
// ("" when absent).
func rowOf(out, head string, l, b int) string {
	i := strings.Index(out, head)
	if i < 0 {
		return ""
	}
	for _, line := range strings.Split(out[i:], "\n") {
		f := strings.Split(line, "|")
		if len(f) > 3 && strings.TrimSpace(f[1]) == fmt.Sprint(l) && strings.TrimSpace(f[2]) == fmt.Sprint(b) {
			return line
		}
	}
	return ""
}

// repeatsTable is the rows of the "## Repeats until" table of out without their last
// column (the wall time, summed from the file's microseconds), one per line.
func repeatsTable(out string) string {
	i := strings.Index(out, "## Repeats until")
	if i < 0 {
		return ""
	}
	var rows []string
	for _, line := range strings.Split(out[i:], "\n")[1:] {
		if strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| L ") {
			rows = append(rows, line[:strings.LastIndex(strings.TrimSuffix(line, " |"), "|")])
		}
	}
	return strings.Join(rows, "\n")
}

// --until-cv --keep-going against an engine that answers every third completion request with
// 503 (one request per repeat: no warmup, no retry, no probe) and perturbs each request by a
// noise of CV 30 %, at a 0.01 % target that two repeats cannot meet (their sample CV would have
// to fall below 0.01 %/7.96: about 3 in 10⁵ at 30 % noise). Round 1 measures the four cells in
// matrix order and the third (L=600,B=1) fails; round 2 measures the other three and its
// second fails. So 2 cells are flagged after their 2 repeats and 2 failed, 7 repeats in all;
// the cell that failed at once has no value ("–" for its CV and bound). Then, from the file
// alone: genload consistency and genload report print the same summary, diff compares each
// cell by the mean of its measured repeats (pooled), and --resume is refused.
func TestUntilCVKeepGoingFromTheFile(t *testing.T) {
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatal(err)
	}
	ecfg := engine.DefaultConfig()
	ecfg.TimeScale = 1
	ecfg.Faults.Status, ecfg.Faults.Every = 503, 3
	if ecfg.Noise, err = engine.ParseNoise("burst-cv=0.3,seed=3"); err != nil {
		t.Fatal(err)
	}
	url := serveEngine(t, ecfg, tok)
	out := t.TempDir()
	cfg := writeConfig(t, fmt.Sprintf("max_tokens = 12\nmetrics = \"off\"\ntoken_counts = \"usage\"\nout = %q\n"+
		"[warmup]\ndisabled = true\nretries = 0\n[matrix]\nseq_lens = [300, 600]\nbatch_sizes = [1, 2]\n", out))
	ctx := context.Background()
	code, stdout, stderr := cli(t, ctx, "run", "-c", cfg, "--target", url, "--run-id", "kg", "--until-cv", "0.01", "--max-repeats", "2", "--keep-going")
	if code != exitcode.TargetFailed {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitcode.TargetFailed, stdout, stderr)
	}
	path := filepath.Join(out, "kg.json")
	r, err := results.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	values := map[[2]int][]float64{}
	for _, c := range r.Cells {
		k := [2]int{c.Cell.SeqLen, c.Cell.Batch}
		if c.Status == results.StatusOK && c.Figures.PerForward.N > 0 { // -race may leave a repeat untimed
			values[k] = append(values[k], float64(c.Figures.PerForward.Mean))
		}
	}
	if len(r.Cells) != 7 {
		t.Fatalf("%d records, want 7\n%s", len(r.Cells), stdout)
	}
	for _, want := range []string{"0 of 4 cells stable, 2 flagged, 2 failed; 7 repeats in all (1.75 per cell)", "| 600 | 1 | 1 | 0 | – | – | failed |",
		"⚠ L=600,B=1 failed (no more repeats of it after 1, 0 measured): cell L=600,B=1, repeat 1: "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	twice := false
	for _, xs := range values {
		twice = twice || len(xs) >= 2
	}
	if twice != strings.Contains(stdout, "## Consistency of the repeats of each cell") {
		t.Errorf("consistency section printed: %v, a cell with two values: %v\n%s", !twice, twice, stdout)
	}

	// the summary again, from the file
	code, fromFile, stderr := cli(t, ctx, "consistency", path)
	if want := repeatsTable(stdout); (twice && code != exitcode.OK) || want == "" || repeatsTable(fromFile) != want {
		t.Errorf("consistency %s: exit %d, table\n%s\nwant\n%s\nstderr:\n%s", path, code, repeatsTable(fromFile), want, stderr)
	}
	if twice && !strings.Contains(fromFile, "0 of 4 cells stable, 2 flagged, 2 failed; 7 repeats in all") {
		t.Errorf("consistency %s:\n%s", path, fromFile)
	}

	// report without -o: the table, then the same summary
	code, md, stderr := cli(t, ctx, "report", path)
	if want := repeatsTable(stdout); code != exitcode.OK || repeatsTable(md) != want || !strings.Contains(md, "| 600 | 2 |      2 |") {
		t.Errorf("report %s: exit %d\n%s\nwant the table\n%s\n%s", path, code, md, want, stderr)
	}

	// diff pools each cell's measured repeats: its figure is their mean. The same run given
	// twice is refused, so the after side is a copy of it under another run id.
	if code, _, stderr := cli(t, ctx, "diff", path, path); code != exitcode.InvalidConfig || !strings.Contains(stderr, "the same run given twice") {
		t.Errorf("diff of a run with itself: exit %d\n%s", code, stderr)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	copied := bytes.Replace(b, []byte(`"run_id": "kg"`), []byte(`"run_id": "kg-copy"`), 1)
	if bytes.Equal(copied, b) {
		t.Fatalf("%s has no run_id \"kg\"", path)
	}
	other := filepath.Join(t.TempDir(), "kg-copy.json")
	if err := os.WriteFile(other, copied, 0o644); err != nil {
		t.Fatal(err)
	}
	code, diff, stderr := cli(t, ctx, "diff", path, other)
	if code != exitcode.OK || !strings.Contains(diff, "pooled before (kg): each cell's figure is the mean over its measured repeats") {
		t.Fatalf("diff: exit %d\n%s%s", code, diff, stderr)
	}
	for k, xs := range values {
		m := 0.0
		for _, x := range xs {
			m += x
		}
		mean := time.Duration(math.Round(m / float64(len(xs))))
		cell := fmt.Sprintf(" %.3f | ", float64(mean)/1e6)
		if row := rowOf(diff, "## Change from", k[0], k[1]); strings.Count(row, cell) != 2 || !strings.Contains(row, "+0.00") {
			t.Errorf("L=%d,B=%d: diff row %q, want %q before and after (the mean of %v ns)", k[0], k[1], row, cell, xs)
		}
	}

	// --resume of the run is refused, naming the file and its rule
	jsonl := filepath.Join(out, "kg.jsonl")
	code, _, stderr = cli(t, ctx, "run", "--resume", jsonl)
	if code != exitcode.InvalidConfig || !strings.Contains(stderr, "cannot resume "+jsonl+": its header has until_cv (target CV 0.01 %, 2 to 2 repeats per cell)") {
		t.Errorf("--resume: exit %d\n%s", code, stderr)
	}
}
