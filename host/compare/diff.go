package compare

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/stats"
)

// CellDiff is one cell's change from a run Before to a run After.
//
// Change = After/Before − 1 of the cell's mean per-forward latency
// (measure.Figures.PerForward.Mean), a fraction (+0.10 = 10 % slower after); TTFTChange is
// the same for the TTFT median (Figures.TTFT.P50), NaN when Before's is 0.
//
// When both runs have repeats and the cell has two or more measured repeats on each side,
// Change is instead the ratio of the repeats' geometric means − 1 and [Lo, Hi] its
// [DiffConfidence] interval ([stats.LogRatioInterval]: Welch t on the log ratio), RepBefore
// and RepAfter the repeats used, and Verdict "slower" or "faster" (the interval excludes 0),
// "within noise" (it holds 0 and lies within ±DiffMaterial: no change of that size) or
// "cannot tell" (it holds 0 and a change beyond ±DiffMaterial too); else Lo and Hi are NaN and
// Verdict "".
type CellDiff struct {
	CellKey
	Before, After         time.Duration
	Change                float64
	Lo, Hi                float64
	RepBefore, RepAfter   int
	Verdict               string
	TTFTBefore, TTFTAfter time.Duration
	TTFTChange            float64
}

// DiffConfidence is the two-sided confidence of a diff's per-cell intervals.
const DiffConfidence = 0.95

// Verdicts of a cell's change with an interval.
const (
	DiffSlower      = "slower"
	DiffFaster      = "faster"
	DiffWithinNoise = "within noise"
	DiffCannotTell  = "cannot tell"
)

