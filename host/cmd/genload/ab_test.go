package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/run"
	"gonum.org/v1/gonum/stat"
)

func TestTInterval(t *testing.T) {
	// 1, 2, 3: mean 2, SD 1; t(0.975; 2) = 4.302653 (tables), half-width 4.302653/√3 = 2.484138
	m, lo, hi := tInterval([]float64{1, 2, 3}, 0.95)
	if m != 2 || math.Abs(hi-2-2.484138) > 1e-6 || math.Abs(2-lo-2.484138) > 1e-6 {
		t.Fatalf("mean %v, interval [%v, %v]", m, lo, hi)
	}
}

// slowerProfile writes a copy of the engine's default profile with every cost × 1.1 (the
// shipped file's numbers, parsed here) and returns its path.
func slowerProfile(t *testing.T, dir string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "engine", "profiles", "moe-30b-a3b.toml"))
	if err != nil {
		t.Fatal(err)
	}
	costs := regexp.MustCompile(`(?m)^((?:fixed|per_seq)_ms|kv_read_ns_per_token|kv_tail_ns_per_token|prefill_ns_per_token|prefill_attn_ns_per_pair|moe_expert_us) = ([0-9.]+)$`)
	n := 0
	out := costs.ReplaceAllStringFunc(string(src), func(line string) string {
		m := costs.FindStringSubmatch(line)
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			t.Fatal(err)
		}
		n++
		return fmt.Sprintf("%s = %g", m[1], 1.1*v)
	})
	if n != 7 {
		t.Fatalf("%d cost keys scaled in the profile, want 7", n)
	}
	out = strings.Replace(out, `name = "moe-30b-a3b"`, `name = "moe-30b-a3b-slower"`, 1)
	p := filepath.Join(dir, "slower.toml")
	if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// verdicts counts the table's verdicts.
func verdicts(stdout string) map[string]int {
	n := map[string]int{}
	for _, l := range strings.Split(stdout, "\n") {
		for _, v := range []string{"B slower", "B faster", "no significant difference"} {
			if strings.HasPrefix(l, "| ") && strings.HasSuffix(l, "| "+v+" |") {
				n[v]++
			}
		}
	}
	return n
}

// fakeSide answers every measurement with a per-forward mean of base × scale × a lognormal
// factor of CV cv (seeded): the noise of a real server, of a known size.
type fakeSide struct {
	scale, cv float64
	rng       *rand.Rand
	cell      matrix.Cell
}

func (f *fakeSide) Plan(_ context.Context, c matrix.Cell) (*run.Plan, error) {
	f.cell = c
	return &run.Plan{}, nil
}

func (f *fakeSide) MeasurePlan(context.Context, *run.Plan) (report.Cell, error) {
	sig := math.Sqrt(math.Log1p(f.cv * f.cv))
	base := float64(time.Millisecond) * (1 + float64(f.cell.Batch)/10)
	fwd := time.Duration(base * f.scale * math.Exp(sig*f.rng.NormFloat64()-sig*sig/2))
	return report.Cell{Status: report.StatusOK, Figures: &measure.Figures{PerForward: measure.Summary{N: 1, Mean: fwd}}}, nil
}

// The verdicts with noise of a known size (2 % per measurement, 5 pairs, 95 %): a side against
// an identical one shows no significant difference in ≥ 95 % of 200 cells (by construction
// about 5 % differ by chance, so the seed is fixed: 9 of 200 here), and a side 10 % slower is
// found slower in every one of them.
func TestABVerdictsWithKnownNoise(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		scaleB     float64
		verdict    string
		atLeast    int
		meanDiffLo float64
	}{{1, "no significant difference", 190, -0.01}, {1.1, "B slower", 200, 0.09}} {
		a, b := &fakeSide{scale: 1, cv: 0.02, rng: rng}, &fakeSide{scale: c.scaleB, cv: 0.02, rng: rng}
		n := 0
		sum := 0.0
		for i := range 200 {
			cell := matrix.Cell{Index: i, SeqLen: 1000, Batch: 1 + i%8}
			b.cell = cell
			row, err := abMeasure(context.Background(), []abSide{a, b}, cell, 5, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			if row.Verdict == c.verdict {
				n++
			}
			sum += row.Mean
		}
		if n < c.atLeast || sum/200 < c.meanDiffLo || sum/200 > c.meanDiffLo+0.02 {
			t.Errorf("B × %g: %d of 200 cells %q (want ≥ %d), mean difference %.4f", c.scaleB, n, c.verdict, c.atLeast, sum/200)
		}
		t.Logf("B × %g: %d of 200 cells %q, mean difference %+.2f %%", c.scaleB, n, c.verdict, 100*sum/200)
	}
}

