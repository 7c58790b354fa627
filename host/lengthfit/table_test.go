package lengthfit

import (
	"bytes"
	"context"
	"math"
	"slices"
	"sort"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/host/plugin"
)

func TestTableIsTheSamplesQuantiles(t *testing.T) {
	xs := gammaSample(0.9, 3000, 2000, 11)
	for i := range xs {
		xs[i] = math.Ceil(xs[i]) // token counts
	}
	sort.Float64s(xs)
	tb := NewTable(xs, 16)
	if len(tb.Edges) != 17 || tb.Edges[0] != xs[0] || tb.Edges[16] != xs[len(xs)-1] {
		t.Fatalf("edges %v (min %v max %v)", tb.Edges, xs[0], xs[len(xs)-1])
	}
	sum := 0.0
	for j, c := range tb.Counts {
		sum += c
		if c < 120 || c > 130 { // 2000/16 = 125, give or take the points on an edge
			t.Errorf("bin %d holds %v lengths, want about 125", j, c)
		}
	}
	if sum != 2000 {
		t.Errorf("counts sum to %v, want 2000", sum)
	}
	// The CDF at an edge is the share of lengths below it; Quantile inverts the CDF.
	for j, e := range tb.Edges[:16] {
		below := float64(sort.SearchFloat64s(xs, e))
		if got := tb.CDF(e) * 2000; math.Abs(got-below) > 1e-9 {
			t.Errorf("CDF(edge %d = %v)·n = %v, want %v", j, e, got, below)
		}
	}
	for _, p := range []float64{0.01, 0.3, 0.5, 0.77, 0.99} {
		if got := tb.CDF(tb.Quantile(p)); math.Abs(got-p) > 1e-12 {
			t.Errorf("CDF(Quantile(%v)) = %v", p, got)
		}
	}
}

func TestEqualLengthsMergeEdges(t *testing.T) {
	// Eight lengths in eight bins: the nearest-rank quantiles at j/8 are 10 (six times), 20, 30.
	xs := []float64{10, 10, 10, 10, 10, 10, 20, 30}
	tb := NewTable(xs, 8)
	if !slices.Equal(tb.Edges, []float64{10, 20, 30}) || !slices.Equal(tb.Counts, []float64{6, 2}) {
		t.Errorf("edges %v counts %v, want [10 20 30] [6 2]", tb.Edges, tb.Counts)
	}
}

// The table -o writes is read by the SDK's empirical plugin: decoded from TOML as bench.toml's
// [lengths.config] is, loaded and asked for a cell, it gives the table's quantiles at
// (i + 0.5)/B rescaled to the cell's mean — the plugin's documented rule, computed here from
// the table.
func TestTheEmpiricalPluginReadsTheTable(t *testing.T) {
	xs := gammaSample(0.9, 3000, 1500, 12)
	for i := range xs {
		xs[i] = math.Ceil(xs[i])
	}
	sort.Float64s(xs)
	tb := NewTable(xs, 24)
	var buf bytes.Buffer
	if err := tb.WriteTOML(&buf, []string{"test"}); err != nil {
		t.Fatal(err)
	}
	var file struct {
		Lengths struct {
			Plugin string         `toml:"plugin"`
			Config map[string]any `toml:"config"`
		} `toml:"lengths"`
	}
	if _, err := toml.Decode(buf.String(), &file); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if file.Lengths.Plugin != EmpiricalWasm {
		t.Errorf("plugin %q", file.Lengths.Plugin)
	}
	wasm := testplugins.Build(t, "./sdk/examples/empirical", testplugins.Options{})
	ctx := context.Background()
	h, err := plugin.NewHost(ctx, plugin.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	p, err := h.LoadLengths(ctx, wasm, file.Lengths.Config)
	if err != nil {
		t.Fatal(err)
	}
	const B, L = 32, 5000
	got, err := p.Lengths(ctx, B, L, 1, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	q := make([]float64, B)
	sum := 0.0
	for i := range q {
		q[i] = tb.Quantile((float64(i) + 0.5) / B)
		sum += q[i]
	}
	for i := range q {
		want := int(math.Round(q[i] * L * B / sum))
		if d := got[i] - want; d < -1 || d > 1 { // float32 vs float64 rounding at .5
			t.Errorf("length %d = %d, want %d", i, got[i], want)
		}
	}
}