// DiffMaterial is the least change a diff calls material, a fraction (5 %, measure's
// EstimatorTolerance: the gap genload lets two estimates of one figure differ by): an
// interval that holds 0 is "within noise" only when it excludes changes beyond it — an
// interval of [−87 %, +1015 %] holds 0 and says nothing.
const DiffMaterial = measure.EstimatorTolerance

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
	// Intervals says whether the cells' changes have intervals (both runs have repeats);
	// Source says how they were taken, or why there are none.
	Intervals bool
	Source    string
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
	rb, ra := RepeatsByCell(before), RepeatsByCell(after)
	d.Intervals = rb != nil && ra != nil
	switch {
	case d.Intervals:
		d.Source = fmt.Sprintf("Δ and its %.0f %% interval from each side's repeats: the ratio of their geometric means − 1, Welch t interval on the log ratio; within noise: the interval holds 0 and lies within ±%.0f %%; cannot tell: it holds 0 and a change beyond that", 100*DiffConfidence, 100*DiffMaterial)
	case rb != nil || ra != nil:
		d.Source = "no intervals: only one of the runs has repeats, so the other side's spread is unknown (measure both with genload run --repeat N or --until-cv, or compare with genload ab)"
	default:
		d.Source = "no intervals: each run measured each cell once, so a change cannot be told from noise (measure both with genload run --repeat N or --until-cv, or compare with genload ab)"
	}
	var ch, tch []float64
	for _, k := range keys {
		b, a := by[0][k], by[1][k]
		cd := CellDiff{CellKey: k, Before: b.Figures.PerForward.Mean, After: a.Figures.PerForward.Mean,
			TTFTBefore: b.Figures.TTFT.P50, TTFTAfter: a.Figures.TTFT.P50, Lo: math.NaN(), Hi: math.NaN()}
		cd.Change = change(cd.Before, cd.After)
		if d.Intervals {
			cd.RepBefore, cd.RepAfter = len(rb[k]), len(ra[k])
			if c, lo, hi, ok := stats.LogRatioInterval(rb[k], ra[k], DiffConfidence); ok {
				cd.Change, cd.Lo, cd.Hi = c, lo, hi
				cd.Verdict = diffVerdict(lo, hi)
			}
		}
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

// Verdicts of a paired A/B's cell (genload ab, and the report's A/B of two runs with repeats)
// whose interval holds 0: within ±DiffMaterial (no difference of that size), or not (a
// difference beyond it is as consistent with the pairs as none).
const (
	ABNoDifference = "no difference beyond ±5 %"
	ABCannotTell   = "cannot tell"
)

// ABVerdict is a B-against-A change's verdict from its interval [lo, hi] (fractions), and
// whether it is significant: "B slower" (lo > 0), "B faster" (hi < 0), ABNoDifference when the
// interval holds 0 and lies within ±DiffMaterial, else ABCannotTell — an interval of
// [−22.6 %, +72.5 %] holds 0 and says nothing of whether B differs.
func ABVerdict(lo, hi float64) (string, bool) {
	switch v := diffVerdict(lo, hi); v {
	case DiffSlower:
		return "B slower", true
	case DiffFaster:
		return "B faster", true
	case DiffWithinNoise:
		return ABNoDifference, false
	}
	return ABCannotTell, false
}

// diffVerdict is the Verdict of a change whose interval is [lo, hi] (fractions).
func diffVerdict(lo, hi float64) string {
	switch {
	case lo > 0:
		return DiffSlower
	case hi < 0:
		return DiffFaster
	case lo >= -DiffMaterial && hi <= DiffMaterial:
		return DiffWithinNoise
	}
	return DiffCannotTell
}

// WriteMarkdown writes the per-cell table (milliseconds; changes in %, + = slower after; with
// intervals, the repeats per side, the interval and the verdict) and the summary over the
// common cells, with how many changed beyond noise.
func (d *Diff) WriteMarkdown(w io.Writer) {
	fmt.Fprintf(w, "\n## Change from %s (before) to %s (after)\n\n", d.Before, d.After)
	head := []string{"L", "B", "fwd ms before", "fwd ms after", "fwd Δ %"}
	if d.Intervals {
		head = append(head, "repeats", fmt.Sprintf("%.0f %% interval %%", 100*DiffConfidence), "verdict")
	}
	head = append(head, "TTFT p50 before", "TTFT p50 after", "TTFT Δ %")
	var rows [][]string
	beyond, judged, unsure := 0, 0, 0
	for _, c := range d.Cells {
		row := []string{strconv.Itoa(c.SeqLen), strconv.Itoa(c.Batch), report.Ms(c.Before, 3), report.Ms(c.After, 3), plus(c.Change)}
		if d.Intervals {
			iv, verdict := "–", "no interval (fewer than 2 repeats a side)"
			if c.Verdict != "" {
				iv, verdict = "["+plus(c.Lo)+", "+plus(c.Hi)+"]", c.Verdict
				judged++
				switch c.Verdict {
				case DiffSlower, DiffFaster:
					beyond++
				case DiffCannotTell:
					unsure++
				}
			}
			row = append(row, fmt.Sprintf("%d / %d", c.RepBefore, c.RepAfter), iv, verdict)
		}
		rows = append(rows, append(row, report.Ms(c.TTFTBefore, 1), report.Ms(c.TTFTAfter, 1), plus(c.TTFTChange)))
	}
	report.MarkdownTable(w, head, rows)
	fmt.Fprintf(w, "\nper-forward latency change over %d common cells", len(d.Cells))
	if len(d.LeftOut) > 0 {
		fmt.Fprintf(w, " (%d left out)", len(d.LeftOut))
	}
	fmt.Fprintf(w, ": median %s %%, range %s … %s %%", plus(d.Median), plus(d.Min), plus(d.Max))
	if d.Intervals {
		fmt.Fprintf(w, "; %d of %d cells with an interval changed beyond noise, %d within noise (±%.0f %%), %d cannot tell (an interval that holds 0 and a change beyond ±%.0f %%)",
			beyond, judged, judged-beyond-unsure, 100*DiffMaterial, unsure, 100*DiffMaterial)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "TTFT p50 change: median %s %%, range %s … %s %%\n", plus(d.TTFTMedian), plus(d.TTFTMin), plus(d.TTFTMax))
	report.Prose(w, "", "  ", d.Source)
	writeNotes(w, d.Pooled, d.LeftOut, d.Warnings)
}

// RepeatsByCell is, per cell of a run with repeats, its measured repeats' mean per-forward
// latencies in ns ([ConsistentRepeats]: cells with two or more); nil for a run without
// repeats or with no cell measured twice. Diff's intervals and the report's A/B of two runs
// read it.
func RepeatsByCell(r *results.Run) map[CellKey][]float64 {
	if !r.HasRepeats() {
		return nil
	}
	c, err := ConsistentRepeats(r)
	if err != nil {
		return nil
	}
	out := map[CellKey][]float64{}
	for _, cc := range c.Cells {
		xs := make([]float64, len(cc.Runs))
		for i, x := range cc.Runs {
			xs[i] = float64(x)
		}
		out[cc.CellKey] = xs
	}
	return out
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
