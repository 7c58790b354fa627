package sse

import (
	"encoding/json"
	"iter"
	"time"
)

// Mark is one token-bearing chunk of a sequence: a chunk with non-empty text, or with a
// positive token delta (from logprobs or continuous usage; e.g. vLLM's stripped EOS with
// text ""). Empty-text chunks without a delta (e.g. a pre-first-token chunk, llama.cpp's
// final `text:""` chunk) are not marks.
type Mark struct {
	// At is the arrival time relative to Demux.Base (monotonic).
	At time.Duration `json:"at_ns"`
	// Text is the chunk's text length in bytes.
	Text int32 `json:"text_bytes"`
	// Tokens is the chunk's exact token delta, or -1 when unknown: the number of tokens its
	// logprobs list when it has them, else from continuous usage (completion_tokens minus
	// the previous chunk's). Demux.Finalize sets every mark of a sequence to -1 when the
	// source of its deltas contradicted the stream or the sequence's count, so a known
	// delta is never 0 on a chunk with text, and the known deltas never sum above an exact
	// count (they sum to it when all are known).
	Tokens int32 `json:"tokens"`
}

// Marks is a sequence's marks in arrival order, stored in 8 bytes each instead of the 16
// of a Mark: an arrival of a 1,000-token stream costs 8 KB, and the marks are most of what a
// client at 512 streams holds. Values are exact: At (ns, 0 ≤ At < 2⁴⁴ ns ≈ 4.9 h), Text
// (0 ≤ Text < 4095) and Tokens (−1 ≤ Tokens < 254) are packed into one word; a mark with any
// field outside those ranges is kept whole in a side list. Get returns what Append was
// given, always.
//
// The zero value is empty and ready to use. Copying a Marks copies a reference to the same
// storage (as a slice does); Append on a copy must not be mixed with Append on the
// original.
type Marks struct {
	w []uint64 // packed marks, or an index into x (see pack)
	x []Mark   // marks that do not fit a word
}

const (
	atBits    = 44
	atMask    = 1<<atBits - 1
	textShift = atBits
	textMask  = 1<<12 - 1 // 4095 marks a word that indexes x
	tokShift  = 56
)

// MarksOf returns the marks ms (for tests and hand-built results).
func MarksOf(ms ...Mark) Marks {
	var m Marks
	m.Grow(len(ms))
	for _, mk := range ms {
		m.Append(mk)
	}
	return m
}

// Grow makes room for n more marks without reallocation.
func (m *Marks) Grow(n int) {
	if n > cap(m.w)-len(m.w) {
		w := make([]uint64, len(m.w), len(m.w)+n)
		copy(w, m.w)
		m.w = w
	}
}

// Append adds a mark.
func (m *Marks) Append(mk Mark) {
	at, text, tok := int64(mk.At), mk.Text, mk.Tokens
	if at >= 0 && at <= atMask && text >= 0 && text < textMask && tok >= -1 && tok < 254 {
		m.w = append(m.w, uint64(at)|uint64(text)<<textShift|uint64(tok+1)<<tokShift)
		return
	}
	m.w = append(m.w, uint64(len(m.x))|textMask<<textShift|255<<tokShift)
	m.x = append(m.x, mk)
}

// clearTokens sets every mark's Tokens to -1 (unknown), in place (copies of m see it).
func (m *Marks) clearTokens() {
	for k, w := range m.w {
		if w>>textShift&textMask == textMask {
			m.x[w&atMask].Tokens = -1
			continue
		}
		m.w[k] = w &^ (0xff << tokShift) // a stored Tokens+1 of 0 is -1
	}
}

// Len returns the number of marks.
func (m Marks) Len() int { return len(m.w) }

// Get returns mark k (0 ≤ k < Len).
func (m Marks) Get(k int) Mark {
	w := m.w[k]
	text := int32(w >> textShift & textMask)
	if text == textMask {
		return m.x[w&atMask]
	}
	return Mark{At: time.Duration(w & atMask), Text: text, Tokens: int32(w>>tokShift) - 1}
}

// At returns mark k's arrival time, Get(k).At.
func (m Marks) At(k int) time.Duration { return m.Get(k).At }

// All yields every mark with its index, in order.
func (m Marks) All() iter.Seq2[int, Mark] {
	return func(yield func(int, Mark) bool) {
		for k := range m.w {
			if !yield(k, m.Get(k)) {
				return
			}
		}
	}
}

// Slice returns the marks as a new []Mark.
func (m Marks) Slice() []Mark {
	out := make([]Mark, len(m.w))
	for k := range m.w {
		out[k] = m.Get(k)
	}
	return out
}

// MarshalJSON writes the marks as a JSON array of Mark objects.
// (null when empty and never grown, as a nil []Mark).
func (m Marks) MarshalJSON() ([]byte, error) {
	if m.w == nil {
		return []byte("null"), nil
	}
	return json.Marshal(m.Slice())
}

// UnmarshalJSON reads a JSON array of Mark objects.
func (m *Marks) UnmarshalJSON(b []byte) error {
	var ms []Mark
	if err := json.Unmarshal(b, &ms); err != nil {
		return err
	}
	*m = MarksOf(ms...)
	return nil
}
