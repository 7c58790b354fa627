package sse

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

// The fast path of Decoder.Decode: one forward pass over the event bytes that walks the
// top-level object, skips every value it does not need without building anything, and
// extracts only choices[].{index,text,finish_reason}, the length of
// choices[].logprobs.tokens (else of choices[].logprobs.content) and usage.{prompt_tokens,
// completion_tokens,total_tokens,prompt_tokens_details.cached_tokens}.
//
// Contract: when scanChunk returns true, the Chunk it built is exactly the Chunk the
// fastjson path (decodeFastjson) builds for the same bytes. It only returns true for
// inputs that fastjson's parser accepts (its grammar is mirrored below, in places more
// strictly) and whose meaning it is certain of; on anything else — a server error (a
// non-null top-level "error" or an "object":"error"), a duplicate of a key it reads, a key
// spelt with a backslash escape where a key is read, a number it reads that is not a
// plain non-negative integer of at most 18 digits, NaN/Inf literals, nesting deeper than
// scanMaxDepth, or malformed JSON — it returns false and Decode falls back to fastjson,
// so rare shapes behave as before by construction. FuzzDecodeFastVsFastjson checks the
// contract.

// scanMaxDepth is the deepest nesting the fast path skips (fastjson allows
// fastjson.MaxDepth = 300); deeper events go to fastjson.
const scanMaxDepth = 64

// scanMaxDigits bounds the integers the fast path converts: 18 decimal digits always fit
// an int64 (max 9,223,372,036,854,775,807 has 19).
const scanMaxDigits = 18

// isWS reports fastjson's whitespace: space, LF, TAB, CR.
func isWS(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

func skipWS(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' && isWS(b[i]) {
		i++
	}
	return i
}

// isNumByte reports the bytes fastjson takes into a number token.
func isNumByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == '-' || c == 'e' || c == 'E' || c == '+'
}

