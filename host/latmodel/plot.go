package latmodel

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/genload/genload/host/report"
)

// curvePoints is the number of points each fitted curve is drawn through.
const curvePoints = 64

// Plot draws the model's measured cells (markers with ±σ error bars) and its fitted curves
// (lines), per-forward latency (ms) against batch size (log₂ axis), one colour per target
// sequence length L; the cells not fitted (outliers, partial or failed cells with a figure)
// are drawn hollow in their length's colour, counted in the legend. Each curve runs over the
// batch sizes measured at that L, at the mean length interpolated between that L's cells
// (linear in log B). The latency axis is log₁₀ when the values span more than 20×. It fails
// for a model without observations.
func Plot(m *Model) (*report.Chart, error) {
	byL := map[int][]Obs{}
	var lens []int
	lo, hi := math.Inf(1), 0.0
	for _, o := range m.Obs {
		if _, ok := byL[o.SeqLen]; !ok {
			lens = append(lens, o.SeqLen)
		}
		byL[o.SeqLen] = append(byL[o.SeqLen], o)
		lo, hi = min(lo, o.FwdMs-o.SigmaMs), max(hi, o.FwdMs+o.SigmaMs)
	}
	if len(lens) == 0 {
		return nil, fmt.Errorf("plot: the model has no observations")
	}
	// Cells not fitted, drawn hollow at their measured figure: outliers and excluded cells
	// that have one (a partial cell's figure is of fewer than B sequences).
	notFitted := map[int]plotter.XYs{}
	nExcluded := 0
	for _, o := range m.Outliers {
		notFitted[o.SeqLen] = append(notFitted[o.SeqLen], plotter.XY{X: float64(o.Batch), Y: o.FwdMs})
		hi = max(hi, o.FwdMs)
	}
	for _, x := range m.ExcludedCells {
		if x.FwdMs > 0 {
			notFitted[x.SeqLen] = append(notFitted[x.SeqLen], plotter.XY{X: float64(x.Batch), Y: x.FwdMs})
			hi = max(hi, x.FwdMs)
			nExcluded++
		}
	}
	var hollow *plotter.Scatter
	bLo, bHi := float64(m.Range.Batch[0]), float64(m.Range.Batch[1])
	var onlyHollow []int // lengths with no fitted cell
	for l, xy := range notFitted {
		if _, ok := byL[l]; !ok {
			onlyHollow = append(onlyHollow, l)
		}
		for _, v := range xy {
			lo, bLo, bHi = min(lo, v.Y), min(bLo, v.X), max(bHi, v.X)
		}
	}
	slices.Sort(onlyHollow)
	slices.Sort(lens)
	p := plot.New()
	ch := &report.Chart{Plot: p, Legend: plot.NewLegend()}
	ch.Legend.Top, ch.Legend.Left = true, true
	ch.Legend.XOffs, ch.Legend.YOffs = vg.Points(10), -vg.Points(12)
	ch.Legend.TextStyle.Font.Size = vg.Points(10)
	ch.Legend.ThumbnailWidth = vg.Points(28)
	ch.Legend.Padding = vg.Points(4)
	p.Title.Text = fmt.Sprintf("Per-forward latency: measured (markers, ±σ) and fitted (lines)\nform %s · R² %.4f · LOO median %.2f %%, max %.2f %%",
		m.Form, m.R2, 100*m.LOOMedianRel, 100*m.LOOMaxRel)
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = "batch size B (sequences, log scale)"
	p.Y.Label.Text = "per-forward latency (ms)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = batchTicks(m.Obs)
	p.X.Min, p.X.Max = bLo/1.08, bHi*1.08
	lo = max(lo, 1e-6)
	if hi > 20*lo {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = report.LogTicks125{}
		p.Y.Min, p.Y.Max = lo/1.15, hi*1.15
		p.Y.Label.Text = "per-forward latency (ms, log scale)"
	} else {
		p.Y.Min, p.Y.Max = 0, hi*1.08
	}
	grid := plotter.NewGrid()
	grid.Vertical.Color = color.Gray{Y: 225}
	grid.Horizontal.Color = color.Gray{Y: 225}
	p.Add(grid)
	for k, l := range lens {
		obs := byL[l]
		slices.SortFunc(obs, func(a, b Obs) int { return a.Batch - b.Batch })
		pts := make(plotter.XYs, len(obs))
		errs := make(plotter.YErrors, len(obs))
		for i, o := range obs {
			pts[i] = plotter.XY{X: float64(o.Batch), Y: o.FwdMs}
			errs[i].Low, errs[i].High = o.SigmaMs, o.SigmaMs
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, fmt.Errorf("plot: L=%d: %w", l, err)
		}
		sc.Color, sc.Shape, sc.Radius = plotutil.Color(k), filledShapes[k%len(filledShapes)], vg.Points(3)
		eb, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{pts, errs})
		if err != nil {
			return nil, fmt.Errorf("plot: L=%d: %w", l, err)
		}
		eb.Color = plotutil.Color(k)
		curve, err := fittedCurve(m, obs)
		if err != nil {
			return nil, fmt.Errorf("plot: L=%d: %w", l, err)
		}
		ln, err := plotter.NewLine(curve)
		if err != nil {
			return nil, fmt.Errorf("plot: L=%d: %w", l, err)
		}
		ln.Color, ln.Width = plotutil.Color(k), vg.Points(1.6)
		p.Add(ln, eb, sc)
		label := "L = " + strconv.Itoa(l) + " tokens"
		ch.Legend.Add(label, ln, sc)
		ch.Labels = append(ch.Labels, label)
		if out := notFitted[l]; len(out) > 0 {
			h, err := plotter.NewScatter(out)
			if err != nil {
				return nil, fmt.Errorf("plot: L=%d: %w", l, err)
			}
			h.Color, h.Shape, h.Radius = plotutil.Color(k), hollowShapes[k%len(hollowShapes)], vg.Points(4)
			p.Add(h)
			if hollow == nil {
				hollow = h
			}
		}
	}
	for j, l := range onlyHollow {
		h, err := plotter.NewScatter(notFitted[l])
		if err != nil {
			return nil, fmt.Errorf("plot: L=%d: %w", l, err)
		}
		k := len(lens) + j
		h.Color, h.Shape, h.Radius = plotutil.Color(k), hollowShapes[k%len(hollowShapes)], vg.Points(4)
		p.Add(h)
		label := "L = " + strconv.Itoa(l) + " tokens (none fitted)"
		ch.Legend.Add(label, h)
		ch.Labels = append(ch.Labels, label)
		if hollow == nil {
			hollow = h
		}
	}
	if hollow != nil {
		label := fmt.Sprintf("hollow: not fitted (%d outlier, %d partial/failed)", len(m.Outliers), nExcluded)
		ch.Legend.Add(label, hollow)
		ch.Labels = append(ch.Labels, label)
	}
	return ch, nil
}

