package chart

import (
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
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

// batchTicks puts a tick at every batch size and labels the powers of two, then each other
// batch size that sits at least 0.2 log₂ units (a ratio of 1.15) from every label so far, so
// labels never crowd: 1…8, 12, 16, 32, 48, 64 label all but 7.
func batchTicks(batches []int) plot.ConstantTicks {
	var labelled []float64
	t := make(plot.ConstantTicks, len(batches))
	for i, b := range batches {
		t[i].Value = float64(b)
		if b&(b-1) == 0 {
			t[i].Label = strconv.Itoa(b)
			labelled = append(labelled, math.Log2(float64(b)))
		}
	}
	for i, b := range batches {
		if t[i].Label != "" {
			continue
		}
		l := math.Log2(float64(b))
		if !slices.ContainsFunc(labelled, func(x float64) bool { return math.Abs(x-l) < 0.2 }) {
			t[i].Label = strconv.Itoa(b)
			labelled = append(labelled, l)
		}
	}
	return t
}

// LogTicks125 is a gonum/plot tick marker for a log axis: it labels 1, 2 and 5 of each decade
// and marks the other integer multiples of it (latency axes of genload plot and genload fit).
type LogTicks125 struct{}

// Ticks returns the ticks between lo and hi (both > 0).
func (LogTicks125) Ticks(lo, hi float64) []plot.Tick {
	var t []plot.Tick
	for dec := math.Pow10(int(math.Floor(math.Log10(lo)))); dec <= hi; dec *= 10 {
		for m := 1; m < 10; m++ {
			v := float64(m) * dec
			if v < lo || v > hi {
				continue
			}
			lab := ""
			if m == 1 || m == 2 || m == 5 {
				lab = strconv.FormatFloat(v, 'g', -1, 64)
			}
			t = append(t, plot.Tick{Value: v, Label: lab})
		}
	}
	return t
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
