package plugin

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/genload/genload/host/stats"
)

// Summary describes a set of prompt lengths (tokens).
type Summary struct {
	// N is the number of lengths.
	N int
	// Min, P50, P90 and Max are order statistics; P50 and P90 use the nearest-rank definition
	// (the ⌈p·N⌉-th smallest value).
	Min, P50, P90, Max int
	// Mean is the arithmetic mean.
	Mean float64
}

// Summarize computes the summary of ls (the zero Summary for no lengths).
func Summarize(ls []int) Summary {
	if len(ls) == 0 {
		return Summary{}
	}
	s := slices.Clone(ls)
	slices.Sort(s)
	sum := 0
	for _, v := range s {
		sum += v
	}
	return Summary{N: len(s), Min: s[0], P50: stats.Quantile(s, 0.5), P90: stats.Quantile(s, 0.9), Max: s[len(s)-1], Mean: float64(sum) / float64(len(s))}
}

// String renders "n=4 mean=1000.0 min=122 p50=481 p90=2339 max=2339".
func (s Summary) String() string {
	return fmt.Sprintf("n=%d mean=%.1f min=%d p50=%d p90=%d max=%d", s.N, s.Mean, s.Min, s.P50, s.P90, s.Max)
}

// lengthsWidth is the width in columns within which WriteLengths wraps the list of lengths
// (the text output's width, report.NarrowWidth).
const lengthsWidth = 120

// WriteLengths prints what `genload lengths` shows an author: the lengths (wrapped within 120
// columns, the continuation lines aligned under the first length), their summary and a text
// histogram of bins equal-width bins between min and max (bins <= 0 means 10), each bar
// scaled so the fullest bin is 40 characters:
//
//	lengths: 122 481 1058 2339
//	n=4 mean=1000.0 min=122 p50=481 p90=2339 max=2339
//	[   122,    344)  1 ████████████████████████████████████████
//	…
func WriteLengths(w io.Writer, ls []int, bins int) error {
	var b strings.Builder
	const head = "lengths:"
	b.WriteString(head)
	col := len(head)
	for _, v := range ls {
		s := strconv.Itoa(v)
		if col > len(head) && col+1+len(s) > lengthsWidth {
			b.WriteString("\n" + strings.Repeat(" ", len(head)))
			col = len(head)
		}
		b.WriteString(" " + s)
		col += 1 + len(s)
	}
	b.WriteString("\n")
	s := Summarize(ls)
	b.WriteString(s.String())
	b.WriteString("\n")
	if len(ls) > 0 {
		for _, row := range Histogram(ls, bins) {
			bar := 0
			if row.Max > 0 {
				bar = (row.Count*40 + row.Max - 1) / row.Max
			}
			fmt.Fprintf(&b, "[%6d, %6d%s %3d %s\n", row.Lo, row.Hi, row.close(), row.Count, strings.Repeat("█", bar))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Bin is one histogram row: Count lengths in [Lo, Hi) ([Lo, Hi] for the last bin); Max is the
// largest count of any bin.
type Bin struct {
	Lo, Hi, Count, Max int
	last               bool
}

func (b Bin) close() string {
	if b.last {
		return "]"
	}
	return ")"
}

// Histogram splits [min(ls), max(ls)] into bins equal-width integer bins (bins <= 0 means 10;
// fewer if the range is narrower) and counts ls in each.
func Histogram(ls []int, bins int) []Bin {
	if len(ls) == 0 {
		return nil
	}
	if bins <= 0 {
		bins = 10
	}
	lo, hi := slices.Min(ls), slices.Max(ls)
	span := hi - lo + 1
	bins = min(bins, span)
	width := (span + bins - 1) / bins
	bins = (span + width - 1) / width
	out := make([]Bin, bins)
	for i := range out {
		out[i] = Bin{Lo: lo + i*width, Hi: lo + (i+1)*width}
	}
	out[bins-1].Hi, out[bins-1].last = hi, true
	for _, v := range ls {
		out[min((v-lo)/width, bins-1)].Count++
	}
	m := 0
	for _, r := range out {
		m = max(m, r.Count)
	}
	for i := range out {
		out[i].Max = m
	}
	return out
}
