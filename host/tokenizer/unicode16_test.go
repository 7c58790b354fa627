package tokenizer

import (
	"encoding/json"
	"os"
	"slices"
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

// TestNormOpaqueTable checks normOpaque against its source: exactly the code points that
// Go's tables assign and Unicode 9.0 (testdata/unicode9_unassigned.json) does not.
func TestNormOpaqueTable(t *testing.T) {
	b, err := os.ReadFile("testdata/unicode9_unassigned.json")
	if err != nil {
		t.Fatal(err)
	}
	var src struct {
		Unassigned [][2]rune `json:"unassigned"`
	}
	if err := json.Unmarshal(b, &src); err != nil {
		t.Fatal(err)
	}
	un9 := make([]bool, unicode.MaxRune+1)
	for _, r := range src.Unassigned {
		for c := r[0]; c <= r[1]; c++ {
			un9[c] = true
		}
	}
	assigned := func(r rune) bool {
		for k, tab := range unicode.Categories {
			if len(k) == 2 && k != "Cn" && k != "LC" && unicode.Is(tab, r) {
				return true
			}
		}
		return false
	}
	n, bad := 0, 0
	for c := rune(0); c <= unicode.MaxRune; c++ {
		want := un9[c] && assigned(c)
		if want {
			n++
		}
		if inNormOpaque(c) != want {
			if bad++; bad < 10 {
				t.Errorf("inNormOpaque(%U) = %v, want %v", c, !want, want)
			}
		}
	}
	// 21,014 code points were assigned between Unicode 9.0 and Go's 15.0 (cmd/genunicode)
	if n != 21014 {
		t.Errorf("%d code points assigned since 9.0, want 21014", n)
	}
}

// TestUnicode9Normalization pins three strings where Go's Unicode 15.0 NFC differs from
// tokenizers' Unicode 9.0 tables (ids from tokenizers 0.23.2 on Qwen3):
// U+0898 (14.0, ccc 230) does not reorder with U+0323; U+11935 U+11930 (13.0) do not compose.
func TestUnicode9Normalization(t *testing.T) {
	tk, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		text string
		want []int32
	}{
		{"a\u0898\u0323", []int32{64, 156, 95, 246, 136, 96}},
		{"x\U00011935\U00011930y", []int32{87, 128240, 97, 113, 128240, 97, 108, 88}},
		{"\u1e0b\u0323", []int32{145924, 136, 229}}, // old characters: NFC reorders to ḍ + U+0307
	}
	for _, c := range cases {
		if got := tk.Encode(c.text); !slices.Equal(got, c.want) {
			t.Errorf("Encode(%+q) = %v, want %v", c.text, got, c.want)
		}
	}
}
