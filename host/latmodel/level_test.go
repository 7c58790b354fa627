package latmodel

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/results"
)

// shifted returns obs with every figure × f and independent relative noise rel.
func shifted(obs []Obs, f, rel float64, rng *rand.Rand) []Obs {
	out := make([]Obs, len(obs))
	for i, o := range obs {
		o.FwdMs *= f * (1 + rel*rng.NormFloat64())
		out[i] = o
	}
	return out
}

// One run's level is as uncertain as its cells scatter; two runs measure it from the spread of
// their levels, with one degree of freedom.
func TestLevelOfOneRunAndOfRepeats(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	obs := synthetic(fullForm, 0, nil)
	one, _, err := FitRuns([]*results.Run{run("a", "m", nil, shifted(obs, 1, 0.03, rng))}, nil, false, 0, FitOptions{Experts: moe})
	if err != nil {
		t.Fatal(err)
	}
	if l := one.Level(); l.Runs != 1 || l.Measured() || l.SD != one.Scatter || math.Abs(l.SD-0.03) > 0.008 || l.DoF != float64(one.DoF) {
		t.Errorf("one run: %+v (scatter %g), want its 3 %% cell scatter", l, one.Scatter)
	}
	// Two runs, one 2 % slow and one 2 % fast as a whole, cells 0.5 % noisy: levels ±2 %,
	// their mean known to SD/√2 = 2 %.
	two, _, err := FitRuns([]*results.Run{run("a", "m", nil, shifted(obs, 1.02, 0.005, rng)), run("b", "m", nil, shifted(obs, 0.98, 0.005, rng))}, nil, false, 0, FitOptions{Experts: moe})
	if err != nil {
		t.Fatal(err)
	}
	l := two.Level()
	if !l.Measured() || l.Runs != 2 || l.DoF != 1 || math.Abs(l.SD-0.02) > 0.002 || len(two.RunLevels) != 2 || two.RunLevels[0].Level < 0.015 || two.RunLevels[1].Level > -0.015 {
		t.Errorf("two runs: %+v, levels %+v", l, two.RunLevels)
	}
	// The model file keeps what the level needs.
	p := t.TempDir() + "/m.json"
	if err := two.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	back, err := ReadFile(p)
	if err != nil || back.Level() != l {
		t.Errorf("read back: %v, %+v, want %+v", err, back.Level(), l)
	}
	// Against a baseline whose two runs differ by 4 %, a +10 % new pair is not told from
	// +15 % (Student t of one degree of freedom): cannot tell, exit 8; the same new pair
	// against runs that agree passes.
	th := Thresholds{MeanIncrease: 0.15, PointIncrease: 0.5, MaxBaselineNoise: -1}
	next, _, err := FitRuns([]*results.Run{run("n1", "m", nil, shifted(obs, 1.10, 0.005, rng)), run("n2", "m", nil, shifted(obs, 1.10, 0.005, rng))}, nil, false, 0, FitOptions{Experts: moe})
	if err != nil {
		t.Fatal(err)
	}
	g, err := Gate(two, next, DefaultGrid(two, next), th, false, false)
	if err != nil || g.Verdict != VerdictCannotTell || exitcode.Of(g.Err()) != exitcode.Inconclusive || g.Mean.Hi < 0.15 || g.Mean.Lo > 0.15 ||
		!strings.Contains(g.Decide, "runs of each side") {
		t.Errorf("spread baseline: %v, %s, mean %+v, decide %q", err, g.Verdict, g.Mean, g.Decide)
	}
	agree, _, err := FitRuns([]*results.Run{run("a", "m", nil, shifted(obs, 1, 0.005, rng)), run("b", "m", nil, shifted(obs, 1, 0.005, rng))}, nil, false, 0, FitOptions{Experts: moe})
	if err != nil {
		t.Fatal(err)
	}
	if g, err = Gate(agree, next, DefaultGrid(agree, next), th, false, false); err != nil || g.Verdict != VerdictPass || math.Abs(g.Mean.Est-0.10) > 0.01 || g.Mean.Hi > 0.15 {
		t.Errorf("agreeing baseline: %v, %s, mean %+v", err, g.Verdict, g.Mean)
	}
}

