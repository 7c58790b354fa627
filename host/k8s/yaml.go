package k8s

import (
	"fmt"
	"strconv"
	"strings"
)

// kv is one key of a YAML mapping; a map is written in the order of its keys.
type kv struct {
	k string
	v any // string, int, bool, []any, []kv
}

// m builds a mapping from alternating keys and values, dropping keys whose value is nil.
func m(pairs ...any) []kv {
	var out []kv
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == nil {
			continue
		}
		out = append(out, kv{pairs[i].(string), pairs[i+1]})
	}
	return out
}

// emit writes v as a YAML block document. Strings are double-quoted (Go escapes are YAML
// escapes), except multi-line ones, which are literal blocks (|, |-, or |+ for the trailing
// newlines) when every line can be written so.
func emit(b *strings.Builder, v any, indent int) {
	pad := strings.Repeat(" ", indent)
	switch x := v.(type) {
	case []kv:
		for _, e := range x {
			b.WriteString(pad + e.k + ":")
			writeValue(b, e.v, indent)
		}
	case []any:
		for _, e := range x {
			b.WriteString(pad + "-")
			switch e.(type) {
			case []kv:
				// "- " then the mapping's first key on the same line, the rest indented.
				var sub strings.Builder
				emit(&sub, e, indent+2)
				b.WriteString(" " + strings.TrimPrefix(sub.String(), strings.Repeat(" ", indent+2)))
			default:
				writeValue(b, e, indent)
			}
		}
	}
}

func writeValue(b *strings.Builder, v any, indent int) {
	switch x := v.(type) {
	case []kv:
		if len(x) == 0 {
			b.WriteString(" {}\n")
			return
		}
		b.WriteString("\n")
		emit(b, x, indent+2)
	case []any:
		if len(x) == 0 {
			b.WriteString(" []\n")
			return
		}
		b.WriteString("\n")
		emit(b, x, indent+2)
	case string:
		if block, ok := literal(x, indent+2); ok {
			b.WriteString(" " + block)
			return
		}
		b.WriteString(" " + strconv.Quote(x) + "\n")
	case int, int32, int64, bool:
		fmt.Fprintf(b, " %v\n", x)
	default:
		panic(fmt.Sprintf("k8s: cannot write %T as YAML", v))
	}
}

// literal writes s as a literal block scalar indented by indent, if s has several lines, a
// first line that does not start with a space or tab (it sets the block's indentation), and
// only printable characters.
func literal(s string, indent int) (string, bool) {
	if !strings.Contains(strings.TrimRight(s, "\n"), "\n") {
		return "", false
	}
	body := strings.TrimRight(s, "\n")
	if strings.HasPrefix(body, " ") || strings.HasPrefix(body, "\t") || strings.HasPrefix(body, "\n") {
		return "", false
	}
	for _, r := range body {
		if r != '\t' && r != '\n' && (r < 0x20 || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x2029 || r == 0xfeff) {
			return "", false
		}
	}
	chomp := "-"
	switch trail := len(s) - len(body); {
	case trail == 1:
		chomp = ""
	case trail > 1:
		chomp = "+"
	}
	pad := strings.Repeat(" ", indent)
	var b strings.Builder
	b.WriteString("|" + chomp + "\n")
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		if l == "" {
			b.WriteString("\n")
			continue
		}
		b.WriteString(pad + l + "\n")
	}
	return b.String(), true
}
