package gap

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/genload/genload/host/chart"
)

// Plot draws every compared forward pass, observed (y) against predicted (x) per-forward
// latency on log axes, one colour per occupancy band, with the line y = x: points above it
// ran slower than the matrix model predicts. The title gives the median relative error and
// its P90.
func (r *Result) Plot() (*chart.Chart, error) {
	if len(r.Forwards) == 0 {
		return nil, fmt.Errorf("plot: no forward pass")
	}
	p := chart.NewPlot(fmt.Sprintf("Observed against predicted per-forward latency (%d decode passes)\nmedian rel. error %+.1f %% · P90 |rel. error| %.1f %% · model %s",
		r.All.N, 100*r.All.MedianRel, 100*r.All.P90AbsRel, r.Model), "predicted by the matrix model (ms, log scale)", "observed in the replay (ms, log scale)")
	ch := chart.New(p)
	lo, hi := math.Inf(1), 0.0
	for _, f := range r.Forwards {
		lo = min(lo, f.ObservedMs, f.PredictedMs)
		hi = max(hi, f.ObservedMs, f.PredictedMs)
	}
	lo, hi = max(lo/1.2, 1e-6), hi*1.2
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Scale, ax.Tick.Marker = plot.LogScale{}, chart.LogTicks125{}
		ax.Min, ax.Max = lo, hi
	}
	for i, b := range r.Bands {
		var xy plotter.XYs
		for _, f := range r.Forwards {
			if f.Batch >= b.Lo && f.Batch <= b.Hi {
				xy = append(xy, plotter.XY{X: f.PredictedMs, Y: f.ObservedMs})
			}
		}
		s, err := chart.AddMarkers(p, xy, i, false)
		if err != nil {
			return nil, err
		}
		s.Shape, s.Radius = draw.CircleGlyph{}, vg.Points(1.6) // many small points, one shape
		ch.Add(fmt.Sprintf("B %s (%d, %+.0f %%)", b.Name, b.N, 100*b.MedianRel), s)
	}
	diag, err := chart.AddGuide(p, plotter.XYs{{X: lo, Y: lo}, {X: hi, Y: hi}})
	if err != nil {
		return nil, err
	}
	ch.Add("observed = predicted", diag)
	return ch, nil
}
