package latmodel

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/genload/genload/host/chart"
)

// curvePoints is the number of points each fitted curve is drawn through.
const curvePoints = 64

// Plot draws the model's measured cells (markers with ±σ error bars) and its fitted curves
// (lines), per-forward latency (ms) against batch size (chart.BatchAxis: log₂, a tick at every
// batch size drawn), one colour per target sequence length L; the cells not fitted (outliers,
// partial or failed cells with a figure) are drawn hollow in their length's colour, counted in
// the legend. Each curve runs over the batch sizes measured at that L, at the mean length
// interpolated between that L's cells (linear in log B). The latency axis is chart.ValueAxis's
// (log₁₀ when the values span more than 20×). It fails for a model without observations.
func Plot(m *Model) (*chart.Chart, error) {
	f, err := newFitFigure(m)
	if err != nil {
		return nil, err
	}
	p := chart.NewPlot(fmt.Sprintf("Per-forward latency: measured (markers, ±σ) and fitted (lines)\nform %s · R² %.4f · LOO median %.2f %%, max %.2f %%",
		m.Form, m.R2, 100*m.LOOMedianRel, 100*m.LOOMaxRel), "batch size B (sequences, log scale)", "per-forward latency (ms)")
	chart.BatchAxis(&p.X, f.batches)
	if chart.ValueAxis(&p.Y, f.lo, f.hi) {
		p.Y.Label.Text = "per-forward latency (ms, log scale)"
	}
	ch := chart.New(p)
	var hollow *plotter.Scatter
	for k, l := range f.lens {
		label, h, err := f.drawLength(p, ch, m, k, l)
		if err != nil {
			return nil, fmt.Errorf("plot: L=%d: %w", l, err)
		}
		if label != "" {
			ch.Add(label, h)
		}
		if hollow == nil {
			hollow = h
		}
	}
	if hollow != nil {
		ch.Add(fmt.Sprintf("hollow: not fitted (%d outlier, %d partial/failed)", len(m.Outliers), f.nExcluded), hollow)
	}
	return ch, nil
}

// fitFigure is what [Plot] draws, gathered from a model: the fitted cells and the cells not
// fitted by target length, the lengths (those with a fitted cell first, ascending, then those
// with none), every batch size drawn and the latency range (ms) the axes must hold.
type fitFigure struct {
	fitted, notFitted map[int][]Obs
	lens              []int
	withFitted        int // lens[:withFitted] have a fitted cell
	batches           []int
	lo, hi            float64
	nExcluded         int // excluded cells drawn (with a figure)
}

func newFitFigure(m *Model) (*fitFigure, error) {
	f := &fitFigure{fitted: map[int][]Obs{}, notFitted: map[int][]Obs{}, lo: math.Inf(1)}
	for _, o := range m.Obs {
		f.fitted[o.SeqLen] = append(f.fitted[o.SeqLen], o)
		f.lo, f.hi = min(f.lo, o.FwdMs-o.SigmaMs), max(f.hi, o.FwdMs+o.SigmaMs)
		f.addBatch(o.Batch)
	}
	if len(f.fitted) == 0 {
		return nil, fmt.Errorf("plot: the model has no observations")
	}
	// Cells not fitted, drawn hollow at their measured figure: outliers and excluded cells
	// that have one (a partial cell's figure is of fewer than B sequences).
	for _, o := range m.Outliers {
		f.notFitted[o.SeqLen] = append(f.notFitted[o.SeqLen], Obs{SeqLen: o.SeqLen, Batch: o.Batch, FwdMs: o.FwdMs})
	}
	for _, x := range m.ExcludedCells {
		if x.FwdMs > 0 {
			f.notFitted[x.SeqLen] = append(f.notFitted[x.SeqLen], Obs{SeqLen: x.SeqLen, Batch: x.Batch, FwdMs: x.FwdMs})
			f.nExcluded++
		}
	}
	var only []int // lengths with no fitted cell
	for l, os := range f.notFitted {
		if _, ok := f.fitted[l]; !ok {
			only = append(only, l)
		}
		for _, o := range os {
			f.lo, f.hi = min(f.lo, o.FwdMs), max(f.hi, o.FwdMs)
			f.addBatch(o.Batch)
		}
	}
	for l := range f.fitted {
		f.lens = append(f.lens, l)
	}
	slices.Sort(f.lens)
	slices.Sort(only)
	f.withFitted = len(f.lens)
	f.lens = append(f.lens, only...)
	slices.Sort(f.batches)
	return f, nil
}

func (f *fitFigure) addBatch(b int) {
	if !slices.Contains(f.batches, b) {
		f.batches = append(f.batches, b)
	}
}

// drawLength draws the k-th length l: its fitted cells (markers, ±σ bars, the fitted curve,
// their legend entry) and over them its cells not fitted (hollow markers). It returns the
// legend entry still to add for a length with no fitted cell ("" otherwise) and the hollow
// markers (nil when there are none).
func (f *fitFigure) drawLength(p *plot.Plot, ch *chart.Chart, m *Model, k, l int) (string, *plotter.Scatter, error) {
	label := "L = " + strconv.Itoa(l) + " tokens (none fitted)"
	if k < f.withFitted {
		if err := f.drawFitted(p, ch, m, k, l); err != nil {
			return "", nil, err
		}
		label = ""
	}
	out := f.notFitted[l]
	if len(out) == 0 {
		return label, nil, nil
	}
	h, err := chart.AddMarkers(p, points(out), k, true)
	return label, h, err
}

// drawFitted draws length l's fitted cells in style k: the fitted curve, ±σ bars, filled
// markers, and their legend entry.
func (f *fitFigure) drawFitted(p *plot.Plot, ch *chart.Chart, m *Model, k, l int) error {
	obs := f.fitted[l]
	slices.SortFunc(obs, func(a, b Obs) int { return a.Batch - b.Batch })
	curve, err := fittedCurve(m, obs)
	if err != nil {
		return err
	}
	ln, err := chart.AddCurve(p, curve, k)
	if err != nil {
		return err
	}
	pts := points(obs)
	lo, hi := make([]float64, len(obs)), make([]float64, len(obs))
	for i, o := range obs {
		lo[i], hi[i] = o.FwdMs-o.SigmaMs, o.FwdMs+o.SigmaMs
	}
	if err := chart.AddIntervals(p, pts, lo, hi, k); err != nil {
		return err
	}
	sc, err := chart.AddMarkers(p, pts, k, false)
	if err != nil {
		return err
	}
	ch.Add("L = "+strconv.Itoa(l)+" tokens", ln, sc)
	return nil
}

// points are obs as (B, fwd ms).
func points(obs []Obs) plotter.XYs {
	xy := make(plotter.XYs, len(obs))
	for i, o := range obs {
		xy[i] = plotter.XY{X: float64(o.Batch), Y: o.FwdMs}
	}
	return xy
}

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
	return interpLogB(obs, b, func(o Obs) int { return o.Batch }, func(o Obs) float64 { return o.MeanLen })
}
