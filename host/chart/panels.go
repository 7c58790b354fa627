package chart

import (
	"bytes"
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

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
