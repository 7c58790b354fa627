package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/lengths"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/plan"
	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/repeat"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/results"
)

// countingLengths is fakeLengths that counts its calls.
type countingLengths struct {
	lens  []int
	calls int
}

func (f *countingLengths) Lengths(context.Context, int, int, int, int) ([]int, error) {
	f.calls++
	return slices.Clone(f.lens), nil
}

// The repeat loop with fakes: the quiet cells' forward pass is 2 ms in every repeat (CV 0:
// stable after the two minimum repeats), the noisy cell's alternates 2 ms and 3 ms (CV ≥ 20 %:
// never within 5 %, so it is measured up to the maximum of 4 and flagged). Each cell is planned
// once and its plan measured again unchanged; round 1 goes in matrix order, the later rounds
// visit the open cells only.
func TestRunRepeatsUntilStable(t *testing.T) {
	cells := []matrix.Cell{{Index: 0, SeqLen: 100, Batch: 2}, {Index: 1, SeqLen: 200, Batch: 2}, {Index: 2, SeqLen: 300, Batch: 2}}
	seen := map[int]int{}
	d := &canned{rec: func(p *plan.Plan) *recording.Result {
		step := 2 * time.Millisecond
		if !p.Warmup {
			seen[p.Cell.SeqLen]++
			if p.Cell.SeqLen == 200 && seen[200]%2 == 0 {
				step = 3 * time.Millisecond
			}
		}
		return lockstep(p, 20*time.Millisecond, step)
	}}
	src := &countingLengths{lens: []int{100, 100}}
	cr := &cellRunner{cfg: fakeCfg(t, "array"), client: d, stages: plan.Stages{Lengths: lengths.Stage{Source: src, Lo: 1, Hi: 1000}, Prompts: fixedPrompts{}, MaxTokens: 16}}
	w := &memWriter{}
	var rounds [][]int
	newProg := func(cs []matrix.Cell) *progress {
		var ls []int
		for _, c := range cs {
			ls = append(ls, c.SeqLen)
		}
		rounds = append(rounds, ls)
		return newProgress(io.Discard, false, cs, 16)
	}
	rule := repeat.Rule{TargetCV: 0.05, MinRepeats: 2, MaxRepeats: 4}
	out, err := runRepeats(context.Background(), cr, cells, rule, 42, w, newProg, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rounds) != 4 || !slices.Equal(rounds[0], []int{100, 200, 300}) || len(rounds[1]) != 3 ||
		!slices.Equal(rounds[2], []int{200}) || !slices.Equal(rounds[3], []int{200}) {
		t.Fatalf("rounds %v", rounds)
	}
	if src.calls != 3 {
		t.Errorf("lengths asked %d times, want once per cell", src.calls)
	}
	var measured []*plan.Plan
	for _, p := range d.plans {
		if !p.Warmup && p.Cell.SeqLen == 200 {
			measured = append(measured, p)
		}
	}
	if len(measured) != 4 || measured[0] != measured[3] {
		t.Errorf("the noisy cell's plans: %d, not one plan measured again", len(measured))
	}
	// 3 + 3 + 1 + 1 records, each with its repeat
	if len(w.cells) != 8 {
		t.Fatalf("%d records: %v", len(w.cells), statuses(w.cells))
	}
	reps := map[int][]int{}
	for _, c := range w.cells {
		reps[c.Cell.SeqLen] = append(reps[c.Cell.SeqLen], c.Repeat)
	}
	if !slices.Equal(reps[100], []int{1, 2}) || !slices.Equal(reps[200], []int{1, 2, 3, 4}) {
		t.Fatalf("repeats %v", reps)
	}
	q, n := out[0], out[1]
	// the noisy cell: 2, 3, 2, 3 ms → mean 2.5, SD 0.577, CV 23.1 %
	if !q.Verdict.Stable || q.Repeats != 2 || q.Values != 2 || q.Verdict.CV != 0 || q.Flagged() ||
		n.Verdict.Stable || !n.Verdict.Exhausted || n.Repeats != 4 || n.Values != 4 || !n.Flagged() ||
		n.Verdict.CV < 0.230 || n.Verdict.CV > 0.231 {
		t.Fatalf("verdicts %+v / %+v", q, n)
	}
	var b strings.Builder
	WriteRepeats(&b, out, rule)
	for _, want := range []string{"2 of 3 cells stable, 1 flagged; 8 repeats in all (2.67 per cell)", "| 200 | 2 | 4 | 4 | 23.09 |",
		"⚠ L=200,B=2 did not reach the target: CV 23.09 %"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}

// A failed repeat closes its cell: with on_error "continue" the other cells go on to their
// verdicts and the error names the cell and repeat; without it the run stops there.
func TestRunRepeatsFailedRepeat(t *testing.T) {
	cells := []matrix.Cell{{Index: 0, SeqLen: 100, Batch: 2}, {Index: 1, SeqLen: 300, Batch: 2}}
	for _, keepGoing := range []bool{true, false} {
		cr := &cellRunner{cfg: fakeCfg(t, "array"), client: failOn(300), stages: plan.Stages{Lengths: lengths.Stage{Lo: 1, Hi: 1000}, Prompts: fixedPrompts{}, MaxTokens: 16}}
		w := &memWriter{}
		out, err := runRepeats(context.Background(), cr, cells, repeat.Rule{TargetCV: 0.05}, 1, w,
			func(cs []matrix.Cell) *progress { return newProgress(io.Discard, false, cs, 16) }, keepGoing)
		if err == nil || !strings.HasPrefix(err.Error(), "cell L=300,B=2, repeat 1: ") {
			t.Fatalf("keepGoing %v: err %v", keepGoing, err)
		}
		if keepGoing {
			if got := statuses(w.cells); !slices.Equal(got, []string{"L=100,B=2 ok", "L=300,B=2 error", "L=100,B=2 ok"}) ||
				!out[0].Verdict.Stable || out[1].Failed == "" || !out[1].Flagged() {
				t.Fatalf("records %v, out %+v", got, out)
			}
		} else if len(w.cells) != 2 || w.cells[1].Status != results.StatusError {
			t.Fatalf("records %v", statuses(w.cells))
		}
	}
}

// cutting wraps a dispatcher: its measured request number at (1-based, warmups not counted)
// cancels the run and fails with the context's error, as a real client does on SIGINT.
type cutting struct {
	inner    Dispatcher
	at, n    int
	cancel   context.CancelFunc
	measured []int // L of each measured request, in order
}

func (d *cutting) Do(ctx context.Context, p *plan.Plan) (*recording.Result, error) {
	if !p.Warmup {
		d.n++
		d.measured = append(d.measured, p.Cell.SeqLen)
		if d.n == d.at {
			d.cancel()
			return nil, ctx.Err()
		}
	}
	return d.inner.Do(ctx, p)
}

// stepsOf is a dispatcher whose cell of length L decodes at steps[L][k] ms in its (k+1)-th
// measured request (the last step repeats).
func stepsOf(steps map[int][]float64) *canned {
	seen := map[int]int{}
	return &canned{rec: func(p *plan.Plan) *recording.Result {
		if p.Warmup {
			return lockstep(p, 20*time.Millisecond, 2*time.Millisecond)
		}
		s := steps[p.Cell.SeqLen]
		k := min(seen[p.Cell.SeqLen], len(s)-1)
		seen[p.Cell.SeqLen]++
		return lockstep(p, 20*time.Millisecond, time.Duration(s[k]*float64(time.Millisecond)))
	}}
}

// An interrupt in the middle of a round: every repeat measured before it counts in its cell's
// CV (the unfinished round's too), a cell the rule can close on its values keeps that verdict,
// and the cells still open — the one whose repeat was cut included — are "interrupted", not
// "flagged". Cells (forward pass per repeat): L=100 2, 2 ms (stable after round 2); L=200 2,
// 3, 2, … ms and L=300 2, 2.5, 3, … ms (never within 5 %). Round 3 visits L=200 and L=300 in
// the seed's order; the cut is the second of them, so the first has three values.
func TestRunRepeatsInterrupted(t *testing.T) {
	cells := []matrix.Cell{{Index: 0, SeqLen: 100, Batch: 2}, {Index: 1, SeqLen: 200, Batch: 2}, {Index: 2, SeqLen: 300, Batch: 2}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := &cutting{inner: stepsOf(map[int][]float64{100: {2}, 200: {2, 3, 2, 3}, 300: {2, 2.5, 3, 3.5}}), at: 3 + 3 + 2, cancel: cancel}
	cr := &cellRunner{cfg: fakeCfg(t, "array"), client: d, stages: plan.Stages{Lengths: lengths.Stage{Lo: 1, Hi: 1000}, Prompts: fixedPrompts{}, MaxTokens: 16}}
	w := &memWriter{}
	rule := repeat.Rule{TargetCV: 0.05, MinRepeats: 2, MaxRepeats: 6}
	out, err := runRepeats(ctx, cr, cells, rule, 42, w, func(cs []matrix.Cell) *progress { return newProgress(io.Discard, false, cs, 16) }, false)
	if exitcode.Of(err) != exitcode.Interrupted {
		t.Fatalf("err %v (code %v)", err, exitcode.Of(err))
	}
	first, cut := d.measured[6], d.measured[7] // round 3's cells, in the order visited
	if first == cut || first == 100 || cut == 100 {
		t.Fatalf("measured %v", d.measured)
	}
	byL := map[int]CellRepeats{}
	for _, c := range out {
		byL[c.Cell.SeqLen] = c
	}
	// the first of round 3: three values, the CV of all three
	want := map[int][]float64{200: {2, 3, 2}, 300: {2, 2.5, 3}}[first]
	m, sd := stat.MeanStdDev(want, nil)
	f := byL[first]
	if f.Repeats != 3 || f.Values != 3 || f.Outcome() != "interrupted" || math.Abs(f.Verdict.CV-sd/m) > 1e-3 {
		t.Errorf("L=%d: %+v, want 3 values, CV %.4f, interrupted", first, f, sd/m)
	}
	if c := byL[cut]; c.Repeats != 3 || c.Values != 2 || c.Outcome() != "interrupted" {
		t.Errorf("L=%d (cut): %+v", cut, c)
	}
	if q := byL[100]; q.Outcome() != "stable" || q.Values != 2 {
		t.Errorf("L=100: %+v", q)
	}
	var b strings.Builder
	WriteRepeats(&b, out, rule)
	for _, s := range []string{"1 of 3 cells stable, 0 flagged, 2 interrupted; 8 repeats in all",
		fmt.Sprintf("| %d | 2 | 3 | 3 | %.2f | %.2f | interrupted |", first, 100*sd/m, 100*sd/m*repeat.UpperFactor(3, 0.9)),
		fmt.Sprintf("| %d | 2 | 3 | 2 |", cut), fmt.Sprintf("⚠ L=%d,B=2 interrupted before its repeats ended", cut)} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("summary lacks %q:\n%s", s, b.String())
		}
	}
	if strings.Contains(b.String(), "did not reach the target") {
		t.Errorf("an interrupted cell is reported as flagged:\n%s", b.String())
	}
}

