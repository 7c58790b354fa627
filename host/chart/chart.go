// Package chart is the one way genload draws a chart with gonum/plot: the batch-size axis,
// the latency (value) axis and its ticks, a series' line, markers and intervals, a chart with
// its legend beside it, saved as PNG and SVG ([Chart.Save]), and the grid of panels the HTML
// report embeds as SVG ([Panels], [SVG]). genload plot (host/report's LatencyPlot), genload
// fit (host/latmodel's Plot), genload gap and the HTML report build their figures from it,
// so that an axis or a series looks the same in every figure and its code exists once.
//
// Its name is chart, not plot, so that a file can import it beside gonum's plot package.
package chart

import (
	"fmt"
	"image/color"
	"io"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plot size and PNG resolution: 10 × 6.25 in at 144 dpi is 1440 × 900 pixels.
const (
	width  = 10 * vg.Inch
	height = 6.25 * vg.Inch
	dpi    = 144
)

// New returns a chart of p with genload's legend: entries top to bottom, 10-point text,
// 28-point thumbnails, in a column to the right of the plot ([Chart.Draw]).
func New(p *plot.Plot) *Chart {
	ch := &Chart{Plot: p, Legend: plot.NewLegend()}
	ch.Legend.Top, ch.Legend.Left = true, true
	ch.Legend.XOffs, ch.Legend.YOffs = vg.Points(10), -vg.Points(12)
	ch.Legend.TextStyle.Font.Size = vg.Points(10)
	ch.Legend.ThumbnailWidth = vg.Points(28)
	ch.Legend.Padding = vg.Points(4)
	return ch
}

// Chart is a plot and its legend, drawn to the right of the plot.
type Chart struct {
	Plot   *plot.Plot
	Legend plot.Legend
	// Labels are the legend's entries, top to bottom.
	Labels []string
}

// Add appends an entry to the chart's legend: label beside the thumbnails (a line, a marker).
func (ch *Chart) Add(label string, thumbs ...plot.Thumbnailer) {
	ch.Legend.Add(label, thumbs...)
	ch.Labels = append(ch.Labels, label)
}

// legendWidth is the width of the legend column: margin, thumbnail, a space, the longest
// label, margin.
func (ch *Chart) legendWidth() vg.Length {
	w := vg.Length(0)
	for _, l := range ch.Labels {
		w = max(w, ch.Legend.TextStyle.Width(l))
	}
	return w + ch.Legend.ThumbnailWidth + ch.Legend.TextStyle.Width(" ") + 2*ch.Legend.XOffs
}

// Draw draws the title across the top of c, the plot below it and the legend in a column at
// the right, level with the top of the data area.
func (ch *Chart) Draw(c draw.Canvas) {
	lw := ch.legendWidth()
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	title := ch.Plot.Title
	if title.Text != "" {
		c.FillText(title.TextStyle, vg.Point{X: c.Center().X, Y: c.Max.Y + title.TextStyle.FontExtents().Descent}, title.Text)
		c = draw.Crop(c, 0, 0, 0, -(title.TextStyle.Rectangle(title.Text).Size().Y + title.Padding))
		ch.Plot.Title.Text = ""
		defer func() { ch.Plot.Title.Text = title.Text }()
	}
	ch.Plot.Draw(draw.Crop(c, 0, -lw, 0, 0))
	ch.Legend.Draw(draw.Crop(c, c.Max.X-c.Min.X-lw, 0, 0, 0))
}

// Save writes the chart as <prefix>.png (1440 × 900 pixels) and <prefix>.svg and returns the
// two paths.
func (ch *Chart) Save(prefix string) (pngPath, svgPath string, err error) {
	pngPath, svgPath = prefix+".png", prefix+".svg"
	img := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(color.White))
	ch.Draw(draw.New(img))
	if err := writeTo(pngPath, vgimg.PngCanvas{Canvas: img}); err != nil {
		return "", "", err
	}
	svg := vgsvg.New(width, height)
	ch.Draw(draw.New(svg))
	if err := writeTo(svgPath, svg); err != nil {
		return "", "", err
	}
	return pngPath, svgPath, nil
}

// writeTo creates path and writes wt into it.
func writeTo(path string, wt io.WriterTo) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if _, err := wt.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("plot: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}
