package tokenizer

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// bpeModel is the BPE model of tokenizers (models/bpe/model.rs + word.rs): a word is split
// into characters (each looked up in the vocabulary, with byte fallback <0xXX> or the unknown
// token when absent), then adjacent pairs are merged by ascending merge rank, ties broken by
// leftmost position, exactly as Word::merge_all's binary heap does.
type bpeModel struct {
	toks         strTab     // id -> token of the model vocabulary ("" for an id no token has), then the aliases
	vocabN       int        // ids of the model vocabulary: 0 … vocabN-1
	aliasID      []int32    // id of toks.str(vocabN+i), a token whose id another token has too
	vocab        vocabIndex // token -> index into toks
	merges       mergeTab   // pair of ids -> rank and merged id
	unk          int32      // -1 if none
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool
	contPrefix   string
	eowSuffix    string
	byteIDs      [256]int32 // id of "<0xXX>", -1 if missing

	cacheMu sync.RWMutex
	cache   map[string][]int32
	noCache bool // benchmarks: every word goes through mergeWord
}

// mergeInfo is the rank of a merge (its index in "merges") and the id of the merged token.
type mergeInfo struct{ rank, id int32 }

// bpeCacheCap bounds the word cache (entries); words longer than bpeCacheMaxWord bytes are
// never cached. tokenizers uses a 10,000-entry cache; the cache changes speed only.
const (
	bpeCacheCap     = 50000
	bpeCacheMaxWord = 256
)

// newBPE builds the model's tables from a parsed tokenizer.json: the vocabulary in id order,
// its index, and the merges resolved to ids (an error names a merge whose tokens, or merged
// token, are not in the vocabulary).
func newBPE(s *bpeSpec) (*bpeModel, error) {
	n := int32(0)
	for _, id := range s.vocab {
		if id < 0 {
			return nil, fmt.Errorf("[vocab]: negative id %d", id)
		}
		n = max(n, id+1)
	}
	// A token of an id another token has too (a vocabulary with duplicate ids) is an alias:
	// the id's token is the smallest of them, the others are found by lookup and decode as it.
	strs := make([]string, n)
	present := make([]bool, n)
	type alias struct {
		tok string
		id  int32
	}
	var aliases []alias
	for tok, id := range s.vocab {
		switch {
		case !present[id]:
			strs[id], present[id] = tok, true
		case tok < strs[id]:
			aliases = append(aliases, alias{strs[id], id})
			strs[id] = tok
		default:
			aliases = append(aliases, alias{tok, id})
		}
	}
	slices.SortFunc(aliases, func(a, b alias) int { return strings.Compare(a.tok, b.tok) })
	aliasID := make([]int32, len(aliases))
	for i, a := range aliases {
		strs = append(strs, a.tok)
		present = append(present, true)
		aliasID[i] = a.id
	}
	toks := newStrTab(strs)
	m := &bpeModel{toks: toks, vocabN: int(n), aliasID: aliasID, vocab: newVocabIndex(&toks, present)}
	if err := m.setOptions(s); err != nil {
		return nil, err
	}
	pairs := make([]mergePair, len(s.merges))
	contPrefix := s.contPrefix
	buf := make([]byte, 0, 64)
	for rank, mg := range s.merges {
		a, b := mg[0], mg[1]
		ia, oka := s.vocab[a]
		ib, okb := s.vocab[b]
		if !oka || !okb {
			return nil, fmt.Errorf("[merges][%d] %q %q: token not in the vocabulary", rank, a, b)
		}
		rb := b
		if len(contPrefix) > 0 && len(b) >= len(contPrefix) && b[:len(contPrefix)] == contPrefix {
			rb = b[len(contPrefix):]
		}
		buf = append(append(buf[:0], a...), rb...)
		id, ok := s.vocab[string(buf)]
		if !ok {
			return nil, fmt.Errorf("[merges][%d] %q %q: merged token not in the vocabulary", rank, a, b)
		}
		pairs[rank] = mergePair{ia, ib, id}
	}
	m.merges = newMergeTab(pairs)
	return m, nil
}

// setOptions sets the model's options from s and resolves the unknown token and the byte
// fallback tokens in the vocabulary (an error when unk_token is not in it).
func (m *bpeModel) setOptions(s *bpeSpec) error {
	m.unk, m.fuseUnk, m.byteFallback = -1, s.fuseUnk, s.byteFallback
	m.ignoreMerges, m.contPrefix, m.eowSuffix = s.ignoreMerges, s.contPrefix, s.eowSuffix
	m.cache = make(map[string][]int32)
	if s.unk != nil {
		id, ok := m.lookup(*s.unk)
		if !ok {
			return fmt.Errorf("[unk_token] %q is not in the vocabulary", *s.unk)
		}
		m.unk = id
	}
	for i := range m.byteIDs {
		m.byteIDs[i] = -1
		if id, ok := m.lookup(fmt.Sprintf("<0x%02X>", i)); ok {
			m.byteIDs[i] = id
		}
	}
	return nil
}

// lookup returns the id of token s of the model vocabulary.
func (m *bpeModel) lookup(s string) (int32, bool) {
	i, ok := m.vocab.lookup(&m.toks, s)
	if ok && int(i) >= m.vocabN {
		return m.aliasID[int(i)-m.vocabN], true
	}
	return i, ok
}

