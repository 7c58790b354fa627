// Package jsonscan reads JSON in place, without building values: functions over a byte
// slice b and an index i that skip whitespace, find the end of a string, skip a value,
// walk an object's members, read a plain integer and unescape a string's content. A
// caller picks out the few fields it needs and skips the rest in one forward pass, with
// no allocation (the SSE chunk decoder on every event, the engine's completion-request
// reader on bodies of 25 MB).
//
// The grammar is fastjson's (github.com/valyala/fastjson), which is JSON's (RFC 8259) for
// valid input, so a scan agrees with encoding/json on every valid document; on invalid
// input it is more lenient in two documented places — string escapes are not validated
// (StringEnd) and a number is any run of [0-9.eE+-] that is not empty nor a lone sign
// (SkipValue) — and stricter in one: nesting deeper than MaxDepth is rejected. Callers that
// need strict validation hand the bytes to encoding/json afterwards.
//
// Indexes: a function given i reads from b[i]; "end" is the index just after what was read.
// ok false means malformed (or too deep) JSON at or after i, and the index returned with it
// is where reading stopped: the offending byte, or len(b) when the input ended too soon (a
// caller turns it into a position in its error message); nothing is ever written to b.
package jsonscan

import (
	"bytes"
)

// MaxDepth is the deepest nesting SkipValue accepts (fastjson allows 300, encoding/json
// 10,000): a value at depth MaxDepth+1 is rejected.
const MaxDepth = 64

// MaxDigits bounds the integers Uint converts: 18 decimal digits always fit an int64
// (9,223,372,036,854,775,807 has 19).
const MaxDigits = 18

// IsSpace reports JSON whitespace: space, LF, TAB, CR.
func IsSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// SkipSpace returns the index of the first non-whitespace byte at or after i (len(b) if
// none).
func SkipSpace(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' && IsSpace(b[i]) {
		i++
	}
	return i
}

// IsNumByte reports the bytes a number token is made of: 0-9 . - + e E.
func IsNumByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == '-' || c == 'e' || c == 'E' || c == '+'
}

// StringEnd returns the end (the index after the closing quote) of the JSON string whose
// content starts at b[i], just after the opening quote: the first '"' preceded by an even
// number of backslashes (found with bytes.IndexByte). Escapes and control characters are
// not validated (see Check). ok is false when the string is not closed (end is then len(b)).
func StringEnd(b []byte, i int) (end int, ok bool) {
	j := i
	for {
		n := bytes.IndexByte(b[j:], '"')
		if n < 0 {
			return len(b), false
		}
		q := j + n
		k := q
		for k > i && b[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 {
			return q + 1, true
		}
		j = q + 1
	}
}

// Check reports what strict JSON says of a string's content s (the bytes between its
// quotes, as StringEnd delimits them): whether it holds a backslash escape, and the offset
// of its first control character (a byte < 0x20, which JSON forbids unescaped), -1 when
// none.
func Check(s []byte) (escaped bool, control int) {
	control = -1
	for k, c := range s {
		if c < 0x20 {
			return escaped || bytes.IndexByte(s[k:], '\\') >= 0, k
		}
		if c == '\\' {
			escaped = true
		}
	}
	return escaped, -1
}

// Key returns the object key whose content starts at b[i] (after its quote) and the index
// after its closing quote. ok is false for an unclosed key (end len(b)) or a key holding a
// backslash escape (end the index of the backslash), which a caller matching keys
// byte-wise must not match (a decoder would unescape it first; see Members).
func Key(b []byte, i int) (key []byte, end int, ok bool) {
	for j := i; j < len(b); j++ {
		c := b[j]
		if c > '\\' { // lower-case letters and '_', most of a key: one comparison
			continue
		}
		switch c {
		case '"':
			return b[i:j], j + 1, true
		case '\\':
			return nil, j, false
		}
	}
	return nil, len(b), false
}

// SkipValue skips the value at b[i] (no leading whitespace), which sits at nesting depth
// depth+1 (0 for a top-level value), and returns the index after it. Strings end as in
// StringEnd; literals must be exactly true, false or null (NaN and Infinity are rejected);
// a number is a non-empty run of IsNumByte bytes other than a lone sign. ok is false on
// malformed input or nesting deeper than MaxDepth (the index is then that of the offending
// byte, the opening bracket one level too deep, or len(b)).
func SkipValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return len(b), false
	}
	depth++
	if depth > MaxDepth {
		return i, false
	}
	switch c := b[i]; c {
	case '{':
		i = SkipSpace(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		for {
			i = SkipSpace(b, i)
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			var ok bool
			if i, ok = StringEnd(b, i+1); !ok { // a skipped key may hold escapes
				return i, false
			}
			i = SkipSpace(b, i)
			if i >= len(b) || b[i] != ':' {
				return i, false
			}
			if i, ok = SkipValue(b, SkipSpace(b, i+1), depth); !ok {
				return i, false
			}
			i = SkipSpace(b, i)
			if i >= len(b) {
				return i, false
			}
			if b[i] == ',' {
				i++
				continue
			}
			if b[i] == '}' {
				return i + 1, true
			}
			return i, false
		}
	case '[':
		i = SkipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = SkipValue(b, SkipSpace(b, i), depth); !ok {
				return i, false
			}
			i = SkipSpace(b, i)
			if i >= len(b) {
				return i, false
			}
			if b[i] == ',' {
				i++
				continue
			}
			if b[i] == ']' {
				return i + 1, true
			}
			return i, false
		}
	case '"':
		return StringEnd(b, i+1)
	case 't':
		return skipLiteral(b, i, "true")
	case 'f':
		return skipLiteral(b, i, "false")
	case 'n':
		return skipLiteral(b, i, "null")
	default:
		j := i
		for j < len(b) && IsNumByte(b[j]) {
			j++
		}
		if j == i || j == i+1 && (b[i] == '-' || b[i] == '+') {
			return i, false
		}
		return j, true
	}
}

