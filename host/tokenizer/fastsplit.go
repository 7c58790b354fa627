package tokenizer

import "unicode"

// Hand-written matchers for the pre-tokenizer regexes of Llama 3 / 3.1, Qwen3, gpt-oss (o200k)
// and DeepSeek-V3, about 3x faster than regexp2. Each returns exactly the matches regexp2
// finds for its pattern (leftmost match, alternatives in order, greedy quantifiers with
// backtracking, on runes after the Unicode 16 stand-in substitution); fastsplit_test.go
// checks that against regexp2 on random strings, and the goldens against Hugging Face.
// A Split whose pattern is not one of these strings uses regexp2.

// Known pre-tokenizer regexes (as written in tokenizer.json).
const (
	patLlama3   = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patQwen2    = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patO200k    = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patDigits3  = `\p{N}{1,3}`
	patCJK      = "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"
	patDeepSeek = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"
)

// fastMatchers maps a regex to its hand-written matcher.
var fastMatchers = map[string]func(*runeClasses, func(a, b int)){
	patLlama3:   func(rc *runeClasses, emit func(a, b int)) { matchLlama3(rc, 3, emit) },
	patQwen2:    func(rc *runeClasses, emit func(a, b int)) { matchLlama3(rc, 1, emit) },
	patO200k:    matchO200k,
	patDigits3:  matchDigits3,
	patCJK:      matchCJK,
	patDeepSeek: matchDeepSeek,
}

// Rune class bits, for the rune the regex sees (after unicode16Standin).
const (
	cL          uint16 = 1 << iota // \p{L}
	cN                             // \p{N}
	cS                             // \s (unicode.IsSpace)
	cLu                            // \p{Lu}
	cLl                            // \p{Ll}
	cLt                            // \p{Lt}
	cLm                            // \p{Lm}
	cLo                            // \p{Lo}
	cM                             // \p{M}
	cP                             // \p{P}
	cSym                           // \p{S}
	cCR                            // '\r'
	cLF                            // '\n'
	cASCIIPunct                    // ASCII !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~
	cASCIIAlpha                    // A-Z a-z
	cCJK                           // U+4E00..9FA5, U+3040..309F, U+30A0..30FF
)

const (
	cU = cLu | cLt | cLm | cLo | cM // o200k upper-ish class
	cW = cLl | cLm | cLo | cM       // o200k lower-ish class
)

var asciiClasses = func() (t [128]uint16) {
	for r := rune(0); r < 128; r++ {
		t[r] = classify(r)
	}
	return t
}()

func classify(r rune) uint16 {
	var c uint16
	if unicode.IsSpace(r) {
		c |= cS
	}
	switch {
	case unicode.IsLetter(r):
		c |= cL
		switch {
		case unicode.IsLower(r):
			c |= cLl
		case unicode.IsUpper(r):
			c |= cLu
		case unicode.IsTitle(r):
			c |= cLt
		case unicode.Is(unicode.Lm, r):
			c |= cLm
		default:
			c |= cLo
		}
	case unicode.IsMark(r):
		c |= cM
	case unicode.IsNumber(r):
		c |= cN
	case unicode.IsPunct(r):
		c |= cP
	case unicode.IsSymbol(r):
		c |= cSym
	}
	switch {
	case r == '\r':
		c |= cCR
	case r == '\n':
		c |= cLF
	case r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z':
		c |= cASCIIAlpha
	case r >= '!' && r <= '/' || r >= ':' && r <= '@' || r >= '[' && r <= '`' || r >= '{' && r <= '~':
		c |= cASCIIPunct
	case r >= 0x4E00 && r <= 0x9FA5 || r >= 0x3040 && r <= 0x309F || r >= 0x30A0 && r <= 0x30FF:
		c |= cCJK
	}
	return c
}

// runeClasses is a word decoded into runes (as the regex sees them), their classes and
// byte offsets.
type runeClasses struct {
	r   []rune
	cls []uint16
	off []int // len(r)+1 byte offsets
}

func (rc *runeClasses) load(s string) {
	if cap(rc.off) <= len(s) {
		rc.r, rc.cls, rc.off = make([]rune, 0, len(s)), make([]uint16, 0, len(s)), make([]int, 0, len(s)+1)
	}
	rc.r, rc.cls, rc.off = rc.r[:0], rc.cls[:0], rc.off[:0]
	for i, r := range s {
		var c uint16
		if r < 128 {
			c = asciiClasses[r]
		} else {
			if r >= u16Min {
				r = unicode16Standin(r)
			}
			c = classify(r)
		}
		rc.r = append(rc.r, r)
		rc.cls = append(rc.cls, c)
		rc.off = append(rc.off, i)
	}
	rc.off = append(rc.off, len(s))
}

