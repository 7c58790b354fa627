package textcheck

import (
	"strings"
	"testing"
)

// The steplog table as it was printed (10 header cells over 11 delimiter cells) fails; a
// table with an escaped pipe in a cell passes; a row short of a cell fails, naming its line.
func TestMarkdownTables(t *testing.T) {
	for _, tc := range []struct {
		text, err string
		tables    int
	}{
		{"| a | b |\n|---:|---|\n| 1 | x \\| y |\n\ntext\n| c |\n| - |\n", "", 2},
		{"| L | B | status | forwards | modal active | at B | never above B | fwd at B ms | fwd CV % | note |\n|---:|---:|---|---:|---:|---:|---:|---|---:|---:|---|\n",
			"line 2: the delimiter row has 11 cells under a header of 10", 1},
		{"x\n| a | b |\n| -- | -- |\n| 1 |\n", "line 4: a row of 1 cells under a header of 2", 1},
		{"| a | b |\n| -- | == |\n", `delimiter cell "==" is not hyphens`, 1},
		{"| a | b\n| -- | -- |\n", "not closed by a pipe", 1},
	} {
		n, err := MarkdownTables(tc.text)
		if n != tc.tables || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("MarkdownTables(%q) = %d, %v; want %d, %q", tc.text, n, err, tc.tables, tc.err)
		}
	}
}

func TestWider(t *testing.T) {
	got := Wider("abc\n"+strings.Repeat("–", 5)+"\nabcdef", 5)
	if len(got) != 1 || !strings.HasPrefix(got[0], "line 3 (6 runes)") {
		t.Errorf("Wider = %q", got)
	}
}
