package tokenizer

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// jscan is a minimal JSON reader over a byte slice for the two big parts of tokenizer.json
// (model.vocab and model.merges, ~300k strings), about 5x faster than a general parser;
// everything else is cut out as raw JSON and given to encoding/json.
type jscan struct {
	b []byte
	i int
}

func (s *jscan) errf(format string, a ...any) error {
	line := 1
	for _, c := range s.b[:min(s.i, len(s.b))] {
		if c == '\n' {
			line++
		}
	}
	return fmt.Errorf("json line %d (byte %d): %s", line, s.i, fmt.Sprintf(format, a...))
}

func (s *jscan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte (0 at the end).
func (s *jscan) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

func (s *jscan) expect(c byte) error {
	if s.peek() != c {
		if s.i >= len(s.b) {
			return s.errf("unexpected end, want %q", c)
		}
		return s.errf("found %q, want %q", s.b[s.i], c)
	}
	s.i++
	return nil
}

// str reads a JSON string.
func (s *jscan) str() (string, error) {
	if err := s.expect('"'); err != nil {
		return "", err
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c == '"' {
			out := string(s.b[start:s.i])
			s.i++
			return out, nil
		}
		if c == '\\' {
			return s.strSlow(start)
		}
		s.i++
	}
	return "", s.errf("unterminated string")
}

func (s *jscan) strSlow(start int) (string, error) {
	buf := append([]byte(nil), s.b[start:s.i]...)
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return string(buf), nil
		case c != '\\':
			buf = append(buf, c)
			s.i++
			continue
		}
		if s.i+1 >= len(s.b) {
			break
		}
		e := s.b[s.i+1]
		s.i += 2
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return "", s.errf("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
					save := s.i
					s.i += 2
					var ok2 bool
					if r2, ok2 = s.hex4(); !ok2 {
						s.i = save
						r2 = -1
					}
				}
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					r = d
				} else {
					r = utf8.RuneError
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", s.errf("bad escape \\%c", e)
		}
	}
	return "", s.errf("unterminated string")
}

func (s *jscan) hex4() (rune, bool) {
	if s.i+4 > len(s.b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(s.b[s.i:s.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	s.i += 4
	return rune(v), true
}

// integer reads a JSON integer.
func (s *jscan) integer() (int64, error) {
	s.ws()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	v, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
	if err != nil {
		return 0, s.errf("want an integer: %v", err)
	}
	return v, nil
}

// skip skips one JSON value and returns its raw bytes.
func (s *jscan) skip() ([]byte, error) {
	c := s.peek()
	start := s.i
	switch c {
	case '"':
		if _, err := s.str(); err != nil {
			return nil, err
		}
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if _, err := s.str(); err != nil {
					return nil, err
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.i++
			if depth == 0 {
				return s.b[start:s.i], nil
			}
		}
		return nil, s.errf("unterminated %c", c)
	case 0:
		return nil, s.errf("unexpected end")
	default: // number, true, false, null
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return s.b[start:s.i], nil
			}
			s.i++
		}
	}
	return s.b[start:s.i], nil
}

// object calls f for each key of an object; f must consume the value.
func (s *jscan) object(f func(key string) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		k, err := s.str()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := f(k); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.errf("want ',' or '}' in object")
		}
	}
}

// array calls f for each element; f must consume it.
func (s *jscan) array(f func(i int) error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for n := 0; ; n++ {
		if err := f(n); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.errf("want ',' or ']' in array")
		}
	}
}

var errNotObject = errors.New("want a JSON object")
