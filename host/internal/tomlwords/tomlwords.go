// Package tomlwords says a decoded TOML value in the words an error message uses: its TOML
// type and, for a scalar or a short array, the value itself. Both config errors (host/config)
// and plugin config errors (host/plugin) speak of values this way, so that a user reads one
// wording whichever table the bad value is in.
package tomlwords

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Value describes v, a value as BurntSushi/toml decodes it into an interface (int64, float64,
// string, bool, time.Time, []any, []map[string]any, map[string]any; int is taken as an
// integer too), by its TOML type and, for a scalar or an array, its value: "an integer (300)",
// "a float (1.5)", "a string (\"8\")", "a boolean (true)", "a date-time (2026-12-01T00:00:00Z)",
// "an array ([1, 2])", "an array of tables", "a table". A value of another Go type is given as
// that type.
func Value(v any) string {
	switch x := v.(type) {
	case int64:
		return fmt.Sprintf("an integer (%d)", x)
	case int:
		return fmt.Sprintf("an integer (%d)", x)
	case float64:
		return fmt.Sprintf("a float (%s)", strconv.FormatFloat(x, 'g', -1, 64))
	case string:
		return fmt.Sprintf("a string (%q)", x)
	case bool:
		return fmt.Sprintf("a boolean (%t)", x)
	case time.Time:
		return "a date-time (" + x.Format(time.RFC3339) + ")"
	case []any:
		return "an array (" + Array(x) + ")"
	case []map[string]any:
		return "an array of tables"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("%T", v)
}

// Array writes a short TOML rendering of a: [1, "a", 2.5], nested arrays as arrays, tables as
// {…}; past 60 characters it is cut and ends in "…]".
func Array(a []any) string {
	parts := make([]string, len(a))
	for i, v := range a {
		switch x := v.(type) {
		case string:
			parts[i] = strconv.Quote(x)
		case []any:
			parts[i] = Array(x)
		case map[string]any:
			parts[i] = "{…}"
		default:
			parts[i] = fmt.Sprint(x)
		}
	}
	s := "[" + strings.Join(parts, ", ") + "]"
	if len(s) > 60 {
		s = s[:57] + "…]"
	}
	return s
}