// scanString returns the end (index after the closing quote) of the JSON string whose
// content starts at b[i] (just after the opening quote), as fastjson's parseRawString
// finds it: the first '"' preceded by an even number of backslashes. Escapes are not
// validated (fastjson does not either). ok is false when the string is not closed.
func scanString(b []byte, i int) (end int, ok bool) {
	j := i
	for {
		n := bytes.IndexByte(b[j:], '"')
		if n < 0 {
			return 0, false
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

// scanKey returns the key whose content starts at b[i] and the index after its closing
// quote. ok is false for an unclosed key or a key containing a backslash: fastjson would
// unescape it before matching, so such keys go to the fallback.
func scanKey(b []byte, i int) (key []byte, end int, ok bool) {
	for j := i; j < len(b); j++ {
		switch b[j] {
		case '"':
			return b[i:j], j + 1, true
		case '\\':
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// skipValue skips the JSON value at b[i] (after whitespace) as fastjson's parseValue would
// parse it, at nesting depth+1, and returns the index after it. It rejects (ok false)
// NaN/Inf literals and nesting deeper than scanMaxDepth, which fastjson may accept.
func skipValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	depth++
	if depth > scanMaxDepth {
		return 0, false
	}
	switch c := b[i]; c {
	case '{':
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		for {
			i = skipWS(b, i)
			if i >= len(b) || b[i] != '"' {
				return 0, false
			}
			var ok bool
			// skipped objects' keys may hold escapes: fastjson's parseRawKey falls back to
			// parseRawString's end rule, which is scanString's.
			if i, ok = scanString(b, i+1); !ok {
				return 0, false
			}
			i = skipWS(b, i)
			if i >= len(b) || b[i] != ':' {
				return 0, false
			}
			if i, ok = skipValue(b, skipWS(b, i+1), depth); !ok {
				return 0, false
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return 0, false
			}
			if b[i] == ',' {
				i++
				continue
			}
			if b[i] == '}' {
				return i + 1, true
			}
			return 0, false
		}
	case '[':
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = skipValue(b, skipWS(b, i), depth); !ok {
				return 0, false
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return 0, false
			}
			if b[i] == ',' {
				i++
				continue
			}
			if b[i] == ']' {
				return i + 1, true
			}
			return 0, false
		}
	case '"':
		return scanString(b, i+1)
	case 't':
		return skipLiteral(b, i, "true")
	case 'f':
		return skipLiteral(b, i, "false")
	case 'n':
		return skipLiteral(b, i, "null") // "nan" (fastjson accepts it) → fallback
	default:
		j := i
		for j < len(b) && isNumByte(b[j]) {
			j++
		}
		// fastjson: "unexpected char" for an empty token or a lone sign ("+}", "-,"),
		// unless inf/nan follows (left to it)
		if j == i || j == i+1 && (b[i] == '-' || b[i] == '+') {
			return 0, false
		}
		return j, true
	}
}

func skipLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}

// isNull reports a null literal at b[i] (fastjson's check: the 4 bytes "null").
func isNull(b []byte, i int) bool {
	return len(b)-i >= 4 && string(b[i:i+4]) == "null"
}

// scanInt reads the number token at b[i] (fastjson's token: a run of [0-9.eE+-]) and
// returns its value when it is a plain non-negative integer without leading zeros of at
// most scanMaxDigits digits; for any other token (negative, fraction, exponent, "+1",
// "01", "1-2") ok is false and the caller falls back.
func scanInt(b []byte, i int) (v, end int, ok bool) {
	j := i
	for j < len(b) && isNumByte(b[j]) {
		j++
	}
	n := j - i
	if n == 0 || n > scanMaxDigits || (n > 1 && b[i] == '0') {
		return 0, 0, false
	}
	for k := i; k < j; k++ {
		c := b[k]
		if c < '0' || c > '9' {
			return 0, 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, j, true
}

// scanNumberOrSkip reads an integer field that fastjson reads with GetInt: a value that
// fastjson parses as a number (anything not starting with { [ " t f n) must be one
// scanInt accepts (else fall back); any other value counts as absent (0, false).
func scanNumberOrSkip(b []byte, i, depth int) (v int, isNum bool, end int, ok bool) {
	switch b[i] {
	case '{', '[', '"', 't', 'f', 'n':
		end, ok = skipValue(b, i, depth)
		return 0, false, end, ok
	}
	v, end, ok = scanInt(b, i)
	return v, ok, end, ok
}

// appendUnescaped appends the JSON string content s to dst, unescaped exactly as
// fastjson's unescapeStringBestEffort does (its output is what the fastjson path
// returns): \" \\ \/ \b \f \n \r \t as usual; \uXXXX (4 hex digits) as UTF-8; a UTF-16
// surrogate \uXXXX followed by \uYYYY is decoded as a pair with utf16.DecodeRune (U+FFFD
// when the pair is invalid, both escapes consumed); a surrogate not followed by a valid
// \uYYYY is kept as the 6 bytes "\uXXXX"; a \u without 4 hex digits keeps "\u"; any other
// escape keeps both bytes. Other bytes (invalid UTF-8, control characters) are copied.
func appendUnescaped(dst, s []byte) []byte {
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

// hex4 parses the first 4 bytes of s as hexadecimal digits (strconv.ParseUint(s[:4], 16,
// 16) in fastjson: no sign, no prefix, no underscore).
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

// scanChunk is the fast path of Decode (see the contract above). It fills d.chunk (already
// reset) and returns true, or returns false leaving d.chunk partly filled for the caller
// to reset. Text and finish reasons are unescaped into d.buf, sized once to len(data)
// (unescaping never lengthens a string), so the slices stay valid until the next Decode
// and nothing is allocated after the buffer has grown to the largest event.
func (d *Decoder) scanChunk(data []byte) bool {
	b := data
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	if cap(d.buf) < len(b) {
		d.buf = make([]byte, 0, max(len(b), 512))
	}
	d.buf = d.buf[:0]
	c := &d.chunk
	var seenChoices, seenUsage bool
	i, ok := scanObject(b, i+1, func(key []byte, i int) (int, bool) {
		var ok bool
		switch string(key) {
		case "choices":
			if seenChoices {
				return 0, false
			}
			seenChoices = true
			switch {
			case isNull(b, i):
				return i + 4, true
			case b[i] == '[':
				return d.scanChoices(b, i+1)
			}
			return 0, false // not an array: an error for fastjson
		case "usage":
			if seenUsage {
				return 0, false
			}
			seenUsage = true
			if b[i] == '{' {
				if i, ok = scanUsage(b, i+1, &c.Usage); ok {
					c.HasUsage = true
				}
				return i, ok
			}
			return skipValue(b, i, 1)
		case "error":
			if !isNull(b, i) {
				return 0, false // a server error: fastjson builds the ServerError
			}
			return i + 4, true
		case "object":
			if b[i] != '"' {
				return skipValue(b, i, 1)
			}
			end, ok := scanString(b, i+1)
			if !ok {
				return 0, false
			}
			if v := b[i+1 : end-1]; string(v) == "error" || bytes.IndexByte(v, '\\') >= 0 {
				return 0, false
			}
			return end, true
		}
		return skipValue(b, i, 1)
	})
	return ok && skipWS(b, i) == len(b)
}

// scanObject walks the members of the object whose '{' is just before b[i]: for each member
// it calls member(key, j), j being the index of the value's first byte (key aliases b and
// has no escapes), which returns the index after the value. scanObject returns the index
// after the closing '}', or false on malformed JSON or when member returns false.
func scanObject(b []byte, i int, member func(key []byte, j int) (int, bool)) (int, bool) {
	i = skipWS(b, i)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		i = skipWS(b, i)
		if i >= len(b) || b[i] != '"' {
			return 0, false
		}
		key, j, ok := scanKey(b, i+1)
		if !ok {
			return 0, false
		}
		i = skipWS(b, j)
		if i >= len(b) || b[i] != ':' {
			return 0, false
		}
		i = skipWS(b, i+1)
		if i >= len(b) {
			return 0, false
		}
		if i, ok = member(key, i); !ok {
			return 0, false
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// scanChoices reads the elements of the choices array starting at b[i] (after '[') and
// returns the index after its ']'.
func (d *Decoder) scanChoices(b []byte, i int) (int, bool) {
	c := &d.chunk
	i = skipWS(b, i)
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		i = skipWS(b, i)
		if i >= len(b) || b[i] != '{' {
			return 0, false // not an object: an error for fastjson
		}
		c.Choices = append(c.Choices, Choice{})
		var ok bool
		if i, ok = d.scanChoice(b, i+1, &c.Choices[len(c.Choices)-1]); !ok {
			return 0, false
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return 0, false
		}
		if b[i] == ',' {
			i++
			continue
		}
		if b[i] == ']' {
			return i + 1, true
		}
		return 0, false
	}
}

// scanChoice reads one choice object starting at b[i] (after '{') into ch.
func (d *Decoder) scanChoice(b []byte, i int, ch *Choice) (int, bool) {
	var seenIndex, seenText, seenFinish, seenLogprobs bool
	return scanObject(b, i, func(key []byte, i int) (int, bool) {
		var ok bool
		switch string(key) {
		case "logprobs":
			if seenLogprobs {
				return 0, false
			}
			seenLogprobs = true
			if b[i] != '{' {
				return skipValue(b, i, 3) // null or not an object: no count
			}
			return scanLogprobs(b, i+1, ch)
		case "index":
			if seenIndex {
				return 0, false
			}
			seenIndex = true
			// fastjson: a non-number is an error, a number is read with Int (an error when
			// negative or not an integer); only plain integers stay here.
			ch.Index, i, ok = scanInt(b, i)
			return i, ok
		case "text", "finish_reason":
			isText := key[0] == 't'
			if isText && seenText || !isText && seenFinish {
				return 0, false
			}
			if isText {
				seenText = true
			} else {
				seenFinish = true
			}
			if b[i] != '"' {
				// not a string: Text stays nil, the choice is not finished
				return skipValue(b, i, 3)
			}
			end, ok := scanString(b, i+1)
			if !ok {
				return 0, false
			}
			off := len(d.buf)
			d.buf = appendUnescaped(d.buf, b[i+1:end-1])
			s := d.buf[off:len(d.buf):len(d.buf)]
			if isText {
				ch.Text = s
			} else if len(s) > 0 {
				ch.FinishReason, ch.Finished = s, true
			}
			return end, true
		}
		return skipValue(b, i, 3)
	})
}

// scanLogprobs reads the logprobs object of a choice starting at b[i] (after '{'): the
// number of elements of its "tokens" array, else of its "content" array, into ch.Logprobs
// (the fastjson path's logprobsCount). Other members, and the elements themselves, are
// skipped.
func scanLogprobs(b []byte, i int, ch *Choice) (int, bool) {
	var seenTokens, seenContent bool
	tokens, content := -1, -1
	end, ok := scanObject(b, i, func(key []byte, i int) (int, bool) {
		switch string(key) {
		case "tokens", "content":
			isTokens := key[0] == 't'
			if isTokens && seenTokens || !isTokens && seenContent {
				return 0, false
			}
			if isTokens {
				seenTokens = true
			} else {
				seenContent = true
			}
			if b[i] != '[' {
				return skipValue(b, i, 4)
			}
			n, end, ok := countArray(b, i+1, 5)
			if isTokens {
				tokens = n
			} else {
				content = n
			}
			return end, ok
		}
		return skipValue(b, i, 4)
	})
	switch {
	case tokens >= 0:
		ch.Logprobs, ch.HasLogprobs = tokens, true
	case content >= 0:
		ch.Logprobs, ch.HasLogprobs = content, true
	}
	return end, ok
}

// countArray skips the elements of the array starting at b[i] (after '['), at nesting
// depth (as skipValue would skip the array at depth-1), and returns their number and the
// index after the ']'.
func countArray(b []byte, i, depth int) (n, end int, ok bool) {
	i = skipWS(b, i)
	if i < len(b) && b[i] == ']' {
		return 0, i + 1, true
	}
	for {
		if i, ok = skipValue(b, skipWS(b, i), depth); !ok {
			return 0, 0, false
		}
		n++
		i = skipWS(b, i)
		if i >= len(b) {
			return 0, 0, false
		}
		if b[i] == ',' {
			i++
			continue
		}
		if b[i] == ']' {
			return n, i + 1, true
		}
		return 0, 0, false
	}
}

// scanUsage reads the usage object starting at b[i] (after '{') into u.
func scanUsage(b []byte, i int, u *Usage) (int, bool) {
	var seen [4]bool // prompt, completion, total, details
	return scanObject(b, i, func(key []byte, i int) (int, bool) {
		var f *int
		k := -1
		switch string(key) {
		case "prompt_tokens":
			f, k = &u.PromptTokens, 0
		case "completion_tokens":
			f, k = &u.CompletionTokens, 1
		case "total_tokens":
			f, k = &u.TotalTokens, 2
		case "prompt_tokens_details":
			k = 3
		}
		var ok bool
		switch {
		case k >= 0 && seen[k]:
			return 0, false
		case f != nil:
			seen[k] = true
			*f, _, i, ok = scanNumberOrSkip(b, i, 2)
			return i, ok
		case k == 3:
			seen[k] = true
			if b[i] == '{' {
				return scanDetails(b, i+1, u)
			}
		}
		return skipValue(b, i, 2)
	})
}

// scanDetails reads usage.prompt_tokens_details starting at b[i] (after '{').
func scanDetails(b []byte, i int, u *Usage) (int, bool) {
	seen := false
	return scanObject(b, i, func(key []byte, i int) (int, bool) {
		if string(key) != "cached_tokens" {
			return skipValue(b, i, 3)
		}
		if seen {
			return 0, false
		}
		seen = true
		var ok bool
		u.CachedTokens, u.HasCached, i, ok = scanNumberOrSkip(b, i, 3)
		return i, ok
	})
}
