package main

import (
	"context"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/host/internal/textcheck"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/results"
)

// writeRun writes a hand-made results .json whose cells have the given mean per-forward
// latencies and TTFT medians (ms), keyed "L,B".
func writeRun(t *testing.T, dir, id string, fwd map[[2]int][2]float64) string {
	t.Helper()
	r := &results.Run{Header: results.Header{Type: "header", Schema: results.Schema, RunID: id, Model: "m"}}
	i := 0
	for _, k := range [][2]int{{1000, 1}, {1000, 8}, {4000, 1}, {4000, 8}} {
		v, ok := fwd[k]
		if !ok {
			continue
		}
		d := time.Duration(v[0] * float64(time.Millisecond))
		r.Cells = append(r.Cells, results.Cell{Type: "cell", Cell: matrix.Cell{Index: i, SeqLen: k[0], Batch: k[1]}, Status: results.StatusOK,
			Figures: &measure.Figures{Sequences: k[1], Counted: k[1],
				PerForward: measure.Summary{N: k[1], Mean: d, P50: d, P90: d, P99: d, Min: d, Max: d},
				TTFT:       measure.Summary{N: k[1], P50: time.Duration(v[1] * float64(time.Millisecond))}}})
		i++
	}
	p := filepath.Join(dir, id+".json")
	if err := results.WriteJSON(p, r); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConsistencyThresholdExitCodes(t *testing.T) {
	dir := t.TempDir()
	// Two runs; per-forward ms per cell and the CV = sample SD / mean over the two runs
	// (for two values x, y: SD = |x − y|/√2):
	//   L=1000 B=1: 1.0, 1.2 → mean 1.1, SD 0.1414 → CV 12.86 %
	//   L=1000 B=8: 2.0, 2.0 → CV 0
	//   L=4000 B=1: 4.0, 4.2 → mean 4.1, SD 0.1414 → CV 3.45 %
	// L=4000 B=8 is only in the second run: left out.
	a := writeRun(t, dir, "a", map[[2]int][2]float64{{1000, 1}: {1.0, 3}, {1000, 8}: {2, 3}, {4000, 1}: {4, 3}})
	b := writeRun(t, dir, "b", map[[2]int][2]float64{{1000, 1}: {1.2, 3}, {1000, 8}: {2, 3}, {4000, 1}: {4.2, 6}, {4000, 8}: {9, 3}})
	ctx := context.Background()
	for _, tc := range []struct {
		args []string
		code exitcode.Code
		out  string // in stdout (OK) or stderr (else)
	}{
		{[]string{a, b}, exitcode.OK, "median 3.45 %, P90 12.86 %, max 12.86 % (L=1000,B=1)"},
		{[]string{a, b}, exitcode.OK, "across 3 common cells (1 left out)"},
		// A CV of two values is judged by its 90 % one-sided bounds, CV × 0.6080 and CV × 7.9596
		// (sqrt(1/χ²(0.9; 1)), sqrt(1/χ²(0.1; 1))): 12.86 % → [7.82 %, 102.31 %]; the median
		// cell's 3.45 % → [2.10 %, 27.45 %].
		{[]string{"--max-cv", "10", a, b}, exitcode.Inconclusive, "--max-cv: max per-cell CV 12.86 %, 90 % one-sided bounds [7.82 %, 102.31 %] (the largest at L=1000,B=1, 2 values): cannot tell against 10 % (the bounds straddle it: these runs cannot decide)"},
		{[]string{"--max-cv", "5", a, b}, exitcode.ThresholdsFailed, "--max-cv: max per-cell CV 12.86 %, 90 % one-sided bounds [7.82 %, 102.31 %] (the largest at L=1000,B=1, 2 values): even the lower bound exceeds 5 %: fail"},
		{[]string{a, b, "--max-cv", "110"}, exitcode.OK, "threshold: max per-cell CV 12.86 %, 90 % one-sided bounds [7.82 %, 102.31 %] (the largest at L=1000,B=1, 2 values): the upper bound is within 110 %: ok"},
		{[]string{"--max-cv", "3", "--cv-stat", "median", a, b}, exitcode.Inconclusive, "--max-cv: median per-cell CV 3.45 %, 90 % one-sided bounds [2.10 %, 27.45 %]: cannot tell against 3 %"},
		{[]string{"--max-cv", "2", "--cv-stat", "median", a, b}, exitcode.ThresholdsFailed, "--max-cv: median per-cell CV 3.45 %, 90 % one-sided bounds [2.10 %, 27.45 %]: even the lower bound exceeds 2 %: fail"},
		{[]string{"--max-cv", "30", "--cv-stat", "median", a, b}, exitcode.OK, "threshold: median per-cell CV 3.45 %, 90 % one-sided bounds [2.10 %, 27.45 %]: the upper bound is within 30 %: ok"},
		{[]string{a}, exitcode.Usage, "one results file without repeats: need at least two results files"},
		{[]string{"--cv-stat", "mean", a, b}, exitcode.Usage, `--cv-stat "mean"`},
		{[]string{"--max-cv", "-1", a, b}, exitcode.Usage, "must be ≥ 0"},
		{[]string{a, filepath.Join(dir, "missing.json")}, exitcode.InvalidConfig, "missing.json"},
	} {
		code, stdout, stderr := cli(t, ctx, append([]string{"consistency"}, tc.args...)...)
		where := stdout
		if code != exitcode.OK {
			where = stderr
		}
		if code != tc.code || !strings.Contains(strings.Join(strings.Fields(where), " "), tc.out) {
			t.Errorf("consistency %v: exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", tc.args, code, tc.code, tc.out, stdout, stderr)
		}
	}

	// diff: after/before − 1 per cell: +20 %, 0 %, +5 %; median (nearest rank of 0, 5, 20) +5 %.
	code, stdout, stderr := cli(t, ctx, "diff", a, b)
	for _, want := range []string{"| 1000 | 1 |         1.000 |        1.200 |  +20.00 |", "| 4000 | 1 |         4.000 |        4.200 |   +5.00 |             3.0 |            6.0 |  +100.00 |",
		"median +5.00 %, range +0.00 … +20.00 %", "left out L=4000,B=8: missing from a"} {
		if code != exitcode.OK || !strings.Contains(stdout, want) {
			t.Errorf("diff: exit %d, want %q in\n%s%s", code, want, stdout, stderr)
		}
	}
	if code, _, _ := cli(t, ctx, "diff", a); code != exitcode.Usage {
		t.Errorf("diff with one file: exit %d", code)
	}
	if code, _, _ := cli(t, ctx, "plot", a, b, a); code != exitcode.Usage {
		t.Errorf("plot with three files: exit %d", code)
	}
}

// genload run --repeat 2 on the built-in engine: one results file with a record per cell and
// repeat, in two rounds; the consistency printed is the one genload consistency prints for the
// file; diff (the repeats pooled) and plot read it.
func TestRepeatConsistencyDiffPlotEndToEnd(t *testing.T) {
	plainOnly(t) // repeats run one after another, each as TestRunOnTheBuiltinEngine's; consistency, diff and plot read files
	out := t.TempDir()
	cfg := writeConfig(t, fmt.Sprintf(`
max_tokens = 12
out = %q
[matrix]
seq_lens = [1000, 4000]
batch_sizes = [1, 4]
[engine]
time_scale = 1
`, out)) // steps of ≥ 3.5 ms: a client under -race on a loaded machine still reads chunks apart
	ctx := context.Background()
	for _, bad := range [][]string{{"--repeat", "0"}, {"--max-cv", "5"}, {"--repeat", "2", "--resume", "x"}, {"--repeat", "2", "--cv-stat", "p50"}} {
		if code, _, stderr := cli(t, ctx, append([]string{"run", "-c", cfg}, bad...)...); code != exitcode.Usage {
			t.Errorf("run %v: exit %d, want %d (%s)", bad, code, exitcode.Usage, stderr)
		}
	}
	// Two repeats; no CV of two values can exceed √2 = 141 %, nor its 90 % upper bound
	// 7.96 × 141 % = 1126 %, so --max-cv 2000 passes.
	code, stdout, stderr := cli(t, ctx, "run", "-c", cfg, "--run-id", "t", "--repeat", "2", "--max-cv", "2000")
	if code != exitcode.OK {
		t.Fatalf("run --repeat 2: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"## Consistency of the repeats of each cell (2 to 2)", "across 4 cells:", "cells with CV ≤ 5 %:",
		"## Repeats: 2 per cell, in interleaved rounds", "4 of 4 cells measured 2 times; 8 repeats in all", "threshold: max per-cell CV"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("run --repeat stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "round 1: 4 cells") || !strings.Contains(stderr, "round 2: 4 cells") {
		t.Errorf("run --repeat 2: not two rounds of the 4 cells:\n%s", stderr)
	}
	// one results file, one table, the legend of its columns once
	if n, m := strings.Count(stdout, "## genload t "), strings.Count(stdout, "  fwd ms mean      latency per decode forward pass"); n != 1 || m != 1 {
		t.Errorf("run --repeat 2: %d tables and the legend %d times, want 1 and once:\n%s", n, m, stdout)
	}
	tr := filepath.Join(out, "t.json")
	r, err := results.ReadFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	reps := map[string][]int{}
	for _, c := range r.Cells {
		reps[c.Cell.Key()] = append(reps[c.Cell.Key()], c.Repeat)
	}
	if len(r.Cells) != 8 || len(reps) != 4 || r.Header.Repeats != 2 || r.Header.UntilCV != nil || r.Footer == nil || r.Header.Config.Seed != 42 {
		t.Errorf("%s: %d records of %d cells (want 8 of 4), header repeats %d, footer %+v", tr, len(r.Cells), len(reps), r.Header.Repeats, r.Footer)
	}
	for k, rs := range reps {
		if slices.Sort(rs); !slices.Equal(rs, []int{1, 2}) {
			t.Errorf("%s: repeats %v, want 1 and 2", k, rs)
		}
	}
	// The summary printed by run --repeat is exactly what consistency prints for the file.
	code, cons, stderr := cli(t, ctx, "consistency", tr)
	if code != exitcode.OK || !strings.Contains(stdout, cons) {
		t.Errorf("consistency of the repeats: exit %d, output not the one run printed:\n%s\n%s", code, cons, stderr)
	}
	// Real runs keep HDR histograms: merged percentiles are filled in (no "–" in the
	// consistency table, which ends where the repeats' summary begins).
	table, _, _ := strings.Cut(cons, "## Repeats:")
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(l, "| 1000 ") || strings.HasPrefix(l, "| 4000 ") {
			f := strings.Split(l, "|") // "", L, B, …, merged p50, p90, p99, ""
			for _, m := range f[len(f)-4 : len(f)-1] {
				if strings.TrimSpace(m) == "–" {
					t.Errorf("row without merged percentiles: %s", l)
				}
			}
		}
	}
	// diff and plot of two runs: the run's file before, a second run after
	if code, _, stderr := cli(t, ctx, "run", "-c", cfg, "--run-id", "u"); code != exitcode.OK {
		t.Fatalf("run u: exit %d\n%s", code, stderr)
	}
	r1, r2 := tr, filepath.Join(out, "u.jsonl")
	runOut := stdout
	code, diff, stderr := cli(t, ctx, "diff", r1, r2)
	if code != exitcode.OK || !strings.Contains(diff, "Change from t (before) to u (after)") || !strings.Contains(diff, "over 4 common cells: median") ||
		!strings.Contains(diff, "before (t): each cell's figure is the mean over its measured repeats (2 to 2 per cell)") {
		t.Errorf("diff: exit %d\n%s%s", code, diff, stderr)
	}
	// The default views keep within the table's 120 columns (the "comparable:" line was 121).
	for name, text := range map[string]string{"run --repeat": runOut, "consistency": cons, "diff": diff} {
		if long := textcheck.Wider(text, report.NarrowWidth); len(long) > 0 {
			t.Errorf("%s: lines over %d columns:\n%s", name, report.NarrowWidth, strings.Join(long, "\n"))
		}
	}
	prefix := filepath.Join(t.TempDir(), "ab")
	code, stdout, stderr = cli(t, ctx, "plot", r1, r2, "-o", prefix)
	if code != exitcode.OK || !strings.Contains(stdout, prefix+".png") {
		t.Fatalf("plot: exit %d\n%s%s", code, stdout, stderr)
	}
	// One run, default prefix: beside the results file.
	if code, _, stderr := cli(t, ctx, "plot", r1); code != exitcode.OK {
		t.Fatalf("plot one run: exit %d %s", code, stderr)
	}
	for _, p := range []string{prefix + ".png", filepath.Join(out, "t.png")} {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		c, err := png.DecodeConfig(f)
		st, _ := f.Stat()
		f.Close()
		if err != nil || c.Width != 1440 || st.Size() < 20_000 {
			t.Errorf("%s: %v %dx%d %d bytes", p, err, c.Width, c.Height, st.Size())
		}
	}
	for _, p := range []string{prefix + ".svg", filepath.Join(out, "t.svg")} {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), "<svg") || len(b) < 4_000 {
			t.Errorf("%s: %v, %d bytes", p, err, len(b))
		}
	}
}

