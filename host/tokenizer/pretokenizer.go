package tokenizer

import (
	"fmt"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// preTokenizer splits each word of a pre-tokenized text into smaller words
// (tokenizers pre_tokenizers/*). Words are substrings of the normalized text, except after
// ByteLevel, which maps every byte to a printable rune (GPT-2's bytes_to_unicode), and
// Metaspace, which replaces spaces. atStart tells that the word begins the input text
// (tokenizers: offsets_original().0 == 0), which Metaspace's prepend_scheme "first" needs.
type preTokenizer interface {
	split(sc *encodeScratch, dst []string, word string, atStart bool) []string
}

// encodeScratch holds the working buffers of one Encode call: Encode takes one from a pool, so
// that tokenizing a text allocates little beyond its ids (it allocated about 10 bytes per
// byte of text, most of a prompt build's cost). Strings cut from the arena are never
// rewritten (a full arena is replaced, not reused), so they stay valid as long as they are
// referenced; the BPE cache copies a word before keeping it.
type encodeScratch struct {
	rc          runeClasses
	spans, acc  []span
	words, next []string
	pieces      []piece
	normPieces  []piece
	arena       strings.Builder
}

var scratchPool = sync.Pool{New: func() any { return new(encodeScratch) }}

// byteLevel returns the byte-level form of s (GPT-2's bytes_to_unicode of every byte), after
// a space when space is set, cut from the arena.
func (sc *encodeScratch) byteLevel(s string, space bool) string {
	need := 2 * (len(s) + 1) // a byte maps to one or two bytes of UTF-8
	if sc.arena.Cap()-sc.arena.Len() < need {
		sc.arena = strings.Builder{}
		sc.arena.Grow(max(16<<10, need))
	}
	start := sc.arena.Len()
	if space {
		sc.arena.WriteString(byteToRune[' '])
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= '!' && c <= '~' { // printable ASCII maps to itself
			sc.arena.WriteByte(c)
		} else {
			sc.arena.WriteString(byteToRune[c])
		}
	}
	return sc.arena.String()[start:]
}

// splitBehavior is tokenizers' SplitDelimiterBehavior.
type splitBehavior int

const (
	behRemoved splitBehavior = iota
	behIsolated
	behMergedWithPrevious
	behMergedWithNext
	behContiguous
)

var behaviors = map[string]splitBehavior{
	"Removed": behRemoved, "Isolated": behIsolated, "MergedWithPrevious": behMergedWithPrevious,
	"MergedWithNext": behMergedWithNext, "Contiguous": behContiguous,
}

// buildPreTokenizers flattens a "pre_tokenizer" node (Sequences included) into steps.
func buildPreTokenizers(n *jNode, file, path string) ([]preTokenizer, error) {
	if n == nil {
		return nil, nil
	}
	switch n.Type {
	case "Sequence":
		var out []preTokenizer
		for i := range n.Pretokenizers {
			s, err := buildPreTokenizers(&n.Pretokenizers[i], file, fmt.Sprintf("%s.pretokenizers[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out = append(out, s...)
		}
		return out, nil
	case "Split":
		b, ok := behaviors[n.Behavior]
		if !ok {
			return nil, &UnsupportedError{File: file, Component: path, Type: n.Type, Detail: fmt.Sprintf("behavior %q", n.Behavior)}
		}
		st := &splitPT{behavior: b, invert: n.Invert}
		switch {
		case n.Pattern == nil:
			return nil, fmt.Errorf("tokenizer: %s: [%s] Split has no pattern", file, path)
		case n.Pattern.Regex != nil:
			re, err := compileRegex(*n.Pattern.Regex)
			if err != nil {
				return nil, fmt.Errorf("tokenizer: %s: [%s] Split regex %q: %w", file, path, *n.Pattern.Regex, err)
			}
			st.re = re
			st.fast = fastMatchers[*n.Pattern.Regex]
		case n.Pattern.String != nil:
			st.lit = *n.Pattern.String
		default:
			return nil, fmt.Errorf("tokenizer: %s: [%s] Split pattern has neither Regex nor String", file, path)
		}
		return []preTokenizer{st}, nil
	case "ByteLevel":
		st := &byteLevelPT{prefixSpace: n.AddPrefixSpace != nil && *n.AddPrefixSpace}
		if n.UseRegex == nil || *n.UseRegex { // tokenizers defaults use_regex to true
			st.re = regexp2.MustCompile(gpt2Pattern, regexp2.None)
		}
		return []preTokenizer{st}, nil
	case "Digits":
		return []preTokenizer{digitsPT{individual: n.IndividualDigits}}, nil
	case "Metaspace":
		m, err := newMetaspace(n, file, path)
		if err != nil {
			return nil, err
		}
		return []preTokenizer{m}, nil
	}
	return nil, &UnsupportedError{File: file, Component: path, Type: n.Type}
}

// gpt2Pattern is the regex of ByteLevel with use_regex=true (tokenizers byte_level.rs).
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// span is a byte range [a,b) of a word; match tells whether the pattern matched it.
type span struct {
	a, b  int
	match bool
}

// findMatches mirrors tokenizers' Pattern::find_matches: the word cut into alternating
// unmatched and matched spans covering it entirely. A regex sees every code point whose
// General_Category differs between Go's tables and Unicode 16.0 (the Oniguruma inside
// tokenizers 0.23) replaced by a stand-in of the Unicode 16 category (see unicode16.go);
// the substitution is rune for rune, so offsets are unchanged.
func findMatches(s string, re *regexp2.Regexp, lit string) []span {
	if s == "" {
		return []span{{0, 0, false}}
	}
	out := make([]span, 0, 8)
	prev := 0
	add := func(a, b int) {
		if prev != a {
			out = append(out, span{prev, a, false})
		}
		out = append(out, span{a, b, true})
		prev = b
	}
	switch {
	case re != nil:
		runes := []rune(s)
		ascii := len(runes) == len(s)
		var off []int // rune index -> byte offset, only for non-ASCII words
		if !ascii {
			off = make([]int, len(runes)+1)
			o := 0
			for i, r := range runes {
				off[i] = o
				o += utf8.RuneLen(r)
				if r >= u16Min {
					runes[i] = unicode16Standin(r)
				}
			}
			off[len(runes)] = o
		}
		m, _ := re.FindRunesMatch(runes)
		for m != nil {
			if m.Length > 0 {
				if ascii {
					add(m.Index, m.Index+m.Length)
				} else {
					add(off[m.Index], off[m.Index+m.Length])
				}
			}
			m, _ = re.FindNextMatch(m)
		}
	case lit != "":
		for i := 0; ; {
			j := strings.Index(s[i:], lit)
			if j < 0 {
				break
			}
			add(i+j, i+j+len(lit))
			i += j + len(lit)
		}
	}
	if prev != len(s) {
		out = append(out, span{prev, len(s), false})
	}
	return out
}

// applyBehavior is NormalizedString::split's handling of the delimiter spans; acc is
// reused for the result (nil: a new slice).
func applyBehavior(ms []span, b splitBehavior, invert bool, acc []span) []span {
	if invert {
		for i := range ms {
			ms[i].match = !ms[i].match
		}
	}
	acc = acc[:0]
	switch b {
	case behIsolated:
		return ms
	case behRemoved:
		for _, m := range ms {
			if !m.match {
				acc = append(acc, m)
			}
		}
	case behMergedWithPrevious:
		prevMatch := false
		for _, m := range ms {
			if m.match && !prevMatch && len(acc) > 0 {
				acc[len(acc)-1].b = m.b
			} else {
				acc = append(acc, span{m.a, m.b, false})
			}
			prevMatch = m.match
		}
	case behMergedWithNext:
		prevMatch := false
		for i := len(ms) - 1; i >= 0; i-- {
			m := ms[i]
			if m.match && !prevMatch && len(acc) > 0 {
				acc[len(acc)-1].a = m.a
			} else {
				acc = append(acc, span{m.a, m.b, false})
			}
			prevMatch = m.match
		}
		for i, j := 0, len(acc)-1; i < j; i, j = i+1, j-1 {
			acc[i], acc[j] = acc[j], acc[i]
		}
	case behContiguous:
		prevMatch := false
		for _, m := range ms {
			if m.match == prevMatch && len(acc) > 0 {
				acc[len(acc)-1].b = m.b
			} else {
				acc = append(acc, span{m.a, m.b, false})
			}
			prevMatch = m.match
		}
	}
	return acc
}

// disableFastSplit makes Split use regexp2 even for the patterns of fastsplit.go (tests).
var disableFastSplit = false

// splitPT is the Split pre-tokenizer (regex or literal pattern).
type splitPT struct {
	re       *regexp2.Regexp
	fast     func(*runeClasses, func(a, b int)) // hand-written matcher for re, or nil
	lit      string
	behavior splitBehavior
	invert   bool
}

func (p *splitPT) split(sc *encodeScratch, dst []string, w string, _ bool) []string {
	var ms []span
	if p.fast != nil && !disableFastSplit {
		sc.spans = appendFastMatches(sc.spans[:0], &sc.rc, w, p.fast)
		ms = sc.spans
	} else {
		ms = findMatches(w, p.re, p.lit)
	}
	sc.acc = applyBehavior(ms, p.behavior, p.invert, sc.acc)
	for _, sp := range sc.acc {
		if sp.b > sp.a {
			dst = append(dst, w[sp.a:sp.b])
		}
	}
	return dst
}

// byteLevelPT is the ByteLevel pre-tokenizer: optional prefix space, optional GPT-2 regex
// split, then every byte mapped to its printable rune.
type byteLevelPT struct {
	prefixSpace bool
	re          *regexp2.Regexp
}

func (p *byteLevelPT) split(sc *encodeScratch, dst []string, w string, _ bool) []string {
	space := p.prefixSpace && !strings.HasPrefix(w, " ")
	if p.re == nil {
		return append(dst, sc.byteLevel(w, space))
	}
	if space {
		w = " " + w
	}
	for _, sp := range findMatches(w, p.re, "") {
		if sp.b > sp.a {
			dst = append(dst, sc.byteLevel(w[sp.a:sp.b], false))
		}
	}
	return dst
}

// digitsPT is the Digits pre-tokenizer: runs of numeric characters (Rust char::is_numeric,
// i.e. Nd, Nl, No) split from the rest, each digit alone when individual is set.
type digitsPT struct{ individual bool }

func (p digitsPT) split(_ *encodeScratch, dst []string, w string, _ bool) []string {
	start, prevDigit := 0, false
	for i, r := range w {
		d := unicode.IsNumber(r)
		if i > 0 && (d != prevDigit || (d && p.individual)) {
			dst = append(dst, w[start:i])
			start = i
		}
		prevDigit = d
	}
	if start < len(w) {
		dst = append(dst, w[start:])
	}
	return dst
}

// byteToRune is GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves, the
// other 68 bytes to U+0100.. in byte order.
var byteToRune, runeToByte = func() (b2r [256]string, r2b map[rune]byte) {
	r2b = make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		r := rune(b)
		if !((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)) {
			r = rune(256 + n)
			n++
		}
		b2r[b] = string(r)
		r2b[r] = byte(b)
	}
	return b2r, r2b
}()

// metaspacePT is the Metaspace pre-tokenizer (SentencePiece-style, e.g. Mistral): spaces
// become the replacement rune (default "▁"), which is prepended to every word ("always"), to
// the word that begins the text ("first"), or never; with split, the word is cut before each
// replacement rune (MergedWithNext).
type metaspacePT struct {
	rep     string
	prepend string // "always", "first" or "never"
	cut     bool   // split before each replacement rune
}

func newMetaspace(n *jNode, file, path string) (*metaspacePT, error) {
	m := &metaspacePT{rep: n.Replacement, prepend: n.PrependScheme, cut: n.Split == nil || *n.Split}
	if m.rep == "" {
		m.rep = "\u2581"
	}
	if utf8.RuneCountInString(m.rep) != 1 {
		return nil, fmt.Errorf("tokenizer: %s: [%s] Metaspace replacement %q is not one character", file, path, m.rep)
	}
	switch {
	case n.AddPrefixSpace != nil && !*n.AddPrefixSpace:
		m.prepend = "never"
	case m.prepend == "":
		m.prepend = "always"
	}
	switch m.prepend {
	case "always", "first", "never":
	default:
		return nil, &UnsupportedError{File: file, Component: path, Type: n.Type, Detail: fmt.Sprintf("prepend_scheme %q", m.prepend)}
	}
	return m, nil
}

func (p *metaspacePT) split(_ *encodeScratch, dst []string, w string, atStart bool) []string {
	w = strings.ReplaceAll(w, " ", p.rep)
	if (p.prepend == "always" || (p.prepend == "first" && atStart)) && !strings.HasPrefix(w, p.rep) {
		w = p.rep + w
	}
	if !p.cut {
		return append(dst, w)
	}
	ms := applyBehavior(findMatches(w, nil, p.rep), behMergedWithNext, false, nil)
	for _, sp := range ms {
		if sp.b > sp.a {
			dst = append(dst, w[sp.a:sp.b])
		}
	}
	return dst
}
