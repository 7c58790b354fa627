package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// MarkdownCell escapes s for a cell of a markdown table: every "|" as "\|" and line breaks
// as spaces, so that the cell cannot split its row.
func MarkdownCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// MarkdownWidth is the width in runes of the lines [MarkdownTable] writes for head and rows:
// "| " + each column's widest cell (escaped) joined by " | " + " |".
func MarkdownWidth(head []string, rows [][]string) int {
	w := 1
	for _, n := range columnWidths(head, rows) {
		w += n + 3
	}
	return w
}

func columnWidths(head []string, rows [][]string) []int {
	width := make([]int, len(head))
	for _, r := range append([][]string{head}, rows...) {
		for j, s := range r {
			if j < len(width) {
				width[j] = max(width[j], len([]rune(MarkdownCell(s))), 1)
			}
		}
	}
	return width
}

// MarkdownTable writes a markdown table (GitHub-flavoured): the header, the separator row
// ("---:" under a right-aligned column, "---" under a left-aligned one or one a single
// character wide) and rows, each cell
// escaped ([MarkdownCell]) and padded to its column's widest, so that every line has exactly
// len(head) cells and the columns line up in plain text too. Columns are right-aligned
// (numbers) except those listed in left. A row with another number of cells than head is a
// bug in the caller: it panics, naming the row.
func MarkdownTable(w io.Writer, head []string, rows [][]string, left ...int) {
	for i, r := range rows {
		if len(r) != len(head) {
			panic(fmt.Sprintf("markdown table: row %d has %d cells under %d headers", i+1, len(r), len(head)))
		}
	}
	width := columnWidths(head, rows)
	line := func(r []string) {
		var b strings.Builder
		b.WriteString("|")
		for j, s := range r {
			s = MarkdownCell(s)
			pad := strings.Repeat(" ", width[j]-len([]rune(s)))
			if slices.Contains(left, j) {
				b.WriteString(" " + s + pad + " |")
			} else {
				b.WriteString(" " + pad + s + " |")
			}
		}
		fmt.Fprintln(w, b.String())
	}
	line(head)
	sep := make([]string, len(head))
	for j := range sep {
		if slices.Contains(left, j) || width[j] == 1 { // "-:" needs two columns; "-" alone is left to the renderer
			sep[j] = strings.Repeat("-", width[j])
		} else {
			sep[j] = strings.Repeat("-", width[j]-1) + ":"
		}
	}
	// The separator's cells are written as they are (a "|" in them would be escaped).
	var b strings.Builder
	b.WriteString("|")
	for _, s := range sep {
		b.WriteString(" " + s + " |")
	}
	fmt.Fprintln(w, b.String())
	for _, r := range rows {
		line(r)
	}
}
