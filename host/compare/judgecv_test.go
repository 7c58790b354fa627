package compare

import (
	"math"
	"testing"

	"github.com/genload/genload/host/repeat"
)

// A CV of three runs is held to a target by its 90 % one-sided bounds: for n − 1 = 2 degrees
// of freedom χ²(p; 2) = −2 ln(1 − p), so the factors are sqrt(2/(−2 ln 0.9)) = 3.0807 and
// sqrt(2/(−2 ln 0.1)) = 0.65900; cell D's CV 20 % has bounds [13.18 %, 61.61 %], A's 10 %
// [6.59 %, 30.81 %], C's 2 % [1.32 %, 6.16 %]. Within the upper bound: ok; beyond the lower: fail;
// between: cannot tell, with how many runs of D would decide if its CV stayed at 20 %.
func TestJudgeCVByItsBounds(t *testing.T) {
	c, err := Consistent(threeRuns())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		stat          string
		target        float64
		verdict       string
		point, lo, hi float64
		wantN         bool
	}{
		{"max", 0.70, CVOK, 0.20, 0.13180, 0.61614, false},
		{"max", 0.10, CVFail, 0.20, 0.13180, 0.61614, false},
		{"max", 0.25, CVCannotTell, 0.20, 0.13180, 0.61614, true},
		{"max", 0.15, CVCannotTell, 0.20, 0.13180, 0.61614, false}, // its CV is above 15 %: no count would do
		// median of 0, 2, 10, 20 %: (2 + 10)/2 = 6 %; of the bounds (1.318 + 6.590)/2, (6.162 + 30.808)/2
		{"median", 0.05, CVCannotTell, 0.06, 0.03954, 0.18485, false},
		{"median", 0.20, CVOK, 0.06, 0.03954, 0.18485, false},
	} {
		j, err := c.JudgeCV(tc.stat, tc.target, 0.9)
		if err != nil {
			t.Fatal(err)
		}
		if j.Verdict != tc.verdict || !near(j.Point, tc.point, 1e-9) || !near(j.Lower, tc.lo, 5e-5) || !near(j.Upper, tc.hi, 5e-5) {
			t.Errorf("%s at %g: %s, %.5f [%.5f, %.5f]; want %s, %.5f [%.5f, %.5f]", tc.stat, tc.target, j.Verdict, j.Point, j.Lower, j.Upper, tc.verdict, tc.point, tc.lo, tc.hi)
		}
		if tc.stat == "max" && (j.Cell != (CellKey{4000, 8}) || j.N != 3) {
			t.Errorf("max at %g: cell %v (%d values), want L=4000,B=8 (3)", tc.target, j.Cell, j.N)
		}
		if tc.wantN {
			// the fewest n with 20 % × UpperFactor(n) ≤ 25 %: UpperFactor(n − 1) > 1.25 ≥ UpperFactor(n)
			if j.Runs < 4 || 0.2*repeat.UpperFactor(j.Runs, 0.9) > 0.25 || 0.2*repeat.UpperFactor(j.Runs-1, 0.9) <= 0.25 {
				t.Errorf("runs to decide %d", j.Runs)
			}
		} else if j.Runs != 0 {
			t.Errorf("%s at %g: runs to decide %d, want none", tc.stat, tc.target, j.Runs)
		}
	}
	if _, err := c.JudgeCV("mean", 0.05, 0.9); err == nil {
		t.Error("an unknown statistic: no error")
	}
	if math.IsNaN(repeat.LowerFactor(3, 0.9)) || !math.IsNaN(repeat.LowerFactor(1, 0.9)) {
		t.Error("LowerFactor of 3 values NaN, or of 1 value not NaN")
	}
}