// symbol is one node of the doubly linked list of a word being merged; len 0 marks a symbol
// absorbed by its left neighbour.
type symbol struct {
	id         int32
	prev, next int32
	len        int32
}

// mergeCand is a heap entry: merge the symbol at pos with its right neighbour into id.
type mergeCand struct {
	pos, rank, id int32
}

type mergeHeap []mergeCand

func (h mergeHeap) less(i, j int) bool {
	if h[i].rank != h[j].rank {
		return h[i].rank < h[j].rank
	}
	return h[i].pos < h[j].pos
}

func (h *mergeHeap) push(c mergeCand) {
	*h = append(*h, c)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *mergeHeap) pop() mergeCand {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	*h = s
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && s.less(r, l) {
			m = r
		}
		if !s.less(m, i) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	return top
}

// tokenize appends the ids of one pre-tokenized word to dst.
func (m *bpeModel) tokenize(dst []int32, w string) []int32 {
	if w == "" {
		return dst
	}
	if m.ignoreMerges {
		if id, ok := m.lookup(w); ok {
			return append(dst, id)
		}
	}
	cacheable := len(w) <= bpeCacheMaxWord && !m.noCache
	if cacheable {
		m.cacheMu.RLock()
		ids, ok := m.cache[w]
		m.cacheMu.RUnlock()
		if ok {
			return append(dst, ids...)
		}
	}
	ids := m.mergeWord(w)
	if cacheable {
		m.cacheMu.Lock()
		if len(m.cache) < bpeCacheCap {
			m.cache[strings.Clone(w)] = ids // w may be cut from an Encode's arena
		}
		m.cacheMu.Unlock()
	}
	return append(dst, ids...)
}

// mergeWord is Word::merge_all of tokenizers on the characters of w.
func (m *bpeModel) mergeWord(w string) []int32 {
	syms := make([]symbol, 0, len(w))
	add := func(id int32, l int) { syms = append(syms, symbol{id: id, len: int32(l)}) }
	unkID, unkLen := int32(-1), 0
	var key []byte
	for i := 0; i < len(w); {
		_, sz := utf8.DecodeRuneInString(w[i:])
		s := w[i : i+sz]
		if (i > 0 && m.contPrefix != "") || (i+sz == len(w) && m.eowSuffix != "") {
			key = key[:0]
			if i > 0 {
				key = append(key, m.contPrefix...)
			}
			key = append(key, s...)
			if i+sz == len(w) {
				key = append(key, m.eowSuffix...)
			}
			s = string(key)
		}
		id, ok := m.lookup(s)
		switch {
		case ok:
			if unkID >= 0 {
				add(unkID, unkLen)
				unkID = -1
			}
			add(id, sz)
		case m.byteFallback && m.hasBytes(s):
			// As tokenizers does, a pending unknown is not flushed before the bytes.
			for j := 0; j < len(s); j++ {
				add(m.byteIDs[s[j]], 1)
			}
		case m.unk >= 0:
			if unkID >= 0 && m.fuseUnk {
				unkLen += sz
			} else {
				if unkID >= 0 {
					add(unkID, unkLen)
				}
				unkID, unkLen = m.unk, sz
			}
		}
		i += sz
	}
	if unkID >= 0 {
		add(unkID, unkLen)
	}
	n := int32(len(syms))
	for i := range syms {
		syms[i].prev, syms[i].next = int32(i)-1, int32(i)+1
	}
	if n > 0 {
		syms[n-1].next = -1
	}
	h := make(mergeHeap, 0, n)
	for i := int32(0); i+1 < n; i++ {
		if mi, ok := m.merges.lookup(syms[i].id, syms[i+1].id); ok {
			h.push(mergeCand{i, mi.rank, mi.id})
		}
	}
	for len(h) > 0 {
		top := h.pop()
		cur := &syms[top.pos]
		if cur.len == 0 || cur.next == -1 {
			continue
		}
		nextPos := cur.next
		right := syms[nextPos]
		if mi, ok := m.merges.lookup(cur.id, right.id); !ok || mi.id != top.id {
			continue // stale candidate
		}
		cur.id = top.id
		cur.len += right.len
		cur.next = right.next
		syms[nextPos].len = 0
		if right.next >= 0 {
			syms[right.next].prev = top.pos
		}
		if cur.prev >= 0 {
			if mi, ok := m.merges.lookup(syms[cur.prev].id, cur.id); ok {
				h.push(mergeCand{cur.prev, mi.rank, mi.id})
			}
		}
		if cur.next >= 0 {
			if mi, ok := m.merges.lookup(cur.id, syms[cur.next].id); ok {
				h.push(mergeCand{top.pos, mi.rank, mi.id})
			}
		}
	}
	ids := make([]int32, 0, n)
	for _, s := range syms {
		if s.len != 0 {
			ids = append(ids, s.id)
		}
	}
	return ids
}

func (m *bpeModel) hasBytes(s string) bool {
	for j := 0; j < len(s); j++ {
		if m.byteIDs[s[j]] < 0 {
			return false
		}
	}
	return true
}

// resetCache empties the word cache (benchmarks measure cold encoding with it).
func (m *bpeModel) resetCache() {
	m.cacheMu.Lock()
	m.cache = make(map[string][]int32)
	m.cacheMu.Unlock()
}
