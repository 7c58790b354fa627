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

func TestMemoIsBitIdenticalToDistuv(t *testing.T) {
	// q_i = y_i / (k/L) with y_i memoised at rate 1 must equal distuv.Gamma{k, k/L}.Quantile
	// exactly (not just after rounding), for several cells sharing one memo.
	s := newSampler(config{K: 0.9, Normalize: true})
	for _, L := range []int{1000, 7919, 64000} {
		for _, n := range []int{1, 7, 64} {
			y := s.standard(n)
			g := distuv.Gamma{Alpha: 0.9, Beta: 0.9 / float64(L)}
			for i := range n {
				want := g.Quantile((float64(i) + 0.5) / float64(n))
				if got := y[i] / (0.9 / float64(L)); got != want {
					t.Fatalf("L=%d n=%d i=%d: %v != %v", L, n, i, got, want)
				}
			}
			memo, _ := s.lengths(n, L, 1, 1<<30)
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
	for _, k := range []float64{0, -1, math.Inf(1), math.NaN()} {
		if err := (config{K: k}).validate(); err == nil {
			t.Errorf("k = %v accepted", k)
		}
	}
	if err := defaultConfig().validate(); err != nil {
		t.Error(err)
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
