package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// fastAlphabet has runes of every class the patterns distinguish: letters of each case class,
// marks, numbers, spaces and line breaks, ASCII and other punctuation and symbols, the CJK
// range edges, control and format characters, apostrophes and contraction letters (with
// case-folding traps), and code points the Unicode 16 table substitutes.
var fastAlphabet = []rune{
	'a', 'b', 's', 't', 'r', 'e', 'v', 'm', 'l', 'd', 'S', 'T', 'R', 'E', 'V', 'M', 'L', 'D', 'Q',
	'\'', '\'', '\'', 0x2019, 0x017F, 0x212A, 0x0130, 0x0131,
	'0', '7', 0x0663, 0x00B2, 0x2167, 0x1D7D8,
	' ', ' ', ' ', '\t', '\n', '\r', 0x0B, 0x0C, 0x85, 0xA0, 0x2003, 0x3000, 0x2028,
	'!', '.', ',', '/', '-', '_', '"', '#', '@', '[', '`', '{', '~', '$', '+', '<', '=', '|', '^',
	0x00C0, 0x00DF, 0x01C5, 0x02B0, 0x01BB, 0x0300, 0x0301, 0x0903, 0x0488, 0x05D0, 0x0627, 0x0915,
	0x4E00, 0x9FA5, 0x9FA6, 0x3040, 0x309F, 0x30A0, 0x30FF, 0x3041, 0x30A2, 0x4E2D, 0xAC00, 0x3005,
	0x00A7, 0x20AC, 0x2190, 0x00AC, 0x02C2, 0x1F600, 0x2045, 0x2046, 0x00AB, 0x00BB, 0x3001, 0xFF01,
	0x00, 0x07, 0x1B, 0x7F, 0xAD, 0x200B, 0x200D, 0xFE0F, 0xE000, 0x0378,
	0x0897, 0x1C89, 0x1C8A, 0x10D40, 0x105C0, 0x113B8, 0x11F5A,
}

func randomFastString(rng *rand.Rand) string {
	var b strings.Builder
	n := 1 + rng.IntN(24)
	for i := 0; i < n; i++ {
		switch rng.IntN(10) {
		case 0: // a contraction-like tail
			b.WriteString([]string{"'s", "'T", "'re", "'VE", "'m", "'Ll", "'d", "'x", "'", "n't"}[rng.IntN(10)])
		case 1: // a run of one rune
			r := fastAlphabet[rng.IntN(len(fastAlphabet))]
			b.WriteString(strings.Repeat(string(r), 1+rng.IntN(5)))
		default:
			b.WriteRune(fastAlphabet[rng.IntN(len(fastAlphabet))])
		}
	}
	return b.String()
}

// TestFastMatchersEqualRegexp checks every hand-written matcher against regexp2 on the same
// pattern: 30,000 seeded random strings each, plus the main corpus.
func TestFastMatchersEqualRegexp(t *testing.T) {
	texts, err := corpusOnce()
	if err != nil {
		t.Fatal(err)
	}
	var corpus []string
	for name, s := range texts {
		if !strings.HasPrefix(name, "long/") && !strings.HasPrefix(name, "fuzz2/") {
			corpus = append(corpus, s)
		}
	}
	slices.Sort(corpus)
	for pat, fast := range fastMatchers {
		re, err := compileRegex(pat)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		bad := 0
		check := func(s string) {
			want := findMatches(s, re, "")
			got := fastFindMatches(s, fast)
			if !slices.Equal(got, want) {
				if bad++; bad <= 5 {
					t.Errorf("pattern %.40q on %+q:\n got %v\nwant %v", pat, s, got, want)
				}
			}
		}
		for i := 0; i < 30000; i++ {
			check(randomFastString(rng))
		}
		for _, s := range corpus {
			check(s)
		}
		if bad > 0 {
			t.Errorf("pattern %.40q: %d strings differ", pat, bad)
		}
	}
}
