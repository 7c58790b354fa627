package plugin

import (
	"context"
	"slices"
	"testing"

	"github.com/genload/genload/host/internal/testplugins"
)

// TestEmpiricalExample loads sdk/examples/empirical built to wasm with a production-style
// histogram config given as TOML-decoded values (int64 arrays), as bench.toml would pass it.
func TestEmpiricalExample(t *testing.T) {
	ctx := context.Background()
	wasm := testplugins.Build(t, "./sdk/examples/empirical", testplugins.Options{})
	h := interpHost(t)
	cfg := map[string]any{"edges": []any{int64(0), int64(100), int64(300)}, "counts": []any{int64(1), int64(3)}}
	p, err := h.LoadLengths(ctx, wasm, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Quantiles 50, 133.33, 200, 266.67 (mean 162.5) rescaled to mean 1000 (see its main_test.go).
	got, err := p.Lengths(ctx, 4, 1000, 1, 1<<20)
	if err != nil || !slices.Equal(got, []int{308, 821, 1231, 1641}) {
		t.Errorf("got %v, %v; want [308 821 1231 1641]", got, err)
	}
	// Sample mode uses the per-cell seed: the same host seed gives the same lengths in a new
	// instance; clamping to [1, 1500] holds.
	cfg["mode"] = "sample"
	a, err := h.LoadLengths(ctx, wasm, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.LoadLengths(ctx, wasm, cfg)
	if err != nil {
		t.Fatal(err)
	}
	la, errA := a.Lengths(ctx, 32, 1000, 1, 1500)
	lb, errB := b.Lengths(ctx, 32, 1000, 1, 1500)
	if errA != nil || errB != nil || !slices.Equal(la, lb) || slices.Max(la) > 1500 {
		t.Errorf("sample: %v %v / %v %v", la, errA, lb, errB)
	}
	// A typo in the histogram keys is caught at load.
	if _, err := h.LoadLengths(ctx, wasm, map[string]any{"edge": []any{1, 2}}); err == nil {
		t.Error("config key edge accepted")
	}
}
