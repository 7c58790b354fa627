// Package jsonenc appends JSON strings to byte slices without reflection or allocation, for
// the hot paths of both sides of the wire: request bodies in host/dispatch and stream chunks
// in host/engine (which must not import each other).
package jsonenc

import "unicode/utf8"

// AppendString appends s to dst as a JSON string: `"` and `\` escaped, control characters as
// \n, \r, \t or \u00XX, invalid UTF-8 bytes replaced by \ufffd, as encoding/json does (but
// without its HTML escaping of <, > and &, which JSON does not need).
func AppendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, s[start:i]...)
				dst = append(dst, `\ufffd`...)
				i++
				start = i
				continue
			}
			i += size
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
