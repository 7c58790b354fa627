package dispatch

import (
	"encoding/json"
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

// A body buffer sized by idPrompts.Size (7 bytes an id, the most an id of the table takes,
// and the last store's spare bytes) holds its ids without growing, up to the largest id of
// the table; ids beyond it (or negative) are written right, growing the buffer if they must.
func TestIDsBoundedSize(t *testing.T) {
	long := make([]int32, 1000)
	for i := range long {
		long[i] = int32(i * 151)
	}
	largest := make([]int32, 500)
	for i := range largest {
		largest[i] = idTableSize - 1
	}
	for _, c := range []struct {
		ids     []int32
		inTable bool
	}{{[]int32{0}, true}, {[]int32{7, 42}, true}, {[]int32{151668, 1000, 99, 262143}, true}, {long, true}, {largest, true},
		{[]int32{262144, -1, 5}, false}} {
		size := idPrompts{c.ids}.Size(0)
		buf := make([]byte, 0, size)
		out := appendIDs(buf, c.ids)
		want, _ := json.Marshal(c.ids)
		if string(out) != string(want) {
			t.Errorf("appendIDs = %.40s, want %.40s", out, want)
		}
		if grew := &out[0] != &buf[:1][0]; c.inTable && grew {
			t.Errorf("%d ids: the buffer of Size %d grew for a body of %d bytes", len(c.ids), size, len(out))
		}
		if c.inTable && size > 7*len(c.ids)+25 {
			t.Errorf("%d ids: Size %d above 7 bytes an id", len(c.ids), size)
		}
	}
}
