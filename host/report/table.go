package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/results"
)

// TableOptions choose the form of [WriteTable].
type TableOptions struct {
	// Wide shows every column with data and every warning on its own line. The default
	// (false) shows the columns a latency model needs — L, B, realised lengths, fwd,
	// full-batch fwd, TTFT p50, the batch seen, counted, status — in at most [NarrowWidth]
	// characters a line for the default matrix, with warnings grouped by kind.
	Wide bool
	// Legends is shared by the tables of one command so that the legend of the columns is
	// printed once: each table prints under it only the legend lines no earlier table with
	// the same Legends printed, and none when Legends.Off. Nil prints the whole legend.
	Legends *Legends
}

// NarrowWidth is the line width in characters (runes) that the default table and the prose
// around it are kept within.
const NarrowWidth = 120

// Grid is the table as text: Head the column headers, Rows one row per cell (run order), and
// Legend the [head, explanation] pairs of the columns shown.
type Grid struct {
	Head   []string
	Rows   [][]string
	Legend [][2]string
}

// TableGrid returns run's table as text cells, the default or the wide set of columns.
func TableGrid(run *results.Run, opt TableOptions) Grid {
	h, s, t := present(run)
	cols := columns(h, s, t, opt.Wide)
	if !hasTimings(run) {
		cols = slices.DeleteFunc(cols, func(c column) bool { return c.timings })
	}
	if !hasPerServer(run) {
		cols = slices.DeleteFunc(cols, func(c column) bool { return c.perServer })
	} else {
		cols = slices.DeleteFunc(cols, func(c column) bool { return c.get == nil }) // the CSV's list of servers: the header line names them
	}
	if run.HasRepeats() {
		rep := textCol("repeat", "", func(c *results.Cell) string { return strconv.Itoa(c.Repeat) })
		cols = append(cols[:2:2], append([]column{rep}, cols[2:]...)...)
	}
	g := Grid{Head: make([]string, len(cols))}
	for i, c := range cols {
		g.Head[i] = c.head
		if l := legendFor(c.head, run, opt.Wide); l != "" {
			g.Legend = append(g.Legend, [2]string{c.head, l})
		}
	}
	g.Legend = append(g.Legend, [2]string{"p50, p90, p99", "nearest-rank percentiles: the ⌈q·N⌉-th smallest of the N samples (always one of them)"})
	for i := range run.Cells {
		r := make([]string, len(cols))
		for j, c := range cols {
			r[j] = c.get(&run.Cells[i])
		}
		g.Rows = append(g.Rows, r)
	}
	return g
}

// Table writes run's default table ([WriteTable] with zero [TableOptions]).
func Table(w io.Writer, run *results.Run) { WriteTable(w, run, TableOptions{}) }

