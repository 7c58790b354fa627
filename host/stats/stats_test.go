package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat"
)

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

// Against gonum's stat.Empirical (the smallest x with F(x) ≥ q), an implementation of the same
// rule written apart: they agree wherever q·n is not within floating-point reach of an
// integer (where Empirical's 7.000000000000001 > 7 takes the next value, the case
// NearestRank's 1e-9 exists for).
func TestQuantileMatchesGonumEmpirical(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	compared := 0
	for range 2000 {
		n := 1 + r.IntN(60)
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = math.Round(r.NormFloat64()*10) / 2 // ties included
		}
		slices.Sort(xs)
		q := r.Float64()
		if f := q * float64(n); math.Abs(f-math.Round(f)) < 1e-6 {
			continue
		}
		compared++
		if got, want := Quantile(xs, q), stat.Quantile(q, stat.Empirical, xs, nil); got != want {
			t.Fatalf("Quantile(%v, %v) = %v, gonum Empirical %v", xs, q, got, want)
		}
	}
	if compared < 1900 {
		t.Fatalf("only %d samples compared", compared)
	}
	d := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if got := Quantile(d, 0.9); got != 9 {
		t.Errorf("p90 of 1…10 ns = %v, want 9ns", got)
	}
	if got := Quantile([]time.Duration(nil), 0.5); got != 0 {
		t.Errorf("empty sample: %v, want 0", got)
	}
}

// textbookMedian sorts a copy and takes the middle value or the mean of the two middle ones.
func textbookMedian(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func TestMedian(t *testing.T) {
	// Worked values (the second and fourth as numpy.median and R's median give them).
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{5, 1}, 3}, {[]float64{10, 7, 4, 3, 2, 1}, 3.5}, {[]float64{9, 1, 2}, 2},
		{[]float64{100, 1, 4, 2}, 3}} {
		in := slices.Clone(c.xs)
		if got := Median(c.xs); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.xs, got, c.want)
		}
		if !slices.Equal(in, c.xs) {
			t.Errorf("Median reordered its argument: %v, was %v", c.xs, in)
		}
	}
	if !math.IsNaN(Median(nil)) || !math.IsNaN(MedianInPlace(nil)) {
		t.Error("median of an empty sample is not NaN")
	}
	// The selection (which sorts only below 16 values) against sorting, on samples with and
	// without ties, of every count from 1 to 300.
	r := rand.New(rand.NewPCG(3, 4))
	for n := 1; n <= 300; n++ {
		for _, ties := range []bool{false, true} {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = r.ExpFloat64()
				if ties {
					xs[i] = math.Floor(xs[i] * 3)
				}
			}
			want := textbookMedian(xs)
			if got := MedianInPlace(slices.Clone(xs)); got != want {
				t.Fatalf("n=%d ties=%v: MedianInPlace = %v, sorted median %v", n, ties, got, want)
			}
		}
	}
}

func TestMedianDuration(t *testing.T) {
	for _, c := range []struct {
		d    []time.Duration
		want time.Duration
	}{{nil, 0}, {[]time.Duration{7}, 7}, {[]time.Duration{4, 1, 9}, 4}, {[]time.Duration{9, 1, 4, 2}, 3},
		{[]time.Duration{2, 1}, 1}, // 1.5 ns, towards the lower value
		{[]time.Duration{math.MaxInt64, math.MaxInt64 - 2}, math.MaxInt64 - 1}} {
		if got := MedianDuration(c.d); got != c.want {
			t.Errorf("MedianDuration(%v) = %d, want %d", c.d, got, c.want)
		}
	}
	d := []time.Duration{30 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond}
	if got := MedianDuration(d); got != 25*time.Millisecond || d[0] != 30*time.Millisecond {
		t.Errorf("MedianDuration = %v (argument now %v), want 25ms and the argument kept", got, d)
	}
}

func TestCV(t *testing.T) {
	// x̄ = 5, Σ(x − x̄)² = 32, s = √(32/7) = 2.138090…, CV = 0.4276180…
	if got := CV([]float64{2, 4, 4, 4, 5, 5, 7, 9}); !near(got-0.42761799, 1e-8) {
		t.Errorf("CV = %.9f, want 0.42761799", got)
	}
	// Two values: |x − y| / (√2 · mean).
	if got, want := CV([]float64{9, 11}), 2/(math.Sqrt2*10); !near(got-want, 1e-15) {
		t.Errorf("CV(9, 11) = %v, want %v", got, want)
	}
	for _, xs := range [][]float64{nil, {3}, {-1, 1}, {0, 0}, {-3, -1}} {
		if got := CV(xs); !math.IsNaN(got) {
			t.Errorf("CV(%v) = %v, want NaN", xs, got)
		}
	}
}

