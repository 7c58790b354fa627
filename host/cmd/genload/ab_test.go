package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/genload/genload/host/stats"

	"github.com/genload/genload/host/ab"
	"github.com/genload/genload/host/exitcode"
	"gonum.org/v1/gonum/stat"
)

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
		for _, v := range []string{"B slower", "B faster", "no difference beyond ±5 %", "cannot tell"} {
			if strings.HasPrefix(l, "| ") && strings.HasSuffix(l, "| "+v+" |") {
				n[v]++
			}
		}
	}
	return n
}

// The command end to end on the built-in engine: a config against itself, each side its own
// engine measuring the same plans; then against a copy whose engine profile costs 10 % more.
// The verdicts are not asserted here: on this 2-core machine under other tests' load the
// per-forward jitter of one measurement reaches tens of per cent (TestABVerdictsWithKnownNoise
// holds the statistics); the table and the exit codes are.
func TestABCommandOnTheBuiltinEngine(t *testing.T) {
	plainOnly(t) // ab runs its AB/BA runs one after another, each as TestRunOnTheBuiltinEngine's; its verdicts time the detector
	dir := t.TempDir()
	body := "max_tokens = 12\n[matrix]\nseq_lens = [256, 512]\nbatch_sizes = [1, 4]\n[engine]\ntime_scale = 1\n"
	a := writeConfig(t, body)
	b := writeConfig(t, body+fmt.Sprintf("profile = %q\n", slowerProfile(t, dir)))
	code, stdout, stderr := cli(t, context.Background(), "ab", "-a", a, "-b", b, "--pairs", "3")
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if v := verdicts(stdout); v["B slower"]+v["B faster"]+v["no difference beyond ±5 %"]+v["cannot tell"] != 4 || !strings.Contains(stdout, "cells differ significantly at 95 %") {
		t.Fatalf("verdicts %v:\n%s", v, stdout)
	}
	// The thresholds on one cell of the config (the judging over cells is held by host/ab's
	// tests). A config against itself is within ±10⁶ % everywhere (2 pairs: t = 12.7, so the
	// upper bound of a loaded machine's interval can pass +1000 %; the lower never passes
	// −100 %): the threshold passes.
	a = writeConfig(t, "max_tokens = 12\n[matrix]\nseq_lens = [512]\nbatch_sizes = [4]\n[engine]\ntime_scale = 1\n")
	code, stdout, _ = cli(t, context.Background(), "ab", "-a", a, "-b", a, "--pairs", "2", "--max-diff", "1000000")
	if code != exitcode.OK || !strings.Contains(stdout, "threshold: every cell's 95 % interval lies within ±1e+06 %: ok") {
		t.Fatalf("--max-diff 1000000: exit %d\n%s", code, stdout)
	}
	// Within ±0.001 % no interval of a real measurement lies: it straddles the bound (cannot
	// tell, exit 8) or, by chance of two pairs alike, lies beyond (fail, exit 6); never ok.
	code, stdout, stderr = cli(t, context.Background(), "ab", "-a", a, "-b", a, "--pairs", "2", "--max-diff", "0.001")
	if (code != exitcode.Inconclusive || !strings.Contains(stderr, "--max-diff ±0.001 %: cannot tell: ")) &&
		(code != exitcode.ThresholdsFailed || !strings.Contains(stderr, "--max-diff ±0.001 %: fail: ")) {
		t.Errorf("--max-diff 0.001: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, _, _ := cli(t, context.Background(), "ab", "-a", a); code != exitcode.Usage {
		t.Errorf("without -b: exit %d", code)
	}
}

// The usage errors name the flag; a max_tokens mismatch, and sides that plan their cells
// differently (B's lengths or seed would not be measured), are found before anything is measured.
func TestABUsageAndConfigErrors(t *testing.T) {
	a := writeConfig(t, "max_tokens = 12\n[matrix]\nseq_lens = [256]\nbatch_sizes = [1]\n")
	b := writeConfig(t, "max_tokens = 16\n[matrix]\nseq_lens = [256]\nbatch_sizes = [1]\n")
	u := writeConfig(t, "max_tokens = 12\n[matrix]\nseq_lens = [256]\nbatch_sizes = [1]\n[lengths]\nplugin = \"uniform\"\n")
	s := writeConfig(t, "seed = 7\nmax_tokens = 12\n[matrix]\nseq_lens = [256]\nbatch_sizes = [1]\n")
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
		{[]string{"-a", a, "-b", u}, exitcode.InvalidConfig, `the sides plan their cells differently ([lengths]: {"plugin":"gamma"`},
		{[]string{"-a", a, "-b", u}, exitcode.InvalidConfig, `{"plugin":"uniform"`},
		{[]string{"-a", a, "-b", s}, exitcode.InvalidConfig, "seed: 42 in A, 7 in B"},
		{[]string{"-a", a, "-b", a, "--json", a}, exitcode.Usage, "--json " + a + " exists (the pairs of an earlier comparison?): choose another file, remove it, or give --force to replace it (nothing measured)"},
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
	plainOnly(t) // as TestABCommandOnTheBuiltinEngine
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
		// the interval of the log ratios ln(1 + d), mapped back
		var ls []float64
		for _, d := range ds {
			ls = append(ls, math.Log1p(d))
		}
		m, lo, hi := stats.TInterval(ls, 0.95)
		m, lo, hi = math.Expm1(m), math.Expm1(lo), math.Expm1(hi)
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
	pt, med := math.Sqrt(sst/float64(doft)), stats.Median(sdt)
	t.Logf("engine truth: pooled SD of d %.2f %%, median cell %.2f %% (%d degrees of freedom)", 100*pt, 100*med, doft)
	if pt < 0.035 || med > 0.21 {
		t.Errorf("engine truth: pooled SD of the paired differences %.2f %%, median cell %.2f %%; want about 7.1 %% (pooled ≥ 3.5 %%, median ≤ 21 %%)", 100*pt, 100*med)
	}

	// Ctrl-C once the first cell is done
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errw := &cancelOn{marker: "L=1000,B=1: B/A − 1 =", cancel: cancel}
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

func readABJSON(t *testing.T, path string) ab.Doc {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc ab.Doc
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// ab --help describes the statistic the table shows: the ratio of the geometric means, its
// interval on the log ratios, and --max-diff's three outcomes.
func TestABHelpDescribesTheRatioOfGeometricMeans(t *testing.T) {
	code, out, _ := cli(t, context.Background(), "ab", "--help")
	if code != exitcode.OK {
		t.Fatalf("ab --help: exit %d", code)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{"the ratio of the two sides' geometric means", "interval taken on the log ratios", "cannot tell (exit 8"} {
		if !strings.Contains(flat, want) {
			t.Errorf("ab --help lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(flat, "the mean of d") {
		t.Errorf("ab --help still describes the mean of d:\n%s", out)
	}
}