// WriteTable writes run's cells as a markdown table ([MarkdownTable]) under a header naming
// the run, then the legend of the columns shown (once per [Legends]), then the warnings and
// errors. Times are milliseconds: "fwd" is
// the per-sequence latency per decode forward pass (decode time / its forward passes, between
// its first and last consistent chunks; "fwd fit" the robust fit beside it), "full-batch fwd" the same over
// the window where all counted sequences decode together; "counted" is the sequences in those
// figures over B (a partial cell left some out). The default form keeps its prose within
// [NarrowWidth] characters and groups warnings by kind ([GroupWarnings]); opt.Wide gives
// every column and one line per warning.
func WriteTable(w io.Writer, run *results.Run, opt TableOptions) {
	g := TableGrid(run, opt)
	prose := func(indent string, s string) {
		if opt.Wide {
			fmt.Fprintln(w, indent+s)
			return
		}
		for _, l := range wrap(s, NarrowWidth-len([]rune(indent))) {
			fmt.Fprintln(w, indent+l)
			indent = strings.Repeat(" ", len([]rune(indent)))
		}
	}
	h := run.Header
	fmt.Fprintf(w, "\n## genload %s — %s\n\n", h.RunID, h.Model)
	prose("", fmt.Sprintf("target %s (%s), tokenizer %s, %s, max_tokens %d, mode %s, lengths %s",
		h.Target, h.TargetKind, h.Tokenizer, contextText(h), h.ConfigMaxTokens(), h.ConfigMode(), h.PluginName("lengths")))
	if len(h.Workers) > 0 {
		names := make([]string, len(h.Workers))
		for i, wk := range h.Workers {
			names[i] = wk.Name + "=" + wk.URL
		}
		n := fmt.Sprintf("%d workers", len(h.Workers))
		if len(h.Workers) == 1 {
			n = "1 worker"
		}
		prose("", fmt.Sprintf("routed over %s, router %s: %s", n, h.PluginName("router"), strings.Join(names, ", ")))
	}
	if ts, ok := h.Engine["time_scale"].(float64); ok && ts > 0 {
		prose("", fmt.Sprintf("built-in engine: profile %v, time scale %g: times are wall-clock; ×%g gives the simulated GPU time", h.Engine["profile"], ts, 1/ts))
		for _, k := range []string{"quirks", "noise"} { // behaviours reproduced and noise injected change what the figures mean
			if v, _ := h.Engine[k].(string); v != "" {
				prose("", fmt.Sprintf("built-in engine %s: %s", k, v))
			}
		}
	}
	fmt.Fprintln(w)
	var left []int
	if j := slices.Index(g.Head, "len min/mean/max"); j >= 0 {
		left = append(left, j) // numbers right-aligned, the lengths as text
	}
	MarkdownTable(w, g.Head, g.Rows, left...)
	legend := opt.Legends.take(g.Legend)
	if len(legend) > 0 || countMessages(run) > 0 {
		fmt.Fprintln(w) // a markdown table ends at a blank line
	}
	for _, l := range legend {
		prose(fmt.Sprintf("  %-16s ", l[0]), l[1])
	}
	if opt.Wide {
		for _, c := range run.Cells {
			for _, warn := range c.Warnings {
				fmt.Fprintf(w, "⚠ %s: %s\n", c.Cell.Key(), warn)
			}
			if c.Error != "" {
				fmt.Fprintf(w, "✗ %s: %s\n", c.Cell.Key(), c.Error)
			}
		}
		return
	}
	all := make([]matrix.Cell, len(run.Cells))
	for i, c := range run.Cells {
		all[i] = c.Cell
	}
	for _, gr := range GroupWarnings(run) {
		mark := "⚠"
		if gr.Error {
			mark = "✗"
		}
		if len(gr.Cells) == 1 {
			prose(mark+" ", gr.Cells[0].Key()+": "+gr.Messages[0])
			continue
		}
		prose(mark+" ", fmt.Sprintf("%s — %d cells: %s", gr.Kind, len(gr.Cells), CellList(gr.Cells, all)))
		prose("    ", "e.g. "+gr.Cells[0].Key()+": "+gr.Messages[0])
	}
	if gs := GroupWarnings(run); len(gs) > 0 && len(gs) < countMessages(run) {
		prose("", "(warnings of one kind are grouped; --wide lists each cell's, and the JSON file holds them all)")
	}
}

// contextText is the header's context and where it came from ("context unknown" when no
// source gave one).
func contextText(h results.Header) string {
	if h.Context <= 0 {
		return "context unknown"
	}
	if h.ContextSource == "" || h.ContextSource == "unknown" {
		return fmt.Sprintf("context %d", h.Context)
	}
	return fmt.Sprintf("context %d (%s)", h.Context, h.ContextSource)
}

// Prose writes s wrapped at spaces within [NarrowWidth] columns: the first line after first,
// the others after rest (indents, usually spaces or a mark such as "⚠ "). A word longer
// than the room stays whole on its own line.
func Prose(w io.Writer, first, rest, s string) {
	indent := first
	width := NarrowWidth - max(len([]rune(first)), len([]rune(rest)))
	for _, l := range wrap(s, width) {
		fmt.Fprintln(w, indent+l)
		indent = rest
	}
}

// wrap breaks s into lines of at most width runes at spaces (a longer word stays whole).
func wrap(s string, width int) []string {
	var out []string
	var cur []rune
	for _, word := range strings.Fields(s) {
		wr := []rune(word)
		if len(cur) > 0 && len(cur)+1+len(wr) > width {
			out = append(out, string(cur))
			cur = cur[:0]
		}
		if len(cur) > 0 {
			cur = append(cur, ' ')
		}
		cur = append(cur, wr...)
	}
	if len(cur) > 0 || len(out) == 0 {
		out = append(out, string(cur))
	}
	return out
}