// --keep-going with a cell whose first repeat fails: the count line agrees with the table
// (stable, flagged and failed each counted), and a cell without two values has "–" for both
// its CV and its bound. Cells: L=100 stable (2 ms), L=200 flagged (2, 3 ms to the maximum of
// 3), L=300 failed at repeat 1.
func TestWriteRepeatsCounts(t *testing.T) {
	cells := []matrix.Cell{{Index: 0, SeqLen: 100, Batch: 2}, {Index: 1, SeqLen: 200, Batch: 2}, {Index: 2, SeqLen: 300, Batch: 2}}
	inner := stepsOf(map[int][]float64{100: {2}, 200: {2, 3}, 300: {2}})
	bad := failOn(300)
	d := &canned{rec: func(p *plan.Plan) *recording.Result {
		if p.Cell.SeqLen == 300 {
			return bad.rec(p)
		}
		return inner.rec(p)
	}}
	cr := &cellRunner{cfg: fakeCfg(t, "array"), client: d, stages: plan.Stages{Lengths: lengths.Stage{Lo: 1, Hi: 1000}, Prompts: fixedPrompts{}, MaxTokens: 16}}
	rule := repeat.Rule{TargetCV: 0.05, MinRepeats: 2, MaxRepeats: 3}
	out, err := runRepeats(context.Background(), cr, cells, rule, 1, &memWriter{}, func(cs []matrix.Cell) *progress { return newProgress(io.Discard, false, cs, 16) }, true)
	if err == nil {
		t.Fatal("no error for the failed cell")
	}
	var b strings.Builder
	WriteRepeats(&b, out, rule)
	for _, s := range []string{"1 of 3 cells stable, 1 flagged, 1 failed; 6 repeats in all", "| 300 | 2 | 1 | 0 | – | – | failed |",
		"| 200 | 2 | 3 | 3 |", "⚠ L=300,B=2 failed (no more repeats of it after 1, 0 measured): cell L=300,B=2, repeat 1: "} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("summary lacks %q:\n%s", s, b.String())
		}
	}
}

