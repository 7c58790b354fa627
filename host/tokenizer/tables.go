package tokenizer

import (
	"fmt"
	"math/bits"
)

// The BPE model's lookup tables are flat arrays rather than Go maps, so that they can be
// written to the prepared-tables cache (prepared.go) and read back without being rebuilt: a
// map of 150,000 tokens costs tens of milliseconds to fill at every start, these cost a read.
// Each is an open-addressing hash table with linear probing, at most 3/4 full, whose hash
// functions are fixed (FNV-1a for strings, Fibonacci hashing for pairs of ids) so that a table
// written by one process is valid in another.

// strTab holds n strings back to back: string i is blob[offs[i]:offs[i+1]].
type strTab struct {
	blob string
	offs []uint32 // n+1 offsets into blob, non-decreasing, the last len(blob)
}

// len is the number of strings.
func (s *strTab) len() int { return len(s.offs) - 1 }

// str returns string i, 0 ≤ i < len().
func (s *strTab) str(i int) string { return s.blob[s.offs[i]:s.offs[i+1]] }

// newStrTab packs strs (in order) into one blob.
func newStrTab(strs []string) strTab {
	n := 0
	for _, s := range strs {
		n += len(s)
	}
	b := make([]byte, 0, n)
	offs := make([]uint32, len(strs)+1)
	for i, s := range strs {
		b = append(b, s...)
		offs[i+1] = uint32(len(b))
	}
	return strTab{blob: string(b), offs: offs}
}

// slotBits returns the number of bits of a table of slots for n entries: the smallest power
// of two of at least 4n/3 slots (at most 3/4 full), and at least 16 slots.
func slotBits(n int) uint {
	return uint(max(4, bits.Len(uint(n+n/3))))
}

// fnv1a is the 64-bit FNV-1a hash of s.
func fnv1a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// fib spreads h over a table of 1<<b slots (Fibonacci hashing: the top b bits of h × 2^64/φ).
func fib(h uint64, b uint) uint32 { return uint32((h * 0x9E3779B97F4A7C15) >> (64 - b)) }

// vocabIndex maps a token to its index in a strTab toks: slots hold index+1 (0 = empty).
type vocabIndex struct {
	slots []uint32
	bits  uint
}

// newVocabIndex indexes every present string of toks (present[i]; a hole of the id range is
// absent), in index order, so that the table depends on the vocabulary alone.
func newVocabIndex(toks *strTab, present []bool) vocabIndex {
	n := 0
	for _, p := range present {
		if p {
			n++
		}
	}
	v := vocabIndex{bits: slotBits(n)}
	v.slots = make([]uint32, 1<<v.bits)
	mask := uint32(len(v.slots) - 1)
	for id, p := range present {
		if !p {
			continue
		}
		i := fib(fnv1a(toks.str(id)), v.bits)
		for v.slots[i] != 0 {
			i = (i + 1) & mask
		}
		v.slots[i] = uint32(id) + 1
	}
	return v
}

// lookup returns the index of token s in toks.
func (v *vocabIndex) lookup(toks *strTab, s string) (int32, bool) {
	mask := uint32(len(v.slots) - 1)
	for i := fib(fnv1a(s), v.bits); ; i = (i + 1) & mask {
		e := v.slots[i]
		if e == 0 {
			return 0, false
		}
		if toks.str(int(e-1)) == s {
			return int32(e - 1), true
		}
	}
}

// mergePair is one merge: tokens a and b become token id.
type mergePair struct{ a, b, id int32 }

// mergeTab maps a pair of adjacent token ids to its merge: pairs in rank order (the order of
// tokenizer.json's merges), slots hold rank+1 (0 = empty). A pair listed twice keeps its last
// rank, as tokenizers' HashMap of merges does.
type mergeTab struct {
	pairs []mergePair
	slots []uint32
	bits  uint
}

func pairHash(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// newMergeTab indexes pairs by (a, b); a pair listed again replaces the earlier rank.
func newMergeTab(pairs []mergePair) mergeTab {
	m := mergeTab{pairs: pairs, bits: slotBits(len(pairs))}
	m.slots = make([]uint32, 1<<m.bits)
	mask := uint32(len(m.slots) - 1)
	for rank, p := range pairs {
		i := fib(pairHash(p.a, p.b), m.bits)
		for {
			e := m.slots[i]
			if e == 0 {
				m.slots[i] = uint32(rank) + 1
				break
			}
			if q := pairs[e-1]; q.a == p.a && q.b == p.b {
				m.slots[i] = uint32(rank) + 1
				break
			}
			i = (i + 1) & mask
		}
	}
	return m
}

// lookup returns the rank and merged id of the pair (a, b).
func (m *mergeTab) lookup(a, b int32) (mergeInfo, bool) {
	mask := uint32(len(m.slots) - 1)
	for i := fib(pairHash(a, b), m.bits); ; i = (i + 1) & mask {
		e := m.slots[i]
		if e == 0 {
			return mergeInfo{}, false
		}
		if p := &m.pairs[e-1]; p.a == a && p.b == b {
			return mergeInfo{int32(e - 1), p.id}, true
		}
	}
}

// checkTables verifies the invariants lookups rely on, for tables read from a file: offsets
// within the blob and non-decreasing, slot tables a power of two in size and at most 3/4
// full (a lookup of an absent key ends at an empty slot), every slot naming an id or rank in
// range, every merge naming ids of the vocabulary.
func (m *bpeModel) checkTables() error {
	n := m.toks.len()
	if n < m.vocabN || m.toks.offs[0] != 0 || int(m.toks.offs[n]) != len(m.toks.blob) {
		return fmt.Errorf("token offsets do not span the token bytes")
	}
	for i := range n {
		if m.toks.offs[i] > m.toks.offs[i+1] {
			return fmt.Errorf("token offset %d decreases", i)
		}
	}
	if err := checkSlots("vocabulary index", m.vocab.slots, m.vocab.bits, n); err != nil {
		return err
	}
	if err := checkSlots("merge index", m.merges.slots, m.merges.bits, len(m.merges.pairs)); err != nil {
		return err
	}
	v := m.vocabN
	for r, p := range m.merges.pairs {
		if p.a < 0 || p.b < 0 || p.id < 0 || int(p.a) >= v || int(p.b) >= v || int(p.id) >= v {
			return fmt.Errorf("merge %d names an id outside the vocabulary", r)
		}
	}
	return nil
}

// checkSlots checks a slot table of 1<<b entries, each 0 or at most limit, at most 3/4 used.
func checkSlots(what string, s []uint32, b uint, limit int) error {
	if b > 31 || len(s) != 1<<b {
		return fmt.Errorf("%s: %d slots for %d bits", what, len(s), b)
	}
	used, top := 0, uint32(0)
	for _, e := range s {
		top = max(top, e)
		if e != 0 {
			used++
		}
	}
	if int64(top) > int64(limit) {
		return fmt.Errorf("%s: slot entry %d out of range (%d)", what, top, limit)
	}
	if used > len(s)*3/4 {
		return fmt.Errorf("%s: %d of %d slots used", what, used, len(s))
	}
	return nil
}
