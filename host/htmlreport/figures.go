package htmlreport

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/genload/genload/host/chart"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Figure sizes in points. A figure is drawn 1000 pt wide and scaled by the page to the width
// of its column (width 100 %): at the 1,400 px of a laptop window a point is about 1.35 px,
// so the 10-point tick labels read at about 13 px.
const (
	figureW      = 1000.0
	panelRowH    = 250.0 // a row of panels
	legendRowH   = 30.0
	singleH      = 320.0 // a figure of one plot
	histW, histH = 100.0, 48.0
	histBinsMax  = 12
)

// value is one cell's figure in a panel series: y at batch size x, with an optional interval
// [lo, hi] (NaN for none).
type value struct {
	x, y, lo, hi float64
}

// seriesDef is one series of a panel figure: its legend label, style (colour/marker index)
// and dash, and its values by sequence length L.
type seriesDef struct {
	label  string
	style  int
	dashed bool
	byL    map[int][]value
}

// panelFigure describes a figure of one panel per sequence length L (ascending), B on the
// x axis, the series drawn in every panel that has values for them.
type panelFigure struct {
	id, title string // the svg's id and accessible title
	yLabel    string
	series    []seriesDef
	zeroLine  bool // a line at y = 0 (a change either side of none)
}

// panelCols is the number of panel columns for n panels: all in one row up to 3, 2 × 2 for
// 4, else 3 per row.
func panelCols(n int) int {
	switch {
	case n <= 3:
		return max(n, 1)
	case n == 4:
		return 2
	}
	return 3
}

// svg draws the figure with gonum/plot (chart.Panels): per L a plot titled "L = … tokens",
// B on a log₂ axis with a tick at every batch size of the figure, the value axis log₁₀ when
// that panel's values span more than 20× (chart.ValueAxis), every series' intervals as
// vertical bars. A figure with no value is a one-line note.
func (f panelFigure) svg() template.HTML {
	var ls, bs []int
	for _, s := range f.series {
		for l, vs := range s.byL {
			if !slices.Contains(ls, l) {
				ls = append(ls, l)
			}
			for _, v := range vs {
				if b := int(v.x); !slices.Contains(bs, b) {
					bs = append(bs, b)
				}
			}
		}
	}
	if len(ls) == 0 {
		return template.HTML(`<p class="note">no measured cell to plot</p>`)
	}
	slices.Sort(ls)
	slices.Sort(bs)
	ps := &chart.Panels{Cols: panelCols(len(ls))}
	inLegend := map[int]bool{}
	for _, l := range ls {
		p := chart.NewPlot("L = "+strconv.Itoa(l)+" tokens", "batch size B", f.yLabel)
		p.Title.TextStyle.Font.Size = vg.Points(12)
		p.X.Label.TextStyle.Font.Size, p.Y.Label.TextStyle.Font.Size = vg.Points(10), vg.Points(10)
		chart.BatchAxis(&p.X, bs)
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, s := range f.series {
			for _, v := range s.byL[l] {
				for _, y := range []float64{v.y, v.lo, v.hi} {
					if !math.IsNaN(y) {
						lo, hi = math.Min(lo, y), math.Max(hi, y)
					}
				}
			}
		}
		chart.ValueAxis(&p.Y, lo, hi)
		if f.zeroLine {
			chart.AddZeroLine(p)
		}
		for i := len(f.series) - 1; i >= 0; i-- { // the first series drawn last, on top
			s := f.series[i]
			vs := s.byL[l]
			if len(vs) == 0 {
				continue
			}
			slices.SortFunc(vs, func(a, b value) int { return int(a.x - b.x) })
			xy := make(plotter.XYs, len(vs))
			los, his := make([]float64, len(vs)), make([]float64, len(vs))
			for j, v := range vs {
				xy[j], los[j], his[j] = plotter.XY{X: v.x, Y: v.y}, v.lo, v.hi
			}
			if err := chart.AddIntervals(p, xy, los, his, s.style); err != nil {
				return template.HTML(`<p class="note">` + template.HTMLEscapeString(err.Error()) + `</p>`)
			}
			line, marks, err := chart.AddLine(p, xy, s.style, s.dashed)
			if err != nil {
				return template.HTML(`<p class="note">` + template.HTMLEscapeString(err.Error()) + `</p>`)
			}
			if !inLegend[i] {
				inLegend[i] = true
				ps.Legend = append(ps.Legend, chart.LegendEntry{Label: s.label, Thumbs: []plot.Thumbnailer{line, marks}})
			}
		}
		ps.Plots = append(ps.Plots, p)
	}
	// The legend in series order, whatever panel first had each series.
	slices.SortStableFunc(ps.Legend, func(a, b chart.LegendEntry) int {
		return seriesIndex(f.series, a.Label) - seriesIndex(f.series, b.Label)
	})
	h := legendRowH + panelRowH*float64(ps.Rows())
	return inline(ps, figureW, h, f.id, "plot", f.title)
}

func seriesIndex(ss []seriesDef, label string) int {
	return slices.IndexFunc(ss, func(s seriesDef) bool { return s.label == label })
}

// lineChart is one plot of a value against B, one line per sequence length L (the CV of the
// cells over runs or repeats).
type lineChart struct {
	id, title, yLabel string
	byL               map[int][]value
}