// The N files of a --repeat N run of an earlier genload (<id>-r1 … <id>-rN, a run each, no
// repeats in any) still read: as N runs in consistency (with the whole-run figures), as
// before and after in diff and gate, as runs in report and fit.
func TestOldRepeatFilesStillRead(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i, slow := range []float64{1, 1.02, 0.99} {
		files = append(files, goldenRun(t, dir, fmt.Sprintf("a-r%d", i+1), slow))
	}
	ctx := context.Background()
	for _, c := range []struct {
		args []string
		want []string
	}{
		{append([]string{"consistency"}, files...), []string{"## Consistency of 3 runs: a-r1, a-r2, a-r3", "(sample SD / mean over 3 runs) across 4 common cells",
			"whole-run mean per-forward latency (ms, over the common cells): 3.312, 3.379, 3.279; span 3.03 %"}},
		{[]string{"diff", files[0], files[1]}, []string{"## Change from a-r1 (before) to a-r2 (after)", "per-forward latency change over 4 common cells: median +2.00 %"}},
		{append([]string{"report"}, files...), []string{"## genload a-r1 — genload-sim", "## genload a-r3 — genload-sim"}},
		{append([]string{"fit"}, files...), []string{"runs a-r1, a-r2, a-r3; 4 cells fitted"}},
		{[]string{"gate", files[0], files[1]}, []string{"(runs a-r1) vs new", "(runs a-r2), through", "mean change +2.00 % [", "gate: pass"}},
	} {
		code, stdout, stderr := cli(t, ctx, c.args...)
		if code != exitcode.OK {
			t.Errorf("%s: exit %d\n%s\n%s", c.args[0], code, stdout, stderr)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%s: output lacks %q:\n%s", c.args[0], w, stdout)
			}
		}
	}
}

