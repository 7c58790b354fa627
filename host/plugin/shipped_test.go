package plugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/genload/genload/sdk/abi"
)

// nativeGamma computes gamma's lengths natively, independently of the plugin code: midpoint
// quantiles of Gamma(k, θ = L/k), rescaled to mean L if normalize, rounded half away from zero,
// clamped to [lo, hi].
func nativeGamma(k float64, normalize bool, n, mean, lo, hi int) []int {
	g := distuv.Gamma{Alpha: k, Beta: k / float64(mean)}
	q := make([]float64, n)
	sum := 0.0
	for i := range q {
		q[i] = g.Quantile((float64(i) + 0.5) / float64(n))
		sum += q[i]
	}
	out := make([]int, n)
	for i, v := range q {
		if normalize {
			v = v * float64(mean) * float64(n) / sum
		}
		out[i] = min(max(int(math.Round(v)), lo), hi)
	}
	return out
}

func loadLengths(t *testing.T, name string, cfg map[string]any) *LengthsPlugin {
	t.Helper()
	p, err := testHost(t).LoadLengths(context.Background(), name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestGammaEqualsNativeQuantiles(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		k       float64
		n, mean int
		lo, hi  int
		want    []int // nil: compare with nativeGamma only
	}{
		// sdk/ABI.md §9: quantiles 111.22, 436.84, 960.35, 2123.67 (mean 908.02) × 1000/908.02.
		{"abi-example", 0.9, 4, 1000, 1, 40860, []int{122, 481, 1058, 2339}},
		// B = 1: the only quantile is rescaled to L itself.
		{"single", 0.9, 1, 1000, 1, 1 << 30, []int{1000}},
		{"L2000-B8", 0.9, 8, 2000, 1, 1 << 30, nil},
		{"L16000-B64", 0.9, 64, 16000, 1, 1 << 30, nil},
		{"L64000-B48-k0.5", 0.5, 48, 64000, 1, 1 << 30, nil},
		{"L4000-B12-k2", 2, 12, 4000, 1, 1 << 30, nil},
		// The ends of the allowed shapes (quantile inversion in wasm vs distuv natively).
		{"L64000-B4096-k1e4", 1e4, 4096, 64000, 1, 1 << 30, nil},
		{"L64000-B512-k0.01", 0.01, 512, 64000, 1, 1 << 30, nil},
		// Clamped: quantiles of L = 8000 run from ~100 to ~36000 for B = 32.
		{"L8000-B32-clamped", 0.9, 32, 8000, 500, 20000, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := loadLengths(t, "gamma", map[string]any{"k": c.k})
			got, err := p.Lengths(ctx, c.n, c.mean, c.lo, c.hi)
			if err != nil {
				t.Fatal(err)
			}
			native := nativeGamma(c.k, true, c.n, c.mean, c.lo, c.hi)
			if !slices.Equal(got, native) {
				t.Errorf("wasm %v\nnative %v", got, native)
			}
			if c.want != nil && !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
			if !slices.IsSorted(got) {
				t.Errorf("quantiles not ascending: %v", got)
			}
		})
	}
}

func TestGammaEqualsNativeOnAWideMatrix(t *testing.T) {
	// The shipped gamma.wasm (its own Halley inversion, memoised per batch size) against
	// distuv natively on every cell of a matrix wider than the default one: 9 shapes from the
	// smallest to the largest allowed, with and without normalisation, L up to 128k, B up to
	// 512 — 3,240 cells, every length equal.
	ctx := context.Background()
	cells := 0
	for _, k := range []float64{0.01, 0.3, 0.5, 0.9, 1, 2, 5, 100, 1e4} {
		for _, norm := range []bool{true, false} {
			p := uncached(loadLengths(t, "gamma", map[string]any{"k": k, "normalize": norm}))
			for _, L := range []int{1, 3, 100, 1000, 2000, 4000, 7919, 8000, 16000, 32000, 64000, 128000} {
				for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 32, 48, 64, 100, 512} {
					got, err := p.Lengths(ctx, n, L, 1, 1<<30)
					if err != nil {
						t.Fatal(err)
					}
					if want := nativeGamma(k, norm, n, L, 1, 1<<30); !slices.Equal(got, want) {
						t.Fatalf("k=%v normalize=%v L=%d n=%d:\n wasm %v\nnative %v", k, norm, L, n, got, want)
					}
					cells++
				}
			}
			_ = p.Close(ctx)
		}
	}
	if cells != 9*2*12*15 {
		t.Errorf("checked %d cells", cells)
	}
}

