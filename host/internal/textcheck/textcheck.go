// Package textcheck holds the checks the tests make on genload's text output: that every
// markdown table is well formed, that lines keep within a width, and that output matches its
// golden file.
package textcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var delimiter = regexp.MustCompile(`^:?-+:?$`)

// cells splits a table line ("| a | b \| c |") into its cells at the pipes that are not
// escaped, without the outer ones; ok is false when the line does not start and end with one.
func cells(line string) (out []string, ok bool) {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") || strings.HasSuffix(line, `\|`) || len(line) < 2 {
		return nil, false
	}
	var cur strings.Builder
	inner := line[1 : len(line)-1]
	for i := 0; i < len(inner); i++ {
		switch {
		case inner[i] == '\\' && i+1 < len(inner) && inner[i+1] == '|':
			cur.WriteString(`\|`)
			i++
		case inner[i] == '|':
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(inner[i])
		}
	}
	return append(out, strings.TrimSpace(cur.String())), true
}

// MarkdownTables checks every markdown table in text — each block of consecutive lines that
// start with "|" — as a GitHub-flavoured table: a header row, a delimiter row of as many
// cells, each of hyphens with an optional colon at either end, and rows of as many cells
// again, every line closed by a pipe. It returns the number of tables and the first fault,
// naming its line (1-based) and what was counted.
func MarkdownTables(text string) (int, error) {
	lines := strings.Split(text, "\n")
	tables := 0
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "|") {
			continue
		}
		start := i
		for i < len(lines) && strings.HasPrefix(lines[i], "|") {
			i++
		}
		block := lines[start:i]
		tables++
		head, ok := cells(block[0])
		if !ok {
			return tables, fmt.Errorf("line %d: a table row not closed by a pipe: %q", start+1, block[0])
		}
		if len(block) < 2 {
			return tables, fmt.Errorf("line %d: a table with a header and no delimiter row", start+1)
		}
		sep, ok := cells(block[1])
		if !ok || len(sep) != len(head) {
			return tables, fmt.Errorf("line %d: the delimiter row has %d cells under a header of %d: %q", start+2, len(sep), len(head), block[1])
		}
		for _, s := range sep {
			if !delimiter.MatchString(s) {
				return tables, fmt.Errorf("line %d: delimiter cell %q is not hyphens with optional colons", start+2, s)
			}
		}
		for j, row := range block[2:] {
			c, ok := cells(row)
			if !ok || len(c) != len(head) {
				return tables, fmt.Errorf("line %d: a row of %d cells under a header of %d: %q", start+3+j, len(c), len(head), row)
			}
		}
	}
	return tables, nil
}

// Wider returns the lines of text longer than width runes, each as "line N (W runes): …".
func Wider(text string, width int) []string {
	var out []string
	for i, l := range strings.Split(text, "\n") {
		if n := len([]rune(l)); n > width {
			out = append(out, fmt.Sprintf("line %d (%d runes): %s", i+1, n, l))
		}
	}
	return out
}

// Golden compares got with the golden file at path, failing t with the first differing line
// and how to rewrite the file; with update it first writes got there (creating its folder),
// as the tests' -update flag asks.
func Golden(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if string(got) == string(want) {
		return
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	line := 0
	for line < len(g) && line < len(w) && g[line] == w[line] {
		line++
	}
	first := "(got is shorter)"
	if line < len(g) {
		first = g[line]
	}
	t.Errorf("%s differs from the output at line %d: %q; if the change is meant, run the test with -update and review the diff\n got:\n%s", path, line+1, first, got)
}
