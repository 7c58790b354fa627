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

// A body buffer sized by idPrompts.Size holds its ids without growing: appendIDs writes
// exactly idsLen bytes and needs 8 bytes of room past them, no more (bodies were sized at 8
// bytes an id, about 1.5 times their length). Ids beyond the table (or negative) are written
// right, growing the buffer if they must.
func TestIDsExactSize(t *testing.T) {
	long := make([]int32, 1000)
	for i := range long {
		long[i] = int32(i * 151)
	}
	for _, c := range []struct {
		ids     []int32
		inTable bool
	}{{[]int32{0}, true}, {[]int32{7, 42}, true}, {[]int32{151668, 1000, 99, 262143}, true}, {long, true},
		{[]int32{262144, -1, 5}, false}} {
		size := idPrompts{c.ids}.Size(0)
		if size != idsLen(c.ids)+8 {
			t.Errorf("%v: Size %d, want idsLen %d + 8", c.ids[:1], size, idsLen(c.ids))
		}
		buf := make([]byte, 0, size)
		out := appendIDs(buf, c.ids)
		want, _ := json.Marshal(c.ids)
		if string(out) != string(want) {
			t.Errorf("appendIDs = %.40s, want %.40s", out, want)
		}
		if grew := &out[0] != &buf[:1][0]; c.inTable && grew {
			t.Errorf("%d ids: the buffer of Size %d grew", len(c.ids), size)
		}
	}
}
