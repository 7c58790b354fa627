package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/textcheck"
	"github.com/genload/genload/host/results"
)

// noisy rewrites the cost run at src as run id: its cells scaled by f and off by a fixed
// pattern of ±3 %, as one run's host leaves them, started at start.
func noisy(t *testing.T, src, dir, id string, f float64, start time.Time, edit func(r *results.Run)) string {
	return rewrite(t, src, dir, id+".json", func(r *results.Run) {
		r.Header.RunID, r.Header.Started = id, start
		for i := range r.Cells {
			k := f * []float64{1.03, 0.98, 1.0, 1.02, 0.97, 1.01}[(i+len(id))%6]
			p := r.Cells[i].Figures
			p.PerForward.Mean = time.Duration(float64(p.PerForward.Mean) * k)
			p.PerForwardFit.Mean = p.PerForward.Mean
		}
		if edit != nil {
			edit(r)
		}
	})
}

// One run given twice, as the same file or a renamed copy, is refused wherever runs are read:
// as two repeats it measured a level spread of 0 (gate: pass) and a CV of 0 % (consistency).
func TestOneRunGivenTwiceIsRefused(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 22, 38, 21, 0, time.UTC)
	base := costRun(t, dir, "cost", 1, nil)
	r1 := noisy(t, base, dir, "b2-r1", 1, t0, nil)
	r2 := noisy(t, base, dir, "b2-r2", 1.01, t0.Add(10*time.Second), nil)
	b, err := os.ReadFile(r1)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(dir, "copy-b2.json")
	if err := os.WriteFile(cp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	same := func(a, b string) string {
		return "the same run given twice: " + a + " and " + b + " are one run (run b2-r1, started 2026-12-01T22:38:21Z): give each run once (genload run --repeat N measures repeats)"
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"gate", r1 + "," + r1, r2 + "," + r2}, "genload gate: baseline: " + same(r1, r1)},
		{[]string{"gate", r1 + "," + cp, r2}, "genload gate: baseline: " + same(r1, cp)},
		{[]string{"gate", r1, cp}, "genload gate: " + same("baseline "+r1, "new "+cp) + "; a gate compares two measurements made apart"},
		{[]string{"fit", r1, r2, cp}, "genload fit: " + same(r1, cp)},
		{[]string{"consistency", "--max-cv", "1", r1, cp}, "genload consistency: " + same(r1, cp)},
		{[]string{"diff", r1, r1}, "genload diff: " + same(r1, r1)},
		{[]string{"report", r1, cp}, "genload report: " + same(r1, cp)},
	} {
		code, stdout, stderr := cli(t, ctx, tc.args...)
		if code != exitcode.InvalidConfig || strings.TrimSpace(stderr) != tc.want || stdout != "" {
			t.Errorf("%v: exit %d\nstderr %q\nwant   %q\nstdout %q", tc.args[0], code, stderr, tc.want, stdout)
		}
	}
	// Two runs: gated as repeats of the baseline, whose levels differ by 1 %.
	code, stdout, stderr := cli(t, ctx, "gate", "--max-baseline-noise", "0", r1+","+r2, base)
	if j := strings.Join(strings.Fields(stdout), " "); code == exitcode.InvalidConfig || !strings.Contains(j, "; level ±0.50 % (spread of 2 runs' levels, 2 run(s)) new fit:") {
		t.Errorf("two runs: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// Runs at another time scale of the built-in engine are not comparable for any command (its
// figures are wall-clock at that scale): gate refuses them (it passed one at 0.2 against one at
// 0.05, mean −73 %), consistency and diff say so first. Two external servers are compared, said
// so in the first line.
func TestComparableCoversTheTarget(t *testing.T) {
	plainOnly(t) // gate, consistency and diff read files in one goroutine
	dir := t.TempDir()
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	base := costRun(t, dir, "cost", 1, nil)
	eng := func(scale float64) func(r *results.Run) {
		return func(r *results.Run) {
			r.Header.TargetKind = "builtin"
			r.Header.Engine = map[string]any{"profile": "moe-30b-a3b", "profile_hash": "sha256:cdf836d4a5c6a8ad", "time_scale": scale, "quirks": ""}
		}
	}
	fast := noisy(t, base, dir, "b2", 4, t0, eng(0.2))
	slow := noisy(t, base, dir, "base", 1, t0.Add(time.Hour), eng(0.05))
	refused := "genload gate: runs not comparable: different engine time scale: baseline " + fast + " 0.2 / new " + slow + " 0.05 (--allow-mixed to compare them anyway)"
	for _, tc := range []struct {
		args []string
		code exitcode.Code
		out  string // the first line of stdout (joined when wrapped), or the last of stderr
	}{
		{[]string{"gate", fast, slow}, exitcode.InvalidConfig, refused},
		{[]string{"gate", slow, fast}, exitcode.InvalidConfig, "genload gate: runs not comparable: different engine time scale: baseline " + slow + " 0.05 / new " + fast + " 0.2 (--allow-mixed to compare them anyway)"},
		{[]string{"diff", fast, slow}, exitcode.InvalidConfig, "genload diff: runs not comparable: different engine time scale: " + fast + " 0.2 / " + slow + " 0.05: their changes would not be the deployment's (--allow-mixed to print them anyway)"},
		{[]string{"diff", "--allow-mixed", fast, slow}, exitcode.OK, "NOT comparable: different engine time scale: " + fast + " 0.2 / " + slow + " 0.05; same model"},
		{[]string{"consistency", fast, slow}, exitcode.OK, "NOT comparable: different engine time scale: " + fast + " 0.2 / " + slow + " 0.05; same model"},
		{[]string{"fit", fast, slow}, exitcode.InvalidConfig, "genload fit: runs not comparable: different engine time scale: " + fast + " 0.2 / " + slow + " 0.05; they are not repeats of one deployment and are not fitted together (--allow-mixed forces it)"},
	} {
		code, stdout, stderr := cli(t, ctx, tc.args...)
		got := strings.TrimSpace(stderr[strings.LastIndex(strings.TrimSpace("\n"+stderr), "\n")+1:])
		if tc.code == exitcode.OK {
			got = strings.Join(strings.Fields(strings.SplitN(stdout, "\n\n", 2)[0]), " ")
		}
		if code != tc.code || !strings.HasPrefix(got, tc.out) {
			t.Errorf("%v: exit %d (want %d)\n got %q\nwant %q…", tc.args, code, tc.code, got, tc.out)
		}
		// A refused diff prints no table of changes; one printed anyway says why they mislead.
		if tc.args[0] == "diff" {
			table, warned := strings.Contains(stdout, "## Change from"), strings.Contains(stdout, "⚠ compared although not comparable (--allow-mixed): different engine time scale")
			if (tc.code == exitcode.OK) != table || table != warned {
				t.Errorf("%v: table %v, warning %v:\n%s", tc.args, table, warned, stdout)
			}
		}
	}
	ext := func(id, url string, f float64, at time.Duration) string {
		return noisy(t, base, dir, id, f, t0.Add(at), func(r *results.Run) {
			r.Header.TargetKind, r.Header.Target, r.Header.Model = "external", url, "genload-sim"
			r.Header.Context, r.Header.ContextSource = 131072, "server /v1/models max_model_len"
		})
	}
	c1, c3 := ext("c1", "http://127.0.0.1:18103", 1, 2*time.Hour), ext("c3", "http://127.0.0.1:18104", 2.9, 3*time.Hour)
	across := func(a, b string) string {
		return `comparable: 2 runs of model "genload-sim", max_tokens 100, labels {}, context 131072 (server /v1/models max_model_len); compared across target: ` +
			a + " http://127.0.0.1:18103 / " + b + " http://127.0.0.1:18104"
	}
	for _, cmd := range []string{"consistency", "diff"} {
		code, stdout, stderr := cli(t, ctx, cmd, c1, c3)
		if first := strings.Join(strings.Fields(strings.SplitN(stdout, "\n\n", 2)[0]), " "); code != exitcode.OK || first != across(c1, c3) {
			t.Errorf("%s: exit %d\n got %q\nwant %q\n%s", cmd, code, first, across(c1, c3), stderr)
		}
	}
	code, stdout, stderr := cli(t, ctx, "gate", "--json", "--max-baseline-noise", "0", c1, c3)
	var g struct {
		Comparable string `json:"comparable"`
		Verdict    string `json:"verdict"`
	}
	if err := json.Unmarshal([]byte(stdout), &g); err != nil || g.Comparable != across("baseline "+c1, "new "+c3) || g.Verdict != "fail" || code != exitcode.ThresholdsFailed {
		t.Errorf("gate across hosts: exit %d, %+v (%v)\n%s", code, g, err, stderr)
	}
	// fit takes them as repeats of one deployment on two instances, and says so.
	code, stdout, stderr = cli(t, ctx, "fit", "--max-fit-error", "0", c1, c3)
	if code != exitcode.OK || !strings.Contains(strings.Join(strings.Fields(stdout), " "), "repeats measured on more than one instance of the deployment: target: "+c1+" http://127.0.0.1:18103 / "+c3+" http://127.0.0.1:18104") {
		t.Errorf("fit across hosts: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// genload gate --json writes the verdict, its exit code and its reason whatever the outcome: a
// refusal too, which wrote nothing on stdout.
func TestGateJSONAlwaysSaysTheVerdict(t *testing.T) {
	plainOnly(t) // gate reads files in one goroutine
	dir := t.TempDir()
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	base := costRun(t, dir, "base", 1, nil)
	slow20 := costRun(t, dir, "slow20", 1.20, nil)
	poor := noisy(t, base, dir, "poor", 1, t0, func(r *results.Run) {
		for i := range r.Cells {
			r.Cells[i].Figures.PerForward.Mean = time.Duration(float64(r.Cells[i].Figures.PerForward.Mean) * []float64{1.4, 0.7, 1.0, 1.3, 0.6}[i%5])
		}
	})
	for _, tc := range []struct {
		args    []string
		code    exitcode.Code
		verdict string
		reason  string
	}{
		{[]string{"gate", "--json", base, base}, exitcode.InvalidConfig, "refused", "gate: the same run given twice: baseline " + base + " and new " + base},
		{[]string{"gate", "--json", poor, slow20}, exitcode.InvalidConfig, "refused", "gate: baseline: poor fit: the model of runs poor has a leave-one-cell-out median error of"},
		{[]string{"gate", "--json", "--max-fit-error", "0", poor, slow20}, exitcode.InvalidConfig, "refused", "gate: baseline too noisy to judge: the baseline " + poor + " knows its own mean level"},
		{[]string{"gate", "--json", "--confidence", "2", base, slow20}, exitcode.Usage, "refused", "--confidence 2: want a one-sided confidence in (0.5, 1)"},
		{[]string{"gate", "--json", filepath.Join(dir, "none.json"), slow20}, exitcode.InvalidConfig, "refused", "baseline " + filepath.Join(dir, "none.json") + ": results: open"},
		{[]string{"gate", "--json", base, slow20}, exitcode.ThresholdsFailed, "fail", "mean change +20.0 % over 20 points, at least +20.0 % (one-sided 95 %), exceeds +15 %"},
		{[]string{"gate", "--json", "--mean-increase", "25", base, slow20}, exitcode.OK, "pass", "mean change +20.00 % [+20.00 %, +20.00 %] within +25 % and every point's upper bound within +50 % (one-sided 95 %)"},
		{[]string{"gate", "--json", "--grid", "2000,100000x4", "--mean-increase", "25", base, slow20}, exitcode.OutOfRange, "pass", "mean change +20.00 % [+20.00 %, +20.00 %] within +25 % and every point's upper bound within +50 % (one-sided 95 %), over the 1 points in range: 1 point(s) outside"},
	} {
		code, stdout, stderr := cli(t, ctx, tc.args...)
		var g struct {
			Verdict  string `json:"verdict"`
			ExitCode int    `json:"exit_code"`
			Reason   string `json:"reason"`
		}
		err := json.Unmarshal([]byte(stdout), &g)
		if err != nil || code != tc.code || g.Verdict != tc.verdict || g.ExitCode != int(tc.code) || !strings.HasPrefix(g.Reason, tc.reason) {
			t.Errorf("%v: exit %d, %+v (%v)\nwant exit %d, %s, %q…\n%s", tc.args[1:], code, g, err, tc.code, tc.verdict, tc.reason, stderr)
		}
		if tc.code != exitcode.OK && tc.code != exitcode.ThresholdsFailed && !strings.Contains(stderr, "genload gate: ") {
			t.Errorf("%v: the reason is not on stderr too:\n%s", tc.args[1:], stderr)
		}
	}
}

// genload gate's default view keeps within 120 columns — the first line, the fits, the
// points' table with its out-of-range marks, the mean, the verdict and the advice wrapped — its
// tables well formed; points left out of range are "not judged", not "extrapolated".
func TestGateOutputWithinWidth(t *testing.T) {
	plainOnly(t) // gate reads files in one goroutine
	dir := t.TempDir()
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	base := costRun(t, dir, "base", 1, map[string]any{"gpu_count": 8, "deployment": "a-long-deployment-name-for-the-width-check"})
	n1 := noisy(t, base, dir, "n1", 1, t0, nil)
	n2 := noisy(t, base, dir, "n2", 1.02, t0.Add(time.Minute), nil)
	s1 := noisy(t, base, dir, "s1", 1.13, t0.Add(2*time.Minute), nil)
	s2 := noisy(t, base, dir, "s2", 1.12, t0.Add(3*time.Minute), nil)
	for _, tc := range []struct {
		args  []string
		code  exitcode.Code
		wants []string
	}{
		{[]string{"gate", "--grid", "2000,8000x1,8,32", n1 + "," + n2, s1 + "," + s2}, exitcode.OutOfRange,
			[]string{"| – | 2000 | 32 | ", "| not judged: outside baseline B; new B |", "(measured ranges — baseline: mean length 1000–8000 tokens, batch size 1–16; new:"}},
		{[]string{"gate", "--extrapolate", "--max-baseline-noise", "0", "--grid", "2000x8,32", n1 + "," + n2, s1 + "," + s2}, exitcode.Inconclusive,
			[]string{"| extrapolated: baseline B; new B |"}},
		{[]string{"gate", "--max-baseline-noise", "0", n1, s1}, exitcode.Inconclusive, []string{"gate: CANNOT TELL: mean change", "(baseline, one run: its cells' noise to its cells' scatter)"}},
		{[]string{"gate", n1 + "," + n2, base}, exitcode.OK, []string{"gate: pass"}},
	} {
		code, stdout, stderr := cli(t, ctx, tc.args...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d\n%s\n%s", tc.args[1:], code, tc.code, stdout, stderr)
		}
		if wide := textcheck.Wider(stdout, 120); len(wide) > 0 {
			t.Errorf("%v: lines over 120 columns:\n%s", tc.args[1:], strings.Join(wide, "\n"))
		}
		if _, err := textcheck.MarkdownTables(stdout); err != nil {
			t.Errorf("%v: %v", tc.args[1:], err)
		}
		joined := strings.Join(strings.Fields(stdout), " ")
		for _, w := range tc.wants {
			if !strings.Contains(joined, strings.Join(strings.Fields(w), " ")) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args[1:], w, stdout)
			}
		}
		if strings.Contains(stdout, "extrapolated") && !strings.Contains(strings.Join(tc.args, " "), "--extrapolate") {
			t.Errorf("%v: points not judged called extrapolated:\n%s", tc.args[1:], stdout)
		}
	}
	// A refusal writes the first line and both fits to stderr, wrapped too.
	poor := noisy(t, base, dir, "poor", 1, t0.Add(time.Hour), func(r *results.Run) {
		for i := range r.Cells {
			r.Cells[i].Figures.PerForward.Mean = time.Duration(float64(r.Cells[i].Figures.PerForward.Mean) * []float64{1.4, 0.7, 1.0, 1.3, 0.6}[i%5])
		}
	})
	code, _, stderr := cli(t, ctx, "gate", poor, s1)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if wide := textcheck.Wider(strings.Join(lines[:len(lines)-1], "\n"), 120); code != exitcode.InvalidConfig || len(wide) > 0 || !strings.HasPrefix(lines[len(lines)-1], "genload gate: baseline: poor fit") {
		t.Errorf("refusal: exit %d, wide %q\n%s", code, wide, stderr)
	}
}

// predict says a length or batch size of 0 must be positive, not that it is missing; fit says a
// CSV is not a results file.
func TestPredictAndFitInputMessages(t *testing.T) {
	plainOnly(t) // predict and fit read files in one goroutine
	dir := t.TempDir()
	ctx := context.Background()
	base := costRun(t, dir, "base", 1, nil)
	model := filepath.Join(dir, "model.json")
	if code, _, stderr := cli(t, ctx, "fit", "-o", model, base); code != exitcode.OK {
		t.Fatalf("fit: %s", stderr)
	}
	csv := filepath.Join(dir, "base.csv")
	if err := os.WriteFile(csv, []byte("run_id,seq_len,batch\nbase,1000,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code exitcode.Code
		want string
	}{
		{[]string{"predict", "--seq-len", "0", "--batch", "4", model}, exitcode.Usage, "genload predict: --seq-len 0: must be positive, a finite mean prompt length in tokens (see 'genload predict --help')"},
		{[]string{"predict", "--seq-len", "2000", "--batch", "0", model}, exitcode.Usage, "genload predict: --batch 0: must be positive, a batch size ≥ 1 (see 'genload predict --help')"},
		{[]string{"predict", "--batch", "4", model}, exitcode.Usage, "genload predict: --seq-len is required (see 'genload predict --help')"},
		{[]string{"fit", csv}, exitcode.InvalidConfig, "genload fit: results: " + csv + ": not a results file (want the <run-id>.json or .jsonl genload run writes; the .csv beside them is the run's table, for spreadsheets): line 1: invalid character 'r' looking for beginning of value"},
		{[]string{"fit", model}, exitcode.InvalidConfig, "genload fit: results: " + model + `: not a results file (want the <run-id>.json or .jsonl genload run writes): its schema is "genload.latmodel/v1", a results file's header says "genload.run/v1"`},
	} {
		code, _, stderr := cli(t, ctx, tc.args...)
		if code != tc.code || strings.TrimSpace(stderr) != tc.want {
			t.Errorf("%v: exit %d\n got %q\nwant %q", tc.args, code, stderr, tc.want)
		}
	}
}
