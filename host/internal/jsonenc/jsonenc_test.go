package jsonenc

import (
	"encoding/json"
	"testing"
)

func TestAppendStringRoundTripsThroughEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uo\te`, "a\nb\rc\td", "\x00\x01\x1f", "中文 😀", "bad \xff utf8 \xc3", "<html>&amp;"} {
		b := AppendString([]byte("x"), s)
		var got string
		if err := json.Unmarshal(b[1:], &got); err != nil {
			t.Fatalf("%q → %s: %v", s, b[1:], err)
		}
		// encoding/json decodes invalid bytes to U+FFFD as well: compare with its own round trip.
		want, _ := json.Marshal(s)
		var wantS string
		_ = json.Unmarshal(want, &wantS)
		if got != wantS {
			t.Errorf("%q: round trip %q, want %q", s, got, wantS)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("a\"b\\c\x00\xff中")
	f.Fuzz(func(t *testing.T, s string) {
		var got string
		if err := json.Unmarshal(AppendString(nil, s), &got); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		want, _ := json.Marshal(s)
		var wantS string
		_ = json.Unmarshal(want, &wantS)
		if got != wantS {
			t.Fatalf("%q: got %q want %q", s, got, wantS)
		}
	})
}
