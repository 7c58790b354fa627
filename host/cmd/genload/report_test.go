package main

import (
	"context"
	gohtml "html"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genload/genload/host/ab"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/matrix"
)

// genload report writes one HTML file from two runs (with the A/B section), prints the
// markdown table without -o (every column with --wide), and wants at least one file.
func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	a := writeRun(t, dir, "a", map[[2]int][2]float64{{1000, 1}: {1, 10}, {1000, 8}: {2, 20}})
	b := writeRun(t, dir, "b", map[[2]int][2]float64{{1000, 1}: {1.1, 10}, {1000, 8}: {2.2, 20}})
	out := filepath.Join(dir, "r.html")
	code, stdout, stderr := cli(t, context.Background(), "report", "-o", out, a, b)
	if code != exitcode.OK || !strings.Contains(stdout, "report: "+out+" (2 runs)") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	html, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if page := gohtml.UnescapeString(string(html)); !strings.Contains(page, "A/B: a (A) → b (B)") || !strings.Contains(page, "median +10.0 %") {
		t.Errorf("report lacks the A/B section of +10 %%")
	}
	_, narrow, _ := cli(t, context.Background(), "report", a)
	_, wide, _ := cli(t, context.Background(), "report", "--wide", a)
	if !strings.Contains(narrow, "| fwd ms mean | full-batch fwd |") || strings.Contains(narrow, "fwd p50") || !strings.Contains(wide, "| fwd p50 |") {
		t.Errorf("markdown tables: default\n%s\nwide\n%s", narrow, wide)
	}
	if code, _, stderr := cli(t, context.Background(), "report", "-o", out); code != exitcode.Usage || !strings.Contains(stderr, "need at least one results file") {
		t.Errorf("no file: exit %d, %q", code, stderr)
	}
}

// The --json file genload ab writes is the one genload report --ab reads: its cells' paired
// intervals make the report's A/B section; without -o, or with a file that is not one, --ab
// is refused.
func TestReportOfABFile(t *testing.T) {
	dir := t.TempDir()
	abPath := filepath.Join(dir, "ab.json")
	doc := &ab.Doc{A: "base.toml", B: "new.toml", Pairs: 3, Confidence: 0.9, Status: "ok", Cells: []ab.Cell{
		{Cell: matrix.Cell{Index: 0, SeqLen: 2000, Batch: 4}, PairList: []ab.Pair{}, N: 3, Mean: -0.031, Lo: -0.052, Hi: -0.01, FwdA: 1.5e6, FwdB: 1.4535e6, Verdict: "B faster"}}}
	if err := doc.WriteJSON(abPath); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "ab.html")
	code, stdout, stderr := cli(t, context.Background(), "report", "-o", out, "--ab", abPath)
	if code != exitcode.OK || !strings.Contains(stdout, "report: "+out+" (0 runs, A/B of "+abPath+")") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	b, _ := os.ReadFile(out)
	page := gohtml.UnescapeString(string(b))
	if !strings.Contains(page, "<tr><td>2000</td><td>4</td><td>3</td><td>1.500</td><td>1.454</td><td>-3.1</td><td>[-5.2, -1.0]</td><td>B faster</td></tr>") ||
		!strings.Contains(page, "90 % Student t intervals") {
		t.Errorf("the report lacks the file's cell:\n%s", page)
	}
	if code, _, stderr := cli(t, context.Background(), "report", "--ab", abPath); code != exitcode.Usage || !strings.Contains(stderr, "needs -o FILE.html") {
		t.Errorf("--ab without -o: exit %d, %q", code, stderr)
	}
	run := writeRun(t, dir, "a", map[[2]int][2]float64{{1000, 1}: {1, 10}})
	if code, _, stderr := cli(t, context.Background(), "report", "-o", out, "--ab", run); code != exitcode.InvalidConfig || !strings.Contains(stderr, "not the --json file of genload ab") {
		t.Errorf("--ab of a results file: exit %d, %q", code, stderr)
	}
}
