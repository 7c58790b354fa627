package gap

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/brewer"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/genload/genload/host/chart"
)

// bandColours returns n distinct colours, one per occupancy band in order: the twelve of
// ColorBrewer's qualitative "Paired" palette, dark ones first, and, for more bands, n
// colours along moreland's smooth blue–red map.
func bandColours(n int) []color.Color {
	if n <= 12 {
		p, err := brewer.GetPalette(brewer.TypeQualitative, "Paired", 12)
		if err == nil {
			c := p.Colors()
			var out []color.Color
			for _, i := range []int{1, 3, 5, 7, 9, 11, 0, 2, 4, 6, 8, 10} {
				out = append(out, c[i])
			}
			return out[:n]
		}
	}
	return moreland.SmoothBlueRed().Palette(n).Colors()
}

// Plot draws every forward pass priced, observed (y) against predicted (x) per-forward latency
// on log axes, one colour per occupancy band (distinct), with the line y = x: points above it
// ran slower than the matrix model predicts. Passes left out as outside the model's measured
// range are drawn in light grey, apart. The title gives the median relative error and its
// P90 over the passes compared.
func (r *Result) Plot() (*chart.Chart, error) {
	if len(r.Forwards) == 0 {
		return nil, fmt.Errorf("plot: no forward pass")
	}
	title := fmt.Sprintf("Observed against predicted per-forward latency (%d decode passes compared)\nmedian rel. error %+.1f %% · P90 |rel. error| %.1f %% · model %s",
		r.All.N, 100*r.All.MedianRel, 100*r.All.P90AbsRel, r.Model)
	if r.All.N == 0 {
		title = fmt.Sprintf("Observed against predicted per-forward latency: none of %d decode passes compared\n(all outside the measured range of model %s)", len(r.Forwards), r.Model)
	}
	p := chart.NewPlot(title, "predicted by the matrix model (ms, log scale)", "observed in the replay (ms, log scale)")
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
	var left plotter.XYs
	for _, f := range r.Forwards {
		if f.Outside != "" && !r.Extrapolate {
			left = append(left, plotter.XY{X: f.PredictedMs, Y: f.ObservedMs})
		}
	}
	if len(left) > 0 {
		s, err := chart.AddMarkers(p, left, 0, false)
		if err != nil {
			return nil, err
		}
		s.Color, s.Shape, s.Radius = color.Gray{Y: 200}, draw.CircleGlyph{}, vg.Points(1.2)
		ch.Add(fmt.Sprintf("outside the model's range, not compared (%d)", len(left)), s)
	}
	colours := bandColours(len(r.Bands))
	for i, b := range r.Bands {
		var xy plotter.XYs
		for _, f := range r.Forwards {
			if f.Batch >= b.Lo && f.Batch <= b.Hi && (f.Outside == "" || r.Extrapolate) {
				xy = append(xy, plotter.XY{X: f.PredictedMs, Y: f.ObservedMs})
			}
		}
		if len(xy) == 0 {
			continue
		}
		s, err := chart.AddMarkers(p, xy, i, false)
		if err != nil {
			return nil, err
		}
		s.Color, s.Shape, s.Radius = colours[i], draw.CircleGlyph{}, vg.Points(1.6) // many small points, one shape
		ch.Add(fmt.Sprintf("B %s (%d, %+.0f %%)", b.Name, b.N, 100*b.MedianRel), s)
	}
	diag, err := chart.AddGuide(p, plotter.XYs{{X: lo, Y: lo}, {X: hi, Y: hi}})
	if err != nil {
		return nil, err
	}
	ch.Add("observed = predicted", diag)
	return ch, nil
}