// runWhile returns the end of the run of runes from k whose class has a bit of mask.
func (rc *runeClasses) runWhile(k int, mask uint16) int {
	for k < len(rc.cls) && rc.cls[k]&mask != 0 {
		k++
	}
	return k
}

// contraction returns the end of (?i:'s|'t|'re|'ve|'m|'ll|'d) at k, or -1 (regexp2 compares
// unicode.ToLower of the input).
func (rc *runeClasses) contraction(k int) int {
	n := len(rc.r)
	if k+1 >= n || rc.r[k] != '\'' {
		return -1
	}
	switch unicode.ToLower(rc.r[k+1]) {
	case 's', 't', 'm', 'd':
		return k + 2
	case 'r', 'v':
		if k+2 < n && unicode.ToLower(rc.r[k+2]) == 'e' {
			return k + 3
		}
	case 'l':
		if k+2 < n && unicode.ToLower(rc.r[k+2]) == 'l' {
			return k + 3
		}
	}
	return -1
}

// matchSpaces is `\s*[\r\n]+|\s+(?!\S)|\s+` at k (a whitespace rune): the run up to its last
// line break, else the whole run at the end of the text, else the run less its last rune,
// else the single rune.
func (rc *runeClasses) matchSpaces(k int) int {
	j := rc.runWhile(k, cS)
	for m := j - 1; m >= k; m-- {
		if rc.cls[m]&(cCR|cLF) != 0 {
			return m + 1
		}
	}
	if j == len(rc.r) || j-k < 2 {
		return j
	}
	return j - 1
}

// matchLlama3 is patLlama3 (maxDigits 3) and patQwen2 (maxDigits 1).
func matchLlama3(rc *runeClasses, maxDigits int, emit func(a, b int)) {
	n := len(rc.r)
	for k := 0; k < n; {
		c := rc.cls[k]
		if e := rc.contraction(k); e > 0 { // (?i:'s|...)
			emit(k, e)
			k = e
			continue
		}
		if c&cL != 0 { // [^\r\n\p{L}\p{N}]?\p{L}+ without the optional rune
			e := rc.runWhile(k+1, cL)
			emit(k, e)
			k = e
			continue
		}
		if c&(cCR|cLF|cN) == 0 && k+1 < n && rc.cls[k+1]&cL != 0 { // with it
			e := rc.runWhile(k+2, cL)
			emit(k, e)
			k = e
			continue
		}
		if c&cN != 0 { // \p{N}{1,maxDigits}
			e := k + 1
			for e < n && e-k < maxDigits && rc.cls[e]&cN != 0 {
				e++
			}
			emit(k, e)
			k = e
			continue
		}
		// ` ?[^\s\p{L}\p{N}]+[\r\n]*`
		p := k
		if rc.r[k] == ' ' && k+1 < n && rc.cls[k+1]&(cS|cL|cN) == 0 {
			p = k + 1
		}
		if rc.cls[p]&(cS|cL|cN) == 0 {
			e := rc.runWhile(rc.runWhileNot(p+1, cS|cL|cN), cCR|cLF)
			emit(k, e)
			k = e
			continue
		}
		e := rc.matchSpaces(k) // c is whitespace here
		emit(k, e)
		k = e
	}
}

// runWhileNot returns the end of the run of runes from k whose class has no bit of mask.
func (rc *runeClasses) runWhileNot(k int, mask uint16) int {
	for k < len(rc.cls) && rc.cls[k]&mask == 0 {
		k++
	}
	return k
}

