package main

import (
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

func TestGammaLengthsNative(t *testing.T) {
	cases := []struct {
		name    string
		c       config
		n, mean int
		lo, hi  int
		want    []int
	}{
		// sdk/ABI.md §9: quantiles 111.22, 436.84, 960.35, 2123.67 rescaled by 1000/908.02.
		{"abi-example", config{0.9, true}, 4, 1000, 1, 40860, []int{122, 481, 1058, 2339}},
		// Same quantiles without normalisation, rounded half away from zero.
		{"raw", config{0.9, false}, 4, 1000, 1, 40860, []int{111, 437, 960, 2124}},
		// Clamped to [200, 2000].
		{"clamped", config{0.9, true}, 4, 1000, 200, 2000, []int{200, 481, 1058, 2000}},
		{"empty", config{0.9, true}, 0, 1000, 1, 10, []int{}},
	}
	for _, c := range cases {
		got, err := gammaLengths(c.c, c.n, c.mean, c.lo, c.hi)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	for _, bad := range []struct{ mean, lo, hi int }{{0, 1, 10}, {10, 11, 10}} {
		if _, err := gammaLengths(defaultConfig(), 3, bad.mean, bad.lo, bad.hi); err == nil {
			t.Errorf("gammaLengths(mean=%d, [%d,%d]) succeeded", bad.mean, bad.lo, bad.hi)
		}
	}
}

func TestGammaMeanProperty(t *testing.T) {
	// Normalised, unclamped: |mean − L| ≤ 0.5 token for every B (rounding moves each value by
	// at most 0.5, so the mean too).
	for _, k := range []float64{0.3, 0.9, 3} {
		for _, L := range []int{1, 7, 1000, 64000} {
			for _, B := range []int{1, 2, 5, 64, 256} {
				ls, err := gammaLengths(config{k, true}, B, L, 0, 1<<40)
				if err != nil {
					t.Fatal(err)
				}
				sum := 0
				for _, v := range ls {
					sum += v
				}
				if d := math.Abs(float64(sum)/float64(B) - float64(L)); d > 0.5 {
					t.Errorf("k=%v L=%d B=%d: mean off by %.3f tokens", k, L, B, d)
				}
			}
		}
	}
}

func TestMemo(t *testing.T) {
	// The memo holds one entry per batch size and gives the same lengths as a fresh sampler.
	s := newSampler(config{K: 0.9, Normalize: true})
	for _, L := range []int{1000, 7919, 64000} {
		for _, n := range []int{1, 7, 64} {
			memo, _ := s.lengths(n, L, 1, 1<<30, nil)
			fresh, _ := gammaLengths(config{K: 0.9, Normalize: true}, n, L, 1, 1<<30)
			if !slices.Equal(memo, fresh) {
				t.Errorf("L=%d n=%d: memo %v, fresh %v", L, n, memo, fresh)
			}
		}
	}
	if len(s.memo) != 3 || s.memoSize != 1+7+64 {
		t.Errorf("memo holds %d sizes, %d values; want 3, 72", len(s.memo), s.memoSize)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, k := range []float64{0, -1, math.Inf(1), math.NaN(), 5e-324, 0.0099, 10001, 1e6} {
		if err := (config{K: k}).validate(); err == nil {
			t.Errorf("k = %v accepted", k)
		}
	}
	for _, k := range []float64{0.01, 0.9, 1e4} {
		if err := (config{K: k, Normalize: true}).validate(); err != nil {
			t.Errorf("k = %v: %v", k, err)
		}
	}
}

// BenchmarkGammaNative64 is the native cost of one cell of batch 64, to compare with
// host/plugin's BenchmarkGammaLengths64 (the same code inside wasm).
func BenchmarkGammaNative64(b *testing.B) {
	for b.Loop() {
		if _, err := gammaLengths(defaultConfig(), 64, 16000, 1, 40000); err != nil {
			b.Fatal(err)
		}
	}
}

func TestQuantilesMatchDistuv(t *testing.T) {
	// The Halley inversion must agree with gonum's distuv.Gamma.Quantile to a relative 1e-13
	// for shapes from very skewed to nearly normal, at every midpoint p of many batch sizes
	// (p from 0.5/4096 to 1 − 0.5/4096) — or, where they differ more, be the better inverse:
	// gonum's own CDF at our x must be closer to p than at distuv's x. That happens only for
	// quantiles below 1e-15 (tiny shapes), which round to 0 tokens and clamp to min anyway.
	worst, better := 0.0, 0
	for _, k := range []float64{minK, 0.05, 0.3, 0.5, 0.9, 1, 1.5, 2, 3.7, 10, 100, 1000, 5000, maxK} {
		q := newQuantiler(k)
		g := distuv.Gamma{Alpha: k, Beta: 1}
		for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 12, 16, 32, 48, 64, 100, 256, 4096} {
			warm := make([]float64, n)
			q.quantiles(warm)
			if !slices.IsSorted(warm) {
				t.Fatalf("k=%v n=%d: quantiles not ascending", k, n)
			}
			for i := range n {
				p := (float64(i) + 0.5) / float64(n)
				want := g.Quantile(p)
				cold := q.quantile(float64(i)+0.5, float64(n))
				for _, got := range []float64{cold, warm[i]} {
					rel := math.Abs(got-want) / want
					if rel <= 1e-13*max(1, 1/k) { // small quantiles of small k: x ∝ p^(1/k) amplifies P's rounding 1/k-fold
						worst = max(worst, rel)
						continue
					}
					if want < 1e-300 && got < 1e-300 { // both underflow: 0 tokens at any mean
						continue
					}
					if resGot, resWant := math.Abs(g.CDF(got)-p), math.Abs(g.CDF(want)-p); resGot <= resWant {
						better++
						continue
					}
					t.Fatalf("k=%v n=%d i=%d: %v (cold %v, warm %v), distuv %v (relative %.3g; CDF residuals %.3g, %.3g)", k, n, i, got, cold, warm[i], want, rel, math.Abs(g.CDF(got)-p), math.Abs(g.CDF(want)-p))
				}
			}
		}
	}
	t.Logf("worst relative difference to distuv: %.3g; %d tiny quantiles where ours is the better inverse (cold and warm-started)", worst, better)
}

func TestRoundClampIsMathRound(t *testing.T) {
	vs := []float64{0, 0.49999999999999994, 0.5, 1.5, 2.5, 2.4999999999999996, 1e6 + 0.5, 4503599627370495.5, 1 << 53, 123.456}
	for i := range 2000 {
		vs = append(vs, float64(i)/8, math.Nextafter(float64(i)+0.5, 0), math.Nextafter(float64(i)+0.5, 1e9))
	}
	for _, v := range vs {
		for _, r := range [][2]int{{0, 1 << 60}, {1, 1 << 60}, {3, 40}} {
			want := min(max(int(math.Round(v)), r[0]), r[1])
			if got := roundClamp(v, r[0], r[1], float64(r[1])); got != want {
				t.Errorf("roundClamp(%v, %d, %d) = %d, math.Round gives %d", v, r[0], r[1], got, want)
			}
		}
	}
}
