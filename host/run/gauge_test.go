package run

import (
	"testing"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/scrape/metrics"
	"github.com/genload/genload/host/warning"
)

// A running-requests gauge fixed at 64: the first cell cannot tell it (other load, as the
// gauge says), from the second cell of another B on it is a constant metric and judges no
// cell; a gauge that moves with B is never constant.
func TestGaugeFixedOverCellsIsAConstantMetric(t *testing.T) {
	var h gaugeHistory
	cell := func(key string, b int, samples []int) (*results.Cell, warning.Warning, bool) {
		m := &metrics.CellMetrics{Occupancy: metrics.Occupy(samples, b)}
		w, ok := h.observe(key, b, m)
		return &results.Cell{Figures: &measure.Figures{}, Server: m}, w, ok
	}
	attain := func(rec *results.Cell, b int) []warning.Warning {
		ws, _ := attainmentWarnings(config.Default(), matrix.Cell{SeqLen: 1000, Batch: b}, rec)
		return ws
	}
	rec, _, ok := cell("L=1000,B=1", 1, []int{64, 64, 64, 64, 64})
	if ok || rec.Server.Occupancy.Fixed {
		t.Fatal("one cell cannot tell a fixed gauge")
	}
	if ws := attain(rec, 1); len(ws) != 1 || ws[0].Name != warning.OtherLoad {
		t.Fatalf("first cell: %v", ws)
	}
	rec, w, ok := cell("L=1000,B=4", 4, []int{64, 64, 64, 64})
	want := "server metric does not vary with load: the running-requests gauge reads 64 in every sample of 2 cells (L=1000,B=1; L=1000,B=4) whose B spans 1–4, above each B: the server reports a fixed value, not the requests it runs, and batch attainment and other load are not judged from it (unless other load kept the server full at 64 throughout: the cells' TTFT would then show their queueing)"
	if !ok || w.Name != warning.MetricConstant || w.Text != want || !rec.Server.Occupancy.Fixed {
		t.Fatalf("second cell: %v %q fixed %v", ok, w.Text, rec.Server.Occupancy.Fixed)
	}
	if ws := attain(rec, 4); len(ws) != 0 {
		t.Fatalf("a fixed gauge judged: %v", ws)
	}
	// the same B again, or a gauge that varies: nothing said
	h = gaugeHistory{}
	cell("L=1000,B=4", 4, []int{6, 6, 6})
	if _, _, ok := cell("L=2000,B=4", 4, []int{6, 6, 6}); ok {
		t.Fatal("one B twice is not a constant gauge")
	}
	if _, _, ok := cell("L=1000,B=16", 16, []int{4, 16, 16, 16}); ok {
		t.Fatal("a gauge that moved is not constant")
	}
	// a server capped at 8 sequences reads 8 at B = 8 and at B = 16: its true capacity
	h = gaugeHistory{}
	cell("L=200,B=8", 8, []int{8, 8, 8, 8})
	if _, _, ok := cell("L=200,B=16", 16, []int{8, 8, 8, 8}); ok {
		t.Fatal("a capacity cap is not a constant gauge")
	}
}