// svg draws the chart with gonum/plot: B on a log₂ axis, the value axis by
// chart.ValueAxis, a line per L with its legend entry across the top.
func (c lineChart) svg() template.HTML {
	ls := make([]int, 0, len(c.byL))
	var bs []int
	lo, hi := math.Inf(1), math.Inf(-1)
	for l, vs := range c.byL {
		ls = append(ls, l)
		for _, v := range vs {
			if b := int(v.x); !slices.Contains(bs, b) {
				bs = append(bs, b)
			}
			lo, hi = math.Min(lo, v.y), math.Max(hi, v.y)
		}
	}
	if len(bs) == 0 {
		return template.HTML(`<p class="note">no cell to plot</p>`)
	}
	slices.Sort(ls)
	slices.Sort(bs)
	p := chart.NewPlot("", "batch size B (log scale)", c.yLabel)
	chart.BatchAxis(&p.X, bs)
	chart.ValueAxis(&p.Y, lo, hi)
	ps := &chart.Panels{Cols: 1}
	for k, l := range ls {
		vs := c.byL[l]
		slices.SortFunc(vs, func(a, b value) int { return int(a.x - b.x) })
		xy := make(plotter.XYs, len(vs))
		for j, v := range vs {
			xy[j] = plotter.XY{X: v.x, Y: v.y}
		}
		line, marks, err := chart.AddLine(p, xy, k, false)
		if err != nil {
			return template.HTML(`<p class="note">` + template.HTMLEscapeString(err.Error()) + `</p>`)
		}
		ps.Legend = append(ps.Legend, chart.LegendEntry{Label: "L = " + strconv.Itoa(l), Thumbs: []plot.Thumbnailer{line, marks}})
	}
	ps.Plots = []*plot.Plot{p}
	return inline(ps, figureW, legendRowH+singleH, c.id, "plot", c.title)
}

// histogram draws one cell's prompt lengths (tokens) with gonum/plot as a small histogram
// without axes: min(⌈√n⌉, 12) equal-width bins over [min, max] (one bin when all are equal;
// gonum's plotter.NewHist). Its accessible title names the cell and every bin's range and
// count, so a screen reader or a hover reads what the bars show.
func histogram(cell string, lengths []int) template.HTML {
	if len(lengths) == 0 {
		return template.HTML(`<p class="note">no lengths</p>`)
	}
	vals := make(plotter.Values, len(lengths))
	for i, l := range lengths {
		vals[i] = float64(l)
	}
	bins := min(int(math.Ceil(math.Sqrt(float64(len(lengths))))), histBinsMax)
	h, err := plotter.NewHist(vals, bins)
	if err != nil {
		return template.HTML(`<p class="note">` + template.HTMLEscapeString(err.Error()) + `</p>`)
	}
	h.FillColor = chart.Colour(0)
	h.LineStyle.Color, h.LineStyle.Width = color.White, vg.Points(0.6) // a gap between bars
	p := plot.New()
	p.HideAxes()
	p.X.Padding, p.Y.Padding = 0, 0
	p.Y.Min = 0
	p.Add(h)
	parts := make([]string, len(h.Bins))
	for i, b := range h.Bins {
		parts[i] = fmt.Sprintf("%.0f–%.0f tokens: %.0f", b.Min, b.Max, b.Weight)
	}
	return inline(p, histW, histH, "", "hist", cell+" prompt lengths ("+strconv.Itoa(len(lengths))+"): "+strings.Join(parts, "; "))
}

var (
	xmlProlog = regexp.MustCompile(`(?s)^<\?xml[^>]*\?>\s*(<!--.*?-->\s*)?`)
	svgOpen   = regexp.MustCompile(`^<svg width="[^"]*" height="[^"]*"`)
)

// inline renders d as SVG (chart.SVG, w × h points) for a page: without the XML prolog,
// scaled to the width of its container (width 100 %, height from the aspect ratio), with id
// (unless ""), class and role img, and title as its accessible name and <title>.
func inline(d chart.Drawer, w, h float64, id, class, title string) template.HTML {
	b, err := chart.SVG(d, vg.Length(w), vg.Length(h))
	if err != nil {
		return template.HTML(`<p class="note">` + template.HTMLEscapeString(err.Error()) + `</p>`)
	}
	b = xmlProlog.ReplaceAll(b, nil)
	attrs := ` class="` + class + `" role="img" aria-label="` + template.HTMLEscapeString(title) + `" style="width:100%;height:auto"`
	if id != "" {
		attrs = ` id="` + template.HTMLEscapeString(id) + `"` + attrs
	}
	loc := svgOpen.FindIndex(b)
	if loc == nil {
		return template.HTML(`<p class="note">plot: unexpected SVG from the renderer</p>`)
	}
	var out bytes.Buffer
	out.WriteString("<svg" + attrs)
	// up to the end of the opening tag, then the title as the first child
	rest := b[loc[1]:]
	end := bytes.IndexByte(rest, '>')
	out.Write(rest[:end+1])
	out.WriteString("<title>" + template.HTMLEscapeString(title) + "</title>")
	out.Write(rest[end+1:])
	return template.HTML(out.String())
}