// next consumes the whitespace and the ',' or closer after an element: it returns the index
// after that byte (b[end-1] tells which), ok false (at the offending byte or len(b)) for
// anything else.
func next(b []byte, i int, closer byte) (int, bool) {
	i = SkipSpace(b, i)
	if i < len(b) && (b[i] == ',' || b[i] == closer) {
		return i + 1, true
	}
	return i, false
}

func skipLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// IsNull reports a null literal at b[i].
func IsNull(b []byte, i int) bool {
	return len(b)-i >= 4 && string(b[i:i+4]) == "null"
}

// Object walks the members of the object whose '{' is just before b[i]: for each member it
// calls member(key, j), j being the index of the value's first byte (key aliases b and has
// no escapes; see Key), which returns the index after the value (SkipValue(b, j, depth) for
// a member it does not need). Object returns the index after the closing '}'; ok is false
// on malformed JSON, on a key with an escape, or when member returns false (the index is
// then the one member returned).
func Object(b []byte, i int, member func(key []byte, j int) (int, bool)) (int, bool) {
	i = SkipSpace(b, i)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		i = SkipSpace(b, i)
		if i >= len(b) || b[i] != '"' {
			return i, false
		}
		key, j, ok := Key(b, i+1)
		if !ok {
			return j, false
		}
		i = SkipSpace(b, j)
		if i >= len(b) || b[i] != ':' {
			return i, false
		}
		i = SkipSpace(b, i+1)
		if i >= len(b) {
			return i, false
		}
		if i, ok = member(key, i); !ok {
			return i, false
		}
		i = SkipSpace(b, i)
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return i + 1, true
		default:
			return i, false
		}
	}
}

// Members is Object for keys that may hold escapes: member(key, escaped, j) gets the key's
// content as written between its quotes (aliasing b) and whether it holds a backslash
// (AppendUnescaped, or encoding/json for strict decoding, gives the key's value then). The
// returns are Object's.
func Members(b []byte, i int, member func(key []byte, escaped bool, j int) (int, bool)) (int, bool) {
	i = SkipSpace(b, i)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		i = SkipSpace(b, i)
		if i >= len(b) || b[i] != '"' {
			return i, false
		}
		key, j, ok := Key(b, i+1)
		escaped := false
		if !ok {
			if j >= len(b) {
				return j, false
			}
			if j, ok = StringEnd(b, j); !ok {
				return j, false
			}
			key, escaped = b[i+1:j-1], true
		}
		if i, ok = value(b, j); !ok {
			return i, false
		}
		if i, ok = member(key, escaped, i); !ok {
			return i, false
		}
		if i, ok = next(b, i, '}'); !ok || b[i-1] == '}' {
			return i, ok
		}
	}
}

// value consumes the ':' after a key that ends just before b[i] and the whitespace around
// it, and returns the index of the value's first byte.
func value(b []byte, i int) (int, bool) {
	i = SkipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return i, false
	}
	if i = SkipSpace(b, i+1); i >= len(b) {
		return i, false
	}
	return i, true
}

// Array walks the elements of the array whose '[' is just before b[i]: for each element it
// calls elem(j), j being the index of its first byte, which returns the index after it.
// Array returns the index after the closing ']'; ok is false on malformed JSON or when elem
// returns false (the index is then the one elem returned).
func Array(b []byte, i int, elem func(j int) (int, bool)) (int, bool) {
	i = SkipSpace(b, i)
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i = SkipSpace(b, i); i >= len(b) {
			return i, false
		}
		if i, ok = elem(i); !ok {
			return i, false
		}
		if i, ok = next(b, i, ']'); !ok || b[i-1] == ']' {
			return i, ok
		}
	}
}

// Count skips the elements of the array whose '[' is just before b[i], the array sitting at
// depth (as SkipValue(b, i-1, depth-1) would skip it), and returns their number and the
// index after the ']' (on failure, n is 0 and end where reading stopped).
func Count(b []byte, i, depth int) (n, end int, ok bool) {
	i = SkipSpace(b, i)
	if i < len(b) && b[i] == ']' {
		return 0, i + 1, true
	}
	for {
		if i, ok = SkipValue(b, SkipSpace(b, i), depth); !ok {
			return 0, i, false
		}
		n++
		i = SkipSpace(b, i)
		if i >= len(b) {
			return 0, i, false
		}
		if b[i] == ',' {
			i++
			continue
		}
		if b[i] == ']' {
			return n, i + 1, true
		}
		return 0, i, false
	}
}
