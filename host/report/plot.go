package report

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/genload/genload/host/measure"
)

// Plot size and PNG resolution: 10 × 6.25 in at 144 dpi is 1440 × 900 pixels.
const (
	plotWidth  = 10 * vg.Inch
	plotHeight = 6.25 * vg.Inch
	plotDPI    = 144
)

// series is one run's per-forward latency at one sequence length, by batch size.
type series struct {
	seqLen int
	xy     plotter.XYs // (B, ms)
}

// latencySeries returns run's measured cells as one series per sequence length (ascending),
// points by ascending batch size: (B, mean per-forward latency in ms). A run with repeats
// gives one point per cell, its mean over its measured repeats ([PooledRun]).
func latencySeries(r *Run) []series {
	r = PooledRun(r)
	by := map[int]plotter.XYs{}
	for i := range r.Cells {
		c := &r.Cells[i]
		d, why := measured(c)
		if why != "" {
			continue
		}
		by[c.Cell.SeqLen] = append(by[c.Cell.SeqLen], plotter.XY{X: float64(c.Cell.Batch), Y: measure.Ms(d)})
	}
	out := make([]series, 0, len(by))
	for l, xy := range by {
		slices.SortFunc(xy, func(a, b plotter.XY) int { return int(a.X - b.X) })
		out = append(out, series{l, xy})
	}
	slices.SortFunc(out, func(a, b series) int { return a.seqLen - b.seqLen })
	return out
}

// LatencyPlot draws per-forward latency (mean per-sequence latency per decode forward pass,
// ms) against batch size, one line per sequence length L (colour and marker per L). With one
// run the lines are solid; with two (before, after) the first run's lines are dashed and the
// second's solid, same colour per L. The batch-size axis is log₂ with a tick at every batch
// size measured; the latency axis is linear from 0, or log₁₀ (1-2-5 ticks) when the largest
// value exceeds 20× the smallest so that short and long sequence lengths stay readable.
// The legend (one entry per L, and the before/after line styles) is drawn to the right of
// the plot by Draw and Save, so it never hides a line. It fails for no run, more than two, or
// no measured cell.
func LatencyPlot(runs ...*Run) (*Chart, error) {
	if len(runs) == 0 || len(runs) > 2 {
		return nil, fmt.Errorf("plot: want one run or two (before, after), got %d", len(runs))
	}
	all := make([][]series, len(runs))
	var lens, batches []int
	lo, hi := math.Inf(1), 0.0
	for i, r := range runs {
		all[i] = latencySeries(r)
		for _, s := range all[i] {
			if !slices.Contains(lens, s.seqLen) {
				lens = append(lens, s.seqLen)
			}
			for _, p := range s.xy {
				if b := int(p.X); !slices.Contains(batches, b) {
					batches = append(batches, b)
				}
				lo, hi = min(lo, p.Y), max(hi, p.Y)
			}
		}
	}
	if len(lens) == 0 {
		return nil, fmt.Errorf("plot: no measured cell in %s", runLabel(runs[0], 0))
	}
	slices.Sort(lens)
	slices.Sort(batches)

	p := NewPlot("Per-forward decode latency (mean per sequence) vs batch size\n"+plotSubtitle(runs), "batch size B (sequences, log scale)", "per-forward latency (ms)")
	ch := &Chart{Plot: p, Legend: plot.NewLegend()}
	ch.Legend.Top, ch.Legend.Left = true, true
	ch.Legend.XOffs, ch.Legend.YOffs = vg.Points(10), -vg.Points(12)
	ch.Legend.TextStyle.Font.Size = vg.Points(10)
	ch.Legend.ThumbnailWidth = vg.Points(28)
	ch.Legend.Padding = vg.Points(4)
	BatchAxis(&p.X, batches)
	if ValueAxis(&p.Y, lo, hi) {
		p.Y.Label.Text = "per-forward latency (ms, log scale)"
	}
	for i, ss := range all {
		for _, s := range ss {
			k := slices.Index(lens, s.seqLen)
			lp, sc, err := AddLine(p, s.xy, k, len(runs) == 2 && i == 0)
			if err != nil {
				return nil, fmt.Errorf("plot: L=%d: %w", s.seqLen, err)
			}
			if i == len(runs)-1 || !slices.ContainsFunc(all[len(runs)-1], func(o series) bool { return o.seqLen == s.seqLen }) {
				if i == len(runs)-1 || len(runs) == 1 {
					ch.Add("L = "+strconv.Itoa(s.seqLen)+" tokens", lp, sc)
				} else {
					ch.Add("L = "+strconv.Itoa(s.seqLen)+" tokens (before only)", lp, sc)
				}
			}
		}
	}
	if len(runs) == 2 {
		black := color.Gray{Y: 40}
		ch.Add("before: "+runLabel(runs[0], 0)+" (dashed)", &plotter.Line{LineStyle: draw.LineStyle{Color: black, Width: dashedWidth, Dashes: dashes}})
		ch.Add("after: "+runLabel(runs[1], 1)+" (solid)", &plotter.Line{LineStyle: draw.LineStyle{Color: black, Width: solidWidth}})
	}
	return ch, nil
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

// plotSubtitle names the run(s), the model and, on the built-in engine, its profile and
// time scale (its times are wall-clock at that scale).
func plotSubtitle(runs []*Run) string {
	h := runs[0].Header
	var parts []string
	if len(runs) == 1 {
		parts = append(parts, "run "+runLabel(runs[0], 0))
	} else {
		parts = append(parts, runLabel(runs[0], 0)+" (before, dashed) vs "+runLabel(runs[1], 1)+" (after, solid)")
	}
	if h.Model != "" {
		parts = append(parts, "model "+h.Model)
	}
	if ts, ok := h.Engine["time_scale"]; ok {
		parts = append(parts, fmt.Sprintf("built-in engine %v at time scale %v", h.Engine["profile"], ts))
	}
	if sub := strings.Join(parts, " · "); len(sub) <= 90 {
		return sub
	}
	return parts[0] + "\n" + strings.Join(parts[1:], " · ")
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

// Save writes the chart as <prefix>.png (1440 × 900 pixels) and <prefix>.svg and returns the
// two paths.
func (ch *Chart) Save(prefix string) (pngPath, svgPath string, err error) {
	pngPath, svgPath = prefix+".png", prefix+".svg"
	img := vgimg.NewWith(vgimg.UseWH(plotWidth, plotHeight), vgimg.UseDPI(plotDPI), vgimg.UseBackgroundColor(color.White))
	ch.Draw(draw.New(img))
	if err := writeTo(pngPath, vgimg.PngCanvas{Canvas: img}); err != nil {
		return "", "", err
	}
	svg := vgsvg.New(plotWidth, plotHeight)
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