func TestGammaUnclampedMeanWithinHalfPercent(t *testing.T) {
	// The default matrix of bench.toml: every cell's realised mean must be within 0.5 % of L
	// (normalisation makes the unrounded mean exactly L; rounding moves it by ≤ 0.5 token).
	ctx := context.Background()
	p := loadLengths(t, "gamma", nil)
	for _, L := range []int{1000, 2000, 4000, 8000, 16000, 32000, 64000} {
		for _, B := range []int{1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 32, 48, 64} {
			ls, err := p.Lengths(ctx, B, L, 1, 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			sum := 0
			for _, v := range ls {
				sum += v
			}
			mean := float64(sum) / float64(B)
			if rel := math.Abs(mean-float64(L)) / float64(L); rel > 0.005 || math.Abs(mean-float64(L)) > 0.5 {
				t.Errorf("L=%d B=%d: mean %.2f, off by %.3f %%", L, B, mean, 100*rel)
			}
		}
	}
}

func TestGammaNormalizeOff(t *testing.T) {
	// Without normalisation B = 1 gives the median of Gamma(0.9, θ = 1000/0.9), about 0.66 L (663 tokens):
	// the reason normalisation is the default.
	ctx := context.Background()
	p := loadLengths(t, "gamma", map[string]any{"k": 0.9, "normalize": false})
	got, err := p.Lengths(ctx, 1, 1000, 1, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	want := nativeGamma(0.9, false, 1, 1000, 1, 1<<30)
	if !slices.Equal(got, want) || got[0] != 663 {
		t.Errorf("got %v, want %v (663)", got, want)
	}
}

func TestGammaClampHolds(t *testing.T) {
	ctx := context.Background()
	p := loadLengths(t, "gamma", nil)
	// L = 1000, B = 64: the smallest quantile is ~6 tokens, the largest ~4700.
	ls, err := p.Lengths(ctx, 64, 1000, 100, 3000)
	if err != nil {
		t.Fatal(err)
	}
	if ls[0] != 100 || ls[63] != 3000 {
		t.Errorf("ends %d and %d, want clamped to 100 and 3000", ls[0], ls[63])
	}
	for i, v := range ls {
		if v < 100 || v > 3000 {
			t.Errorf("length %d at %d outside [100, 3000]", v, i)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	ctx := context.Background()
	h := testHost(t)
	cases := []struct {
		plugin string
		cfg    map[string]any
		want   string
	}{
		{"gamma", map[string]any{"kk": 0.9}, `status 1 (bad input): config: json: unknown field "kk"`},
		{"gamma", map[string]any{"k": -1.0}, "status 1 (bad input): config: k = -1, want a shape in [0.01, 10000]"},
		{"gamma", map[string]any{"k": "big"}, "status 1 (bad input): config: json: cannot unmarshal string"},
		{"uniform", map[string]any{"mean": 3}, `unknown field "mean"`},
		{"router-rr", map[string]any{"start": -1}, "start = -1, want >= 0"},
	}
	for _, c := range cases {
		_, err := h.LoadLengths(ctx, c.plugin, c.cfg)
		if c.plugin == "router-rr" {
			_, err = h.LoadRouter(ctx, c.plugin, c.cfg)
		}
		var pe *Error
		if !errors.As(err, &pe) || pe.Export != abi.Init || pe.Plugin != c.plugin || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: got %v, want *Error [genload_init] containing %q", c.plugin, c.cfg, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("message spans lines: %q", err)
		}
	}
}

func TestUniform(t *testing.T) {
	ctx := context.Background()
	p := loadLengths(t, "uniform", nil)
	cases := []struct {
		n, mean, lo, hi int
		want            []int
	}{
		{5, 700, 1, 1000, []int{700, 700, 700, 700, 700}},
		{3, 700, 1, 600, []int{600, 600, 600}}, // clamped to max
		{2, 50, 64, 600, []int{64, 64}},        // clamped to min
		{0, 50, 1, 600, []int{}},
	}
	for _, c := range cases {
		got, err := p.Lengths(ctx, c.n, c.mean, c.lo, c.hi)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Lengths(%d, %d, %d, %d) = %v, %v; want %v", c.n, c.mean, c.lo, c.hi, got, err, c.want)
		}
	}
	if info := p.Info(); info.Name != "uniform" || info.Kind != abi.KindLengths || !info.HasCap(abi.CapPure) {
		t.Errorf("info %+v", info)
	}
}

func TestRouterRoundRobin(t *testing.T) {
	ctx := context.Background()
	h := testHost(t)
	r, err := h.LoadRouter(ctx, "router-rr", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Counter c starts at 0 and advances by n per call: worker = (c + i) mod W.
	steps := []struct {
		n, workers int
		want       []int
	}{
		{3, 4, []int{0, 1, 2}},       // c = 0
		{3, 4, []int{3, 0, 1}},       // c = 3
		{5, 2, []int{0, 1, 0, 1, 0}}, // c = 6: 6 mod 2 = 0
		{4, 3, []int{2, 0, 1, 2}},    // c = 11: 11 mod 3 = 2
		{0, 3, []int{}},              // c = 15, no prompts
		{2, 1, []int{0, 0}},          // one worker
		{1, 5, []int{2}},             // c = 17: 17 mod 5 = 2
	}
	for i, s := range steps {
		lens := make([]int, s.n)
		for j := range lens {
			lens[j] = 100 * (j + 1)
		}
		got, err := r.Route(ctx, lens, s.workers)
		if err != nil || !slices.Equal(got, s.want) {
			t.Errorf("step %d: Route(n=%d, W=%d) = %v, %v; want %v", i, s.n, s.workers, got, err, s.want)
		}
	}
	r2, err := h.LoadRouter(ctx, "router-rr", map[string]any{"start": 6})
	if err != nil {
		t.Fatal(err)
	}
	// start = 6, W = 4: 6 mod 4 = 2.
	if got, err := r2.Route(ctx, []int{1, 1, 1}, 4); err != nil || !slices.Equal(got, []int{2, 3, 0}) {
		t.Errorf("start=6: got %v, %v; want [2 3 0]", got, err)
	}
	// router-rr has no "completions" capability: Complete is a no-op.
	if err := r2.Complete(ctx, []Completion{{Worker: 1, PromptLen: 10}}); err != nil {
		t.Error(err)
	}
}

func TestHostValidatesArguments(t *testing.T) {
	ctx := context.Background()
	p := loadLengths(t, "uniform", nil)
	for _, c := range []struct{ n, mean, lo, hi int }{
		{-1, 100, 1, 10}, {abi.MaxBatch + 1, 100, 1, 10}, {4, 0, 1, 10}, {4, 100, 0, 10}, {4, 100, 20, 10},
	} {
		if _, err := p.Lengths(ctx, c.n, c.mean, c.lo, c.hi); err == nil || !strings.Contains(err.Error(), "[genload_lengths]") {
			t.Errorf("Lengths%v: got %v, want an error naming genload_lengths", c, err)
		}
	}
	r, err := testHost(t).LoadRouter(ctx, "router-rr", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Route(ctx, []int{1}, 0); err == nil {
		t.Error("Route with 0 workers succeeded")
	}
	if _, err := r.Route(ctx, []int{-5}, 2); err == nil {
		t.Error("Route with a negative prompt length succeeded")
	}
}

func TestInfoAndDeterminism(t *testing.T) {
	ctx := context.Background()
	p := loadLengths(t, "gamma", nil)
	info := p.Info()
	b, err := os.ReadFile(info.Path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if info.Name != "gamma" || info.Version != "1.0.0" || info.Kind != abi.KindLengths || info.ABIMinor != 0 ||
		!slices.Equal(info.Caps, []string{"pure"}) || info.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("info %+v", info)
	}
	// A second host with its own instance gives the same bytes.
	h2, err := NewHost(ctx, Options{Dir: testHost(t).Options().Dir, CacheDir: testHost(t).Options().CacheDir, Seed: testSeed})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close(ctx)
	p2, err := h2.LoadLengths(ctx, "gamma", nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := p.Lengths(ctx, 48, 32000, 1, 1<<30)
	c, _ := p2.Lengths(ctx, 48, 32000, 1, 1<<30)
	if !slices.Equal(a, c) || len(a) != 48 {
		t.Errorf("two instances differ:\n%v\n%v", a, c)
	}
}

func TestConcurrentCallsAreSerialised(t *testing.T) {
	// Instances are not goroutine-safe; the mutex must make 8 goroutines × 20 calls all succeed
	// with identical results.
	ctx := context.Background()
	h := testHost(t)
	p, err := h.LoadLengths(ctx, "uniform", nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				n := 1 + (g+i)%64
				ls, err := p.Lengths(ctx, n, 500+g, 1, 1<<20)
				if err != nil {
					errs <- err
					return
				}
				if len(ls) != n || ls[n-1] != 500+g {
					errs <- errors.New("wrong result under concurrency")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
