package chart

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"
)

// A chart saves as a 1440 × 900 PNG and an SVG, its legend entries listed in order, the
// legend column as wide as its longest label needs.
func TestChartSave(t *testing.T) {
	p := NewPlot("title", "B", "ms")
	BatchAxis(&p.X, []int{1, 2, 4})
	ValueAxis(&p.Y, 1, 3)
	ch := New(p)
	lp, sc, err := AddLine(p, plotter.XYs{{X: 1, Y: 1}, {X: 2, Y: 2}, {X: 4, Y: 3}}, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	ch.Add("L = 1000 tokens", lp, sc)
	narrow := ch.legendWidth()
	ch.Add("before: a run with a much longer label (dashed)", StyleThumb(true))
	if ch.legendWidth() <= narrow || strings.Join(ch.Labels, "|") != "L = 1000 tokens|before: a run with a much longer label (dashed)" {
		t.Errorf("legend width %v after %v, labels %q", ch.legendWidth(), narrow, ch.Labels)
	}
	pngPath, svgPath, err := ch.Save(filepath.Join(t.TempDir(), "c"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if cfg, err := png.DecodeConfig(f); err != nil || cfg.Width != 1440 || cfg.Height != 900 {
		t.Errorf("png %+v %v, want 1440 × 900", cfg, err)
	}
	svg, err := os.ReadFile(svgPath)
	if err != nil || !strings.Contains(string(svg), "<svg") || !strings.Contains(string(svg), "L = 1000 tokens") {
		t.Errorf("svg %.200s %v", svg, err)
	}
	if ch.Plot.Title.Text != "title" {
		t.Errorf("the title was not restored after drawing: %q", ch.Plot.Title.Text)
	}
	if _, _, err := ch.Save(filepath.Join(t.TempDir(), "missing", "c")); err == nil || !strings.Contains(err.Error(), "plot: ") {
		t.Errorf("save into a missing directory: %v", err)
	}
}

// Markers: filled shape k, its hollow twin for a value set apart, one colour per k; a point
// that is not finite is refused.
func TestMarkersAndLines(t *testing.T) {
	p := NewPlot("", "", "")
	xy := plotter.XYs{{X: 1, Y: 1}}
	for k, want := range []struct{ filled, hollow draw.GlyphDrawer }{
		{draw.CircleGlyph{}, draw.RingGlyph{}}, {draw.BoxGlyph{}, draw.SquareGlyph{}}, {draw.PyramidGlyph{}, draw.TriangleGlyph{}}, {draw.CircleGlyph{}, draw.RingGlyph{}},
	} {
		f, err := AddMarkers(p, xy, k, false)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := AddMarkers(p, xy, k, true)
		if f.Shape != want.filled || h.Shape != want.hollow || f.Color != Colour(k) || h.Color != Colour(k) || h.Radius <= f.Radius {
			t.Errorf("k=%d: filled %T r %v, hollow %T r %v", k, f.Shape, f.Radius, h.Shape, h.Radius)
		}
	}
	if _, err := AddMarkers(p, plotter.XYs{{X: 1, Y: math.NaN()}}, 0, false); err == nil {
		t.Error("a NaN point was drawn")
	}
	if _, err := AddCurve(p, plotter.XYs{{X: math.Inf(1), Y: 1}}, 0); err == nil {
		t.Error("an infinite point was drawn")
	}
	solid, dashed := StyleThumb(false).(*plotter.Line), StyleThumb(true).(*plotter.Line)
	if len(solid.Dashes) != 0 || len(dashed.Dashes) == 0 || dashed.Width >= solid.Width {
		t.Errorf("line styles: solid %+v, dashed %+v", solid.LineStyle, dashed.LineStyle)
	}
	g, err := AddGuide(p, plotter.XYs{{X: 1, Y: 1}, {X: 2, Y: 2}})
	if err != nil || len(g.Dashes) == 0 {
		t.Errorf("guide %+v %v, want a dashed line", g, err)
	}
}
