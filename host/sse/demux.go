package sse

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// MaxChoices bounds choices[].index (exclusive): an index at or above it fails the
// stream instead of growing memory without limit.
const MaxChoices = 1 << 16

// ErrUnfinished reports a stream that ended cleanly ([DONE] or EOF) before every expected
// sequence received its finish_reason. It wraps ErrTruncated.
var ErrUnfinished = fmt.Errorf("%w: ended before every sequence finished", ErrTruncated)

// TokenSource says where a Sequence's CompletionTokens came from.
type TokenSource string

// Token count sources, best first.
const (
	// TokensChoiceUsage: a usage object on a chunk carrying only this choice
	// (continuous usage stats, or the final chunk in llama.cpp / TGI).
	TokensChoiceUsage TokenSource = "choice_usage"
	// TokensRequestUsage: the request's total usage, the request having one sequence.
	TokensRequestUsage TokenSource = "request_usage"
	// TokensEvenSplit: total usage minus exactly counted sequences equals
	// max_tokens × the remaining sequences, so each of them has max_tokens.
	TokensEvenSplit TokenSource = "even_split"
	// TokensChunks: no usage attributable; the count of token-bearing chunks (each
	// counted as its known token delta, or 1). A lower bound when chunks carry several
	// tokens.
	TokensChunks TokenSource = "chunks"
	// TokensLogprobs: one logprobs entry per generated token (the request asked for
	// logprobs), summed over the sequence's chunks; exact per chunk.
	TokensLogprobs TokenSource = "logprobs"
)

// Exact reports whether a count from s is the server's own count of generated tokens
// (usage attributable to the sequence, or one logprobs entry per token) rather than
// inferred from chunks. A per-forward figure needs an exact count, or chunks known to carry
// one token each.
func (s TokenSource) Exact() bool {
	switch s {
	case TokensChoiceUsage, TokensRequestUsage, TokensEvenSplit, TokensLogprobs:
		return true
	}
	return false
}

// Mark is one token-bearing chunk of a sequence: a chunk with non-empty text, or with a
// positive token delta from continuous usage. Empty-text chunks without a delta (e.g. a
// pre-first-token chunk, llama.cpp's final `text:""` chunk) are not marks.
type Mark struct {
	// At is the arrival time relative to Demux.Base (monotonic).
	At time.Duration `json:"at_ns"`
	// Text is the chunk's text length in bytes.
	Text int32 `json:"text_bytes"`
	// Tokens is the chunk's token delta from continuous usage (completion_tokens minus the
	// previous chunk's), or -1 when unknown.
	Tokens int32 `json:"tokens"`
}

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
	// HasUsage.
	Usage    Usage `json:"usage"`
	HasUsage bool  `json:"has_usage"`
	// CompletionTokens is the sequence's generated token count and TokenSource where it
	// came from; both set by Demux.Finalize.
	CompletionTokens int         `json:"completion_tokens"`
	TokenSource      TokenSource `json:"token_source"`

	seen       bool
	continuous bool // every chunk so far carried usage
	prevTokens int
}

// Demux routes decoded chunks to sequences by choices[].index (never by id, which may be
// empty or vary), records request usage, [DONE] and in-stream errors.
// A Demux is not safe for concurrent use; Reset reuses its memory.
type Demux struct {
	// Base is the time origin of every Mark.At and FinishAt.
	Base time.Time
	// Expect is the number of sequences the request asked for (indices 0..Expect-1);
	// the stream succeeds only when all of them finished. 0 means "those seen".
	Expect int
	// KeepText keeps each sequence's text in Sequence.Text.
	KeepText bool
	// MarkCap is the initial capacity of each new sequence's Marks (e.g. max_tokens,
	// bounded by the caller), so that recording a stream does not regrow them.
	MarkCap int

	// Usage is the request's usage: the last usage-only chunk (`"choices":[]`), valid
	// when HasUsage.
	Usage    Usage
	HasUsage bool
	// Done reports that `[DONE]` arrived.
	Done bool
	// Events counts decoded events (including [DONE]).
	Events int

	dec   *Decoder
	seqs  []Sequence
	marks int
}

// Marks returns the number of token-bearing chunks seen so far, over all sequences.
func (d *Demux) Marks() int { return d.marks }

// decoderPool recycles Decoders (their fastjson parser memory) across streams.
var decoderPool = sync.Pool{New: func() any { return new(Decoder) }}

// Release returns the Demux's chunk decoder to a shared pool; the Demux takes another
// on its next Feed. Sequences already returned by Finalize are unaffected.
func (d *Demux) Release() {
	if d.dec != nil {
		decoderPool.Put(d.dec)
		d.dec = nil
	}
}

// Reset clears the Demux for a new stream, keeping its array of sequence records. The
// Marks and Text of sequences returned by Finalize are never reused: they belong to the
// caller, and Reset drops the Demux's references to them (a Demux kept in a pool does not
// keep a caller's results alive).
func (d *Demux) Reset(base time.Time, expect int) {
	d.Base, d.Expect = base, expect
	d.Usage, d.HasUsage, d.Done, d.Events, d.marks = Usage{}, false, false, 0, 0
	clear(d.seqs)
	d.seqs = d.seqs[:0]
}

