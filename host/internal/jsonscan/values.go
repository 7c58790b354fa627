package jsonscan

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

// Uint reads the number token at b[i] (a run of IsNumByte bytes) and returns its value when
// it is a plain non-negative integer without leading zeros of at most MaxDigits digits; for
// any other token ("-1", "1.0", "1e3", "+1", "01", "1-2", a 19-digit number) ok is false
// and end is i.
func Uint(b []byte, i int) (v, end int, ok bool) {
	j := i
	for j < len(b) && IsNumByte(b[j]) {
		j++
	}
	n := j - i
	if n == 0 || n > MaxDigits || (n > 1 && b[i] == '0') {
		return 0, i, false
	}
	for k := i; k < j; k++ {
		c := b[k]
		if c < '0' || c > '9' {
			return 0, i, false
		}
		v = v*10 + int(c-'0')
	}
	return v, j, true
}

// AppendUnescaped appends the JSON string content s to dst, unescaped as fastjson's
// unescapeStringBestEffort does: \" \\ \/ \b \f \n \r \t as usual; \uXXXX (4 hex digits)
// as UTF-8; a UTF-16 surrogate \uXXXX followed by \uYYYY decoded as a pair with
// utf16.DecodeRune (U+FFFD when the pair is invalid, both escapes consumed); a surrogate
// not followed by a valid \uYYYY kept as the 6 bytes "\uXXXX"; a \u without 4 hex digits
// kept as "\u"; any other escape kept as both bytes. Other bytes (invalid UTF-8, control
// characters) are copied. For the content of a valid JSON string whose bytes are valid
// UTF-8 and whose escapes hold no lone surrogate, the result is encoding/json's.
// Unescaping never lengthens: len(result) − len(dst) ≤ len(s).
func AppendUnescaped(dst, s []byte) []byte {
	n := bytes.IndexByte(s, '\\')
	if n < 0 {
		return append(dst, s...)
	}
	dst = append(dst, s[:n]...)
	s = s[n+1:]
	for len(s) > 0 {
		ch := s[0]
		s = s[1:]
		switch ch {
		case '"', '\\', '/':
			dst = append(dst, ch)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			x, ok := hex4(s)
			if !ok {
				dst = append(dst, '\\', 'u')
				break
			}
			xs := s[:4]
			s = s[4:]
			if !utf16.IsSurrogate(rune(x)) {
				dst = utf8.AppendRune(dst, rune(x))
				break
			}
			if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
				dst = append(dst, '\\', 'u')
				dst = append(dst, xs...)
				break
			}
			x1, ok := hex4(s[2:])
			if !ok {
				dst = append(dst, '\\', 'u')
				dst = append(dst, xs...)
				break
			}
			dst = utf8.AppendRune(dst, utf16.DecodeRune(rune(x), rune(x1)))
			s = s[6:]
		default:
			dst = append(dst, '\\', ch)
		}
		n = bytes.IndexByte(s, '\\')
		if n < 0 {
			dst = append(dst, s...)
			break
		}
		dst = append(dst, s[:n]...)
		s = s[n+1:]
	}
	return dst
}

// hex4 parses the first 4 bytes of s as hexadecimal digits (no sign, prefix or underscore).
func hex4(s []byte) (uint16, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var x uint16
	for _, c := range s[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		x = x<<4 | uint16(c)
	}
	return x, true
}

// ValidNumber reports whether b is exactly one number in the JSON grammar (RFC 8259
// section 6: an optional minus, no leading zeros, digits after '.', an exponent with
// digits).
func ValidNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i - s
	}
	n := digits()
	if n == 0 || (n > 1 && b[i-n] == '0') {
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(b)
}