// --resume of a run with repeats is refused before any setup, naming the file and its
// until_cv header (resuming would skip every cell measured once and never finish the open
// cells' repeats); a run without repeats is not refused by this check.
func TestResumeRefusesRepeats(t *testing.T) {
	cfg := fakeCfg(t, "array")
	dir := t.TempDir()
	for _, tc := range []struct {
		id   string
		rule *results.StoppingRule
		want string
	}{
		{"ucv", &results.StoppingRule{TargetCV: 0.01, MinRepeats: 2, MaxRepeats: 10, Confidence: 0.9}, "its header has until_cv (target CV 1 %, 2 to 10 repeats per cell)"},
		{"plain", nil, ""},
	} {
		w, err := results.Create(dir, results.Header{RunID: tc.id, Config: cfg, UntilCV: tc.rule})
		if err != nil {
			t.Fatal(err)
		}
		rep := 0
		if tc.rule != nil {
			rep = 1
		}
		if err := w.Cell(results.Cell{Cell: matrix.Cell{Index: 0, SeqLen: 100, Batch: 4}, Status: results.StatusOK, Repeat: rep}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := report.Finish(w, results.StatusInterrupted, errors.New("interrupted")); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, tc.id+".jsonl")
		err = resumable(path)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.id, err)
			}
			continue
		}
		if exitcode.Of(err) != exitcode.InvalidConfig || err == nil || !strings.Contains(err.Error(), "cannot resume "+path+": "+tc.want) {
			t.Errorf("%s: err %v (code %v)", tc.id, err, exitcode.Of(err))
		}
		// Run refuses it the same way, before its setup (the target here does not listen)
		if _, err := Run(context.Background(), cfg, Options{Resume: path}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run: %v", err)
		}
	}
}

