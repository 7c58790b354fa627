package guest

import (
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A small JSON reader and writer for the envelope, the info document and flat configs, so that
// a plugin that does not call Env.Decode links neither encoding/json nor fmt nor reflect: they
// are more than a third of a small Go plugin (uniform: 3.40 → 2.13 MB), and the host compiles,
// keeps and maps every byte of it.

// errSyntax is the error of malformed JSON (the envelope's or a config's).
var errSyntax = errors.New("invalid JSON")

// skipSpace returns b without its leading JSON white space.
func skipSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	return b
}

// members calls f with each member of the JSON object b (its key unquoted, its value's raw
// bytes) in order; null is an object without members. It returns errSyntax for anything else,
// for trailing bytes, and f's first error.
func members(b []byte, f func(key string, val []byte) error) error {
	b = skipSpace(b)
	if isLiteral(b, "null") {
		if len(skipSpace(b[4:])) != 0 {
			return errSyntax
		}
		return nil
	}
	if len(b) == 0 || b[0] != '{' {
		return errSyntax
	}
	b = skipSpace(b[1:])
	if len(b) > 0 && b[0] == '}' {
		if len(skipSpace(b[1:])) != 0 {
			return errSyntax
		}
		return nil
	}
	for {
		raw, rest, err := scanValue(b)
		if err != nil || len(raw) == 0 || raw[0] != '"' {
			return errSyntax
		}
		key, err := unquote(raw)
		if err != nil {
			return err
		}
		rest = skipSpace(rest)
		if len(rest) == 0 || rest[0] != ':' {
			return errSyntax
		}
		val, rest, err := scanValue(skipSpace(rest[1:]))
		if err != nil {
			return err
		}
		if err := f(key, val); err != nil {
			return err
		}
		rest = skipSpace(rest)
		switch {
		case len(rest) > 0 && rest[0] == ',':
			b = skipSpace(rest[1:])
		case len(rest) > 0 && rest[0] == '}':
			if len(skipSpace(rest[1:])) != 0 {
				return errSyntax
			}
			return nil
		default:
			return errSyntax
		}
	}
}

func isLiteral(b []byte, lit string) bool { return len(b) >= len(lit) && string(b[:len(lit)]) == lit }

// scanValue splits the JSON value at the start of b (no leading space) from the rest.
func scanValue(b []byte) (val, rest []byte, err error) {
	n, err := valueLen(b, 0)
	if err != nil {
		return nil, nil, err
	}
	return b[:n], b[n:], nil
}

// maxDepth bounds the nesting of arrays and objects scanValue accepts.
const maxDepth = 1000

// valueLen is the length of the JSON value at the start of b.
func valueLen(b []byte, depth int) (int, error) {
	if len(b) == 0 || depth > maxDepth {
		return 0, errSyntax
	}
	switch c := b[0]; {
	case c == '"':
		for i := 1; i < len(b); i++ {
			switch b[i] {
			case '\\':
				i++
			case '"':
				return i + 1, nil
			default:
				if b[i] < 0x20 {
					return 0, errSyntax
				}
			}
		}
		return 0, errSyntax
	case c == '{' || c == '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		i := len(b) - len(skipSpace(b[1:]))
		if i < len(b) && b[i] == end {
			return i + 1, nil
		}
		for {
			if c == '{' {
				n, err := valueLen(b[i:], depth+1)
				if err != nil || b[i] != '"' {
					return 0, errSyntax
				}
				i += n
				i = len(b) - len(skipSpace(b[i:]))
				if i >= len(b) || b[i] != ':' {
					return 0, errSyntax
				}
				i = len(b) - len(skipSpace(b[i+1:]))
			}
			n, err := valueLen(b[i:], depth+1)
			if err != nil {
				return 0, err
			}
			i = len(b) - len(skipSpace(b[i+n:]))
			switch {
			case i < len(b) && b[i] == ',':
				i = len(b) - len(skipSpace(b[i+1:]))
			case i < len(b) && b[i] == end:
				return i + 1, nil
			default:
				return 0, errSyntax
			}
		}
	case c == 't' && isLiteral(b, "true"):
		return 4, nil
	case c == 'f' && isLiteral(b, "false"):
		return 5, nil
	case c == 'n' && isLiteral(b, "null"):
		return 4, nil
	case c == '-' || c >= '0' && c <= '9':
		return numberLen(b)
	}
	return 0, errSyntax
}

// numberLen is the length of the JSON number at the start of b (RFC 8259's grammar).
func numberLen(b []byte) (int, error) {
	i := 0
	if b[i] == '-' {
		i++
	}
	digits := func() int {
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i - j
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return 0, errSyntax
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return 0, errSyntax
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return 0, errSyntax
		}
	}
	return i, nil
}

// unquote decodes a JSON string literal (quotes included, as scanValue returns it); invalid
// UTF-8 and lone surrogates become U+FFFD, as encoding/json does.
func unquote(raw []byte) (string, error) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", errSyntax
	}
	s := raw[1 : len(raw)-1]
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) {
				return "", errSyntax
			}
			i++
			switch s[i] {
			case '"', '\\', '/':
				out = append(out, s[i])
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := hex4(s[i+1:])
				if !ok {
					return "", errSyntax
				}
				i += 4
				if utf16.IsSurrogate(r) {
					if r2, ok := hex4(s[min(i+3, len(s)):]); ok && i+2 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							r = d
							i += 6
						} else {
							r = utf8.RuneError
						}
					} else {
						r = utf8.RuneError
					}
				}
				out = utf8.AppendRune(out, r)
			default:
				return "", errSyntax
			}
			i++
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, n := utf8.DecodeRune(s[i:])
			out = utf8.AppendRune(out, r)
			i += n
		}
	}
	return string(out), nil
}

// hex4 reads the 4 hex digits at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[:4]), 16, 32)
	return rune(v), err == nil
}

// appendString appends s as a JSON string, escaping as encoding/json does by default (<, >
// and & too, and invalid UTF-8 as U+FFFD).
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			dst = append(dst, s[i:i+n]...)
		}
		i += n
	}
	return append(dst, '"')
}
