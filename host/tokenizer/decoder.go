package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// decoder is one step of tokenizers' decode_chain: token strings in, token strings out.
type decoder func(toks []string) []string

// buildDecoders flattens a "decoder" node (Sequences included) into steps.
func buildDecoders(n *jNode, file, path string) ([]decoder, error) {
	if n == nil {
		return nil, nil
	}
	switch n.Type {
	case "Sequence":
		var out []decoder
		for i := range n.Decoders {
			d, err := buildDecoders(&n.Decoders[i], file, fmt.Sprintf("%s.decoders[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out = append(out, d...)
		}
		return out, nil
	case "ByteLevel":
		return []decoder{decodeByteLevel}, nil
	case "ByteFallback":
		return []decoder{decodeByteFallback}, nil
	case "Fuse":
		return []decoder{func(toks []string) []string { return []string{strings.Join(toks, "")} }}, nil
	case "Replace":
		if n.Pattern == nil || n.Pattern.String == nil {
			return nil, &UnsupportedError{File: file, Component: path, Type: n.Type, Detail: "only String patterns are supported in decoders"}
		}
		old, c := *n.Pattern.String, n.Content
		return []decoder{func(toks []string) []string {
			for i := range toks {
				toks[i] = strings.ReplaceAll(toks[i], old, c)
			}
			return toks
		}}, nil
	case "Metaspace":
		m, err := newMetaspace(n, file, path)
		if err != nil {
			return nil, err
		}
		return []decoder{m.decode}, nil
	case "Strip":
		content, start, stop := n.Content, n.Start, n.Stop
		return []decoder{func(toks []string) []string {
			for i, s := range toks {
				for k := 0; k < start && content != "" && strings.HasPrefix(s, content); k++ {
					s = s[len(content):]
				}
				for k := 0; k < stop && content != "" && strings.HasSuffix(s, content); k++ {
					s = s[:len(s)-len(content)]
				}
				toks[i] = s
			}
			return toks
		}}, nil
	}
	return nil, &UnsupportedError{File: file, Component: path, Type: n.Type}
}

// decodeByteLevel maps every rune of every token back to its byte; a token containing a rune
// outside the byte map contributes its own UTF-8 instead. The bytes are then read as UTF-8
// lossily, like Rust's String::from_utf8_lossy.
func decodeByteLevel(toks []string) []string {
	n := 0
	for _, s := range toks {
		n += len(s)
	}
	b := make([]byte, 0, n)
	for _, s := range toks {
		b = appendByteLevel(b, s)
	}
	return []string{lossyUTF8(b)}
}

// runeByte is runeToByte as an array: runeByte[r] is the byte of rune r + 1, 0 for a rune
// outside the byte map (the map's runes are all below 0x144).
var runeByte = func() (t [0x144]uint16) {
	for r, c := range runeToByte {
		t[r] = uint16(c) + 1
	}
	return t
}()

// appendByteLevel appends the bytes of byte-level token s (its own UTF-8 when a rune of it
// is outside the byte map).
func appendByteLevel(b []byte, s string) []byte {
	n := len(b)
	for _, r := range s {
		if r >= rune(len(runeByte)) || runeByte[r] == 0 {
			return append(b[:n], s...)
		}
		b = append(b, byte(runeByte[r]-1))
	}
	return b
}

// decodeByteFallback turns runs of <0xXX> tokens back into bytes: a run that is valid UTF-8
// becomes its text, otherwise one U+FFFD per byte (tokenizers decoders/byte_fallback.rs).
func decodeByteFallback(toks []string) []string {
	out := make([]string, 0, len(toks))
	var pend []byte
	flush := func() {
		if len(pend) == 0 {
			return
		}
		if utf8.Valid(pend) {
			out = append(out, string(pend))
		} else {
			for range pend {
				out = append(out, "\uFFFD")
			}
		}
		pend = pend[:0]
	}
	for _, s := range toks {
		if v, ok := parseByteToken(s); ok {
			pend = append(pend, v)
			continue
		}
		flush()
		out = append(out, s)
	}
	flush()
	return out
}

// parseByteToken parses "<0xXX>" (upper-case hex, as written by byte_fallback).
func parseByteToken(s string) (byte, bool) {
	if len(s) != 6 || s[:3] != "<0x" || s[5] != '>' {
		return 0, false
	}
	hex := func(c byte) (byte, bool) {
		switch {
		case c >= '0' && c <= '9':
			return c - '0', true
		case c >= 'A' && c <= 'F':
			return c - 'A' + 10, true
		}
		return 0, false
	}
	h, ok1 := hex(s[3])
	l, ok2 := hex(s[4])
	return h<<4 | l, ok1 && ok2
}

// lossyUTF8 mirrors Rust's String::from_utf8_lossy: one U+FFFD per maximal subpart of an
// ill-formed sequence (Unicode 16 §3.9, "U+FFFD Substitution of Maximal Subparts"), which
// differs from Go's strings.ToValidUTF8 (one U+FFFD per run).
func lossyUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for i := 0; i < len(b); {
		r, sz := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || sz > 1 {
			sb.Write(b[i : i+sz])
			i += sz
			continue
		}
		sb.WriteString("\uFFFD")
		i += maximalSubpart(b[i:])
	}
	return sb.String()
}

// maximalSubpart returns the length of the maximal subpart of an ill-formed sequence at b[0]
// (Table 3-7 of the Unicode Standard: well-formed UTF-8 byte sequences).
func maximalSubpart(b []byte) int {
	c := b[0]
	need := 0
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case (c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for k := 0; k < need && n < len(b); k++ {
		x := b[n]
		if x < lo || x > hi {
			break
		}
		lo, hi = 0x80, 0xBF
		n++
	}
	return n
}

// decode is the Metaspace decoder: the replacement rune becomes a space, except in the first
// token where it is dropped unless prepend_scheme is "never".
func (p *metaspacePT) decode(toks []string) []string {
	for i, t := range toks {
		with := " "
		if i == 0 && p.prepend != "never" {
			with = ""
		}
		toks[i] = strings.ReplaceAll(t, p.rep, with)
	}
	return toks
}
