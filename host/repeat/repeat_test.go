package repeat

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestUpperFactorClosedForms(t *testing.T) {
	// Independent truths: for 1 degree of freedom the chi-square α-quantile is z² with z the
	// standard normal quantile at (1 + α)/2; for 2 it is −2·ln(1 − α).
	z := 0.2533471031357997 // Φ⁻¹(0.6)
	cases := []struct {
		n    int
		conf float64
		want float64
	}{
		{2, 0.8, math.Sqrt(1 / (z * z))},              // 3.947
		{3, 0.8, math.Sqrt(2 / (-2 * math.Log(0.8)))}, // 2.117
		{3, 0.9, math.Sqrt(2 / (-2 * math.Log(0.9)))}, // 3.081
	}
	for _, c := range cases {
		if got := UpperFactor(c.n, c.conf); math.Abs(got/c.want-1) > 1e-6 {
			t.Errorf("UpperFactor(%d, %g) = %.6f, want %.6f", c.n, c.conf, got, c.want)
		}
	}
	if !math.IsInf(UpperFactor(1, 0.8), 1) {
		t.Errorf("UpperFactor(1) is finite")
	}
	// The factor falls towards 1 as n grows.
	prev := math.Inf(1)
	for n := 2; n <= 30; n++ {
		f := UpperFactor(n, 0.8)
		if !(f < prev && f > 1) {
			t.Fatalf("UpperFactor(%d) = %v after %v", n, f, prev)
		}
		prev = f
	}
}

func TestDecide(t *testing.T) {
	r := Rule{TargetCV: 0.05, MaxRepeats: 4} // Confidence 0.9: factors 7.958 (n = 2), 3.081 (3), 2.372 (4)
	cases := []struct {
		name string
		xs   []float64
		want string
	}{
		// one repeat: below MinRepeats (2)
		{"one", []float64{10}, "again"},
		// 10, 10.05: CV 0.00353, × 7.958 = 0.0281 ≤ 0.05
		{"two that agree", []float64{10, 10.05}, "stable"},
		// 10, 10.2: CV 0.0140, × 7.958 = 0.111 > 0.05, n < 4
		{"two apart", []float64{10, 10.2}, "again"},
		// four values with CV ≈ 0.065 > target even before the bound: exhausted at 4
		{"noisy at max", []float64{10, 11, 10, 11.5}, "exhausted"},
	}
	for _, c := range cases {
		v, err := r.Decide(c.xs)
		got := map[bool]string{true: "again"}[v.Again] + map[bool]string{true: "stable"}[v.Stable] + map[bool]string{true: "exhausted"}[v.Exhausted]
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %s", c.name, v, err, c.want)
		}
	}
	if _, err := r.Decide([]float64{10, 0}); err == nil || !strings.Contains(err.Error(), "repeat 2") {
		t.Errorf("a zero value: %v", err)
	}
	if err := (Rule{TargetCV: 0.05, MinRepeats: 1, MaxRepeats: 3, Confidence: 1}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "[min-repeats]") || !strings.Contains(err.Error(), "[cv-confidence]") {
		t.Errorf("Validate: %v", err)
	}
	if err := (Rule{TargetCV: 0.05}).Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// simulate runs the rule on a cell whose repeats are lognormal with CV c and returns the
// share of trials declared stable and the mean repeats used.
func simulate(r Rule, c float64, trials int, seed uint64) (stable float64, repeats float64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	sig := math.Sqrt(math.Log1p(c * c))
	for range trials {
		var xs []float64
		for {
			xs = append(xs, 10*math.Exp(sig*rng.NormFloat64()))
			v, _ := r.Decide(xs)
			if !v.Again {
				if v.Stable {
					stable++
				}
				break
			}
		}
		repeats += float64(len(xs))
	}
	return stable / float64(trials), repeats / float64(trials)
}

