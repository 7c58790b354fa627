package plugin

import (
	"context"
	"testing"

	"github.com/genload/genload/host/internal/testplugins"
)

// BenchmarkLoadWarm measures what a genload process pays to start using gamma when the
// compilation cache on disk is warm: NewHost, compile (from the cache), instantiate,
// _initialize, info, init, Close.
func BenchmarkLoadWarm(b *testing.B) {
	ctx := context.Background()
	dir, cache := testplugins.Dir(b), testplugins.CacheDir(b)
	warm := func() {
		h, err := NewHost(ctx, Options{Dir: dir, CacheDir: cache})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := h.LoadLengths(ctx, "gamma", nil); err != nil {
			b.Fatal(err)
		}
		_ = h.Close(ctx)
	}
	warm() // fill the cache
	b.ResetTimer()
	for b.Loop() {
		warm()
	}
}

// uncached returns p without its result cache, so every call reaches the guest.
func uncached(p *LengthsPlugin) *LengthsPlugin { return &LengthsPlugin{in: p.in} }

func benchLengths(b *testing.B, name string, n int) {
	ctx := context.Background()
	p, err := testHost(b).LoadLengths(ctx, name, nil)
	if err != nil {
		b.Fatal(err)
	}
	p = uncached(p)
	for b.Loop() {
		if _, err := p.Lengths(ctx, n, 16000, 1, 40000); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGammaLengths64 is one gamma cell of batch 64 after the first (the plugin memoises
// the 64 standard quantiles; each call rescales them to the cell).
func BenchmarkGammaLengths64(b *testing.B) { benchLengths(b, "gamma", 64) }

// BenchmarkUniformLengths64 is the call overhead of a trivial distribution, batch 64.
func BenchmarkUniformLengths64(b *testing.B) { benchLengths(b, "uniform", 64) }

// BenchmarkRoute64 routes 64 prompts over 8 workers with router-rr.
func BenchmarkRoute64(b *testing.B) {
	ctx := context.Background()
	r, err := testHost(b).LoadRouter(ctx, "router-rr", nil)
	if err != nil {
		b.Fatal(err)
	}
	lens := make([]int, 64)
	for i := range lens {
		lens[i] = 1000 + i
	}
	for b.Loop() {
		if _, err := r.Route(ctx, lens, 8); err != nil {
			b.Fatal(err)
		}
	}
}

// defaultMatrix calls p for all 91 cells of the default matrix (L ∈ {1000 … 64000} ×
// B ∈ {1 … 8, 12, 16, 32, 48, 64}).
func defaultMatrix(b *testing.B, p *LengthsPlugin) {
	ctx := context.Background()
	for _, L := range []int{1000, 2000, 4000, 8000, 16000, 32000, 64000} {
		for _, B := range []int{1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 32, 48, 64} {
			if _, err := p.Lengths(ctx, B, L, 1, 1<<20); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkDefaultMatrixGammaCold is the plugin overhead of one run's lengths: a fresh gamma
// instance (its load not timed; see BenchmarkLoadWarm) computes all 91 cells, inverting the
// gamma CDF for each of the 13 batch sizes once.
func BenchmarkDefaultMatrixGammaCold(b *testing.B) {
	ctx := context.Background()
	h := testHost(b)
	for b.Loop() {
		b.StopTimer()
		p, err := h.LoadLengths(ctx, "gamma", nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		defaultMatrix(b, p)
		b.StopTimer()
		_ = p.Close(ctx)
		b.StartTimer()
	}
}

// BenchmarkDefaultMatrixPluginsCold is every plugin call one run of the default matrix makes,
// on fresh instances (loads not timed; see BenchmarkLoadWarm), with the host's result cache as
// in a run: "array" mode (the default) asks gamma for the 91 cells' lengths; "routed" mode
// also routes each cell's B prompts twice (warm-up and measurement) with router-rr over 4
// workers. make perf compares it with building the same matrix's prompts from cold (goal:
// < 1 %).
func BenchmarkDefaultMatrixPluginsCold(b *testing.B) {
	ctx := context.Background()
	h := testHost(b)
	for _, routed := range []bool{false, true} {
		name := "array"
		if routed {
			name = "routed"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				p, err := h.LoadLengths(ctx, "gamma", nil)
				if err != nil {
					b.Fatal(err)
				}
				r, err := h.LoadRouter(ctx, "router-rr", nil)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				for _, L := range []int{1000, 2000, 4000, 8000, 16000, 32000, 64000} {
					for _, B := range []int{1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 32, 48, 64} {
						lens, err := p.Lengths(ctx, B, L, 50, 130972)
						if err != nil {
							b.Fatal(err)
						}
						for range 2 {
							if !routed {
								break
							}
							if _, err := r.Route(ctx, lens, 4); err != nil {
								b.Fatal(err)
							}
						}
					}
				}
				b.StopTimer()
				_ = p.Close(ctx)
				_ = r.Close(ctx)
				b.StartTimer()
			}
		})
	}
}

// BenchmarkDefaultMatrixGammaWarm repeats the 91 cells on one instance with the host's result
// cache bypassed: the per-call cost once the plugin's quantile memo is filled.
func BenchmarkDefaultMatrixGammaWarm(b *testing.B) {
	p, err := testHost(b).LoadLengths(context.Background(), "gamma", nil)
	if err != nil {
		b.Fatal(err)
	}
	p = uncached(p)
	for b.Loop() {
		defaultMatrix(b, p)
	}
}

// BenchmarkRouteComplete64 routes 64 prompts and reports their 64 completions in one batch
// (the pattern of a stateful policy such as least-outstanding), using the badrouter test plugin,
// which declares the "completions" capability.
func BenchmarkRouteComplete64(b *testing.B) {
	ctx := context.Background()
	wasm := testplugins.Build(b, "./host/internal/testplugins/testdata/badrouter", testplugins.Options{})
	r, err := testHost(b).LoadRouter(ctx, wasm, nil)
	if err != nil {
		b.Fatal(err)
	}
	lens := make([]int, 64)
	done := make([]Completion, 64)
	for i := range lens {
		lens[i] = 1000 + i
		done[i] = Completion{Worker: i % 8, PromptLen: lens[i], CompletionTokens: 100}
	}
	for b.Loop() {
		if _, err := r.Route(ctx, lens, 8); err != nil {
			b.Fatal(err)
		}
		if err := r.Complete(ctx, done); err != nil {
			b.Fatal(err)
		}
	}
}
