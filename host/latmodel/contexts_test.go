package latmodel

import (
	"math"
	"testing"
)

// A forward pass of logged contexts is priced at its own cached tokens: with the exact model of
// the truth, B = 24 sequences of mean context 9,000 and longest 30,000 tokens cost
// fixed + per_seq·24 + kv_read·24·9000 + kv_tail·30000 + moe·E(24) — the engine's step formula
// (no m/2 term: the contexts already hold the tokens generated). Outside the range it says so.
func TestPredictContextsIsTheStepFormula(t *testing.T) {
	m, err := Fit(synthetic(fullForm, 0, nil), FitOptions{MaxTokens: maxTokens, Experts: moe})
	if err != nil {
		t.Fatal(err)
	}
	want := truth[TermFixed] + truth[TermPerSeq]*24 + truth[TermKVRead]*24*9000 + truth[TermKVTail]*30000 + truth[TermMoE]*moe.Distinct(24)
	got, outside, err := m.PredictContexts(9000, 30000, 24)
	if err != nil || math.Abs(got-want) > 1e-9*want || outside != "" {
		t.Errorf("PredictContexts = %v, %q, %v; want %v within the range", got, outside, err, want)
	}
	if _, outside, _ := m.PredictContexts(200000, 200000, 100); outside == "" {
		t.Error("a point beyond the measured lengths and batch sizes is not flagged")
	}
	if _, _, err := m.PredictContexts(100, 50, 4); err == nil {
		t.Error("a longest context below the mean accepted")
	}
}