// RepeatsOf rebuilds the summary from a results file: a stable cell (2, 2 ms), a flagged one
// at the maximum (2, 3, 2 ms), a failed one, and one whose last repeat was interrupted, in
// an interrupted run; without a footer (killed) the open cell is interrupted too, with a
// footer of status error "stopped".
func TestRepeatsOf(t *testing.T) {
	cells := []matrix.Cell{{Index: 0, SeqLen: 100, Batch: 2}, {Index: 1, SeqLen: 200, Batch: 2}, {Index: 2, SeqLen: 300, Batch: 2}, {Index: 3, SeqLen: 400, Batch: 2}}
	rec := func(i, rep int, status string, fwd float64) results.Cell {
		c := results.Cell{Cell: cells[i], Status: status, Repeat: rep, Elapsed: results.Millis(100 * time.Millisecond)}
		if status == results.StatusOK {
			c.Figures = &measure.Figures{PerForward: measure.Summary{N: 2, Mean: time.Duration(fwd * float64(time.Millisecond))}}
		} else {
			c.Error = status
		}
		return c
	}
	r := &results.Run{Header: results.Header{RunID: "f", Cells: cells, UntilCV: &results.StoppingRule{TargetCV: 0.05, MinRepeats: 2, MaxRepeats: 3, Confidence: 0.9}},
		Cells: []results.Cell{rec(0, 1, "ok", 2), rec(0, 2, "ok", 2), rec(1, 1, "ok", 2), rec(1, 2, "ok", 3), rec(1, 3, "ok", 2),
			rec(2, 1, "error", 0), rec(3, 1, "ok", 2), rec(3, 2, "ok", 3), rec(3, 3, "interrupted", 0)},
		Footer: &results.Footer{Status: results.StatusInterrupted}}
	for _, tc := range []struct {
		footer *results.Footer
		open   string
	}{{r.Footer, "interrupted"}, {nil, "interrupted"}, {&results.Footer{Status: results.StatusError}, "stopped"}} {
		r.Footer = tc.footer
		out, rule, err := RepeatsOf(r)
		if err != nil || rule.MaxRepeats != 3 || rule.TargetCV != 0.05 {
			t.Fatalf("err %v, rule %+v", err, rule)
		}
		var got []string
		for _, c := range out {
			got = append(got, fmt.Sprintf("%s %d/%d %s", c.Cell.Key(), c.Values, c.Repeats, c.Outcome()))
		}
		want := []string{"L=100,B=2 2/2 stable", "L=200,B=2 3/3 flagged", "L=300,B=2 0/1 failed", "L=400,B=2 2/3 " + tc.open}
		if !slices.Equal(got, want) {
			t.Errorf("footer %+v: %v, want %v", tc.footer, got, want)
		}
		// the flagged cell's CV: 2, 3, 2 ms → SD 0.577, mean 2.333, CV 24.74 %
		if cv := out[1].Verdict.CV; math.Abs(cv-math.Sqrt(1.0/3)/(7.0/3)) > 1e-9 || out[0].Wall != 200*time.Millisecond {
			t.Errorf("CV %v, wall %v", cv, out[0].Wall)
		}
	}
	if _, _, err := RepeatsOf(&results.Run{Header: results.Header{RunID: "plain"}}); err == nil || !strings.Contains(err.Error(), "no until_cv") {
		t.Errorf("a run without until_cv: %v", err)
	}
}