// The command end to end on the built-in engine: a config against itself, each side its own
// engine measuring the same plans; then against a copy whose engine profile costs 10 % more.
// The verdicts are not asserted here: on this 2-core machine under other tests' load the
// per-forward jitter of one measurement reaches tens of per cent (TestABVerdictsWithKnownNoise
// holds the statistics); the table and the exit codes are.
func TestABCommandOnTheBuiltinEngine(t *testing.T) {
	t.Setenv("GENLOAD_PLUGIN_DIR", testplugins.Dir(t))
	dir := t.TempDir()
	body := "max_tokens = 12\n[matrix]\nseq_lens = [256, 512]\nbatch_sizes = [1, 4]\n[engine]\ntime_scale = 1\n"
	a := writeConfig(t, body)
	b := writeConfig(t, body+fmt.Sprintf("profile = %q\n", slowerProfile(t, dir)))
	code, stdout, stderr := cli(t, context.Background(), "ab", "-a", a, "-b", b, "--pairs", "3")
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if v := verdicts(stdout); v["B slower"]+v["B faster"]+v["no significant difference"] != 4 || !strings.Contains(stdout, "cells differ significantly at 95 %") {
		t.Fatalf("verdicts %v:\n%s", v, stdout)
	}
	// a config against itself is within ±1000 % everywhere: the threshold passes
	code, stdout, _ = cli(t, context.Background(), "ab", "-a", a, "-b", a, "--pairs", "2", "--max-diff", "1000")
	if code != exitcode.OK || !strings.Contains(stdout, "threshold: no cell's interval lies beyond ±1000 %: ok") {
		t.Fatalf("--max-diff 1000: exit %d\n%s", code, stdout)
	}
	if code, _, _ := cli(t, context.Background(), "ab", "-a", a); code != exitcode.Usage {
		t.Errorf("without -b: exit %d", code)
	}
}

// gappySide answers like fakeSide, except that the measurements numbered in none (1-based,
// counted over the side's measurements) come back status ok without a per-forward figure, and
// the measurement numbered cancelAt (0 = never) cancels the context first.
type gappySide struct {
	fakeSide
	none     map[int]bool
	cancelAt int
	cancel   context.CancelFunc
	n        int
}

func (g *gappySide) MeasurePlan(ctx context.Context, p *run.Plan) (report.Cell, error) {
	g.n++
	if g.n == g.cancelAt {
		g.cancel()
		return report.Cell{Status: report.StatusError, Error: "context canceled"}, ctx.Err()
	}
	if g.none[g.n] {
		return report.Cell{Status: report.StatusOK, Figures: &measure.Figures{PerForwardReason: "no sequence reached max_tokens"}}, nil
	}
	return g.fakeSide.MeasurePlan(ctx, p)
}

