package measure

import (
	"testing"
)

// Theil–Sen on a line with 25 % of the points far off returns the line's slope exactly.
func TestTheilSenOutliers(t *testing.T) {
	var ps []point
	for i := range 40 {
		y := 3 + 5*float64(i)
		if i%4 == 0 {
			y += 1000
		}
		ps = append(ps, point{t: y, f: float64(i)})
	}
	var sc fitScratch
	if slope, icpt, ok := sc.theilSen(ps); !ok || slope != 5 || icpt != 3 {
		t.Fatalf("slope %v intercept %v ok %v", slope, icpt, ok)
	}
}
