package compare

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/stats"
)

// CellDiff is one cell's change from a run Before to a run After.
//
// Change = After/Before − 1 of the cell's mean per-forward latency
// (measure.Figures.PerForward.Mean), a fraction (+0.10 = 10 % slower after); TTFTChange is
// the same for the TTFT median (Figures.TTFT.P50), NaN when Before's is 0.
type CellDiff struct {
	CellKey
	Before, After         time.Duration
	Change                float64
	TTFTBefore, TTFTAfter time.Duration
	TTFTChange            float64
}

// Diff compares two runs cell by cell over the cells measured in both (matched by (L, B)).
//
// Median, Min and Max are over the common cells' Change (stats.Median: the mean of the two
// middle values for an even count, as in Consistency); TTFTMedian, TTFTMin and TTFTMax likewise
// over the TTFTChange values that are defined.
type Diff struct {
	Before, After string // run ids
	Cells         []CellDiff
	LeftOut       []LeftOut
	Warnings      []string
	// Pooled says, per run with repeats, how its repeats were pooled into one figure per
	// cell (see [Pool]).
	Pooled []string

	Median, Min, Max             float64
	TTFTMedian, TTFTMin, TTFTMax float64
}

func change(before, after time.Duration) float64 {
	if before <= 0 {
		return math.NaN()
	}
	return float64(after)/float64(before) - 1
}

// Compare returns the Diff from before to after. A run with repeats (genload run --until-cv)
// is compared by its cells' means over their measured repeats ([Pool]; said in Pooled). It
// fails when no cell is measured in both.
func Compare(before, after *results.Run) (*Diff, error) {
	runs := []*results.Run{before, after}
	keys, by, left, pooled := common(runs)
	if len(keys) == 0 {
		return nil, fmt.Errorf("diff: no cell is measured in both runs (%d cells left out)", len(left))
	}
	d := &Diff{Before: before.Name(0), After: after.Name(1), LeftOut: left, Warnings: headerDifferences(runs)}
	d.Warnings = append(d.Warnings, report.CacheNotes(runs)...)
	for i, p := range pooled {
		if p != "" {
			d.Pooled = append(d.Pooled, fmt.Sprintf("%s (%s): %s", []string{"before", "after"}[i], runs[i].Name(i), p))
		}
	}
	var ch, tch []float64
	for _, k := range keys {
		b, a := by[0][k], by[1][k]
		cd := CellDiff{CellKey: k, Before: b.Figures.PerForward.Mean, After: a.Figures.PerForward.Mean,
			TTFTBefore: b.Figures.TTFT.P50, TTFTAfter: a.Figures.TTFT.P50}
		cd.Change = change(cd.Before, cd.After)
		cd.TTFTChange = change(cd.TTFTBefore, cd.TTFTAfter)
		ch = append(ch, cd.Change)
		if !math.IsNaN(cd.TTFTChange) {
			tch = append(tch, cd.TTFTChange)
		}
		d.Cells = append(d.Cells, cd)
	}
	d.Median, d.Min, d.Max = stats.Median(ch), slices.Min(ch), slices.Max(ch)
	d.TTFTMedian, d.TTFTMin, d.TTFTMax = math.NaN(), math.NaN(), math.NaN()
	if len(tch) > 0 {
		d.TTFTMedian, d.TTFTMin, d.TTFTMax = stats.Median(tch), slices.Min(tch), slices.Max(tch)
	}
	return d, nil
}

// WriteMarkdown writes the per-cell table (milliseconds; changes in %, + = slower after) and
// the summary over the common cells.
func (d *Diff) WriteMarkdown(w io.Writer) {
	fmt.Fprintf(w, "\n## Change from %s (before) to %s (after)\n\n", d.Before, d.After)
	head := []string{"L", "B", "fwd ms before", "fwd ms after", "fwd Δ %", "TTFT p50 before", "TTFT p50 after", "TTFT Δ %"}
	var rows [][]string
	for _, c := range d.Cells {
		rows = append(rows, []string{strconv.Itoa(c.SeqLen), strconv.Itoa(c.Batch), report.Ms(c.Before, 3), report.Ms(c.After, 3), plus(c.Change),
			report.Ms(c.TTFTBefore, 1), report.Ms(c.TTFTAfter, 1), plus(c.TTFTChange)})
	}
	report.MarkdownTable(w, head, rows)
	fmt.Fprintf(w, "\nper-forward latency change over %d common cells", len(d.Cells))
	if len(d.LeftOut) > 0 {
		fmt.Fprintf(w, " (%d left out)", len(d.LeftOut))
	}
	fmt.Fprintf(w, ": median %s %%, range %s … %s %%\n", plus(d.Median), plus(d.Min), plus(d.Max))
	fmt.Fprintf(w, "TTFT p50 change: median %s %%, range %s … %s %%\n", plus(d.TTFTMedian), plus(d.TTFTMin), plus(d.TTFTMax))
	writeNotes(w, d.Pooled, d.LeftOut, d.Warnings)
}

// plus formats a fraction as a percentage with an explicit sign ("+12.34", "-0.50", "–" for
// NaN).
func plus(f float64) string {
	if math.IsNaN(f) {
		return "–"
	}
	s := strconv.FormatFloat(100*f, 'f', 2, 64)
	if f >= 0 {
		s = "+" + s
	}
	return s
}

// writeNotes writes the lines under a consistency or diff summary: how runs with repeats were
// pooled, the cells left out with their reasons, and the warnings (⚠).
func writeNotes(w io.Writer, pooled []string, left []LeftOut, warnings []string) {
	for _, p := range pooled {
		fmt.Fprintf(w, "pooled %s\n", p)
	}
	for _, l := range left {
		fmt.Fprintf(w, "left out %s: %s\n", l.CellKey, l.Reason)
	}
	for _, warn := range warnings {
		report.Prose(w, "⚠ ", "  ", warn) // within the table's width, as the cells' warnings
	}
}
