package jsonscan

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// depth returns the deepest nesting of a valid JSON document (1 for a scalar), read with
// encoding/json's tokenizer.
func depth(t testing.TB, data []byte) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	d, most := 1, 1
	for {
		tok, err := dec.Token()
		if err != nil {
			return most
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			d++
			most = max(most, d)
		case json.Delim('}'), json.Delim(']'):
			d--
		}
	}
}

// whole reports whether SkipValue reads all of data as one value (whitespace around it).
func whole(data []byte) bool {
	i := SkipSpace(data, 0)
	end, ok := SkipValue(data, i, 0)
	return ok && SkipSpace(data, end) == len(data)
}

// checkSkip states SkipValue's contract against its two oracles: every document
// encoding/json accepts within MaxDepth is read whole, and everything read whole is one
// fastjson parses (its grammar is fastjson's).
func checkSkip(t *testing.T, data []byte) {
	got := whole(data)
	if json.Valid(data) && depth(t, data)-1 <= MaxDepth && !got {
		t.Errorf("SkipValue rejects valid JSON %q", data)
	}
	if got {
		var p fastjson.Parser
		if _, err := p.ParseBytes(data); err != nil {
			t.Errorf("SkipValue accepts %q, fastjson does not: %v", data, err)
		}
	}
}

func TestSkipValue(t *testing.T) {
	cases := []struct {
		in   string
		want bool
	}{
		{`{}`, true},
		{` [ ] `, true},
		{`{"a":[1,2.5e-3,-0,"x\"y",true,false,null],"b":{"c":{}}}`, true},
		{`"\u00e9\ud83d\ude00"`, true},
		{`{"a" : 1 , "b" : [ 1 , 2 ] }`, true},
		{`1.2.3`, true},  // lenient: any run of number bytes (fastjson's token)
		{`"\x"`, true},   // lenient: escapes are not validated
		{`-`, false},     // a lone sign
		{`NaN`, false},   // fastjson accepts it; SkipValue does not
		{`nul`, false},   // a short literal
		{`[1,]`, false},  // a trailing comma
		{`{"a"}`, false}, // a member without value
		{`{"a":1`, false},
		{`"abc`, false},
		{`[1 2]`, false},
		{strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth), true},
		{strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), false},
	}
	for _, tc := range cases {
		if got := whole([]byte(tc.in)); got != tc.want {
			t.Errorf("SkipValue(%q) whole = %v, want %v", tc.in, got, tc.want)
		}
		checkSkip(t, []byte(tc.in))
	}
}

func FuzzSkipValue(f *testing.F) {
	for _, s := range []string{`{}`, `[1,"a",{"b":null}]`, `{"choices":[{"index":0,"text":"x","logprobs":null}],"usage":{"prompt_tokens":3}}`, `"\ud83d"`, `-1e+5`, `[[[]]]`, `tru`} {
		f.Add([]byte(s))
	}
	f.Fuzz(checkSkip)
}

// checkUnescape states AppendUnescaped's contract against encoding/json: for the content
// of a valid JSON string whose decoding holds no U+FFFD (so no invalid UTF-8 and no lone
// surrogate), the result is encoding/json's; and the result is never longer than s.
func checkUnescape(t *testing.T, s []byte) {
	got := AppendUnescaped([]byte("pre"), s)
	if !bytes.HasPrefix(got, []byte("pre")) || len(got)-3 > len(s) {
		t.Fatalf("AppendUnescaped(%q) = %q: dst lost or result longer than s", s, got)
	}
	lit := append(append([]byte{'"'}, s...), '"')
	if end, ok := StringEnd(lit, 1); !ok || end != len(lit) {
		return // s closes the string early: not one string's content
	}
	var want string
	if json.Unmarshal(lit, &want) != nil || strings.ContainsRune(want, utf8.RuneError) {
		return
	}
	if string(got[3:]) != want {
		t.Errorf("AppendUnescaped(%q) = %q, encoding/json %q", s, got[3:], want)
	}
}

func TestAppendUnescaped(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`plain`, `plain`},
		{`a\"b\\c\/d\b\f\n\r\t`, "a\"b\\c/d\b\f\n\r\t"},
		{`\u00e9\u20AC`, "é€"},
		{`\ud83d\ude00`, "😀"},
		{`\ud83dx`, `\ud83dx`},     // a lone surrogate is kept (encoding/json: U+FFFD)
		{`\ud83d\u0041`, "\uFFFD"}, // an invalid pair: both escapes consumed
		{`\u12G4`, `\u12G4`},       // not 4 hex digits
		{`\q`, `\q`},               // an unknown escape keeps both bytes
	} {
		if got := string(AppendUnescaped(nil, []byte(tc.in))); got != tc.want {
			t.Errorf("AppendUnescaped(%q) = %q, want %q", tc.in, got, tc.want)
		}
		checkUnescape(t, []byte(tc.in))
	}
}

