package tokenizer

import (
	"encoding/json"
	"os"
	"sort"
	"testing"
	"unicode"
)

// TestUnicode16Table checks the generated table against its source: for every code point,
// the Go category of the rune the regexes see (unicode16Standin for runes >= u16Min) equals
// the Unicode 16.0 category of testdata/unicode16_gc.json.
func TestUnicode16Table(t *testing.T) {
	b, err := os.ReadFile("testdata/unicode16_gc.json")
	if err != nil {
		t.Fatal(err)
	}
	var src struct {
		Categories map[string][][2]rune `json:"categories"`
	}
	if err := json.Unmarshal(b, &src); err != nil {
		t.Fatal(err)
	}
	cat := make([]string, unicode.MaxRune+1)
	for i := range cat {
		cat[i] = "Cn"
	}
	for k, rs := range src.Categories {
		for _, r := range rs {
			for c := r[0]; c <= r[1]; c++ {
				cat[c] = k
			}
		}
	}
	var names []string
	for k := range unicode.Categories {
		if len(k) == 2 && k != "LC" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	goCat := func(r rune) string {
		for _, k := range names {
			if unicode.Is(unicode.Categories[k], r) {
				return k
			}
		}
		return "Cn"
	}
	bad, changed := 0, 0
	for c := rune(0); c <= unicode.MaxRune; c++ {
		seen := c
		if c >= u16Min {
			seen = unicode16Standin(c)
		}
		if seen != c {
			changed++
		}
		if g := goCat(seen); g != cat[c] {
			if bad++; bad < 10 {
				t.Errorf("%U: regexes see %U of category %s, Unicode 16 says %s", c, seen, g, cat[c])
			}
		}
	}
	// 5,813 code points differ between Go 1.26 (Unicode 15.0) and Unicode 16.0 (cmd/genunicode).
	if changed != 5813 {
		t.Errorf("%d code points substituted, want 5813", changed)
	}
	if bad > 0 {
		t.Errorf("%d code points with the wrong category", bad)
	}
}
