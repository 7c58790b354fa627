package tomlwords

import (
	"strings"
	"testing"
	"time"
)

func TestValue(t *testing.T) {
	long := make([]any, 40)
	for i := range long {
		long[i] = int64(i)
	}
	for _, c := range []struct {
		v    any
		want string
	}{
		{int64(300), "an integer (300)"},
		{3, "an integer (3)"},
		{1.5, "a float (1.5)"},
		{1e21, "a float (1e+21)"},
		{"8", `a string ("8")`},
		{true, "a boolean (true)"},
		{time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), "a date-time (2026-12-01T00:00:00Z)"},
		{[]any{int64(1), "a", 2.5, []any{int64(2)}, map[string]any{}}, `an array ([1, "a", 2.5, [2], {…}])`},
		{[]map[string]any{{}}, "an array of tables"},
		{map[string]any{"a": 1}, "a table"},
		{uint8(1), "uint8"},
	} {
		if got := Value(c.v); got != c.want {
			t.Errorf("Value(%#v) = %q, want %q", c.v, got, c.want)
		}
	}
	if got := Array(long); len(got) != 57+len("…]") || !strings.HasSuffix(got, "…]") || !strings.HasPrefix(got, "[0, 1, 2,") {
		t.Errorf("Array of 40 integers = %q (%d bytes): want its first 57 bytes and …]", got, len(got))
	}
}