// Feed applies one event. It returns a *ServerError for an in-stream error event, a
// decoding error for malformed data, and nil otherwise (including [DONE], which sets
// Done). Events with empty data are ignored.
func (d *Demux) Feed(ev Event) error {
	if len(ev.Data) == 0 {
		return nil
	}
	if d.dec == nil {
		d.dec = decoderPool.Get().(*Decoder)
	}
	c, err := d.dec.Decode(ev.Data)
	if err != nil {
		return err
	}
	d.Events++
	if c.Done {
		d.Done = true
		return nil
	}
	if c.Err != nil {
		return c.Err
	}
	at := ev.At.Sub(d.Base)
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index >= MaxChoices {
			return fmt.Errorf("sse: %w: choices[].index %d out of range (max %d)", ErrMalformed, ch.Index, MaxChoices-1)
		}
		for ch.Index >= len(d.seqs) {
			d.seqs = append(d.seqs, Sequence{})
			s := &d.seqs[len(d.seqs)-1]
			s.Index = len(d.seqs) - 1
			if d.MarkCap > 0 {
				s.Marks.Grow(d.MarkCap)
			}
		}
		s := &d.seqs[ch.Index]
		first := !s.seen
		s.seen = true
		s.Chunks++
		delta := int32(-1)
		if len(c.Choices) == 1 && c.HasUsage {
			if first || s.continuous {
				delta = int32(c.Usage.CompletionTokens - s.prevTokens)
				s.continuous = true
			}
			s.prevTokens = c.Usage.CompletionTokens
			s.Usage, s.HasUsage = c.Usage, true
		} else {
			s.continuous = false
		}
		if len(ch.Text) > 0 || delta > 0 {
			s.Marks.Append(Mark{At: at, Text: int32(len(ch.Text)), Tokens: delta})
			d.marks++
			s.TextBytes += len(ch.Text)
			if d.KeepText {
				s.Text = append(s.Text, ch.Text...)
			}
		}
		if ch.Finished && !s.Finished {
			s.Finished, s.FinishReason, s.FinishAt = true, finishReason(ch.FinishReason), at
		}
	}
	if c.HasUsage && len(c.Choices) != 1 {
		d.Usage, d.HasUsage = c.Usage, true
	}
	return nil
}

// finishReason returns b as a string, without allocating for the common reasons.
func finishReason(b []byte) string {
	switch string(b) {
	case "length":
		return "length"
	case "stop":
		return "stop"
	case "abort":
		return "abort"
	case "eos_token":
		return "eos_token"
	case "stop_sequence":
		return "stop_sequence"
	case "content_filter":
		return "content_filter"
	}
	return string(b)
}

// Run reads events from r until the stream ends and feeds them. It returns nil when the
// stream ended with [DONE] or a clean EOF and every expected sequence finished; a
// *ServerError for an in-stream error event (terminal); ErrUnfinished when it ended
// cleanly with a sequence unfinished; an error wrapping ErrTruncated when cut mid-event;
// read and decode errors otherwise. After [DONE] it keeps reading to EOF, ignoring
// events, so that the connection can be reused.
func (d *Demux) Run(r *Reader) error {
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return d.complete()
		}
		if err != nil {
			return err
		}
		if d.Done {
			continue
		}
		if err := d.Feed(ev); err != nil {
			return err
		}
	}
}

func (d *Demux) complete() error {
	n := d.Expect
	if n == 0 {
		n = len(d.seqs)
	}
	missing := 0
	for i := 0; i < n; i++ {
		if i >= len(d.seqs) || !d.seqs[i].Finished {
			missing++
		}
	}
	if missing > 0 || n == 0 {
		return fmt.Errorf("%w (%d of %d sequences unfinished, [DONE] seen: %v)", ErrUnfinished, missing, n, d.Done)
	}
	return nil
}

// Finalize sets every sequence's CompletionTokens and TokenSource, then returns the
// sequences (indices 0..max(Expect, seen)-1; unseen ones are zero records). maxTokens is
// the request's max_tokens, used only for TokensEvenSplit. Rules, in order:
//  1. usage on a chunk carrying only this choice → TokensChoiceUsage;
//  2. one sequence and request usage → TokensRequestUsage;
//  3. request usage minus rule-1 counts = maxTokens × (remaining sequences) →
//     TokensEvenSplit, each maxTokens;
//  4. otherwise Σ over marks of (Tokens if known, else 1) → TokensChunks.
//
// The returned slice aliases the Demux until its next Reset.
func (d *Demux) Finalize(maxTokens int) []Sequence {
	for len(d.seqs) < d.Expect {
		d.seqs = append(d.seqs, Sequence{Index: len(d.seqs)})
	}
	known, rest := 0, 0
	for i := range d.seqs {
		s := &d.seqs[i]
		if s.HasUsage {
			s.CompletionTokens, s.TokenSource = s.Usage.CompletionTokens, TokensChoiceUsage
			known += s.CompletionTokens
		} else {
			rest++
		}
	}
	even := d.HasUsage && rest > 0 && maxTokens > 0 && d.Usage.CompletionTokens-known == maxTokens*rest
	for i := range d.seqs {
		s := &d.seqs[i]
		switch {
		case s.HasUsage:
		case len(d.seqs) == 1 && d.HasUsage:
			s.CompletionTokens, s.TokenSource = d.Usage.CompletionTokens, TokensRequestUsage
		case even:
			s.CompletionTokens, s.TokenSource = maxTokens, TokensEvenSplit
		default:
			n := 0
			for k := range s.Marks.Len() {
				if m := s.Marks.Get(k); m.Tokens >= 0 {
					n += int(m.Tokens)
				} else {
					n++
				}
			}
			s.CompletionTokens, s.TokenSource = n, TokensChunks
		}
	}
	return d.seqs
}

// RequestUsage returns the request's usage: the usage-only chunk when one arrived, else
// the sum of per-choice usage (TGI reports usage per prompt on its final chunks); ok is
// false when neither exists.
func (d *Demux) RequestUsage() (u Usage, ok bool) {
	if d.HasUsage {
		return d.Usage, true
	}
	for i := range d.seqs {
		if d.seqs[i].HasUsage {
			u, ok = u.Add(d.seqs[i].Usage), true
		}
	}
	return u, ok
}