func TestRuleSpendsRepeatsWhereTheNoiseIs(t *testing.T) {
	// The operating characteristic in the package comment: 2000 simulated cells per true CV,
	// target 5 %, 2..8 repeats, Confidence 0.9. Each share has an SE ≤ 1.1 %; the bounds
	// below are ≥ 3 SE from the documented values. Noisier cells must use more repeats.
	r := Rule{TargetCV: 0.05, MinRepeats: 2, MaxRepeats: 8}
	cases := []struct {
		cv                   float64
		stableMin, stableMax float64
		repeatsMax           float64
	}{
		{0.01, 0.99, 1, 2.8},
		{0.02, 0.97, 1, 3.9},
		{0.03, 0.75, 0.83, 5.3},
		{0.05, 0.25, 0.33, 7.1},
		{0.10, 0, 0.10, 8},
	}
	prev := 0.0
	for i, c := range cases {
		stable, n := simulate(r, c.cv, 2000, uint64(i+1))
		t.Logf("true CV %.0f %%: stable %.3f in %.2f repeats", 100*c.cv, stable, n)
		if stable < c.stableMin || stable > c.stableMax || n > c.repeatsMax || n <= prev {
			t.Errorf("true CV %.0f %%: stable %.3f in %.2f repeats, want stable in [%.2f, %.2f], ≤ %.1f repeats, more than %.2f",
				100*c.cv, stable, n, c.stableMin, c.stableMax, c.repeatsMax, prev)
		}
		prev = n
	}
}

func TestOrderIsASeededPermutation(t *testing.T) {
	a, b, c := Order(20, 7, 1), Order(20, 7, 1), Order(20, 7, 2)
	if !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Errorf("same seed and round: %v vs %v; another round: %v", a, b, c)
	}
	s := slices.Clone(a)
	slices.Sort(s)
	for i, v := range s {
		if v != i {
			t.Fatalf("Order(20) = %v is not a permutation of 0..19", a)
		}
	}
}

// A fixed count has no stopping rule: a cell needs another repeat until it has Count values,
// then it is Done (never Stable nor Exhausted, whatever its CV); Judge counts a repeat without
// a value against the count. Count 1 and a count mixed with the stopping rule's settings are
// refused, naming the flags.
func TestFixedCount(t *testing.T) {
	r := Rule{Count: 3}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		xs      []float64
		repeats int
		want    string
	}{
		{[]float64{10}, 1, "again"},
		{[]float64{10, 10}, 2, "again"},
		{[]float64{10, 10}, 3, "done"}, // the third repeat had no value
		{[]float64{10, 10, 10}, 3, "done"},
		{[]float64{10, 20, 40}, 3, "done"}, // CV 65 %: reported, not judged
	} {
		v, err := r.Judge(c.xs, c.repeats)
		if err != nil {
			t.Fatal(err)
		}
		got := map[bool]string{true: "again", false: "done"}[v.Again]
		if got != c.want || v.Stable || v.Exhausted || v.Done == v.Again {
			t.Errorf("%v after %d repeats: %+v, want %s", c.xs, c.repeats, v, c.want)
		}
		if len(c.xs) == 3 && c.xs[2] == 40 && math.Abs(v.CV-0.6547) > 1e-4 {
			t.Errorf("CV %v, want 0.6547 (SD 15.275 over mean 23.333)", v.CV)
		}
	}
	if d := r.WithDefaults(); d.MinRepeats != 3 || d.MaxRepeats != 3 {
		t.Errorf("defaults %+v, want 3 to 3 repeats", d)
	}
	for _, bad := range []struct {
		r    Rule
		want string
	}{
		{Rule{Count: 1}, "[repeat] must be >= 2"},
		{Rule{Count: 3, TargetCV: 0.05}, "[repeat] is a fixed count: not with [until-cv]"},
		{Rule{Count: 3, MaxRepeats: 8}, "[repeat] is a fixed count"},
	} {
		if err := bad.r.Validate(); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: %v, want %q", bad.r, err, bad.want)
		}
	}
	// Judge under the stopping rule: a cell still short of the target at MaxRepeats records
	// (one of them without a value) is exhausted, as Decide says of MaxRepeats values.
	s := Rule{TargetCV: 0.01, MaxRepeats: 3}
	if v, _ := s.Judge([]float64{10, 11}, 3); v.Again || !v.Exhausted || v.Done {
		t.Errorf("stopping rule at its maximum: %+v, want exhausted", v)
	}
	if v, _ := s.Judge([]float64{10, 11}, 2); !v.Again || v.Exhausted {
		t.Errorf("stopping rule below its maximum: %+v, want again", v)
	}
}
