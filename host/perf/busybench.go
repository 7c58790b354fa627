package perf

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/scrape/metrics"
)

// BenchCheck is the verdict of a `make bench` run on a busy host (genload-perf busy-bench):
// whether fwd rose with B at every L, and whether the built-in engine's steps kept to their
// plan in every cell.
type BenchCheck struct {
	// Cells is the cells with a fwd; Drops lists, per L, each B whose fwd is below the fwd
	// of the next smaller B ("L=1000: B=5 0.402 ms < B=4 0.405 ms (−0.7 %)").
	Cells int
	Drops []string
	// Overrun counts the cells with an engine overrun record, Over those above ShareLimit;
	// MaxShare is the largest share and MaxAt its cell ("L=… B=…").
	Overrun, Over int
	ShareLimit    float64
	MaxShare      float64
	MaxAt         string
	// Missing lists cells without fwd (their warnings' first reason).
	Missing []string
	// Remeasured lists the cells measured again ([run] remeasure_overrun) with their
	// discarded attempts' shares ("L=4000 B=1: 10.1 %, 2.4 %"); Discarded counts those
	// attempts, and FirstOver the cells whose first attempt was over ShareLimit (what Over
	// would be without re-measuring).
	Remeasured []string
	Discarded  int
	FirstOver  int
}

// OK reports whether fwd was monotonic in B at every L, every cell had a fwd and an overrun
// record, and no cell's overrun share exceeded the limit.
func (c BenchCheck) OK() bool {
	return len(c.Drops) == 0 && len(c.Missing) == 0 && c.Over == 0 && c.Overrun == c.Cells && c.Cells > 0
}

// CheckBench checks the cells of run: fwd (the per-forward mean) non-decreasing in B at each
// L, and each cell's engine overrun share (Server.Steps.Overrun) within shareLimit.
func CheckBench(run *results.Run, shareLimit float64) BenchCheck {
	c := BenchCheck{ShareLimit: shareLimit}
	type point struct {
		b   int
		fwd float64 // ms
	}
	byL := map[int][]point{}
	for _, cell := range run.Cells {
		at := fmt.Sprintf("L=%d B=%d", cell.Cell.SeqLen, cell.Cell.Batch)
		f := cell.Figures
		if !results.Measured(cell.Status) || f == nil || f.PerForward.N == 0 {
			why := cell.Error
			if why == "" && f != nil {
				why = f.PerForwardReason
			}
			c.Missing = append(c.Missing, at+": "+why)
			continue
		}
		c.Cells++
		byL[cell.Cell.SeqLen] = append(byL[cell.Cell.SeqLen], point{cell.Cell.Batch, measure.Ms(f.PerForward.Mean)})
		var o *metrics.Overrun
		if cell.Server != nil {
			o = cell.Server.Steps.Overrun
		}
		if o == nil {
			continue
		}
		c.Overrun++
		if o.Share > shareLimit {
			c.Over++
		}
		first := o.Share
		if rs := cell.Remeasured; len(rs) > 0 {
			first = rs[0].Overrun.Share
			shares := make([]string, len(rs))
			for i, r := range rs {
				shares[i] = fmt.Sprintf("%.1f %%", 100*r.Overrun.Share)
			}
			c.Remeasured = append(c.Remeasured, at+": "+strings.Join(shares, ", "))
			c.Discarded += len(rs)
		}
		if first > shareLimit {
			c.FirstOver++
		}
		if o.Share > c.MaxShare || c.MaxAt == "" {
			c.MaxShare, c.MaxAt = o.Share, at
		}
	}
	ls := make([]int, 0, len(byL))
	for l := range byL {
		ls = append(ls, l)
	}
	slices.Sort(ls)
	for _, l := range ls {
		ps := byL[l]
		slices.SortFunc(ps, func(a, b point) int { return a.b - b.b })
		for i := 1; i < len(ps); i++ {
			if ps[i].fwd < ps[i-1].fwd {
				c.Drops = append(c.Drops, fmt.Sprintf("L=%d: B=%d %.4f ms < B=%d %.4f ms (%+.2f %%)", l, ps[i].b, ps[i].fwd, ps[i-1].b, ps[i-1].fwd, 100*(ps[i].fwd/ps[i-1].fwd-1)))
			}
		}
	}
	return c
}

// WriteBenchCheck writes the check's verdict lines.
func WriteBenchCheck(w io.Writer, c BenchCheck) {
	verdict := "pass"
	if !c.OK() {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "busy-host bench: %s\n", verdict)
	fmt.Fprintf(w, "- fwd monotonic in B: %d cells with fwd, %d drops%s\n", c.Cells, len(c.Drops), list(c.Drops))
	fmt.Fprintf(w, "- engine overrun ≤ %.0f %% of the planned step time: %d of %d cells over (largest %.2f %% at %s); %d cells without a record\n",
		100*c.ShareLimit, c.Over, c.Overrun, 100*c.MaxShare, c.MaxAt, c.Cells-c.Overrun)
	fmt.Fprintf(w, "- measured again ([run] remeasure_overrun): %d cells, %d attempts discarded; %d cells over the share in their first attempt%s\n",
		len(c.Remeasured), c.Discarded, c.FirstOver, list(c.Remeasured))
	if len(c.Missing) > 0 {
		fmt.Fprintf(w, "- cells without fwd: %d%s\n", len(c.Missing), list(c.Missing))
	}
}

func list(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return ":\n  " + strings.Join(xs, "\n  ")
}