// Student's t quantiles against printed tables (to 9 digits), the normal's beyond 10⁶ dof.
func TestTQuantile(t *testing.T) {
	for _, c := range []struct{ p, dof, want float64 }{
		{0.975, 1, 12.706204736}, {0.975, 4, 2.776445105}, {0.975, 10, 2.228138852},
		{0.95, 9, 1.833112933}, {0.995, 30, 2.749995654}, {0.975, math.Inf(1), 1.959963985},
		{0.975, 2e6, 1.959963985}, {0.975, 0.3, 12.706204736}, {0.025, 4, -2.776445105},
		// 1000 and 1500 dof, from the Cornish–Fisher expansion of t about the normal quantile z,
		// z + (z³ + z)/4ν + (5z⁵ + 16z³ + 3z)/96ν² + (3z⁷ + 19z⁵ + 17z³ − 15z)/384ν³: still t,
		// 0.12 % and 0.08 % above the normal's 1.959964.
		{0.975, 1000, 1.9623390808}, {0.975, 1500, 1.9615467539},
	} {
		tol := 1e-8
		if got := TQuantile(c.p, c.dof); !near(got-c.want, tol) {
			t.Errorf("TQuantile(%v, %v) = %.9f, want %.9f", c.p, c.dof, got, c.want)
		}
		if got := TCDF(c.want, c.dof); !near(got-c.p, tol) {
			t.Errorf("TCDF(%v, %v) = %.10f, want %v", c.want, c.dof, got, c.p)
		}
	}
}

func TestTInterval(t *testing.T) {
	// 1…5: x̄ = 3, s = √2.5, s/√5 = √0.5; t(0.975; 4) = 2.776445105 → ±1.963243
	mean, lo, hi := TInterval([]float64{4, 1, 5, 2, 3}, 0.95)
	if mean != 3 || !near(lo-(3-1.963243161), 1e-8) || !near(hi-(3+1.963243161), 1e-8) {
		t.Errorf("TInterval(1…5, 95 %%) = %v [%v, %v], want 3 [1.036756839, 4.963243161]", mean, lo, hi)
	}
	if mean, lo, hi := TInterval([]float64{2, 2, 2}, 0.9); mean != 2 || lo != 2 || hi != 2 {
		t.Errorf("no spread: %v [%v, %v], want the point", mean, lo, hi)
	}
	if mean, lo, hi := TInterval([]float64{7}, 0.95); mean != 7 || !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("one value: %v [%v, %v], want 7 [NaN, NaN]", mean, lo, hi)
	}
	if mean, _, _ := TInterval(nil, 0.95); !math.IsNaN(mean) {
		t.Errorf("no value: mean %v, want NaN", mean)
	}
}

func TestPool(t *testing.T) {
	for _, c := range []struct {
		xs      []float64
		fig, se float64
	}{
		{[]float64{4}, 4, 0},
		{[]float64{1, 3}, 2, 1},                           // s = √2, s/√2 = 1
		{[]float64{5, 1, 4, 2, 3}, 3, 0.5 * math.Sqrt2},   // s = √2.5, s/√5 = √0.5
		{[]float64{1.01, 1.0, 10}, 4.003333333, 2.998335}, // one disturbed repeat moves the mean and widens se
	} {
		fig, se := Pool(c.xs)
		if !near(fig-c.fig, 1e-8) || !near(se-c.se, 1e-6) {
			t.Errorf("Pool(%v) = %v ± %v, want %v ± %v", c.xs, fig, se, c.fig, c.se)
		}
	}
	if fig, se := Pool(nil); !math.IsNaN(fig) || !math.IsNaN(se) {
		t.Errorf("Pool(nil) = %v, %v, want NaN", fig, se)
	}
}

// near reports whether the difference d is within tol (false for NaN).
func near(d, tol float64) bool { return math.Abs(d) <= tol }

func TestRobustSigmaInPlace(t *testing.T) {
	// |v − 2| = 1, 1, 0, 3, 8: median 1.
	if got := RobustSigmaInPlace([]float64{1, 3, 2, 5, 10}, 2); got != MADScale {
		t.Errorf("RobustSigmaInPlace = %v, want %v", got, MADScale)
	}
	if got := RobustSigmaInPlace(nil, 0); got != 0 {
		t.Errorf("no values: %v, want 0", got)
	}
}
