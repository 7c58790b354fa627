package latmodel

import (
	"math"
	"strings"
	"testing"

	"github.com/genload/genload/host/results"
)

// flatCells are the per-forward means (ms) of two repeats of a 2 × 3 matrix against a server
// whose forward pass is 20 ms (side a) or 22 ms (side b) whatever L and B: {L, B, repeat,
// fwd a, fwd b}, as measured.
var flatCells = [][5]float64{
	{1000, 1, 1, 20.018441, 22.000738}, {1000, 1, 2, 20.000256, 21.985671},
	{1000, 4, 1, 19.999063, 21.998631}, {1000, 4, 2, 20.004859, 22.000755},
	{1000, 16, 1, 20.002793, 22.004503}, {1000, 16, 2, 20.009585, 22.009929},
	{2000, 1, 1, 20.009632, 22.014318}, {2000, 1, 2, 19.999236, 22.021367},
	{2000, 4, 1, 19.996778, 21.99955}, {2000, 4, 2, 20.012347, 22.021901},
	{2000, 16, 1, 20.006767, 22.008722}, {2000, 16, 2, 20.002678, 22.016841},
}

// flatMaxLen is the longest prompt of each cell (gamma lengths, mean L).
var flatMaxLen = map[[2]int]float64{{1000, 1}: 1000, {1000, 4}: 2339, {1000, 16}: 3706, {2000, 1}: 2000, {2000, 4}: 4678, {2000, 16}: 7412}

func flatRuns(side int, id string) []*results.Run {
	var runs []*results.Run
	for rep := 1; rep <= 2; rep++ {
		var obs []Obs
		for _, c := range flatCells {
			if int(c[2]) != rep {
				continue
			}
			l, b := int(c[0]), int(c[1])
			obs = append(obs, Obs{SeqLen: l, Batch: b, MeanLen: float64(l), MaxLen: flatMaxLen[[2]int{l, b}], FwdMs: c[3+side]})
		}
		runs = append(runs, run(id+string(rune('0'+rep)), "m", nil, obs))
	}
	return runs
}

// A flat server (the forward pass depends on neither L nor B within noise): every form with
// a length or batch term comes out with a coefficient below zero whose interval holds 0; the
// fixed-only form fits, and the gate judges a +10 % change on it (it could do neither when
// every form carried kv_read).
func TestFitAndGateAFlatServer(t *testing.T) {
	base, _, err := FitRuns(flatRuns(0, "a"), nil, false, 0, FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	next, _, err := FitRuns(flatRuns(1, "b"), nil, false, 0, FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if base.Form != TermFixed || len(base.Terms) != 1 || math.Abs(base.Terms[0].Coef-20.005) > 0.001 {
		t.Fatalf("baseline: form %s, terms %+v; want fixed ≈ 20.005 ms", base.Form, base.Terms)
	}
	if next.Form != TermFixed || math.Abs(next.Terms[0].Coef-22.007) > 0.001 {
		t.Fatalf("new: form %s, terms %+v; want fixed ≈ 22.007 ms", next.Form, next.Terms)
	}
	for _, c := range base.Candidates {
		if c.Form == "fixed+kv_read" && !strings.HasPrefix(c.Rejected, "kv_read coefficient -0.0") {
			t.Errorf("fixed+kv_read: rejected %q, want its negative kv_read", c.Rejected)
		}
	}
	if q := base.Quality().String(); !strings.HasPrefix(q, "flat (fixed only: R² 0 by construction), leave-one-cell-out |error| median 0.01 %") {
		t.Errorf("quality %q", q)
	}
	th := Thresholds{MeanIncrease: 0.15, PointIncrease: 0.50, MaxFitError: DefaultMaxFitError}
	g, err := Gate(base, next, DefaultGrid(base, next), th, false, false)
	if err != nil {
		t.Fatal(err)
	}
	// 22.007 / 20.005 − 1 = +10.01 %, under the +15 % mean threshold with bounds well inside.
	if g.Verdict != VerdictPass || math.Abs(g.Mean.Est-0.1001) > 0.0005 || g.Mean.Lo < 0.09 || g.Mean.Hi > 0.11 {
		t.Errorf("gate: %v, mean %+v", g.Verdict, g.Mean)
	}
	g, err = Gate(base, next, DefaultGrid(base, next), Thresholds{MeanIncrease: 0.05, PointIncrease: 0.50, MaxFitError: DefaultMaxFitError}, false, false)
	if err != nil || g.Verdict != VerdictFail {
		t.Errorf("gate at +5 %%: %v, %v (want fail: +10 %% with bounds above +9 %%)", g.Verdict, err)
	}
}