func FuzzAppendUnescaped(f *testing.F) {
	for _, s := range []string{`a\nb`, `\u00e9`, `\ud83d\ude00`, `\ud83d`, `\\\"`, "\xff", `\u0000`} {
		f.Add([]byte(s))
	}
	f.Fuzz(checkUnescape)
}

// plainUint is Uint's accepted token: a non-negative integer without leading zeros of at
// most MaxDigits digits.
var plainUint = regexp.MustCompile(`^(0|[1-9][0-9]{0,17})$`)

func FuzzUint(f *testing.F) {
	for _, s := range []string{"0", "17", "01", "-1", "1.0", "1e3", "999999999999999999", "1000000000000000000", "12,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, end, ok := Uint([]byte(s), 0)
		tok := s
		if k := strings.IndexFunc(s, func(r rune) bool { return r > 0x7f || !IsNumByte(byte(r)) }); k >= 0 {
			tok = s[:k]
		}
		want := plainUint.MatchString(tok)
		if ok != want {
			t.Fatalf("Uint(%q) ok = %v, want %v", s, ok, want)
		}
		if ok {
			n, err := strconv.Atoi(tok)
			if err != nil || v != n || end != len(tok) {
				t.Fatalf("Uint(%q) = %d, %d; strconv %d, %v", s, v, end, n, err)
			}
		}
	})
}

func FuzzValidNumber(f *testing.F) {
	for _, s := range []string{"0", "-0", "01", "1.", "1.5", "-2e+10", "1E", ".5", "+1", "1e5.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// encoding/json's oracle: a valid document that is a number (no space around it)
		want := s != "" && (s[0] == '-' || s[0] >= '0' && s[0] <= '9') && json.Valid([]byte(s)) &&
			strings.TrimSpace(s) == s
		if got := ValidNumber([]byte(s)); got != want {
			t.Fatalf("ValidNumber(%q) = %v, encoding/json says %v", s, got, want)
		}
	})
}

// TestObject walks objects and compares each member with encoding/json's raw members.
func TestObject(t *testing.T) {
	for _, in := range []string{
		`{}`,
		`{"a":1}`,
		` { "id" : "cmpl-1" , "choices" : [ {"index":0} ] , "usage" : null } `,
		`{"text":"x\"y","n":[1,[2,{"k":"v"}]],"f":false}`,
	} {
		b := []byte(in)
		var want map[string]json.RawMessage
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		i := SkipSpace(b, 0) + 1
		end, ok := Object(b, i, func(key []byte, j int) (int, bool) {
			e, ok := SkipValue(b, j, 1)
			got[string(key)] = string(b[j:e])
			return e, ok
		})
		if !ok || SkipSpace(b, end) != len(b) {
			t.Fatalf("Object(%s) = %d, %v", in, end, ok)
		}
		if len(got) != len(want) {
			t.Errorf("%s: members %v, encoding/json %v", in, got, want)
		}
		for k, v := range want {
			if got[k] != string(v) {
				t.Errorf("%s: member %s = %s, encoding/json %s", in, k, got[k], v)
			}
		}
	}
	// a key with an escape is not matched byte-wise
	if _, ok := Object([]byte(`{"\u0061":1}`), 1, func(k []byte, j int) (int, bool) { return SkipValue([]byte(`{"\u0061":1}`), j, 1) }); ok {
		t.Error("Object accepted an escaped key")
	}
}

func TestCountAndCheck(t *testing.T) {
	for _, tc := range []struct {
		in string
		n  int
	}{{`[]`, 0}, {`[1]`, 1}, {`[ "a" , {"b":[1,2]} , [] ]`, 3}} {
		var want []json.RawMessage
		json.Unmarshal([]byte(tc.in), &want)
		n, end, ok := Count([]byte(tc.in), 1, 1)
		if !ok || n != tc.n || n != len(want) || end != len(tc.in) {
			t.Errorf("Count(%s) = %d, %d, %v; encoding/json %d elements", tc.in, n, end, ok, len(want))
		}
	}
	for _, tc := range []struct {
		in      string
		esc     bool
		control int
	}{{`abc`, false, -1}, {`a\nb`, true, -1}, {"a\tb", false, 1}, {"x\x01\\n", true, 1}} {
		esc, ctl := Check([]byte(tc.in))
		if esc != tc.esc || ctl != tc.control {
			t.Errorf("Check(%q) = %v, %d; want %v, %d", tc.in, esc, ctl, tc.esc, tc.control)
		}
	}
}