// fit counts and lists every cell it did not fit; the plot draws them hollow.
func TestNotFittedCellsCountedListedAndDrawn(t *testing.T) {
	obs := synthetic(fullForm, 0, nil)
	r := run("a", "m", nil, obs)
	// One absurd cell (an outlier) and one partial cell (3 of its 4 sequences counted).
	r.Cells[20].Figures.PerForward.Mean *= 20
	r.Cells[20].Figures.PerForwardFit.Mean *= 20
	p := &r.Cells[3]
	p.Status = results.StatusPartial
	p.Figures.Counted = 3
	m, _, err := FitRuns([]*results.Run{r}, nil, false, 0, FitOptions{Experts: moe})
	if err != nil {
		t.Fatal(err)
	}
	if m.N != 89 || len(m.Outliers) != 1 || len(m.ExcludedCells) != 1 || m.ExcludedCells[0].FwdMs != float64(p.Figures.PerForward.Mean)/float64(time.Millisecond) {
		t.Fatalf("%d fitted, outliers %d, excluded %+v", m.N, len(m.Outliers), m.ExcludedCells)
	}
	var b strings.Builder
	m.WriteSummary(&b)
	m.WriteResiduals(&b)
	for _, want := range []string{"89 cells fitted; 2 not fitted: 1 outlier(s), 1 partial, failed or without a figure (listed in the residual table)",
		"| 1000 | 4 | 1000 | – | ", "not fitted (a): status partial |", "outlier: not fitted |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("fit output lacks %q:\n%s", want, b.String())
		}
	}
	ch, err := Plot(m)
	if err != nil {
		t.Fatal(err)
	}
	if last := ch.Labels[len(ch.Labels)-1]; last != "hollow: not fitted (1 outlier, 1 partial/failed)" {
		t.Errorf("legend %v", ch.Labels)
	}
}

// With σ wrong cell by cell (each off by a random factor in e^±1.5, as one-degree-of-freedom
// repeat spreads make them), the model-based covariance is wrong; the prediction's standard
// error, the larger of it and HC3, still covers the truth at a point in ≥ 90 % of 200
// replicas of its 95 % interval.
func TestPredictionSEHoldsWithWrongSigmas(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	in := Input{MeanLen: 16000, MaxLen: 16000 * ratio(8), Batch: 8}
	probe := &Model{MaxTokens: maxTokens, Experts: moe}
	var want float64
	const form = "fixed+kv_read+kv_tail+moe"
	for _, term := range formTerms(form) {
		want += truth[term] * probe.x(term, in)
	}
	covered, n := 0, 200
	for range n {
		obs := synthetic(form, 0.02, rng)
		for i := range obs {
			obs[i].SigmaMs *= math.Exp(3 * (rng.Float64() - 0.5))
		}
		m, err := Fit(obs, FitOptions{MaxTokens: maxTokens, Experts: moe, Forms: []string{form}, KeepOutliers: true})
		if err != nil {
			t.Fatal(err)
		}
		p := m.PredictAt(in)
		if math.Abs(p.Ms-want) <= 1.99*p.SEMs {
			covered++
		}
	}
	if covered < n*90/100 {
		t.Errorf("prediction intervals with wrong σ cover the truth in %d of %d replicas, want ≥ 90 %%", covered, n)
	}
	t.Logf("covered %d of %d", covered, n)
}

