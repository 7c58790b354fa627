package tokenizer

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites the text outside added tokens before pre-tokenization
// (tokenizers normalizers/*). Offsets are not tracked: genload needs ids only.
type normalizer func(string) string

// buildNormalizer compiles a "normalizer" node; path names it in errors. A nil result means
// no normalization.
func buildNormalizer(n *jNode, file, path string) (normalizer, error) {
	if n == nil {
		return nil, nil
	}
	switch n.Type {
	case "Sequence":
		var fs []normalizer
		for i := range n.Normalizers {
			f, err := buildNormalizer(&n.Normalizers[i], file, fmt.Sprintf("%s.normalizers[%d]", path, i))
			if err != nil {
				return nil, err
			}
			if f != nil {
				fs = append(fs, f)
			}
		}
		switch len(fs) {
		case 0:
			return nil, nil
		case 1:
			return fs[0], nil
		}
		return func(s string) string {
			for _, f := range fs {
				s = f(s)
			}
			return s
		}, nil
	case "NFC":
		return unicode9Form(norm.NFC), nil
	case "NFD":
		return unicode9Form(norm.NFD), nil
	case "NFKC":
		return unicode9Form(norm.NFKC), nil
	case "NFKD":
		return unicode9Form(norm.NFKD), nil
	case "Lowercase":
		return strings.ToLower, nil
	case "Prepend":
		p := n.Prepend
		return func(s string) string {
			if s == "" {
				return s
			}
			return p + s
		}, nil
	case "Strip":
		l, r := n.Left, n.Right
		return func(s string) string {
			if l {
				s = strings.TrimLeftFunc(s, unicode.IsSpace)
			}
			if r {
				s = strings.TrimRightFunc(s, unicode.IsSpace)
			}
			return s
		}, nil
	case "Replace":
		if n.Pattern == nil {
			return nil, fmt.Errorf("tokenizer: %s: [%s] Replace has no pattern", file, path)
		}
		c := n.Content
		if n.Pattern.String != nil {
			old := *n.Pattern.String
			if old == "" {
				return nil, nil
			}
			return func(s string) string { return strings.ReplaceAll(s, old, c) }, nil
		}
		if n.Pattern.Regex == nil {
			return nil, fmt.Errorf("tokenizer: %s: [%s] Replace pattern has neither Regex nor String", file, path)
		}
		re, err := compileRegex(*n.Pattern.Regex)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: %s: [%s] Replace regex %q: %w", file, path, *n.Pattern.Regex, err)
		}
		return func(s string) string {
			var b strings.Builder
			prev := 0
			for _, sp := range findMatches(s, re, "") {
				if sp.match {
					b.WriteString(s[prev:sp.a])
					b.WriteString(c)
					prev = sp.b
				}
			}
			b.WriteString(s[prev:])
			return b.String()
		}, nil
	}
	return nil, &UnsupportedError{File: file, Component: path, Type: n.Type}
}

// compileRegex compiles a tokenizer.json regex. regexp2's default (.NET) semantics are the
// closest to Oniguruma's for these patterns: \s and \p{..} are Unicode-aware, lookaheads
// work, and (?i) uses simple case folding.
func compileRegex(p string) (*regexp2.Regexp, error) {
	return regexp2.Compile(p, regexp2.None)
}

// unicode9Form returns a normalizer that applies f (golang.org/x/text/unicode/norm, Unicode
// 15.0) as the Unicode 9.0 tables inside tokenizers 0.23 do: code points assigned after 9.0
// (inNormOpaque) are unassigned there, i.e. starters with no decomposition that compose with
// nothing, so they are kept verbatim and the text between them is normalized piece by piece.
// Since decompositions and combining classes of assigned characters never change (Unicode
// stability policy), this is exactly Unicode 9.0 normalization.
func unicode9Form(f norm.Form) normalizer {
	return func(s string) string {
		// ASCII is invariant under every normalization form (and below normOpaqueMin).
		k := 0
		for k < len(s) && s[k] < utf8.RuneSelf {
			k++
		}
		if k == len(s) {
			return s
		}
		first := -1
		for i, r := range s[k:] {
			if inNormOpaque(r) {
				first = i + k
				break
			}
		}
		if first < 0 {
			return f.String(s)
		}
		var b strings.Builder
		b.Grow(len(s) + 8)
		start := 0
		for i, r := range s[first:] {
			i += first
			if !inNormOpaque(r) {
				continue
			}
			b.WriteString(f.String(s[start:i]))
			b.WriteRune(r)
			start = i + utf8.RuneLen(r)
		}
		b.WriteString(f.String(s[start:]))
		return b.String()
	}
}
