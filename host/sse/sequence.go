package sse

import (
	"math"
	"time"
)

// Sequence is everything recorded for one choice index of one stream.
type Sequence struct {
	// Index is choices[].index within its request.
	Index int `json:"index"`
	// Marks are the token-bearing chunks in arrival order (8 bytes each; see Marks).
	Marks Marks `json:"marks"`
	// Chunks counts every chunk that carried this index, including empty ones.
	Chunks int `json:"chunks"`
	// Text is the concatenated text, kept only when Demux.KeepText.
	Text []byte `json:"-"`
	// TextBytes is the total text length in bytes.
	TextBytes int `json:"text_bytes"`
	// Finished reports that a finish_reason arrived; FinishReason is it and FinishAt its
	// arrival relative to Demux.Base.
	Finished     bool          `json:"finished"`
	FinishReason string        `json:"finish_reason"`
	FinishAt     time.Duration `json:"finish_at_ns"`
	// Usage is the latest usage seen on a chunk carrying only this choice, valid when
	// HasUsage (as received, but for placeholder zeros, see Demux.Finalize; it may have
	// been discarded for the count, see TokenNote).
	Usage    Usage `json:"usage"`
	HasUsage bool  `json:"has_usage"`
	// CompletionTokens is the sequence's generated token count and TokenSource where it
	// came from; both set by Demux.Finalize.
	CompletionTokens int         `json:"completion_tokens"`
	TokenSource      TokenSource `json:"token_source"`
	// TokenNote says, when a better source than TokenSource was discarded (it contradicted
	// the stream) or none was offered, why and what was used, e.g. "per-chunk usage was 0
	// while text arrived; used the request's usage". "" when the best source was used.
	// Set by Demux.Finalize.
	TokenNote string `json:"token_note,omitempty"`
	// Timings is the server's own timing of the sequence (llama.cpp's "timings" on a chunk of
	// this choice alone, the last one seen), valid when HasTimings.
	Timings    Timings `json:"timings"`
	HasTimings bool    `json:"has_timings,omitempty"`
	// Generate is ollama's own account of the sequence (the final object of its native
	// /api/generate stream), valid when HasGenerate.
	Generate    GenerateMetrics `json:"generate,omitzero"`
	HasGenerate bool            `json:"has_generate,omitempty"`
	// Deltas is where the marks' known token deltas (Mark.Tokens ≥ 0) came from:
	// TokensLogprobs or TokensChoiceUsage (continuous usage), "" when none is known. Set by
	// Demux.Finalize.
	Deltas TokenSource `json:"deltas,omitempty"`

	seen       bool
	continuous bool // every chunk so far carried usage
	prevTokens int
	textChunks int  // chunks with non-empty text
	lpChunks   int  // chunks with a logprobs token list
	lpSum      int  // tokens listed by logprobs
	lpMarks    int  // marks whose Tokens came from logprobs
	usageMarks int  // marks whose Tokens came from continuous usage
	deltaSum   int  // Σ of the marks' known Tokens
	zeroUsage  bool // per-choice usage of 0 came on a chunk after text (placeholders)
	usageWhy   why  // why the per-choice usage was discarded (whyNone: it was not)
	lpWhy      why  // why the logprobs were discarded (figures: from lpMarks)
	whyA, whyB int  // the figures of usageWhy
}

// clampDelta returns v as an int32 delta, at most math.MaxInt32 (a larger value cannot
// be a real chunk's; the sum check of Finalize then discards it).
func clampDelta(v int) int32 {
	return int32(min(v, math.MaxInt32))
}

// feedUsage records usage completion_tokens n on a chunk carrying only this choice
// (first: the sequence's first chunk; text: the chunk has text, already counted in
// textChunks) and returns the chunk's token delta from continuous usage, or -1.
//
// A count of 0 once text has arrived, before any non-zero count, is a placeholder (servers
// derived from llama.cpp send all-zero usage on every chunk): it is not recorded and ends
// continuous usage, and zeroUsage notes it; a later non-zero count may still be the
// sequence's. Otherwise the first contradiction with the stream is kept in usageWhy: a
// count below an earlier one, below the chunks with text so far, or, in continuous usage,
// not growing on a chunk with text.
func (s *Sequence) feedUsage(u Usage, first, text bool) int32 {
	n := u.CompletionTokens
	if n == 0 && s.textChunks > 0 && !(s.HasUsage && s.Usage.CompletionTokens > 0) {
		s.zeroUsage, s.continuous = true, false
		return -1
	}
	cont := first || s.continuous
	if s.usageWhy == whyNone {
		switch {
		case s.HasUsage && n < s.Usage.CompletionTokens:
			s.usageWhy, s.whyA, s.whyB = whyUsageDown, n, s.Usage.CompletionTokens
		case n < s.textChunks:
			s.usageWhy, s.whyA, s.whyB = whyUsageBelow, n, s.textChunks
		case cont && text && n-s.prevTokens < 1:
			s.usageWhy = whyUsageFlat
		}
	}
	delta := int32(-1)
	if cont && s.usageWhy == whyNone {
		delta = clampDelta(n - s.prevTokens)
	}
	s.continuous = cont && s.usageWhy == whyNone
	s.prevTokens = n
	s.Usage, s.HasUsage = u, true
	return delta
}

// usageOK reports whether the sequence's per-choice usage can be its count: seen, never
// contradicted while streaming, and not below its chunks with text.
func (s *Sequence) usageOK() bool {
	return s.HasUsage && s.usageWhy == whyNone && s.Usage.CompletionTokens >= s.textChunks
}

// logprobsOK reports whether the sequence's logprobs can be its count: every
// token-bearing chunk had them, and none with text listed no token.
func (s *Sequence) logprobsOK() bool {
	return s.lpChunks > 0 && s.lpWhy == whyNone && s.lpMarks == s.Marks.Len()
}
