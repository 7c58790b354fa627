package dispatch

import (
	"strconv"
	"testing"
)

// TestIDTableEveryEntry checks every entry of the id table against strconv: the text of the
// id and a comma in the low bytes, its length in the top byte.
func TestIDTableEveryEntry(t *testing.T) {
	tab := idTable()
	if len(tab) != idTableSize {
		t.Fatalf("%d entries, want %d", len(tab), idTableSize)
	}
	bad := 0
	for id, v := range tab {
		want := strconv.Itoa(id) + ","
		n := int(v >> 56)
		got := make([]byte, 0, 8)
		for i := range min(n, 7) {
			got = append(got, byte(v>>(8*i)))
		}
		if n != len(want) || string(got) != want || v<<8>>(8*n+8) != 0 && n < 7 {
			if bad++; bad <= 5 {
				t.Errorf("id %d: entry %#x (%q, length %d), want %q", id, v, got, n, want)
			}
		}
	}
}