// --repeat 3 is the same rounds with a fixed count: every cell is measured three times,
// round 1 in matrix order and rounds 2 and 3 in the seed's orders (repeat.Order), each plan
// measured again unchanged, whatever the CV (L=200 measures 2, 3, 3 ms: CV 21.65 %, done, not
// flagged). The summary has no stopping rule's bound; read back from a file whose header
// records the count, RepeatsOf gives the same cells and outcomes.
func TestRunRepeatsFixedCount(t *testing.T) {
	cells := []matrix.Cell{{Index: 0, SeqLen: 100, Batch: 2}, {Index: 1, SeqLen: 200, Batch: 2}, {Index: 2, SeqLen: 300, Batch: 2}}
	d := stepsOf(map[int][]float64{100: {2}, 200: {2, 3}, 300: {2}})
	src := &countingLengths{lens: []int{100, 100}}
	cr := &cellRunner{cfg: fakeCfg(t, "array"), client: d, stages: plan.Stages{Lengths: lengths.Stage{Source: src, Lo: 1, Hi: 1000}, Prompts: fixedPrompts{}, MaxTokens: 16}}
	w := &memWriter{}
	var rounds [][]int
	newProg := func(cs []matrix.Cell) *progress {
		var ls []int
		for _, c := range cs {
			ls = append(ls, c.SeqLen)
		}
		rounds = append(rounds, ls)
		return newProgress(io.Discard, false, cs, 16)
	}
	rule := repeat.Rule{Count: 3}
	out, err := runRepeats(context.Background(), cr, cells, rule, 42, w, newProg, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rounds) != 3 || !slices.Equal(rounds[0], []int{100, 200, 300}) {
		t.Fatalf("rounds %v, want 3, the first in matrix order", rounds)
	}
	for k := 2; k <= 3; k++ {
		var want []int
		for _, j := range repeat.Order(3, 42, k) {
			want = append(want, cells[j].SeqLen)
		}
		if !slices.Equal(rounds[k-1], want) {
			t.Errorf("round %d visits %v, want the seed's order %v", k, rounds[k-1], want)
		}
	}
	if src.calls != 3 || len(w.cells) != 9 {
		t.Fatalf("lengths asked %d times (want 3), %d records (want 9)", src.calls, len(w.cells))
	}
	for _, c := range out {
		if c.Repeats != 3 || c.Values != 3 || c.Outcome() != "done" || c.Flagged() {
			t.Errorf("%s: %+v, want 3 repeats, done", c.Cell.Key(), c)
		}
	}
	var b strings.Builder
	WriteRepeats(&b, out, rule)
	for _, s := range []string{"## Repeats: 3 per cell, in interleaved rounds", "3 of 3 cells measured 3 times; 9 repeats in all (3.00 per cell)",
		"| L | B | repeats | measured | CV % | verdict | wall s |", "| 200 | 2 | 3 | 3 | 21.65 | done |"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("summary lacks %q:\n%s", s, b.String())
		}
	}
	if strings.Contains(b.String(), "upper") || strings.Contains(b.String(), "⚠") {
		t.Errorf("a fixed count's summary with a bound or a warning:\n%s", b.String())
	}
	r := &results.Run{Header: results.Header{RunID: "fixed", Cells: cells, Repeats: 3}, Cells: w.cells, Footer: &results.Footer{Status: results.StatusOK}}
	back, brule, err := RepeatsOf(r)
	if err != nil || brule.Count != 3 {
		t.Fatalf("RepeatsOf: %v, rule %+v", err, brule)
	}
	var again strings.Builder
	WriteRepeats(&again, back, brule)
	if again.String() != b.String() {
		t.Errorf("from the file:\n%s\nas the run wrote it:\n%s", again.String(), b.String())
	}
}

