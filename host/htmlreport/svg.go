package htmlreport

import (
	"fmt"
	"html/template"
	"math"
	"strings"
)

// palette colours the series of a chart, in order (colour-blind-safe, after Okabe and Ito).
var palette = []string{"#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#000000", "#f0e442"}

// point is one (x, y) of a series; tip is its tooltip text.
type point struct {
	x, y float64
	tip  string
}

// series is one line of a chart.
type series struct {
	name   string
	points []point
	dashed bool
}

// chart is a line chart with log₂ or linear x, linear y from 0 (or below, for negative values).
type chart struct {
	id             string
	title          string
	xLabel, yLabel string
	logX           bool
	series         []series
}

const (
	chartW, chartH          = 760.0, 380.0
	padL, padR, padT, padB  = 64.0, 170.0, 30.0, 48.0
	histW, histH, histPadB  = 100.0, 56.0, 14.0
	histBinsMax             = 12
	svgNS                   = `xmlns="http://www.w3.org/2000/svg"`
	svgFont                 = `font-family="sans-serif" font-size="11"`
	gridStroke, axisStroke  = "#ddd", "#555"
	histFill, histFillEmpty = "#0072b2", "#bbb"
)

func esc(s string) string { return template.HTMLEscapeString(s) }

// niceTicks returns about n round tick values, multiples of 1, 2, 2.5 or 5 × 10ᵏ, from at most lo
// to at least hi.
func niceTicks(lo, hi float64, n int) []float64 {
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for v := math.Floor(lo/step+1e-9) * step; ; v += step {
		out = append(out, v)
		if v >= hi-step*1e-9 {
			break
		}
	}
	return out
}

func fmtTick(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e9 {
		return fmt.Sprintf("%.0f", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}

// svg renders the chart as inline SVG: axes with ticks, one polyline with circles per series
// (each circle has a <title> tooltip), and a legend to the right.
func (c chart) svg() template.HTML {
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), 0.0, 0.0
	for _, s := range c.series {
		for _, p := range s.points {
			xmin, xmax = math.Min(xmin, p.x), math.Max(xmax, p.x)
			ymin, ymax = math.Min(ymin, p.y), math.Max(ymax, p.y)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg %s id="%s" class="chart" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" %s role="img" aria-label="%s">`,
		svgNS, esc(c.id), chartW, chartH, chartW, chartH, svgFont, esc(c.title))
	fmt.Fprintf(&b, `<text x="%.0f" y="18" font-size="13" font-weight="bold">%s</text>`, padL, esc(c.title))
	if math.IsInf(xmin, 1) {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">no measured cell</text></svg>`, padL, chartH/2)
		return template.HTML(b.String())
	}
	tx := func(x float64) float64 { return x }
	if c.logX {
		tx = func(x float64) float64 { return math.Log2(math.Max(x, 1e-9)) }
	}
	x0, x1 := tx(xmin), tx(xmax)
	if x1 == x0 {
		x0, x1 = x0-1, x1+1
	}
	if ymax == ymin {
		ymax = ymin + 1
	}
	yt := niceTicks(ymin, ymax, 6)
	y0, y1 := math.Min(yt[0], ymin), yt[len(yt)-1]
	plotW, plotH := chartW-padL-padR, chartH-padT-padB
	px := func(x float64) float64 { return padL + (tx(x)-x0)/(x1-x0)*plotW }
	py := func(y float64) float64 { return padT + plotH - (y-y0)/(y1-y0)*plotH }
	for _, v := range yt {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s"/>`, padL, padL+plotW, py(v), py(v), gridStroke)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`, padL-6, py(v)+4, fmtTick(v))
	}
	var xt []float64
	if c.logX {
		for v := math.Exp2(math.Floor(x0)); v <= xmax*1.0001; v *= 2 {
			if v >= xmin*0.9999 {
				xt = append(xt, v)
			}
		}
	} else {
		xt = niceTicks(xmin, xmax, 8)
	}
	for _, v := range xt {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s"/>`, px(v), px(v), padT, padT+plotH, gridStroke)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, px(v), padT+plotH+16, fmtTick(v))
	}
	fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s"/>`, padL, padL+plotW, padT+plotH, padT+plotH, axisStroke)
	fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s"/>`, padL, padL, padT, padT+plotH, axisStroke)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, padL+plotW/2, chartH-8, esc(c.xLabel))
	fmt.Fprintf(&b, `<text transform="translate(14 %.1f) rotate(-90)" text-anchor="middle">%s</text>`, padT+plotH/2, esc(c.yLabel))
	for i, s := range c.series {
		col := palette[i%len(palette)]
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="5 3"`
		}
		pts := make([]string, len(s.points))
		for j, p := range s.points {
			pts[j] = fmt.Sprintf("%.1f,%.1f", px(p.x), py(p.y))
		}
		fmt.Fprintf(&b, `<g class="series" data-name="%s"><polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`, esc(s.name), col, dash, strings.Join(pts, " "))
		for _, p := range s.points {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s</title></circle>`, px(p.x), py(p.y), col, esc(p.tip))
		}
		b.WriteString(`</g>`)
		ly := padT + 8 + float64(i)*18
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`, padL+plotW+14, padL+plotW+36, ly, ly, col, dash)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`, padL+plotW+42, ly+4, esc(s.name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// histogram renders the lengths of one cell (tokens) as a small SVG histogram with
// min(⌈√n⌉, 12) equal-width bins over [min, max], one bin when all are equal; title names the
// cell and the tooltip of each bar its range and count.
func histogram(title string, lengths []int) template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg %s class="hist" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" %s role="img" aria-label="%s">`,
		svgNS, histW, histH, histW, histH, svgFont, esc(title))
	if len(lengths) == 0 {
		fmt.Fprintf(&b, `<text x="4" y="%.0f">no lengths</text></svg>`, histH/2)
		return template.HTML(b.String())
	}
	lo, hi := lengths[0], lengths[0]
	for _, l := range lengths {
		lo, hi = min(lo, l), max(hi, l)
	}
	bins := min(int(math.Ceil(math.Sqrt(float64(len(lengths))))), histBinsMax)
	if hi == lo {
		bins = 1
	}
	counts := make([]int, bins)
	width := float64(hi-lo) / float64(bins)
	for _, l := range lengths {
		i := bins - 1
		if width > 0 {
			i = min(int(float64(l-lo)/width), bins-1)
		}
		counts[i]++
	}
	top := 0
	for _, n := range counts {
		top = max(top, n)
	}
	plotH := histH - histPadB - 4
	bw := (histW - 8) / float64(bins)
	for i, n := range counts {
		h := float64(n) / float64(top) * plotH
		from, to := float64(lo)+float64(i)*width, float64(lo)+float64(i+1)*width
		fill := histFill
		if n == 0 {
			fill = histFillEmpty
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%.0f–%.0f tokens: %d</title></rect>`,
			4+float64(i)*bw+0.5, 4+plotH-h, bw-1, math.Max(h, 0.5), fill, from, to, n)
	}
	fmt.Fprintf(&b, `<text x="4" y="%.0f">%d</text><text x="%.0f" y="%.0f" text-anchor="end">%d</text></svg>`, histH-3, lo, histW-4, histH-3, hi)
	return template.HTML(b.String())
}