// A pair without a figure on one side is left out with the record's reason and the cell keeps
// its other pairs; a cell left with one pair has no interval; an interrupt is exit 130.
func TestABLeavesOutPairsWithoutAFigure(t *testing.T) {
	cell := matrix.Cell{SeqLen: 1000, Batch: 4}
	a := &gappySide{fakeSide: fakeSide{scale: 1, cv: 0.02, rng: rand.New(rand.NewPCG(1, 1))}}
	b := &gappySide{fakeSide: fakeSide{scale: 1.1, cv: 0.02, rng: rand.New(rand.NewPCG(2, 2)), cell: cell}, none: map[int]bool{2: true}}
	row, err := abMeasure(context.Background(), []abSide{a, b}, cell, 4, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if row.N != 3 || len(row.D) != 3 || len(row.PairList) != 4 {
		t.Fatalf("N %d, %d differences, %d pairs; want 3, 3, 4", row.N, len(row.D), len(row.PairList))
	}
	p := row.PairList[1]
	if p.D != nil || p.Skipped != "side B: status ok; no per-forward figure: no sequence reached max_tokens" || p.Order != "BA" {
		t.Errorf("pair 2: %+v", p)
	}
	for _, i := range []int{0, 2, 3} {
		q := row.PairList[i]
		if q.D == nil || math.Abs(*q.D-(q.FwdBms/q.FwdAms-1)) > 1e-12 {
			t.Errorf("pair %d: d %v, fwd A %v ms, B %v ms", q.Pair, q.D, q.FwdAms, q.FwdBms)
		}
	}
	if m, lo, hi := tInterval(row.D, 0.95); row.Mean != m || row.Lo != lo || row.Hi != hi || row.Verdict != "B slower" {
		t.Errorf("interval %v [%v, %v] %q, want %v [%v, %v] over the 3 pairs, B slower", row.Mean, row.Lo, row.Hi, row.Verdict, m, lo, hi)
	}

	// three of four pairs without a figure on A: one pair left, no interval
	a2 := &gappySide{fakeSide: fakeSide{scale: 1, cv: 0.02, rng: rand.New(rand.NewPCG(3, 3))}, none: map[int]bool{1: true, 2: true, 4: true}}
	row, err = abMeasure(context.Background(), []abSide{a2, b}, cell, 4, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if row.N != 1 || row.Verdict != "too few pairs (1 of 4 with a figure on both sides): pair 1, side A: status ok; no per-forward figure: no sequence reached max_tokens" {
		t.Errorf("N %d, verdict %q", row.N, row.Verdict)
	}
	var buf strings.Builder
	writeAB(&buf, abDoc{A: "a.toml", B: "b.toml", Pairs: 4, Confidence: 0.95, Cells: []abCell{row}}, 3)
	for _, want := range []string{"| 1000 | 4 | 1 | – | – | – | – | too few pairs", "A = a.toml, B = b.toml: 0 of 0 compared cells", "1 without an interval (too few pairs); 2 of 3 cells not measured (stopped)"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}

	// an interrupt during pair 2 (side B measures second in pair 1, first in pair 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b3 := &gappySide{fakeSide: fakeSide{scale: 1, cv: 0.02, rng: rand.New(rand.NewPCG(4, 4)), cell: cell}, cancelAt: 2, cancel: cancel}
	row, err = abMeasure(ctx, []abSide{a, b3}, cell, 4, 0.95)
	if exitcode.Of(err) != exitcode.Interrupted || !strings.Contains(fmt.Sprint(err), "interrupted during cell L=1000,B=4, pair 2, side B") || len(row.PairList) != 1 {
		t.Errorf("interrupted: err %v (exit %d), %d pairs kept", err, exitcode.Of(err), len(row.PairList))
	}
}

// The usage errors name the flag; a max_tokens mismatch is found before anything is measured.
func TestABUsageAndConfigErrors(t *testing.T) {
	a := writeConfig(t, "max_tokens = 12\n[matrix]\nseq_lens = [256]\nbatch_sizes = [1]\n")
	b := writeConfig(t, "max_tokens = 16\n[matrix]\nseq_lens = [256]\nbatch_sizes = [1]\n")
	for _, c := range []struct {
		args []string
		code exitcode.Code
		want string
	}{
		{[]string{"-a", a}, exitcode.Usage, "-a A.toml and -b B.toml are both required"},
		{[]string{"-a", a, "-b", a, "--pairs", "1"}, exitcode.Usage, "--pairs 1: want ≥ 2"},
		{[]string{"-a", a, "-b", a, "--confidence", "1"}, exitcode.Usage, "--confidence 1: want a confidence in (0, 1)"},
		{[]string{"-a", a, "-b", a, "--max-diff", "-5"}, exitcode.Usage, "--max-diff -5: want a percentage ≥ 0"},
		{[]string{"-a", a, "-b", a, "x.toml"}, exitcode.Usage, `unexpected argument "x.toml"`},
		{[]string{"-a", a, "-b", b}, exitcode.InvalidConfig, "max_tokens differs: 12 in A (" + a + "), 16 in B (" + b + ")"},
	} {
		code, _, stderr := cli(t, context.Background(), append([]string{"ab"}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, want %d; stderr %q lacks %q", c.args, code, c.code, stderr, c.want)
		}
	}
}

// cancelOn is a writer that cancels when what was written so far contains marker.
type cancelOn struct {
	strings.Builder
	marker string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	n, err := c.Builder.Write(p)
	if strings.Contains(c.String(), c.marker) {
		c.cancel()
	}
	return n, err
}

// ab of a config against itself on built-in engines with a per-request noise of CV 5 %: each
// side's engine draws its own noise (the seeds in --json differ), so the pairs' differences
// d = b_B/b_A − 1 have an SD of about √2 · 5 % = 7.1 % and the intervals are of that size — not
// the ±0.1–0.2 % of two engines replaying the same draws (then 1.1 % on the engines' truth,
// 2.4 % on the client's figures here). On the engines' own truth in --json (their decode step
// times from /metrics) and on the client's figures, the pooled SD of d over the 4 cells (12
// degrees of freedom: within [0.61, 1.39] × the true SD with 95 % probability; the seeds are
// fixed) must be at least 3.5 %; both carry this host's jitter on top, which on a loaded 2-core
// host can add tens of per cent to one pair, so the upper check is on the median cell's SD of
// the truth, at most 21 % (3 × the injected 7.1 %). Each interval in --json is the t interval
// of its pairs. Then Ctrl-C after the first cell: the table of that cell is printed, --json
// keeps it, exit 130.
func TestABOfAConfigAgainstItselfShowsTheNoise(t *testing.T) {
	t.Setenv("GENLOAD_PLUGIN_DIR", testplugins.Dir(t))
	dir := t.TempDir()
	a := writeConfig(t, "max_tokens = 12\n[matrix]\nseq_lens = [1000, 2000]\nbatch_sizes = [1, 4]\n[engine]\ntime_scale = 1\nnoise = \"burst-cv=0.05,seed=1\"\n")
	js := filepath.Join(dir, "ab.json")
	code, stdout, stderr := cli(t, context.Background(), "ab", "-a", a, "-b", a, "--pairs", "4", "--json", js)
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	doc := readABJSON(t, js)
	if doc.Status != "ok" || len(doc.Cells) != 4 {
		t.Fatalf("status %q, %d cells", doc.Status, len(doc.Cells))
	}
	if doc.Engines[0]["noise"] == doc.Engines[1]["noise"] {
		t.Errorf("both sides' engines drew noise %v", doc.Engines[0]["noise"])
	}
	var ss, sst float64
	var sdt []float64
	dof, doft := 0, 0
	for _, c := range doc.Cells {
		var ds, dt []float64
		for _, p := range c.PairList {
			if p.D != nil {
				ds = append(ds, *p.D)
			}
			if p.TruthAms > 0 && p.TruthBms > 0 {
				dt = append(dt, p.TruthBms/p.TruthAms-1)
			}
		}
		if len(dt) >= 2 {
			_, sd := stat.MeanStdDev(dt, nil)
			sst += sd * sd * float64(len(dt)-1)
			doft += len(dt) - 1
			sdt = append(sdt, sd)
		}
		if len(ds) != c.N || c.N < 2 {
			t.Fatalf("%s: %d differences, n %d", c.Cell.Key(), len(ds), c.N)
		}
		m, lo, hi := tInterval(ds, 0.95)
		if math.Abs(m-c.Mean) > 1e-12 || math.Abs(lo-c.Lo) > 1e-12 || math.Abs(hi-c.Hi) > 1e-12 {
			t.Errorf("%s: interval %v [%v, %v] in the file, %v [%v, %v] from its pairs", c.Cell.Key(), c.Mean, c.Lo, c.Hi, m, lo, hi)
		}
		_, sd := stat.MeanStdDev(ds, nil)
		ss += sd * sd * float64(len(ds)-1)
		dof += len(ds) - 1
		t.Logf("%s: d %+.2f %% [%+.2f, %+.2f], SD %.2f %%", c.Cell.Key(), 100*m, 100*lo, 100*hi, 100*sd)
	}
	pooled := math.Sqrt(ss / float64(dof))
	t.Logf("client: pooled SD of d %.2f %% (%d degrees of freedom; √2 · 5 %% = 7.07 %% injected)", 100*pooled, dof)
	if pooled < 0.035 {
		t.Errorf("client: pooled SD of the paired differences %.2f %%, want ≥ 3.5 %% (the injected 7.1 %% plus jitter)", 100*pooled)
	}
	if doft != 12 {
		t.Fatalf("engine truth in %d degrees of freedom, want 12 (every pair of the 4 cells)", doft)
	}
	pt, med := math.Sqrt(sst/float64(doft)), medianOf(sdt)
	t.Logf("engine truth: pooled SD of d %.2f %%, median cell %.2f %% (%d degrees of freedom)", 100*pt, 100*med, doft)
	if pt < 0.035 || med > 0.21 {
		t.Errorf("engine truth: pooled SD of the paired differences %.2f %%, median cell %.2f %%; want about 7.1 %% (pooled ≥ 3.5 %%, median ≤ 21 %%)", 100*pt, 100*med)
	}

	// Ctrl-C once the first cell is done
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errw := &cancelOn{marker: "L=1000,B=1: d =", cancel: cancel}
	var out strings.Builder
	js2 := filepath.Join(dir, "ab2.json")
	code = doMain(ctx, []string{"ab", "-a", a, "-b", a, "--pairs", "2", "--json", js2}, &env{stdout: &out, stderr: errw, getenv: func(string) string { return "" }})
	if code != exitcode.Interrupted {
		t.Fatalf("interrupted: exit %d, want 130\n%s\n%s", code, out.String(), errw.String())
	}
	if !strings.Contains(out.String(), "| 1000 | 1 | 2 |") || !strings.Contains(out.String(), "3 of 4 cells not measured (stopped)") {
		t.Errorf("interrupted: the table lacks the first cell or the count:\n%s", out.String())
	}
	if doc := readABJSON(t, js2); doc.Status != "interrupted" || len(doc.Cells) != 1 || doc.Cells[0].N != 2 {
		t.Errorf("interrupted: --json status %q, %d cells", doc.Status, len(doc.Cells))
	}
}

func readABJSON(t *testing.T, path string) abDoc {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc abDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}
