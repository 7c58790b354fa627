package latmodel

import (
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

// A model of three runs carries their level spread: the prediction interval of a new run is
// ln Ms ± t(0.975; ν) · √(s²·(1 + 1/3) + (SE/Ms)²), ν the Welch–Satterthwaite degrees of freedom
// of the level part (r − 1 = 2) and the fit's (its DoF, 20). Here Ms = 20 ms (fixed only), SE =
// 0.01 ms, levels +1 %, −1 %, 0 (s = 0.01, above the cells' floor 0.011/√(30/3)): ν = 2.0075
// and the interval about [19.03, 21.02] ms — computed here with gonum's Student t as the
// oracle. A model of one run has none, and the output says that ± SE is the fit's alone.
func TestPredictionIntervalFromTheRunsLevels(t *testing.T) {
	m := &Model{Schema: Schema, MaxTokens: maxTokens, Form: TermFixed, Terms: []Term{{Name: TermFixed, Coef: 20}}, Cov: [][]float64{{0.0001}},
		Range: Range{MeanLen: [2]float64{1000, 2000}, Batch: [2]int{1, 16}}, Scatter: 0.011, DoF: 20,
		RunLevels: []RunLevel{{Run: "a", Level: 0.01, Cells: 10}, {Run: "b", Level: -0.01, Cells: 10}, {Run: "c", Level: 0, Cells: 10}}}
	p, err := m.Predict(1500, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	v1, v2 := 0.0001*4.0/3, (0.01/20)*(0.01/20)
	nu := (v1 + v2) * (v1 + v2) / (v1*v1/2 + v2*v2/20)
	h := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: nu}.Quantile(0.975) * math.Sqrt(v1+v2)
	if !near(p.Ms, 20, 1e-12) || !near(p.SEMs, 0.01, 1e-12) || !near(p.PILoMs, 20*math.Exp(-h), 1e-6) || !near(p.PIHiMs, 20*math.Exp(h), 1e-6) {
		t.Errorf("prediction %+v; want 20 ± 0.01, PI [%.4f, %.4f] (ν %.4f)", p, 20*math.Exp(-h), 20*math.Exp(h), nu)
	}
	// The same runs with levels that agree to 0.0002 % are floored by their cells' scatter:
	// s = 0.011/√10 = 0.00348, not 0.00001.
	m2 := *m
	m2.RunLevels = []RunLevel{{Run: "a", Level: 1e-6, Cells: 10}, {Run: "b", Level: -1e-6, Cells: 10}, {Run: "c", Level: 0, Cells: 10}}
	p2, _ := m2.Predict(1500, 4, false)
	v1 = 0.011 * 0.011 / 10 * 4.0 / 3
	nu = (v1 + v2) * (v1 + v2) / (v1*v1/2 + v2*v2/20)
	h = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: nu}.Quantile(0.975) * math.Sqrt(v1+v2)
	if !near(p2.PILoMs, 20*math.Exp(-h), 1e-6) || !near(p2.PIHiMs, 20*math.Exp(h), 1e-6) {
		t.Errorf("coinciding levels: PI [%.4f, %.4f], want [%.4f, %.4f] from the cells' floor", p2.PILoMs, p2.PIHiMs, 20*math.Exp(-h), 20*math.Exp(h))
	}
	var out strings.Builder
	WritePredictions(&out, m, []Prediction{p})
	for _, want := range []string{"| 1500 | 4 | 20.000 | 0.010 | [19.033, 21.016] |", "± SE is the fit's standard error", "over the 3 runs fitted (2 degrees of freedom; no less than its cells' scatter allows)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	one := *m
	one.RunLevels = nil
	p, _ = one.Predict(1500, 4, false)
	out.Reset()
	WritePredictions(&out, &one, []Prediction{p})
	if p.PILoMs != 0 || p.PIHiMs != 0 || strings.Contains(out.String(), "PI") || !strings.Contains(out.String(), "not a prediction interval") {
		t.Errorf("one run: %+v\n%s", p, out.String())
	}
}
