package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// addedMatcher finds added tokens in a text like tokenizers' AddedVocabulary: an
// Aho-Corasick automaton in LeftmostLongest mode over the token contents, scanned
// left to right with non-overlapping matches, then single_word / lstrip / rstrip applied
// to each match. This is a byte trie tried at every position where some token can start,
// which gives the same leftmost-longest matches.
type addedMatcher struct {
	first [256]bool // a token starts with this byte
	next  []map[byte]int32
	tok   []int32 // index into toks of the token ending at this node, -1 none
	toks  []addedToken
}

func newAddedMatcher(ts []addedToken) *addedMatcher {
	am := &addedMatcher{next: []map[byte]int32{{}}, tok: []int32{-1}}
	for _, a := range ts {
		if a.Content == "" {
			continue
		}
		am.first[a.Content[0]] = true
		n := int32(0)
		for i := 0; i < len(a.Content); i++ {
			c := a.Content[i]
			nx, ok := am.next[n][c]
			if !ok {
				nx = int32(len(am.next))
				am.next = append(am.next, map[byte]int32{})
				am.tok = append(am.tok, -1)
				am.next[n][c] = nx
			}
			n = nx
		}
		if am.tok[n] == -1 { // the first of duplicate contents wins, as in the automaton
			am.tok[n] = int32(len(am.toks))
			am.toks = append(am.toks, a)
		}
	}
	if len(am.toks) == 0 {
		return nil
	}
	return am
}

// piece is a part of the input: an added token (id >= 0) or text to normalize and tokenize.
type piece struct {
	s  string
	id int32 // added-token id, or -1
}

// longestAt returns the token index and end offset of the longest token starting at i.
func (am *addedMatcher) longestAt(s string, i int) (int32, int) {
	n, best, end := int32(0), int32(-1), -1
	for j := i; j < len(s); j++ {
		nx, ok := am.next[n][s[j]]
		if !ok {
			break
		}
		n = nx
		if am.tok[n] >= 0 {
			best, end = am.tok[n], j+1
		}
	}
	return best, end
}

// split appends to dst the pieces of s: added tokens and the text between them (AddedVocabulary
// find_matches + split_with_indices). A nil matcher returns s whole.
func (am *addedMatcher) split(dst []piece, s string) []piece {
	if s == "" {
		return dst
	}
	if am == nil {
		return append(dst, piece{s, -1})
	}
	startOff := 0
	for i := 0; i < len(s); {
		if !am.first[s[i]] {
			i++
			continue
		}
		ti, end := am.longestAt(s, i)
		if ti < 0 {
			i++
			continue
		}
		a := am.toks[ti]
		start, stop := i, end
		i = end // the automaton resumes after the match, accepted or not
		if a.SingleWord {
			r1, _ := utf8.DecodeLastRuneInString(s[:start])
			r2, _ := utf8.DecodeRuneInString(s[stop:])
			if (start > 0 && isWordRune(r1)) || (stop < len(s) && isWordRune(r2)) {
				continue
			}
		}
		if a.Lstrip {
			k := start
			for k > 0 {
				r, sz := utf8.DecodeLastRuneInString(s[:k])
				if !unicode.IsSpace(r) {
					break
				}
				k -= sz
			}
			start = max(k, startOff)
		}
		if a.Rstrip {
			for stop < len(s) {
				r, sz := utf8.DecodeRuneInString(s[stop:])
				if !unicode.IsSpace(r) {
					break
				}
				stop += sz
			}
		}
		if startOff < start {
			dst = append(dst, piece{s[startOff:start], -1})
		}
		dst = append(dst, piece{s[start:stop], a.ID})
		startOff = stop
		i = max(i, stop)
	}
	if startOff < len(s) {
		dst = append(dst, piece{s[startOff:], -1})
	}
	return dst
}

// isWordRune is the regex crate's \w (Alphabetic, marks, decimal digits, connector
// punctuation, join controls), used by single_word.
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || unicode.Is(unicode.Pc, r) ||
		unicode.In(r, unicode.Nl, unicode.No) || r == 0x200c || r == 0x200d
}
