package main

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/repeat"
	"github.com/genload/genload/host/results"
	"gonum.org/v1/gonum/stat"
)

// --until-cv against the built-in engine with known noise: a per-request ("burst") noise of
// CV 30 % on every cell, far above a 2 % target, so no cell can be declared stable (at n = 3
// and the 80 % bound asked for, the sample CV of 30 %-noise would have to fall below
// 2 %/2.12 = 0.94 %, whatever the machine adds): every cell is measured up to --max-repeats 3
// and flagged. The file holds one record per (cell, repeat), and the printed CVs and bounds
// are the rule's on the values in it, recomputed here from the records; the header records
// the rule.
func TestUntilCVOnNoisyEngine(t *testing.T) {
	plainOnly(t) // rounds run one after another, each as TestRunOnTheBuiltinEngine's; its stop rule reads their figures
	out := t.TempDir()
	cfg := writeConfig(t, fmt.Sprintf(`
max_tokens = 12
out = %q
[matrix]
seq_lens = [1000, 2000]
batch_sizes = [1, 4]
[engine]
time_scale = 1
noise = "burst-cv=0.3,seed=3"
`, out))
	code, stdout, stderr := cli(t, context.Background(), "run", "-c", cfg, "--run-id", "ucv", "--until-cv", "2", "--max-repeats", "3", "--cv-confidence", "0.8")
	if code != exitcode.OK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	run, err := results.ReadFile(filepath.Join(out, "ucv.json"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (results.StoppingRule{TargetCV: 0.02, MinRepeats: 2, MaxRepeats: 3, Confidence: 0.8}); run.Header.UntilCV == nil || *run.Header.UntilCV != want {
		t.Errorf("header until_cv %+v, want %+v", run.Header.UntilCV, want)
	}
	if len(run.Cells) != 12 || run.Footer.OK != 12 {
		t.Fatalf("%d records, footer %+v, want 4 cells × 3 repeats", len(run.Cells), run.Footer)
	}
	byCell := map[string][]float64{}
	for i, c := range run.Cells {
		if c.Repeat != i%3+1 {
			t.Fatalf("record %d: %s repeat %d", i, c.Cell.Key(), c.Repeat)
		}
		if c.Figures.PerForward.N > 0 { // a repeat the client could not time (-race, a loaded host) is not in the CV
			byCell[c.Cell.Key()] = append(byCell[c.Cell.Key()], float64(c.Figures.PerForward.Mean))
		}
	}
	lo, hi := 3, 0
	for key, xs := range byCell {
		m, sd := stat.MeanStdDev(xs, nil)
		cv := sd / m
		var l, b int
		fmt.Sscanf(key, "L=%d,B=%d", &l, &b)
		n := len(xs)
		lo, hi = min(lo, n), max(hi, n)
		row := fmt.Sprintf("| %d | %d | 3 | %d | %.2f | %.2f | flagged |", l, b, n, 100*cv, 100*cv*repeat.UpperFactor(n, 0.8))
		if !strings.Contains(stdout, row) || math.IsNaN(cv) {
			t.Errorf("%s: no row %q in:\n%s", key, row, stdout)
		}
	}
	for _, want := range []string{fmt.Sprintf("## Consistency of the repeats of each cell (%d to %d)", lo, hi), "0 of 4 cells stable, 4 flagged; 12 repeats in all",
		"GPU time per GPU (no gpu_count label): 1 run", "round 3: 4 cells", "## Repeats until the CV's 80 % upper bound ≤ 2 % (2 to 3 repeats per cell)"} {
		if !strings.Contains(stdout+stderr, want) {
			t.Errorf("output lacks %q:\nstdout:\n%s\nstderr:\n%s", want, stdout, stderr)
		}
	}
	// the GPU time and the legend of the table once each, not again from the command
	if n := strings.Count(stdout+stderr, "GPU time "); n != 1 {
		t.Errorf("the GPU time printed %d times, want once:\nstdout:\n%s\nstderr:\n%s", n, stdout, stderr)
	}
	if n := strings.Count(stdout, "  fwd ms mean      latency per decode forward pass"); n != 1 {
		t.Errorf("the legend printed %d times, want once", n)
	}
	// the usage errors
	for _, args := range [][]string{{"--until-cv", "2", "--repeat", "3"}, {"--until-cv", "2", "--resume", "x.jsonl"}, {"--until-cv", "2", "--min-repeats", "1"}, {"--until-cv", "2", "--cv-confidence", "0"}, {"--until-cv", "2", "--cv-confidence", "1"}} {
		if code, _, stderr := cli(t, context.Background(), append([]string{"run", "-c", cfg}, args...)...); code != exitcode.Usage {
			t.Errorf("%v: exit %d, %s", args, code, stderr)
		}
	}
}
