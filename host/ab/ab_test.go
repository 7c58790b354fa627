package ab

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/stats"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/run"
)

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

func (f *fakeSide) MeasurePlan(context.Context, *run.Plan) (results.Cell, error) {
	sig := math.Sqrt(math.Log1p(f.cv * f.cv))
	base := float64(time.Millisecond) * (1 + float64(f.cell.Batch)/10)
	fwd := time.Duration(base * f.scale * math.Exp(sig*f.rng.NormFloat64()-sig*sig/2))
	return results.Cell{Status: results.StatusOK, Figures: &measure.Figures{PerForward: measure.Summary{N: 1, Mean: fwd}}}, nil
}

// The verdicts with noise of a known size (95 %): at 2 % per measurement and 10 pairs a side
// against an identical one shows no difference beyond ±5 % in ≥ 95 % of 200 cells (its
// intervals are about ±2 % wide; by construction some differ by chance, so the seed is
// fixed), and with 5 pairs a side 10 % slower is found slower in every one of them; at 10 %
// per measurement (intervals about ±17 %) an identical side is "cannot tell" in ≥ 90 %, not
// "no difference".
func TestABVerdictsWithKnownNoise(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		scaleB, cv float64
		pairs      int
		verdict    string
		atLeast    int
		meanDiffLo float64
	}{{1, 0.02, 10, VerdictWithin, 190, -0.01}, {1.1, 0.02, 5, "B slower", 200, 0.09}, {1, 0.10, 5, VerdictCannotTell, 180, -0.02}} {
		a, b := &fakeSide{scale: 1, cv: c.cv, rng: rng}, &fakeSide{scale: c.scaleB, cv: c.cv, rng: rng}
		n := 0
		sum := 0.0
		for i := range 200 {
			cell := matrix.Cell{Index: i, SeqLen: 1000, Batch: 1 + i%8}
			b.cell = cell
			row, err := measureCell(context.Background(), []side{a, b}, cell, c.pairs, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			if row.Verdict == c.verdict {
				n++
			}
			sum += row.Mean
		}
		if n < c.atLeast || sum/200 < c.meanDiffLo || sum/200 > c.meanDiffLo+0.04 {
			t.Errorf("B × %g, noise %g: %d of 200 cells %q (want ≥ %d), mean difference %.4f", c.scaleB, c.cv, n, c.verdict, c.atLeast, sum/200)
		}
		t.Logf("B × %g, noise %g: %d of 200 cells %q, mean difference %+.2f %%", c.scaleB, c.cv, n, c.verdict, 100*sum/200)
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

func (g *gappySide) MeasurePlan(ctx context.Context, p *run.Plan) (results.Cell, error) {
	g.n++
	if g.n == g.cancelAt {
		g.cancel()
		return results.Cell{Status: results.StatusError, Error: "context canceled"}, ctx.Err()
	}
	if g.none[g.n] {
		return results.Cell{Status: results.StatusOK, Figures: &measure.Figures{PerForwardReason: "no sequence reached max_tokens"}}, nil
	}
	return g.fakeSide.MeasurePlan(ctx, p)
}

// A pair without a figure on one side is left out with the record's reason and the cell keeps
// its other pairs; a cell left with one pair has no interval; an interrupt is exit 130.
func TestABLeavesOutPairsWithoutAFigure(t *testing.T) {
	cell := matrix.Cell{SeqLen: 1000, Batch: 4}
	a := &gappySide{fakeSide: fakeSide{scale: 1, cv: 0.02, rng: rand.New(rand.NewPCG(1, 1))}}
	b := &gappySide{fakeSide: fakeSide{scale: 1.1, cv: 0.02, rng: rand.New(rand.NewPCG(2, 2)), cell: cell}, none: map[int]bool{2: true}}
	row, err := measureCell(context.Background(), []side{a, b}, cell, 4, 0.95)
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
	// The interval is taken on ln(1 + d) and mapped back; the change is then the ratio of the
	// two columns (geometric means over the 3 pairs).
	var logs []float64
	for _, d := range row.D {
		logs = append(logs, math.Log1p(d))
	}
	m, lo, hi := stats.TInterval(logs, 0.95)
	if math.Abs(row.Mean-math.Expm1(m)) > 1e-12 || math.Abs(row.Lo-math.Expm1(lo)) > 1e-12 || math.Abs(row.Hi-math.Expm1(hi)) > 1e-12 || row.Verdict != "B slower" {
		t.Errorf("interval %v [%v, %v] %q, want %v [%v, %v] over the 3 pairs, B slower", row.Mean, row.Lo, row.Hi, row.Verdict, math.Expm1(m), math.Expm1(lo), math.Expm1(hi))
	}
	if got := row.FwdB/row.FwdA - 1; math.Abs(got-row.Mean) > 1e-12 {
		t.Errorf("columns give %v, the change printed %v", got, row.Mean)
	}

	// three of four pairs without a figure on A: one pair left, no interval
	a2 := &gappySide{fakeSide: fakeSide{scale: 1, cv: 0.02, rng: rand.New(rand.NewPCG(3, 3))}, none: map[int]bool{1: true, 2: true, 4: true}}
	row, err = measureCell(context.Background(), []side{a2, b}, cell, 4, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if row.N != 1 || row.Verdict != "too few pairs (1 of 4 with a figure on both sides): pair 1, side A: status ok; no per-forward figure: no sequence reached max_tokens" {
		t.Errorf("N %d, verdict %q", row.N, row.Verdict)
	}
	var buf strings.Builder
	(&Doc{A: "a.toml", B: "b.toml", Pairs: 4, Confidence: 0.95, Cells: []Cell{row}, of: 3}).WriteMarkdown(&buf)
	for _, want := range []string{"| 1000 | 4 | 1 | – | – | – | – | too few pairs", "A = a.toml, B = b.toml: 0 of 0 compared cells", "1 without an interval (too few pairs); 2 of 3 cells not measured (stopped)"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}

	// an interrupt during pair 2 (side B measures second in pair 1, first in pair 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b3 := &gappySide{fakeSide: fakeSide{scale: 1, cv: 0.02, rng: rand.New(rand.NewPCG(4, 4)), cell: cell}, cancelAt: 2, cancel: cancel}
	row, err = measureCell(ctx, []side{a, b3}, cell, 4, 0.95)
	if exitcode.Of(err) != exitcode.Interrupted || !strings.Contains(fmt.Sprint(err), "interrupted during cell L=1000,B=4, pair 2, side B") || len(row.PairList) != 1 {
		t.Errorf("interrupted: err %v (exit %d), %d pairs kept", err, exitcode.Of(err), len(row.PairList))
	}
}

// --max-diff holds each cell's interval to ±pct with the gate's three outcomes: every interval
// within: ok; one wholly beyond +pct or −pct: fail (exit 6); else one that straddles ±pct or a
// cell without an interval: cannot tell (exit 8). The cells are named. The first case with
// 4 pairs is a new user's: the same config on both sides, L=4000,B=1 +8.32 % [−11.51, +32.60]
// against ±10 %, which was called ok.
func TestCheckMaxDiff(t *testing.T) {
	cell := func(l, n int, mean, lo, hi float64) Cell {
		return Cell{Cell: matrix.Cell{SeqLen: l, Batch: 1}, N: n, Mean: mean, Lo: lo, Hi: hi, Verdict: "too few pairs"}
	}
	same := cell(4000, 4, 0.0832, -0.1151, 0.3260)
	within := cell(1000, 4, 0.01, -0.02, 0.03)
	above := cell(2000, 4, 0.08, 0.06, 0.10)
	below := cell(2000, 4, -0.08, -0.10, -0.06)
	for _, c := range []struct {
		cells []Cell
		pct   float64
		code  exitcode.Code
		want  string
	}{
		{[]Cell{within}, 5, exitcode.OK, "threshold: every cell's 95 % interval lies within ±5 %: ok"},
		{[]Cell{within, same}, 10, exitcode.Inconclusive, "--max-diff ±10 %: cannot tell: 1 of 2 cells' 95 % intervals straddle ±10 % or are absent, so these pairs cannot decide (more --pairs narrow the intervals): L=4000,B=1 +8.32 % [-11.51, +32.60]"},
		{[]Cell{cell(1000, 3, 0.06, 0.04, 0.08)}, 5, exitcode.Inconclusive, "--max-diff ±5 %: cannot tell: 1 of 1 cells' 95 % intervals straddle ±5 % or are absent, so these pairs cannot decide (more --pairs narrow the intervals): L=1000,B=1 +6.00 % [+4.00, +8.00]"},
		{[]Cell{cell(1000, 1, 0, 0, 0)}, 5, exitcode.Inconclusive, "--max-diff ±5 %: cannot tell: 1 of 1 cells' 95 % intervals straddle ±5 % or are absent, so these pairs cannot decide (more --pairs narrow the intervals): L=1000,B=1 no interval (too few pairs)"},
		{[]Cell{within, above}, 5, exitcode.ThresholdsFailed, "--max-diff ±5 %: fail: 1 of 2 cells' B/A − 1 per-forward 95 % intervals lie wholly beyond it: L=2000,B=1 +8.00 % [+6.00, +10.00]"},
		{[]Cell{below, same}, 5, exitcode.ThresholdsFailed, "--max-diff ±5 %: fail: 1 of 2 cells' B/A − 1 per-forward 95 % intervals lie wholly beyond it: L=2000,B=1 -8.00 % [-10.00, -6.00]; 1 cannot tell (interval straddles ±5 % or is absent): L=4000,B=1 +8.32 % [-11.51, +32.60]"},
	} {
		line, err := (&Doc{Cells: c.cells, Confidence: 0.95}).CheckMaxDiff(c.pct)
		got := line
		if err != nil {
			got = err.Error()
		}
		if got != c.want || exitcode.Of(err) != c.code {
			t.Errorf("%d cells at ±%g: %q (exit %d)\nwant %q (exit %d)", len(c.cells), c.pct, got, exitcode.Of(err), c.want, c.code)
		}
	}
}

// Pairs as noisy as a new user's (one side 0.38 ms, the other between 0.1 and 0.6 ms): the
// mean of the relative differences gave an interval reaching −113 %; the interval on the log
// ratio cannot pass −100 %, and the change is the ratio of the geometric means shown.
func TestRatioIntervalStaysAboveMinus100(t *testing.T) {
	as := []float64{0.384e6, 0.390e6, 0.380e6}
	bs := []float64{0.100e6, 0.600e6, 0.150e6}
	fa, fb, change, lo, hi := ratioInterval(as, bs, 0.95)
	var ds []float64
	for i := range as {
		ds = append(ds, bs[i]/as[i]-1)
	}
	if _, dlo, _ := stats.TInterval(ds, 0.95); dlo > -1 {
		t.Fatalf("the arithmetic interval's lower bound %v does not pass −100 %%: the case does not test the rule", dlo)
	}
	if lo <= -1 || !(lo < change && change < hi) {
		t.Errorf("change %v [%v, %v]: want a lower bound above −100 %% around the change", change, lo, hi)
	}
	if want := math.Cbrt(bs[0]*bs[1]*bs[2])/math.Cbrt(as[0]*as[1]*as[2]) - 1; math.Abs(change-want) > 1e-12 || math.Abs(fb/fa-1-change) > 1e-12 {
		t.Errorf("change %v, fwd %v → %v: want the geometric means' ratio − 1, %v", change, fa, fb, want)
	}
}
