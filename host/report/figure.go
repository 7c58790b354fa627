package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The plotting helpers below are the one way genload draws a chart with gonum/plot: genload
// plot ([LatencyPlot]) and the HTML report (host/htmlreport) build their plots from them, so
// that a batch-size axis, a latency axis and a series look the same everywhere.

// Line widths and the dash pattern of a series: the solid line, the dashed one (a "before"
// run, a second figure of the same cell) and its dashes.
var (
	solidWidth  = vg.Points(1.8)
	dashedWidth = vg.Points(1.4)
	dashes      = []vg.Length{vg.Points(7), vg.Points(4)}
	gridColour  = color.Gray{Y: 225}
)

// NewPlot returns a plot with title (may be ""), axis labels, genload's font sizes (title 14,
// labels 12, ticks 10 points) and a light grid.
func NewPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(12)
		a.Tick.Label.Font.Size = vg.Points(10)
	}
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = gridColour, gridColour
	p.Add(g)
	return p
}

// BatchAxis makes a the batch-size axis over batches (ascending, ≥ 1 sequence): log₂ scale,
// a tick at every batch size (labels as [batchTicks] spaces them), 8 % of room at either end.
func BatchAxis(a *plot.Axis, batches []int) {
	a.Scale = plot.LogScale{}
	a.Tick.Marker = batchTicks(batches)
	a.Min, a.Max = float64(batches[0])/1.08, float64(batches[len(batches)-1])*1.08
}

// ValueAxis sets a over data from lo to hi: a log₁₀ scale with 1-2-5 ticks ([LogTicks125])
// when every value is positive and they span more than 20× (lo > 0 and hi > 20·lo: short and
// long sequence lengths on one axis stay readable), from lo/1.15 to 1.15·hi; else a linear
// scale that includes 0, with 8 % of the span as room past the data and round ticks
// ([NiceTicks]). It reports whether the scale is log.
func ValueAxis(a *plot.Axis, lo, hi float64) (log bool) {
	if lo > 0 && hi > 20*lo {
		a.Scale = plot.LogScale{}
		a.Tick.Marker = LogTicks125{}
		a.Min, a.Max = lo/1.15, hi*1.15
		return true
	}
	a.Scale, a.Tick.Marker = plot.LinearScale{}, NiceTicks{}
	from, to := math.Min(lo, 0), math.Max(hi, 0)
	pad := 0.08 * (to - from)
	if pad == 0 {
		pad = 1
	}
	a.Min, a.Max = from, to+pad
	if from < 0 {
		a.Min = from - pad
	}
	return false
}

// NiceTicks is a tick marker for a linear axis: 4 to 10 labelled ticks at the multiples of
// a round step (1, 2, 2.5 or 5 × 10ᵏ, the smallest that gives at most 8 intervals over the
// axis), each labelled with the decimals the step needs ("0.25", "10", "-50"), and an
// unlabelled tick halfway between two labels.
type NiceTicks struct{}

// Ticks returns the ticks from lo to hi (lo < hi).
func (NiceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 4, 64)}}
	}
	raw := (hi - lo) / 8
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	prec := max(0, -int(math.Floor(math.Log10(step)+1e-9)))
	if m := step / math.Pow(10, math.Floor(math.Log10(step)+1e-9)); math.Abs(m-2.5) < 1e-9 && step < 10 {
		prec++ // 0.25, 2.5 (but 25, 250)
	}
	var t []plot.Tick
	for k := math.Ceil(lo/step - 1e-9); k*step <= hi+step*1e-9; k++ {
		v := k * step
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		t = append(t, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', prec, 64)})
		if mid := v + step/2; mid <= hi {
			t = append(t, plot.Tick{Value: mid})
		}
	}
	return t
}

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

// LegendEntry is one entry of a [Panels] legend: its text and thumbnails.
type LegendEntry struct {
	Label  string
	Thumbs []plot.Thumbnailer
}

// Panels is a figure of small plots in a grid (Cols columns, row-major; the last row may be
// short) under one legend that runs across the top: the HTML report's latency against batch
// size, one panel per sequence length L.
type Panels struct {
	Plots  []*plot.Plot
	Cols   int
	Legend []LegendEntry
}

// legendStyle is the text style of a Panels legend (the plots' tick font at 11 points).
func legendStyle() text.Style {
	s := plot.New().Legend.TextStyle
	s.Font.Size = vg.Points(11)
	return s
}

// Rows is the number of rows of panels.
func (ps *Panels) Rows() int { return (len(ps.Plots) + ps.Cols - 1) / ps.Cols }

// Draw fills c white, draws the legend in one line across its top (entries side by side)
// and the panels below it, aligned so that their data areas line up by row and column.
func (ps *Panels) Draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	if len(ps.Legend) > 0 {
		sty := legendStyle()
		h := sty.Rectangle("L").Size().Y
		thumb := vg.Points(26)
		x, y := c.Min.X+vg.Points(8), c.Max.Y-h-vg.Points(6)
		for _, e := range ps.Legend {
			box := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{Min: vg.Point{X: x, Y: y}, Max: vg.Point{X: x + thumb, Y: y + h}}}
			for _, t := range e.Thumbs {
				t.Thumbnail(&box)
			}
			c.FillText(sty, vg.Point{X: x + thumb + vg.Points(4), Y: y + sty.FontExtents().Descent}, e.Label)
			x += thumb + vg.Points(4) + sty.Width(e.Label) + vg.Points(18)
		}
		c = draw.Crop(c, 0, 0, 0, -(h + vg.Points(14)))
	}
	if len(ps.Plots) == 0 {
		return
	}
	cols, rows := ps.Cols, ps.Rows()
	grid := make([][]*plot.Plot, rows)
	for r := range grid {
		grid[r] = make([]*plot.Plot, cols)
		for k := range cols {
			if i := r*cols + k; i < len(ps.Plots) {
				grid[r][k] = ps.Plots[i]
			}
		}
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(18), PadY: vg.Points(14), PadLeft: vg.Points(4), PadRight: vg.Points(8), PadBottom: vg.Points(4)}
	canvases := plot.Align(grid, tiles, c)
	for r := range grid {
		for k, p := range grid[r] {
			if p != nil {
				p.Draw(canvases[r][k])
			}
		}
	}
}

// Drawer is a figure that draws itself on a canvas ([Chart], [Panels], a *plot.Plot).
type Drawer interface{ Draw(draw.Canvas) }

// SVG renders d on a w × h canvas and returns the SVG document (fonts named, not embedded:
// a viewer draws the text in its own face of that family or a fallback).
func SVG(d Drawer, w, h vg.Length) ([]byte, error) {
	c := vgsvg.New(w, h)
	d.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("plot: svg: %w", err)
	}
	return b.Bytes(), nil
}