// Marker shapes per sequence length: filled for the fitted cells, the hollow twin for the
// cells not fitted (outliers, partial cells with a figure).
var (
	filledShapes = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}}
	hollowShapes = []draw.GlyphDrawer{draw.RingGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}}
)

// fittedCurve is the model's prediction over the batch sizes of obs (one sequence length,
// ascending B) at curvePoints log-spaced batch sizes… rounded to integers, deduplicated.
func fittedCurve(m *Model, obs []Obs) (plotter.XYs, error) {
	b0, b1 := float64(obs[0].Batch), float64(obs[len(obs)-1].Batch)
	var xy plotter.XYs
	last := 0
	for i := 0; i <= curvePoints; i++ {
		b := int(math.Round(b0 * math.Pow(b1/b0, float64(i)/curvePoints)))
		if b == last {
			continue
		}
		last = b
		pr, err := m.Predict(meanLenAt(obs, b), b, true)
		if err != nil {
			return nil, err
		}
		xy = append(xy, plotter.XY{X: float64(b), Y: pr.Ms})
	}
	return xy, nil
}

// meanLenAt interpolates the realised mean length of obs (ascending B) at batch size b,
// linearly in log B; the nearest cell's outside.
func meanLenAt(obs []Obs, b int) float64 {
	i, found := slices.BinarySearchFunc(obs, b, func(o Obs, b int) int { return o.Batch - b })
	switch {
	case found:
		return obs[i].MeanLen
	case i == 0:
		return obs[0].MeanLen
	case i == len(obs):
		return obs[len(obs)-1].MeanLen
	}
	a, c := obs[i-1], obs[i]
	t := (math.Log(float64(b)) - math.Log(float64(a.Batch))) / (math.Log(float64(c.Batch)) - math.Log(float64(a.Batch)))
	return a.MeanLen + t*(c.MeanLen-a.MeanLen)
}

// batchTicks puts a tick at every batch size of obs and labels the powers of two.
func batchTicks(obs []Obs) plot.ConstantTicks {
	var bs []int
	for _, o := range obs {
		if !slices.Contains(bs, o.Batch) {
			bs = append(bs, o.Batch)
		}
	}
	slices.Sort(bs)
	t := make(plot.ConstantTicks, len(bs))
	for i, b := range bs {
		t[i].Value = float64(b)
		if b&(b-1) == 0 {
			t[i].Label = strconv.Itoa(b)
		}
	}
	return t
}
