package compare

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/genload/genload/host/report"
)

// The consistency report as text: the per-cell markdown table and the run-level summary.

func pct(f float64) string {
	if math.IsNaN(f) {
		return "–"
	}
	return strconv.FormatFloat(100*f, 'f', 2, 64)
}

// WriteMarkdown writes the per-cell table (milliseconds; CVs in %) and the run-level summary
// (see Summary).
func (c *Consistency) WriteMarkdown(w io.Writer) {
	head := []string{"L", "B", "fwd ms mean", "sd", "min", "max", "CV %", "full-batch CV %", "merged p50", "p90", "p99"} // within 120 columns with the repeats column
	if c.FromRepeats {
		lo, hi := c.repeatRange()
		fmt.Fprintf(w, "\n## Consistency of the repeats of each cell (%d to %d)\n\n", lo, hi)
		head = slices.Insert(head, 2, "repeats")
	} else {
		fmt.Fprintf(w, "\n## Consistency of %d runs: %s\n\n", len(c.RunIDs), strings.Join(c.RunIDs, ", "))
	}
	var rows [][]string
	for _, cc := range c.Cells {
		r := []string{strconv.Itoa(cc.SeqLen), strconv.Itoa(cc.Batch), report.Ms(cc.Mean, 3), report.Ms(cc.SD, 3), report.Ms(cc.Min, 3), report.Ms(cc.Max, 3), pct(cc.CV), pct(cc.WindowCV)}
		if c.FromRepeats {
			r = slices.Insert(r, 2, strconv.Itoa(len(cc.Runs)))
		}
		if m := cc.Merged; m != nil {
			r = append(r, report.Ms(m.P50, 3), report.Ms(m.P90, 3), report.Ms(m.P99, 3))
		} else {
			r = append(r, "–", "–", "–")
		}
		rows = append(rows, r)
	}
	report.MarkdownTable(w, head, rows)
	fmt.Fprintln(w)
	c.Summary(w)
}

// Summary writes the run-level summary: CV quantiles, cells within 5 % and 10 %, whole-run
// mean and median per-forward latency per run and their spans (not for the repeats of one
// run), how runs with repeats were pooled, left-out cells, warnings.
func (c *Consistency) Summary(w io.Writer) {
	n := len(c.Cells)
	if c.FromRepeats {
		lo, hi := c.repeatRange()
		fmt.Fprintf(w, "per-cell CV of per-forward latency (sample SD / mean over each cell's %d to %d measured repeats) across %d cells", lo, hi, n)
	} else {
		fmt.Fprintf(w, "per-cell CV of per-forward latency (sample SD / mean over %d runs) across %d common cells", len(c.RunIDs), n)
	}
	if len(c.LeftOut) > 0 {
		fmt.Fprintf(w, " (%d left out)", len(c.LeftOut))
	}
	fmt.Fprintf(w, ":\n  median %s %%, P90 %s %%, max %s %% (%s)\n", pct(c.MedianCV), pct(c.P90CV), pct(c.MaxCV), c.MaxCell)
	fmt.Fprintf(w, "  cells with CV ≤ 5 %%: %d/%d; CV ≤ 10 %%: %d/%d\n", c.Within5, n, c.Within10, n)
	runs := func(xs []time.Duration) string {
		s := make([]string, len(xs))
		for i, x := range xs {
			s[i] = report.Ms(x, 3)
		}
		return strings.Join(s, ", ")
	}
	if len(c.RunMean) > 0 {
		fmt.Fprintf(w, "whole-run mean per-forward latency (ms, over the common cells): %s; span %s %%\n", runs(c.RunMean), pct(c.MeanSpan))
		fmt.Fprintf(w, "whole-run median per-forward latency (ms): %s; span %s %%\n", runs(c.RunMedian), pct(c.MedianSpan))
	}
	writeNotes(w, c.Pooled, c.LeftOut, c.Warnings)
}

// repeatRange is the fewest and the most values of a cell.
func (c *Consistency) repeatRange() (lo, hi int) {
	lo = math.MaxInt
	for _, cc := range c.Cells {
		lo, hi = min(lo, len(cc.Runs)), max(hi, len(cc.Runs))
	}
	return lo, hi
}
