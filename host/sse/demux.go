package sse

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
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

// Token count sources, in the order Demux.Finalize tries them (see there).
const (
	// TokensChoiceUsage: a usage object on a chunk carrying only this choice
	// (continuous usage stats, or the final chunk in llama.cpp / TGI), consistent with
	// the stream.
	TokensChoiceUsage TokenSource = "choice_usage"
	// TokensRequestUsage: the request's total usage minus the exact counts of its other
	// sequences (all of it when the request has one sequence).
	TokensRequestUsage TokenSource = "request_usage"
	// TokensEvenSplit: total usage minus exactly counted sequences equals
	// max_tokens × the remaining sequences, so each of them has max_tokens.
	TokensEvenSplit TokenSource = "even_split"
	// TokensChunks: no exact source; the count of token-bearing chunks (each counted as
	// its known token delta, or 1). A lower bound when chunks carry several tokens. Never
	// exact: chunks known to carry one token each are known so from logprobs or
	// continuous usage, and counted under that source.
	TokensChunks TokenSource = "chunks"
	// TokensLogprobs: one logprobs entry per generated token (the request asked for
	// logprobs), summed over the sequence's chunks, every token-bearing chunk having
	// them; exact per chunk.
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

// why is the reason a token count source was discarded.
type why uint8

const (
	whyNone why = iota
	whyUsageZero
	whyUsageBelow
	whyUsageDown
	whyUsageFlat
	whyUsageOverTotal
	whyLogprobsEmpty
	whyLogprobsPartial
	whyReqBelow
	whyReqNoSplit
	whyDeltas
)

// text returns the reason as a phrase, with the figures a and b where it has them.
func (w why) text(a, b int) string {
	i := strconv.Itoa
	switch w {
	case whyUsageZero:
		return "per-chunk usage was 0 while text arrived"
	case whyUsageBelow:
		return "per-chunk usage (" + i(a) + ") was below the " + i(b) + " chunks with text"
	case whyUsageDown:
		return "per-chunk usage went down (" + i(a) + " after " + i(b) + ")"
	case whyUsageFlat:
		return "per-chunk usage did not grow on a chunk with text"
	case whyUsageOverTotal:
		return "per-choice usage summed to " + i(a) + ", above the request's usage (" + i(b) + ")"
	case whyLogprobsEmpty:
		return "logprobs listed no token for a chunk with text"
	case whyLogprobsPartial:
		return "logprobs were missing on " + i(a) + " of " + i(b) + " chunks with tokens"
	case whyReqBelow:
		return "the request's usage (" + i(a) + ") was below its " + i(b) + " chunks with text"
	case whyReqNoSplit:
		return "the request's usage (" + i(a) + ") does not split over its " + i(b) + " sequences without their own count"
	case whyDeltas:
		return "per-chunk token counts (" + i(a) + ") disagree with the count (" + i(b) + "); chunk deltas unknown"
	}
	return ""
}

// countedChunks is usedText(TokensChunks); noteNoSource the TokenNote of a sequence the
// stream gave no usage or logprobs for.
const (
	countedChunks = "counted chunks (a lower bound when chunks carry several tokens)"
	noteNoSource  = "no usage or logprobs for this sequence; " + countedChunks
)

// usedText says which source the count came from, for TokenNote.
func usedText(src TokenSource) string {
	switch src {
	case TokensChoiceUsage:
		return "used the per-choice usage"
	case TokensRequestUsage:
		return "used the request's usage"
	case TokensEvenSplit:
		return "split the request's usage evenly"
	case TokensLogprobs:
		return "used logprobs"
	}
	return countedChunks
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
		text := len(ch.Text) > 0
		if text {
			s.textChunks++
		}
		delta := int32(-1)
		if len(c.Choices) == 1 && c.HasUsage {
			delta = s.feedUsage(c.Usage, first, text)
		} else {
			s.continuous = false
		}
		if ch.HasLogprobs {
			s.lpChunks++
			s.lpSum += ch.Logprobs
			if text && ch.Logprobs == 0 && s.lpWhy == whyNone {
				s.lpWhy = whyLogprobsEmpty
			}
			delta = clampDelta(ch.Logprobs)
		}
		if text || delta > 0 {
			s.Marks.Append(Mark{At: at, Text: int32(len(ch.Text)), Tokens: delta})
			switch {
			case ch.HasLogprobs:
				s.lpMarks++
			case delta >= 0:
				s.usageMarks++
			}
			if delta >= 0 {
				s.deltaSum += int(delta)
			}
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

// Finalize sets every sequence's CompletionTokens, TokenSource and TokenNote, then returns
// the sequences (indices 0..max(Expect, seen)-1; unseen ones are zero records). maxTokens
// is the request's max_tokens, used only for TokensEvenSplit.
//
// A source that contradicts the stream is discarded, its reason kept in TokenNote:
//   - per-choice usage of 0 after text, before any non-zero count (placeholders: those
//     chunks are ignored, and a later non-zero count may still be used);
//   - per-choice usage below the number of chunks with text so far, going down, not
//     growing on a chunk with text in continuous usage, or whose sum over the sequences
//     exceeds the request's usage (which is then discarded too);
//   - logprobs listing no token for a chunk with text, or missing on a token-bearing
//     chunk (the deltas they did list stay);
//   - a request usage below the request's chunks with text.
//
// Then, per sequence:
//  1. per-choice usage → TokensChoiceUsage;
//  2. one sequence and request usage → TokensRequestUsage (even when logprobs exist);
//  3. logprobs on every token-bearing chunk → TokensLogprobs, their sum;
//  4. request usage minus the counts of rules 1 and 3, R: one sequence left → it gets R
//     (TokensRequestUsage); k left, R = maxTokens × k and none with more than maxTokens
//     chunks with text → TokensEvenSplit, each maxTokens; a total that does not split is
//     used for no sequence;
//  5. otherwise Σ over marks of (Tokens if known, else 1) → TokensChunks.
//
// When the source of a sequence's mark deltas was discarded, or the known deltas sum above
// an exact count (or, all known, differ from it), every mark's Tokens becomes -1.
// The returned slice aliases the Demux until its next Reset.
func (d *Demux) Finalize(maxTokens int) []Sequence {
	for len(d.seqs) < d.Expect {
		d.seqs = append(d.seqs, Sequence{Index: len(d.seqs)})
	}
	texts, choiceSum, choiceN := 0, 0, 0
	for i := range d.seqs {
		s := &d.seqs[i]
		s.CompletionTokens, s.TokenSource, s.TokenNote = 0, "", ""
		texts += s.textChunks
		if s.HasUsage && s.usageWhy == whyNone && s.Usage.CompletionTokens < s.textChunks {
			s.usageWhy, s.whyA, s.whyB = whyUsageBelow, s.Usage.CompletionTokens, s.textChunks
			if s.Usage.CompletionTokens == 0 {
				s.usageWhy = whyUsageZero
			}
		}
		if s.lpChunks > 0 && s.lpWhy == whyNone && s.lpMarks < s.Marks.Len() {
			s.lpWhy = whyLogprobsPartial
		}
		if s.usageOK() {
			choiceSum += s.Usage.CompletionTokens
			choiceN++
		}
	}
	total := d.Usage.CompletionTokens
	reqOK, reqWhy, reqA, reqB := d.HasUsage, whyNone, 0, 0
	switch {
	case !d.HasUsage:
	case total < texts:
		reqOK, reqWhy, reqA, reqB = false, whyReqBelow, total, texts
	case choiceN > 0 && choiceSum > total:
		// per-choice counts and the request's total cannot both be right: trust neither
		reqOK, reqWhy, reqA, reqB = false, whyUsageOverTotal, choiceSum, total
		for i := range d.seqs {
			if s := &d.seqs[i]; s.usageOK() {
				s.usageWhy, s.whyA, s.whyB = whyUsageOverTotal, choiceSum, total
			}
		}
	}
	one := len(d.seqs) == 1
	known, rest := 0, 0
	var last *Sequence
	for i := range d.seqs {
		s := &d.seqs[i]
		switch {
		case !s.seen:
			s.TokenSource = TokensChunks // nothing arrived: 0
			continue
		case s.usageOK():
			s.CompletionTokens, s.TokenSource = s.Usage.CompletionTokens, TokensChoiceUsage
		case one && reqOK:
			s.CompletionTokens, s.TokenSource = total, TokensRequestUsage
		case s.logprobsOK():
			s.CompletionTokens, s.TokenSource = s.lpSum, TokensLogprobs
		default:
			rest++
			last = s
			continue
		}
		known += s.CompletionTokens
	}
	left := total - known
	split := reqOK && rest > 0
	if split {
		if rest == 1 {
			split = left >= last.textChunks
		} else {
			split = maxTokens > 0 && left == maxTokens*rest
			for i := range d.seqs {
				if s := &d.seqs[i]; split && s.seen && s.TokenSource == "" && s.textChunks > maxTokens {
					split = false
				}
			}
		}
		if !split {
			reqWhy, reqA, reqB = whyReqNoSplit, total, rest
		}
	}
	for i := range d.seqs {
		s := &d.seqs[i]
		if s.TokenSource == "" {
			switch {
			case split && rest == 1:
				s.CompletionTokens, s.TokenSource = left, TokensRequestUsage
			case split:
				s.CompletionTokens, s.TokenSource = maxTokens, TokensEvenSplit
			default:
				s.TokenSource = TokensChunks
			}
		}
		d.settle(s, reqWhy, reqA, reqB)
	}
	return d.seqs
}

// settle checks s's mark deltas against its count (clearing them when their source was
// discarded or they disagree), counts chunks for TokensChunks, and writes TokenNote from
// the discarded sources: the per-choice usage, the logprobs, and the request's usage
// (reqWhy with its figures) when the sequence could have used it.
func (d *Demux) settle(s *Sequence, reqWhy why, reqA, reqB int) {
	n := s.Marks.Len()
	nKnown, sum := s.lpMarks+s.usageMarks, s.deltaSum
	// a contradicted source's deltas go (logprobs merely missing on some chunks leave the
	// listed ones exact)
	drop := s.usageMarks > 0 && s.usageWhy != whyNone || s.lpMarks > 0 && s.lpWhy == whyLogprobsEmpty
	var dWhy why
	if !drop && nKnown > 0 && s.TokenSource.Exact() &&
		(sum > s.CompletionTokens || nKnown == n && sum != s.CompletionTokens) {
		drop, dWhy = true, whyDeltas
	}
	if drop && nKnown > 0 {
		s.Marks.clearTokens()
		s.lpMarks, s.usageMarks, s.deltaSum = 0, 0, 0
	}
	if s.TokenSource == TokensChunks {
		// Σ over marks of (Tokens if known, else 1)
		s.CompletionTokens = s.deltaSum + n - s.lpMarks - s.usageMarks
	}
	var parts []string
	if s.zeroUsage && !(s.HasUsage && s.usageWhy == whyUsageZero) {
		parts = append(parts, whyUsageZero.text(0, 0))
	}
	if s.HasUsage && s.usageWhy != whyNone {
		parts = append(parts, s.usageWhy.text(s.whyA, s.whyB))
	}
	if s.lpChunks > 0 && s.lpWhy != whyNone {
		parts = append(parts, s.lpWhy.text(n-s.lpMarks, n))
	}
	// the request's usage was a candidate for chunk-counted sequences, and for the only
	// sequence of a request before its logprobs
	one := len(d.seqs) == 1
	if reqWhy != whyNone && reqWhy != s.usageWhy && s.seen &&
		(s.TokenSource == TokensChunks || one && s.TokenSource == TokensLogprobs) {
		parts = append(parts, reqWhy.text(reqA, reqB))
	}
	if dWhy != whyNone {
		parts = append(parts, dWhy.text(sum, s.CompletionTokens))
	}
	switch {
	case len(parts) > 0:
		s.TokenNote = strings.Join(parts, "; ") + "; " + usedText(s.TokenSource)
	case s.TokenSource == TokensChunks && s.seen:
		s.TokenNote = noteNoSource
	}
}

// RequestUsage returns the request's usage: the usage-only chunk when one arrived, else
// the sum of per-choice usage (TGI reports usage per prompt on its final chunks) over the
// sequences whose usage did not contradict the stream (see Finalize); ok is false when
// neither exists.
func (d *Demux) RequestUsage() (u Usage, ok bool) {
	if d.HasUsage {
		return d.Usage, true
	}
	for i := range d.seqs {
		if d.seqs[i].usageOK() {
			u, ok = u.Add(d.seqs[i].Usage), true
		}
	}
	return u, ok
}
