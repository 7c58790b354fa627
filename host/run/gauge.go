package run

import (
	"strings"

	"github.com/genload/genload/host/scrape/metrics"
	"github.com/genload/genload/host/warning"
)

// gaugeHistory holds, over a run's cells so far, the cells whose running-requests gauge read
// one value in every sample: a gauge that reads the same value in cells of different B does
// not count the requests the server runs (as the step-time metric that stays put while the
// forward pass moves, metricHistory).
type gaugeHistory struct {
	points []gaugePoint
}

// gaugePoint is a cell whose gauge read value in every one of its samples.
type gaugePoint struct {
	cell         string
	value, batch int
}

// observe adds the cell of batch size b and its /metrics (nil: none; several servers: not
// judged here, each server against its share) to h and, when its gauge read one value above b
// in all of at least metrics.MinSamples samples, as it did in an earlier cell of another B,
// marks the occupancy Fixed (Judge then gives no verdict) and returns the metric-constant
// warning. A value at or below B is left alone: a server capped at its capacity reads it in
// every larger cell.
func (h *gaugeHistory) observe(key string, b int, m *metrics.CellMetrics) (w warning.Warning, ok bool) {
	if m == nil || len(m.Servers) > 1 {
		return w, false
	}
	o := &m.Occupancy
	if o.Samples < metrics.MinSamples || o.Max <= 0 || o.Mean != float64(o.Max) {
		return w, false // not one value in every sample (all are ≤ Max, so Mean = Max says so)
	}
	if o.Max <= b {
		// at or below B: a server that runs at most its capacity reads so in every cell of a
		// larger B, truthfully
		return w, false
	}
	h.points = append(h.points, gaugePoint{cell: key, value: o.Max, batch: b})
	var cells []string
	lo, hi := b, b
	for _, q := range h.points {
		if q.value == o.Max {
			cells = append(cells, q.cell)
			lo, hi = min(lo, q.batch), max(hi, q.batch)
		}
	}
	if lo == hi {
		return w, false
	}
	o.Fixed = true
	return warning.Newf(warning.MetricConstant, "server metric does not vary with load: the running-requests gauge reads %s in every sample of %d cells (%s) whose B spans %d–%d, above each B: the server reports a fixed value, not the requests it runs, and batch attainment and other load are not judged from it (unless other load kept the server full at %s throughout: the cells' TTFT would then show their queueing)",
		warning.Thousands(o.Max), len(cells), strings.Join(cells, "; "), lo, hi, warning.Thousands(o.Max)), true
}
