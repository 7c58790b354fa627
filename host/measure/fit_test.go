package measure

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// median by selection equals the median of the sorted sample, for odd and even sizes and
// with ties.
func TestMedianSelect(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 1; n < 300; n += 7 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(rng.IntN(50))
		}
		s := slices.Clone(v)
		slices.Sort(s)
		want := s[n/2]
		if n%2 == 0 {
			want = (s[n/2-1] + s[n/2]) / 2
		}
		if got := median(v); got != want {
			t.Fatalf("n %d: median %v, want %v", n, got, want)
		}
	}
	if !math.IsNaN(median(nil)) {
		t.Fatal("median of nothing")
	}
}

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
	if slope, icpt, ok := theilSen(ps); !ok || slope != 5 || icpt != 3 {
		t.Fatalf("slope %v intercept %v ok %v", slope, icpt, ok)
	}
}
