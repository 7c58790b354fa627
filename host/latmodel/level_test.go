package latmodel

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/report"
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
	one, _, err := FitRuns([]*report.Run{run("a", "m", nil, shifted(obs, 1, 0.03, rng))}, nil, false, 0, FitOptions{Experts: moe})
	if err != nil {
		t.Fatal(err)
	}
	if l := one.Level(); l.Runs != 1 || l.Measured() || l.SD != one.Scatter || math.Abs(l.SD-0.03) > 0.008 || l.DoF != float64(one.DoF) {
		t.Errorf("one run: %+v (scatter %g), want its 3 %% cell scatter", l, one.Scatter)
	}
	// Two runs, one 2 % slow and one 2 % fast as a whole, cells 0.5 % noisy: levels ±2 %,
	// their mean known to SD/√2 = 2 %.
	two, _, err := FitRuns([]*report.Run{run("a", "m", nil, shifted(obs, 1.02, 0.005, rng)), run("b", "m", nil, shifted(obs, 0.98, 0.005, rng))}, nil, false, 0, FitOptions{Experts: moe})
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
	next, _, err := FitRuns([]*report.Run{run("n1", "m", nil, shifted(obs, 1.10, 0.005, rng)), run("n2", "m", nil, shifted(obs, 1.10, 0.005, rng))}, nil, false, 0, FitOptions{Experts: moe})
	if err != nil {
		t.Fatal(err)
	}
	g, err := Gate(two, next, DefaultGrid(two, next), th, false, false)
	if err != nil || g.Verdict != VerdictCannotTell || exitcode.Of(g.Err()) != exitcode.Inconclusive || g.Mean.Hi < 0.15 || g.Mean.Lo > 0.15 ||
		!strings.Contains(g.Decide, "runs of each side") {
		t.Errorf("spread baseline: %v, %s, mean %+v, decide %q", err, g.Verdict, g.Mean, g.Decide)
	}
	agree, _, err := FitRuns([]*report.Run{run("a", "m", nil, shifted(obs, 1, 0.005, rng)), run("b", "m", nil, shifted(obs, 1, 0.005, rng))}, nil, false, 0, FitOptions{Experts: moe})
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
	p.Status = report.StatusPartial
	p.Figures.Counted = 3
	m, _, err := FitRuns([]*report.Run{r}, nil, false, 0, FitOptions{Experts: moe})
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
