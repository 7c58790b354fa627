package tokenizer

import (
	"testing"

	"golang.org/x/text/unicode/norm"
)

// The merge table keeps the last rank of a pair listed twice (tokenizers collects merges
// into a HashMap) and finds every pair it holds and none it does not, in a table small enough
// that many pairs share a slot's neighbourhood.
func TestMergeTabRanks(t *testing.T) {
	pairs := []mergePair{{1, 2, 10}, {2, 3, 11}, {1, 2, 10}, {3, 1, 12}}
	for i := range int32(40) {
		pairs = append(pairs, mergePair{100 + i, 200 + i, 300 + i})
	}
	m := newMergeTab(pairs)
	if mi, ok := m.lookup(1, 2); !ok || mi.rank != 2 || mi.id != 10 {
		t.Errorf("lookup(1, 2) = %+v, %v; want rank 2 (the later listing), id 10", mi, ok)
	}
	if mi, ok := m.lookup(3, 1); !ok || mi.rank != 3 || mi.id != 12 {
		t.Errorf("lookup(3, 1) = %+v, %v; want rank 3, id 12", mi, ok)
	}
	for i := range int32(40) {
		if mi, ok := m.lookup(100+i, 200+i); !ok || mi.rank != 4+i || mi.id != 300+i {
			t.Fatalf("lookup(%d, %d) = %+v, %v", 100+i, 200+i, mi, ok)
		}
		if _, ok := m.lookup(200+i, 100+i); ok {
			t.Fatalf("lookup(%d, %d) found a pair never listed", 200+i, 100+i)
		}
	}
}

// The vocabulary index finds every present token (aliases of a shared id included) and no
// absent one, holes of the id range among them.
func TestVocabIndex(t *testing.T) {
	s := &bpeSpec{vocab: map[string]int32{"a": 0, "b": 1, "ab": 3, "x": 3, "": 5}}
	for i := range 100 {
		s.vocab[string(rune('A'+i%26))+string(rune('a'+i/26))] = int32(10 + i)
	}
	m, err := newBPE(s)
	if err != nil {
		t.Fatal(err)
	}
	for tok, id := range s.vocab {
		if got, ok := m.lookup(tok); !ok || got != id {
			t.Errorf("lookup(%q) = %d, %v; want %d", tok, got, ok, id)
		}
	}
	for _, tok := range []string{"c", "ba", "abc", "Zz"} {
		if id, ok := m.lookup(tok); ok {
			t.Errorf("lookup(%q) = %d for a token not in the vocabulary", tok, id)
		}
	}
	if m.vocabN != 110 || m.toks.str(3) != "ab" || m.toks.str(2) != "" || m.toks.str(4) != "" {
		t.Errorf("vocabN %d, token 3 %q (the smaller of two), tokens 2 and 4 %q %q (holes)", m.vocabN, m.toks.str(3), m.toks.str(2), m.toks.str(4))
	}
}

// ASCII is returned as it is by every form, and text past it is still normalized: the
// compatibility forms decompose Latin-1's ½ and no-break space, NFC composes e + U+0301.
func TestUnicode9FormASCII(t *testing.T) {
	for _, c := range []struct {
		f        norm.Form
		in, want string
	}{
		{norm.NFC, "plain ASCII text\n", "plain ASCII text\n"},
		{norm.NFKC, "plain ASCII text\n", "plain ASCII text\n"},
		{norm.NFC, "cafe\u0301", "caf\u00e9"},
		{norm.NFKC, "a \u00bd b\u00a0c", "a 1\u20442 b c"},
		{norm.NFKD, "\u00e9", "e\u0301"},
	} {
		if got := unicode9Form(c.f)(c.in); got != c.want {
			t.Errorf("form %v of %q = %q, want %q", c.f, c.in, got, c.want)
		}
	}
}