// A resumed run's configuration differences are said as bench.toml writes them, an unset key
// with its default, and the cells by their counts and keys, not as JSON.
func TestSameRunSaysTheDifferenceInTOMLTerms(t *testing.T) {
	hdr := func(scale float64, lens []int) results.Header {
		cfg := probeCfg(t, "max_tokens = 8\n")
		cfg.Engine.TimeScale = scale
		cfg.Matrix.SeqLens, cfg.Matrix.BatchSizes = lens, []int{1}
		var cells []matrix.Cell
		for i, l := range lens {
			cells = append(cells, matrix.Cell{Index: i, SeqLen: l, Batch: 1, FirstRow: i})
		}
		return results.Header{Config: cfg, Cells: cells}
	}
	err := sameRun(hdr(1, []int{1000, 2000}), hdr(0, []int{1000}), false)
	want := "the configuration differs from the run's (before → now):\n" +
		"  [engine] time_scale: 1 → not set (default 0.05)\n" +
		"  [matrix] seq_lens: [1000,2000] → [1000]\n" +
		"  the cells: 2 → 1; only before: L=2000,B=1"
	if err == nil || err.Error() != want {
		t.Fatalf("got\n%v\nwant\n%s", err, want)
	}
	if err := sameRun(hdr(1, []int{1000}), hdr(1, []int{1000}), false); err != nil {
		t.Fatalf("the same run: %v", err)
	}
}
