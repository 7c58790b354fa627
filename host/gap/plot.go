package gap

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/genload/genload/host/report"
)

// Plot draws every compared forward pass, observed (y) against predicted (x) per-forward
// latency on log axes, one colour per occupancy band, with the line y = x: points above it
// ran slower than the matrix model predicts. The title gives the median relative error and
// its P90.
func (r *Result) Plot() (*report.Chart, error) {
	if len(r.Forwards) == 0 {
		return nil, fmt.Errorf("plot: no forward pass")
	}
	p := plot.New()
	ch := &report.Chart{Plot: p, Legend: plot.NewLegend()}
	ch.Legend.Top, ch.Legend.Left = true, true
	ch.Legend.XOffs, ch.Legend.YOffs = vg.Points(10), -vg.Points(12)
	ch.Legend.TextStyle.Font.Size = vg.Points(10)
	ch.Legend.ThumbnailWidth = vg.Points(18)
	ch.Legend.Padding = vg.Points(4)
	p.Title.Text = fmt.Sprintf("Observed against predicted per-forward latency (%d decode passes)\nmedian rel. error %+.1f %% · P90 |rel. error| %.1f %% · model %s",
		r.All.N, 100*r.All.MedianRel, 100*r.All.P90AbsRel, r.Model)
	p.Title.TextStyle.Font.Size = vg.Points(12)
	p.X.Label.Text = "predicted by the matrix model (ms, log scale)"
	p.Y.Label.Text = "observed in the replay (ms, log scale)"
	lo, hi := math.Inf(1), 0.0
	for _, f := range r.Forwards {
		lo = min(lo, f.ObservedMs, f.PredictedMs)
		hi = max(hi, f.ObservedMs, f.PredictedMs)
	}
	lo, hi = max(lo/1.2, 1e-6), hi*1.2
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Scale, ax.Tick.Marker = plot.LogScale{}, report.LogTicks125{}
		ax.Min, ax.Max = lo, hi
	}
	for i, b := range r.Bands {
		var xy plotter.XYs
		for _, f := range r.Forwards {
			if f.Batch >= b.Lo && f.Batch <= b.Hi {
				xy = append(xy, plotter.XY{X: f.PredictedMs, Y: f.ObservedMs})
			}
		}
		s, err := plotter.NewScatter(xy)
		if err != nil {
			return nil, err
		}
		s.GlyphStyle.Color = plotutil.Color(i)
		s.GlyphStyle.Shape = draw.CircleGlyph{}
		s.GlyphStyle.Radius = vg.Points(1.6)
		p.Add(s)
		label := fmt.Sprintf("B %s (%d, %+.0f %%)", b.Name, b.N, 100*b.MedianRel)
		ch.Legend.Add(label, s)
		ch.Labels = append(ch.Labels, label)
	}
	diag, err := plotter.NewLine(plotter.XYs{{X: lo, Y: lo}, {X: hi, Y: hi}})
	if err != nil {
		return nil, err
	}
	diag.Color = color.Gray{Y: 90}
	diag.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(diag)
	ch.Legend.Add("observed = predicted", diag)
	ch.Labels = append(ch.Labels, "observed = predicted")
	p.Add(plotter.NewGrid())
	return ch, nil
}
