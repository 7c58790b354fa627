package stats

import (
	"math"
	"testing"
)

// Two samples whose logs are {0, 0.2} and {0.1, 0.3}: ℓ = 0.1, u_a = u_b = 0.02/2, ν = 2
// exactly (equal variances and counts), t(0.975; 2) = 4.302653, half-width 4.302653·√0.02:
// change e^0.1 − 1 = +10.517 %, interval [e^(0.1 − 0.6085) − 1, e^(0.1 + 0.6085) − 1]. A side
// twice as slow and one twice as fast are symmetric on the log scale; no spread gives the
// point; a single value or a non-positive one gives no interval.
func TestLogRatioInterval(t *testing.T) {
	e := math.Exp
	c, lo, hi, ok := LogRatioInterval([]float64{1, e(0.2)}, []float64{e(0.1), e(0.3)}, 0.95)
	if !ok || math.Abs(c-0.10517091807564763) > 1e-12 || math.Abs(lo+0.39859517437981984) > 1e-9 || math.Abs(hi-1.0309161252582832) > 1e-9 {
		t.Errorf("change %v [%v, %v] ok %v; want 0.105171 [-0.398595, 1.030916]", c, lo, hi, ok)
	}
	c, lo, hi, ok = LogRatioInterval([]float64{10, 10}, []float64{20, 20}, 0.95)
	if !ok || math.Abs(c-1) > 1e-12 || lo != c || hi != c {
		t.Errorf("no spread, twice as slow: %v [%v, %v] %v; want exactly +100 %%", c, lo, hi, ok)
	}
	c2, lo2, hi2, _ := LogRatioInterval([]float64{20, 22}, []float64{10, 11.5}, 0.95)
	c1, lo1, hi1, _ := LogRatioInterval([]float64{10, 11.5}, []float64{20, 22}, 0.95)
	if math.Abs(math.Log1p(c1)+math.Log1p(c2)) > 1e-12 || math.Abs(math.Log1p(lo1)+math.Log1p(hi2)) > 1e-12 || math.Abs(math.Log1p(hi1)+math.Log1p(lo2)) > 1e-12 {
		t.Errorf("swapping the sides does not negate the log interval: %v [%v, %v] vs %v [%v, %v]", c1, lo1, hi1, c2, lo2, hi2)
	}
	if lo2 <= -1 {
		t.Errorf("lower bound %v passes −100 %%", lo2)
	}
	for _, bad := range [][2][]float64{{{1}, {1, 2}}, {{1, 2}, {0, 2}}} {
		if _, _, _, ok := LogRatioInterval(bad[0], bad[1], 0.95); ok {
			t.Errorf("%v vs %v: an interval", bad[0], bad[1])
		}
	}
}