// A point's change decides the gate only with its bounds: +55 % whose lower bound is below
// +50 % is not a regression there (cannot tell), nor is +30 % whose upper bound reaches past
// +50 % a pass; +60 % with a lower bound above +50 % fails.
func TestPointBoundsDecide(t *testing.T) {
	base, err := Fit(synthetic(fullForm, 0, nil), FitOptions{MaxTokens: maxTokens, Experts: moe})
	if err != nil {
		t.Fatal(err)
	}
	base.Runs = []string{"base"}
	big := GridPoint{SeqLen: 64000, MeanLen: 64000, Batch: 64}
	grid := []GridPoint{{SeqLen: 1000, MeanLen: 1000, Batch: 1}, big}
	in := base.PredictAt(Input{MeanLen: big.MeanLen, Batch: big.Batch})
	k := slices.IndexFunc(base.Terms, func(t Term) bool { return t.Name == TermKVRead })
	xk := base.x(TermKVRead, in.Input)
	share := base.Terms[k].Coef * xk / in.Ms
	th := Thresholds{MeanIncrease: 10, PointIncrease: 0.5}
	for _, c := range []struct {
		change, se float64
		verdict    string
		over       bool
	}{{0.55, 0.06, VerdictCannotTell, false}, {0.30, 0.10, VerdictCannotTell, false}, {0.60, 0.02, VerdictFail, true}, {0.30, 0.02, VerdictPass, false}} {
		next := scaled(base, 1, "new")
		next.Terms[k].Coef *= 1 + c.change/share
		next.Cov = make([][]float64, len(base.Terms))
		for i := range next.Cov {
			next.Cov[i] = make([]float64, len(base.Terms))
		}
		sd := c.se * in.Ms / xk // the change's standard error at the big point: SE(coef)·x/ŷ_base
		next.Cov[k][k], next.CovHC3 = sd*sd, nil
		g, err := Gate(base, next, grid, th, false, false)
		if err != nil {
			t.Fatal(err)
		}
		p := g.Points[1]
		if g.Verdict != c.verdict || p.Over != c.over || math.Abs(p.Change.Est-c.change) > 1e-6 {
			t.Errorf("+%.0f %% ± %.0f %%: %s, over %v, bounds [%.3f, %.3f]; want %s, over %v", 100*c.change, 100*c.se, g.Verdict, p.Over, p.Change.Lo, p.Change.Hi, c.verdict, c.over)
		}
	}
}

// Two runs whose levels happen to agree do not measure the level better than their cells'
// noise allows: with levels 0.0001 apart and cells scattering 15 % over 18 cells, the level's
// SD is 0.15/√18 = 3.5 %, said to be the cells' scatter; levels 12 % apart keep their spread (6 %).
func TestLevelOfRepeatsIsFlooredByTheirCells(t *testing.T) {
	for _, c := range []struct {
		a, b, want float64
		from       string
	}{{0.00005, -0.00005, 0.15 / math.Sqrt(18), "2 runs: their cells' scatter over 18 cells"}, {0.06, -0.06, 0.06, "spread of 2 runs' levels"}} {
		m := &Model{Scatter: 0.15, RunLevels: []RunLevel{{Run: "r1", Level: c.a, Cells: 9}, {Run: "r2", Level: c.b, Cells: 9}}}
		l := m.Level()
		if math.Abs(l.SD-c.want) > 1e-9 || l.DoF != 1 || !strings.HasPrefix(l.From, c.from) {
			t.Errorf("levels %+g, %+g: %+v, want SD %.4f from %q", c.a, c.b, l, c.want, c.from)
		}
	}
}

// A poor fit's remedy fits the model: a model of 2 repeats is asked for more than 2, one of a
// single run for repeats at all, and one whose forms with more terms were rejected for too few
// cells for more cells; the gate's error carries the model.
func TestRemedyFitsTheModel(t *testing.T) {
	two := &Model{RunLevels: []RunLevel{{Run: "a"}, {Run: "b"}}, Candidates: []Candidate{{Form: "fixed+kv_read+per_seq", Rejected: "4 cells, the form needs ≥ 5"}}}
	if r := two.Remedy(); !strings.Contains(r, "more repeats than its 2 (genload run --repeat N, N > 2)") || !strings.Contains(r, "measure more cells (form fixed+kv_read+per_seq was not fitted: 4 cells, the form needs ≥ 5") {
		t.Errorf("two repeats, few cells: %q", r)
	}
	if r := (&Model{}).Remedy(); !strings.Contains(r, "measure several times (genload run --repeat N)") || strings.Contains(r, "more cells") {
		t.Errorf("one run: %q", r)
	}
	m := &Model{LOOMedianRel: 0.2, Runs: []string{"a"}}
	var pf *PoorFitError
	if err := m.CheckQuality(0.1); !errors.As(err, &pf) || pf.Model != m || !errors.Is(err, ErrPoorFit) {
		t.Errorf("CheckQuality: %v", err)
	}
}