// chunk is a vLLM-shaped stream chunk of one token (the shape the SSE decoder reads).
var chunk = []byte(`{"id":"cmpl-bench","object":"text_completion","created":1767000000,"model":"m","choices":[{"index":0,"text":" tok17","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)

// BenchmarkSkipValue skips one chunk; json.Valid, the cheapest encoding/json pass over the
// same bytes, is the yardstick.
func BenchmarkSkipValue(b *testing.B) {
	b.Run("jsonscan", func(b *testing.B) {
		b.SetBytes(int64(len(chunk)))
		for b.Loop() {
			if !whole(chunk) {
				b.Fatal("rejected")
			}
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		b.SetBytes(int64(len(chunk)))
		for b.Loop() {
			if !json.Valid(chunk) {
				b.Fatal("rejected")
			}
		}
	})
}

// BenchmarkAppendUnescaped unescapes a 64-byte text with two escapes into a reused buffer.
func BenchmarkAppendUnescaped(b *testing.B) {
	s := []byte(`The quick brown fox\n jumps over the lazy dog \u00e9 and runs away.`)
	buf := make([]byte, 0, len(s))
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendUnescaped(buf[:0], s)
	}
}

// TestStopIndex pins where a failed scan stops: the offending byte, or len(b) when the
// input ends too soon (counted by hand; encoding/json's SyntaxError.Offset is one more for
// an offending byte, as it counts that byte as read).
func TestStopIndex(t *testing.T) {
	for _, tc := range []struct {
		in   string
		stop int
	}{
		{`[1 2]`, 3},            // '2' where ',' or ']' belongs
		{`{"a":1`, 6},           // ends inside the object
		{`{"a" 1}`, 5},          // '1' where ':' belongs
		{`{"a":1,}`, 7},         // '}' where a key belongs
		{`["abc`, 5},            // an unclosed string
		{`[tru]`, 1},            // a short literal: its first byte
		{`[1,-]`, 3},            // a lone sign
		{`{"a":{"b":[x]}}`, 11}, // nested: the innermost offending byte
		{strings.Repeat("[", MaxDepth+1), MaxDepth}, // the bracket one level too deep
	} {
		b := []byte(tc.in)
		if stop, ok := SkipValue(b, 0, 0); ok || stop != tc.stop {
			t.Errorf("SkipValue(%s) = %d, %v; want %d, false", tc.in, stop, ok, tc.stop)
		}
		if b[0] != '{' {
			continue
		}
		skip := func(key []byte, j int) (int, bool) { return SkipValue(b, j, 1) }
		if stop, ok := Object(b, 1, skip); ok || stop != tc.stop {
			t.Errorf("Object(%s) = %d, %v; want %d, false", tc.in, stop, ok, tc.stop)
		}
		members := func(key []byte, esc bool, j int) (int, bool) { return SkipValue(b, j, 1) }
		if stop, ok := Members(b, 1, members); ok || stop != tc.stop {
			t.Errorf("Members(%s) = %d, %v; want %d, false", tc.in, stop, ok, tc.stop)
		}
	}
	// a callback's own index is passed through
	b := []byte(`[1,2,3]`)
	if stop, ok := Array(b, 1, func(j int) (int, bool) {
		if b[j] == '2' {
			return j, false
		}
		return j + 1, true
	}); ok || stop != 3 {
		t.Errorf("Array stopped at %d, %v; want 3, false (the callback's index)", stop, ok)
	}
	if _, end, ok := Uint([]byte("x01"), 1); ok || end != 1 {
		t.Errorf("Uint(01) end = %d, %v; want 1, false", end, ok)
	}
}

// TestMembers walks objects whose keys hold escapes and compares each key, unescaped, and
// its value with encoding/json's raw members.
func TestMembers(t *testing.T) {
	for _, in := range []string{
		`{}`,
		`{"a":1,"\"":2,"\\":3,"x\ny":[4]}`,
		` { "\u00e9" : "v" , "plain" : { "k" : null } } `,
		`{"\\\"":true}`,
	} {
		b := []byte(in)
		var want map[string]json.RawMessage
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		end, ok := Members(b, SkipSpace(b, 0)+1, func(key []byte, esc bool, j int) (int, bool) {
			if esc != (bytes.IndexByte(key, '\\') >= 0) {
				t.Errorf("%s: key %q escaped = %v", in, key, esc)
			}
			e, ok := SkipValue(b, j, 1)
			got[string(AppendUnescaped(nil, key))] = string(b[j:e])
			return e, ok
		})
		if !ok || SkipSpace(b, end) != len(b) {
			t.Fatalf("Members(%s) = %d, %v", in, end, ok)
		}
		if len(got) != len(want) {
			t.Errorf("%s: members %v, encoding/json %v", in, got, want)
		}
		for k, v := range want {
			if got[k] != string(v) {
				t.Errorf("%s: member %q = %s, encoding/json %s", in, k, got[k], v)
			}
		}
	}
}