// matchO200k is patO200k (gpt-oss, GPT-4o).
func matchO200k(rc *runeClasses, emit func(a, b int)) {
	n := len(rc.r)
	// a1 is [U]*[W]+ from p with backtracking: the longest U-prefix, then W+ after it if the
	// next rune is W, else W+ = the last W rune inside the prefix.
	a1 := func(p int) int {
		q := rc.runWhile(p, cU)
		if q < n && rc.cls[q]&cW != 0 {
			return rc.runWhile(q+1, cW)
		}
		for m := q - 1; m >= p; m-- {
			if rc.cls[m]&cW != 0 {
				return m + 1
			}
		}
		return -1
	}
	// a2 is [U]+[W]*.
	a2 := func(p int) int {
		q := rc.runWhile(p, cU)
		if q == p {
			return -1
		}
		return rc.runWhile(q, cW)
	}
	withSuffix := func(e int) int {
		if c := rc.contraction(e); c > 0 {
			return c
		}
		return e
	}
	for k := 0; k < n; {
		c := rc.cls[k]
		pre := c&(cCR|cLF|cL|cN) == 0 && k+1 < n
		e := -1
		for _, f := range []func(int) int{a1, a2} {
			if pre {
				if e = f(k + 1); e > 0 {
					break
				}
			}
			if e = f(k); e > 0 {
				break
			}
		}
		if e > 0 {
			e = withSuffix(e)
			emit(k, e)
			k = e
			continue
		}
		if c&cN != 0 { // \p{N}{1,3}
			e := k + 1
			for e < n && e-k < 3 && rc.cls[e]&cN != 0 {
				e++
			}
			emit(k, e)
			k = e
			continue
		}
		// ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
		p := k
		if rc.r[k] == ' ' && k+1 < n && rc.cls[k+1]&(cS|cL|cN) == 0 {
			p = k + 1
		}
		if rc.cls[p]&(cS|cL|cN) == 0 {
			e := rc.runWhileNot(p+1, cS|cL|cN)
			for e < n && (rc.cls[e]&(cCR|cLF) != 0 || rc.r[e] == '/') {
				e++
			}
			emit(k, e)
			k = e
			continue
		}
		e = rc.matchSpaces(k)
		emit(k, e)
		k = e
	}
}

// matchDigits3 is `\p{N}{1,3}`: runs of numbers cut into threes from the left.
func matchDigits3(rc *runeClasses, emit func(a, b int)) {
	n := len(rc.r)
	for k := 0; k < n; {
		if rc.cls[k]&cN == 0 {
			k++
			continue
		}
		e := k + 1
		for e < n && e-k < 3 && rc.cls[e]&cN != 0 {
			e++
		}
		emit(k, e)
		k = e
	}
}

// matchCJK is DeepSeek-V3's `[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+`.
func matchCJK(rc *runeClasses, emit func(a, b int)) {
	n := len(rc.r)
	for k := 0; k < n; {
		if rc.cls[k]&cCJK == 0 {
			k++
			continue
		}
		e := rc.runWhile(k+1, cCJK)
		emit(k, e)
		k = e
	}
}

// matchDeepSeek is patDeepSeek, DeepSeek-V3's third split.
func matchDeepSeek(rc *runeClasses, emit func(a, b int)) {
	n := len(rc.r)
	for k := 0; k < n; {
		c := rc.cls[k]
		// [!"#...~][A-Za-z]+
		if c&cASCIIPunct != 0 && k+1 < n && rc.cls[k+1]&cASCIIAlpha != 0 {
			e := rc.runWhile(k+2, cASCIIAlpha)
			emit(k, e)
			k = e
			continue
		}
		// [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
		if c&(cCR|cLF|cL|cP|cSym) == 0 && k+1 < n && rc.cls[k+1]&(cL|cM) != 0 {
			e := rc.runWhile(k+2, cL|cM)
			emit(k, e)
			k = e
			continue
		}
		if c&(cL|cM) != 0 {
			e := rc.runWhile(k+1, cL|cM)
			emit(k, e)
			k = e
			continue
		}
		// ` ?[\p{P}\p{S}]+[\r\n]*`
		p := k
		if rc.r[k] == ' ' && k+1 < n && rc.cls[k+1]&(cP|cSym) != 0 {
			p = k + 1
		}
		if rc.cls[p]&(cP|cSym) != 0 {
			e := rc.runWhile(rc.runWhile(p+1, cP|cSym), cCR|cLF)
			emit(k, e)
			k = e
			continue
		}
		if c&cS != 0 {
			e := rc.matchSpaces(k)
			emit(k, e)
			k = e
			continue
		}
		k++ // no alternative matches here: the search moves on
	}
}

// fastFindMatches is findMatches with a hand-written matcher.
func fastFindMatches(s string, match func(*runeClasses, func(a, b int))) []span {
	var rc runeClasses
	return appendFastMatches(make([]span, 0, len(s)/4+2), &rc, s, match) // words average more than 4 bytes
}

// appendFastMatches appends fastFindMatches(s, match) to out, decoding s into rc (reused).
func appendFastMatches(out []span, rc *runeClasses, s string, match func(*runeClasses, func(a, b int))) []span {
	if s == "" {
		return append(out, span{0, 0, false})
	}
	rc.load(s)
	prev := 0
	match(rc, func(a, b int) {
		a, b = rc.off[a], rc.off[b]
		if prev != a {
			out = append(out, span{prev, a, false})
		}
		out = append(out, span{a, b, true})
		prev = b
	})
	if prev != len(s) {
		out = append(out, span{prev, len(s), false})
	}
	return out
}
