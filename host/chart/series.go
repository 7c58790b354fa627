package chart

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Line widths and the dash pattern of a series: the solid line, the dashed one (a "before"
// run, a second figure of the same cell) and its dashes.
var (
	solidWidth  = vg.Points(1.8)
	dashedWidth = vg.Points(1.4)
	dashes      = []vg.Length{vg.Points(7), vg.Points(4)}
	gridColour  = color.Gray{Y: 225}
)

// Colour is series k's colour (plotutil's palette, by index modulo its length).
func Colour(k int) color.Color { return plotutil.Color(k) }

// AddLine adds xy (ascending x) to p as a line through markers in style k (colour and marker
// shape k of plotutil's sets), dashed and thinner when dashed; it returns the line and the
// markers, the thumbnails of a legend entry. It fails for a point that is not finite or,
// on a log axis, not positive (gonum's check).
func AddLine(p *plot.Plot, xy plotter.XYs, k int, dashed bool) (*plotter.Line, *plotter.Scatter, error) {
	lp, sc, err := plotter.NewLinePoints(xy)
	if err != nil {
		return nil, nil, err
	}
	lp.Color, lp.Width = Colour(k), solidWidth
	sc.Color, sc.Shape, sc.Radius = Colour(k), plotutil.Shape(k), vg.Points(3)
	if dashed {
		lp.Dashes, lp.Width, sc.Radius = dashes, dashedWidth, vg.Points(2.5)
	}
	p.Add(lp, sc)
	return lp, sc, nil
}

// AddIntervals adds to p a vertical bar from lo[i] to hi[i] at each xy[i].X (an interval
// around xy[i].Y, such as a confidence interval or a min–max range), in style k's colour.
// Points whose interval is NaN get no bar.
func AddIntervals(p *plot.Plot, xy plotter.XYs, lo, hi []float64, k int) error {
	var pts plotter.XYs
	var errs plotter.YErrors
	for i, q := range xy {
		if math.IsNaN(lo[i]) || math.IsNaN(hi[i]) {
			continue
		}
		pts = append(pts, q)
		errs = append(errs, struct{ Low, High float64 }{q.Y - lo[i], hi[i] - q.Y})
	}
	if len(pts) == 0 {
		return nil
	}
	bars, err := plotter.NewYErrorBars(struct {
		plotter.XYer
		plotter.YErrorer
	}{pts, errs})
	if err != nil {
		return err
	}
	bars.Color, bars.Width, bars.CapWidth = Colour(k), vg.Points(1.2), vg.Points(6)
	p.Add(bars)
	return nil
}

// AddZeroLine adds a horizontal line at y = 0 across p (for a change that may be either side
// of none).
func AddZeroLine(p *plot.Plot) {
	l := plotter.NewFunction(func(float64) float64 { return 0 })
	l.Color, l.Width = color.Gray{Y: 90}, vg.Points(1)
	p.Add(l)
}

// StyleThumb is a legend thumbnail of the solid or the dashed line style in dark grey, for an
// entry that explains the style ("before (dashed)") rather than one series.
func StyleThumb(dashed bool) plot.Thumbnailer {
	l := &plotter.Line{LineStyle: draw.LineStyle{Color: color.Gray{Y: 40}, Width: solidWidth}}
	if dashed {
		l.Width, l.Dashes = dashedWidth, dashes
	}
	return l
}

// Marker shapes of series k for [AddMarkers]: filled for measured values, the hollow twin of
// the same shape for values set apart (a cell not fitted).
var (
	filledShapes = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}}
	hollowShapes = []draw.GlyphDrawer{draw.RingGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}}
)

// AddMarkers adds xy to p as markers without a line in style k's colour: filled shape k
// (circle, box, pyramid, by k modulo 3) of radius 3 points, or its hollow twin (ring, square,
// triangle) of radius 4 when hollow. It returns the markers, a legend thumbnail; it fails as
// [AddLine] does.
func AddMarkers(p *plot.Plot, xy plotter.XYs, k int, hollow bool) (*plotter.Scatter, error) {
	sc, err := plotter.NewScatter(xy)
	if err != nil {
		return nil, err
	}
	sc.Color, sc.Shape, sc.Radius = Colour(k), filledShapes[k%len(filledShapes)], vg.Points(3)
	if hollow {
		sc.Shape, sc.Radius = hollowShapes[k%len(hollowShapes)], vg.Points(4)
	}
	p.Add(sc)
	return sc, nil
}

// AddCurve adds xy (ascending x) to p as a solid line without markers in style k's colour (a
// fitted curve, drawn through many points); it returns the line and fails as [AddLine] does.
func AddCurve(p *plot.Plot, xy plotter.XYs, k int) (*plotter.Line, error) {
	l, err := plotter.NewLine(xy)
	if err != nil {
		return nil, err
	}
	l.Color, l.Width = Colour(k), solidWidth
	p.Add(l)
	return l, nil
}

// AddGuide adds a dashed grey line through xy to p (a reference such as y = x, not data);
// it returns the line and fails as [AddLine] does.
func AddGuide(p *plot.Plot, xy plotter.XYs) (*plotter.Line, error) {
	l, err := plotter.NewLine(xy)
	if err != nil {
		return nil, err
	}
	l.Color, l.Width, l.Dashes = color.Gray{Y: 90}, vg.Points(1), []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(l)
	return l, nil
}
