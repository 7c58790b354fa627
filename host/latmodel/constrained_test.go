package latmodel

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/genload/genload/host/internal/textcheck"
)

// readObs reads the cells of testdata/negative-per-seq.json: two default runs whose full form,
// fitted without constraint, has the smallest leave-one-out error with per_seq −0.0139 ms
// (95 % interval [−0.028, +0.00034]) — a cost below zero.
func readObs(t *testing.T) ([]Obs, FitOptions) {
	t.Helper()
	b, err := os.ReadFile("testdata/negative-per-seq.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		MaxTokens int      `json:"max_tokens"`
		Experts   *Experts `json:"experts"`
		Obs       []Obs    `json:"observations"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d.Obs, FitOptions{MaxTokens: d.MaxTokens, Experts: d.Experts}
}

// TestFitKeepsCostsNonNegative: the form whose per_seq comes out below zero is rejected, with
// its coefficient in its unit; the chosen form has every coefficient ≥ 0 and every interval's
// lower bound ≥ 0; its predictions rise with the batch size, extrapolated to B = 256 too
// (they fell: 1.042 ms at B = 16, 0.272 ms at B = 256).
func TestFitKeepsCostsNonNegative(t *testing.T) {
	obs, opt := readObs(t)
	m, err := Fit(obs, opt)
	if err != nil {
		t.Fatal(err)
	}
	if m.Form != "fixed+kv_read+kv_tail+moe" {
		t.Errorf("form %s, want fixed+kv_read+kv_tail+moe (the best form with no negative cost)", m.Form)
	}
	for _, tm := range m.Terms {
		if tm.Coef < 0 || tm.Lo < 0 || tm.Hi < tm.Coef {
			t.Errorf("term %s: %g [%g, %g]", tm.Name, tm.Coef, tm.Lo, tm.Hi)
		}
	}
	var full Candidate
	for _, c := range m.Candidates {
		if c.Form == fullForm {
			full = c
		}
	}
	want := "per_seq coefficient -0.0138 ms/sequence < 0 (95 % interval [-0.028, 0.000344]): not a cost; the forms without it hold it at 0"
	if full.Rejected != want || !full.Scored() || math.Abs(full.LOOMedianRel-0.0240) > 0.0005 {
		t.Errorf("full form: %+v\nwant rejected %q", full, want)
	}
	prev := 0.0
	for _, b := range []int{1, 2, 4, 8, 16, 32, 64, 128, 256} {
		p, err := m.Predict(8000, b, true)
		if err != nil {
			t.Fatal(err)
		}
		if p.Ms <= prev {
			t.Errorf("B=%d: %.4g ms, not above B/2's %.4g ms", b, p.Ms, prev)
		}
		prev = p.Ms
	}
	var out strings.Builder
	m.WriteSummary(&out)
	if !strings.Contains(out.String(), "| fixed+per_seq+kv_read+kv_tail+moe | 0.02255 | 2.40 % | 12.07 % | rejected (4) |\n") ||
		!strings.Contains(out.String(), "(4) fixed+per_seq+kv_read+kv_tail+moe: per_seq coefficient -0.0138 ms/sequence < 0") {
		t.Errorf("summary:\n%s", out.String())
	}
	if w := textcheck.Wider(out.String(), 120); len(w) > 0 {
		t.Errorf("lines over 120 columns:\n%s", strings.Join(w, "\n"))
	}
}

// TestCandidatesWithoutFigures: a form not fitted (too few cells for it) shows – with its
// reason, not leave-one-out figures of 0.
func TestCandidatesWithoutFigures(t *testing.T) {
	obs := synthetic("fixed+per_seq+kv_read", 0, nil)[:5]
	m, err := Fit(obs, FitOptions{MaxTokens: maxTokens})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	m.WriteSummary(&out)
	s := out.String()
	for _, want := range []string{"| fixed+per_seq+kv_read+kv_tail | – | – | – | rejected (", ") fixed+per_seq+kv_read+kv_tail: 5 cells, the form needs ≥ 6\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "| 0 | 0.00 % | 0.00 % |") {
		t.Errorf("zeros for a form not fitted:\n%s", s)
	}
}
