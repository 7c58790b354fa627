package latmodel

import (
	"math"
	"strings"
	"testing"
)

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

// A model of three runs carries their level spread: the prediction interval of a new run is
// ln Ms ± t(0.975; 2) · √(s²·(1 + 1/3) + (SE/Ms)²). Here Ms = 20 ms (fixed only), SE = 0.01 ms,
// levels +1 %, −1 %, 0 (s = 0.01): h = 4.302653 · √(0.0001·4/3 + 0.0005²) = 0.049729, the
// interval [20·e^−h, 20·e^h] = [19.030, 21.020] ms. A model of one run has none, and the
// output says that ± SE is the fit's alone.
func TestPredictionIntervalFromTheRunsLevels(t *testing.T) {
	m := &Model{Schema: Schema, MaxTokens: maxTokens, Form: TermFixed, Terms: []Term{{Name: TermFixed, Coef: 20}}, Cov: [][]float64{{0.0001}},
		Range: Range{MeanLen: [2]float64{1000, 2000}, Batch: [2]int{1, 16}}, Scatter: 0.011,
		RunLevels: []RunLevel{{Run: "a", Level: 0.01}, {Run: "b", Level: -0.01}, {Run: "c", Level: 0}}}
	p, err := m.Predict(1500, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	if !near(p.Ms, 20, 1e-12) || !near(p.SEMs, 0.01, 1e-12) || !near(p.PILoMs, 19.029738952813084, 1e-9) || !near(p.PIHiMs, 21.01973132641789, 1e-9) {
		t.Errorf("prediction %+v; want 20 ± 0.01, PI [19.0297, 21.0197]", p)
	}
	var out strings.Builder
	WritePredictions(&out, m, []Prediction{p})
	for _, want := range []string{"| 1500 | 4 | 20.000 | 0.010 | [19.030, 21.020] |", "± SE is the fit's standard error", "over the 3 runs fitted (Student t, 2 degrees of freedom)"} {
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
