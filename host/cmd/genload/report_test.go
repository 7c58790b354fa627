package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genload/genload/host/exitcode"
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
	if !strings.Contains(string(html), "A/B: a (A) → b (B)") || !strings.Contains(string(html), "median 10.0 %") {
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
