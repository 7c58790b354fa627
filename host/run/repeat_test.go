package run

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/cell"
	"github.com/genload/genload/host/lengths"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/repeat"
	"github.com/genload/genload/host/report"
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
	d := &canned{rec: func(p *cell.Plan) *recording.Result {
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
	cr := &cellRunner{cfg: fakeCfg(t, "array"), client: d, stages: cell.Stages{Lengths: lengths.Stage{Source: src, Lo: 1, Hi: 1000}, Prompts: fixedPrompts{}, MaxTokens: 16}}
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
	var measured []*cell.Plan
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
		cr := &cellRunner{cfg: fakeCfg(t, "array"), client: failOn(300), stages: cell.Stages{Lengths: lengths.Stage{Lo: 1, Hi: 1000}, Prompts: fixedPrompts{}, MaxTokens: 16}}
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
		} else if len(w.cells) != 2 || w.cells[1].Status != report.StatusError {
			t.Fatalf("records %v", statuses(w.cells))
		}
	}
}
