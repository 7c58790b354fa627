package quantile

import "testing"

// Against integer arithmetic: for q = k/100 the nearest rank is ⌈k·n/100⌉ = (k·n + 99) / 100.
func TestNearestRankMatchesIntegerCeiling(t *testing.T) {
	for n := 1; n <= 300; n++ {
		for k := 1; k <= 100; k++ {
			want := (k*n+99)/100 - 1
			if got := NearestRank(n, float64(k)/100); got != want {
				t.Fatalf("NearestRank(%d, %d/100) = %d, want %d", n, k, got, want)
			}
		}
	}
	for _, c := range []struct {
		n    int
		q    float64
		want int
	}{{0, 0.5, -1}, {5, 0, 0}, {5, -1, 0}, {5, 1, 4}, {5, 2, 4}, {10, 0.7, 6}, {10, 0.9, 8}} {
		if got := NearestRank(c.n, c.q); got != c.want {
			t.Errorf("NearestRank(%d, %v) = %d, want %d", c.n, c.q, got, c.want)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{1, 5}, 3}, {[]float64{1, 2, 9}, 2}, {[]float64{1, 2, 4, 100}, 3}} {
		if got := Median(c.xs); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}