// Two repeats against one server, then a second run: the later measurements find their
// prompts in the server's prefix cache, which run --repeat, consistency and diff say in a note
// that was 257 columns wide, after a "comparable:" line of 122: both are wrapped within the
// table's 120 columns.
func TestCachedNoteAndComparableLineFitTheWidth(t *testing.T) {
	plainOnly(t) // the width of a run --repeat 2's text; under the detector a cell may miss its figure
	t.Setenv("GENLOAD_PLUGIN_DIR", testplugins.Dir(t))
	ecfg := engine.DefaultConfig()
	ecfg.TimeScale = 1 // steps of ≥ 3.5 ms: chunks read apart on a loaded machine
	url := serveEngine(t, ecfg, nil)
	out := t.TempDir()
	cfg := writeConfig(t, fmt.Sprintf("target = %q\nmax_tokens = 12\nout = %q\n[labels]\nhardware = \"a-rather-long-name-of-the-machine-under-test\"\n[matrix]\nseq_lens = [1000]\nbatch_sizes = [2]\n", url, out))
	ctx := context.Background()
	code, stdout, stderr := cli(t, ctx, "run", "-c", cfg, "--run-id", "c", "--repeat", "2")
	if code != exitcode.OK {
		t.Fatalf("run --repeat 2: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr := cli(t, ctx, "run", "-c", cfg, "--run-id", "d"); code != exitcode.OK {
		t.Fatalf("run d: exit %d\n%s", code, stderr)
	}
	c, d := filepath.Join(out, "c.json"), filepath.Join(out, "d.json")
	_, cons, _ := cli(t, ctx, "consistency", c)
	_, diff, _ := cli(t, ctx, "diff", c, d)
	for name, text := range map[string]string{"run --repeat": stdout, "consistency": cons, "diff": diff} {
		if long := textcheck.Wider(text, report.NarrowWidth); len(long) > 0 {
			t.Errorf("%s: lines over %d columns:\n%s", name, report.NarrowWidth, strings.Join(long, "\n"))
		}
		if !strings.Contains(text, "⚠ prompts already cached: ") || !strings.Contains(text, "comparable: ") {
			t.Errorf("%s lacks the note of the prompts already cached or the comparable line:\n%s", name, text)
		}
	}
}
