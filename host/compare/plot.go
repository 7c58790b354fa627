package compare

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot/plotter"

	"github.com/genload/genload/host/chart"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/results"
)

// series is one run's per-forward latency at one sequence length, by batch size.
type series struct {
	seqLen int
	xy     plotter.XYs // (B, ms)
}

// latencySeries returns run's measured cells as one series per sequence length (ascending),
// points by ascending batch size: (B, mean per-forward latency in ms). A run with repeats
// gives one point per cell, its mean over its measured repeats ([PooledRun]).
func latencySeries(r *results.Run) []series {
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
// the plot by chart.Chart's Draw and Save, so it never hides a line. It fails for no run, more than two, or
// no measured cell.
func LatencyPlot(runs ...*results.Run) (*chart.Chart, error) {
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
		return nil, fmt.Errorf("plot: no measured cell in %s", runs[0].Name(0))
	}
	slices.Sort(lens)
	slices.Sort(batches)

	p := chart.NewPlot("Per-forward decode latency (mean per sequence) vs batch size\n"+plotSubtitle(runs), "batch size B (sequences, log scale)", "per-forward latency (ms)")
	ch := chart.New(p)
	chart.BatchAxis(&p.X, batches)
	if chart.ValueAxis(&p.Y, lo, hi) {
		p.Y.Label.Text = "per-forward latency (ms, log scale)"
	}
	for i, ss := range all {
		for _, s := range ss {
			k := slices.Index(lens, s.seqLen)
			lp, sc, err := chart.AddLine(p, s.xy, k, len(runs) == 2 && i == 0)
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
		ch.Add("before: "+runs[0].Name(0)+" (dashed)", chart.StyleThumb(true))
		ch.Add("after: "+runs[1].Name(1)+" (solid)", chart.StyleThumb(false))
	}
	return ch, nil
}

// plotSubtitle names the run(s), the model and, on the built-in engine, its profile and
// time scale (its times are wall-clock at that scale); where two runs differ in model or
// engine, each run's ("before X / after Y"), never the first run's for both.
func plotSubtitle(runs []*results.Run) string {
	var parts []string
	if len(runs) == 1 {
		parts = append(parts, "run "+runs[0].Name(0))
	} else {
		parts = append(parts, runs[0].Name(0)+" (before, dashed) vs "+runs[1].Name(1)+" (after, solid)")
	}
	each := func(f func(h results.Header) string) string {
		vals := make([]string, len(runs))
		for i, r := range runs {
			vals[i] = f(r.Header)
		}
		if len(vals) == 2 && vals[0] != vals[1] {
			or := func(v string) string {
				if v == "" {
					return "–"
				}
				return v
			}
			return "before " + or(vals[0]) + " / after " + or(vals[1])
		}
		return vals[0]
	}
	if m := each(func(h results.Header) string { return h.Model }); m != "" {
		parts = append(parts, "model "+m)
	}
	eng := each(func(h results.Header) string {
		if ts, ok := h.Engine["time_scale"]; ok {
			return fmt.Sprintf("%v at time scale %v", h.Engine["profile"], ts)
		}
		if h.TargetKind == "external" || h.Engine == nil {
			return "an external server"
		}
		return ""
	})
	if strings.Contains(eng, "time scale") {
		parts = append(parts, "built-in engine "+eng)
	}
	if sub := strings.Join(parts, " · "); len(sub) <= 90 {
		return sub
	}
	return parts[0] + "\n" + strings.Join(parts[1:], " · ")
}
