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
	// Generate decodes events as objects of ollama's native /api/generate stream
	// (Decoder.DecodeGenerate: one sequence, index 0) instead of completions chunks; its
	// final object (done) sets Done and the sequence's Generate metrics. Reset keeps it.
	Generate bool

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
	c, err := d.decode(ev.Data)
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
		s, err := d.sequence(ch.Index)
		if err != nil {
			return err
		}
		d.feedChoice(s, c, ch, at)
	}
	if c.HasUsage && len(c.Choices) != 1 {
		d.Usage, d.HasUsage = c.Usage, true
	}
	return nil
}

// decode decodes one event's data with the pooled decoder: a chat/completions chunk, or a
// TGI /generate_stream object when d.Generate.
func (d *Demux) decode(data []byte) (*Chunk, error) {
	if d.dec == nil {
		d.dec = decoderPool.Get().(*Decoder)
	}
	if d.Generate {
		return d.dec.DecodeGenerate(data)
	}
	return d.dec.Decode(data)
}

// sequence returns the sequence of choices[].index i, adding the sequences up to it (each
// with room for MarkCap marks) the first time an index is seen; an index ≥ MaxChoices is
// ErrMalformed.
func (d *Demux) sequence(i int) (*Sequence, error) {
	if i >= MaxChoices {
		return nil, fmt.Errorf("sse: %w: choices[].index %d out of range (max %d)", ErrMalformed, i, MaxChoices-1)
	}
	for i >= len(d.seqs) {
		d.seqs = append(d.seqs, Sequence{})
		s := &d.seqs[len(d.seqs)-1]
		s.Index = len(d.seqs) - 1
		if d.MarkCap > 0 {
			s.Marks.Grow(d.MarkCap)
		}
	}
	return &d.seqs[i], nil
}

// feedChoice applies one choice ch of chunk c, arrived at `at` after Base, to its sequence s:
// the chunk counts, the tokens it carries (tokenDelta), a mark when it carries text or
// tokens, and its finish.
func (d *Demux) feedChoice(s *Sequence, c *Chunk, ch *Choice, at time.Duration) {
	first := !s.seen
	s.seen = true
	s.Chunks++
	text := len(ch.Text) > 0
	if text {
		s.textChunks++
	}
	if delta := d.tokenDelta(s, c, ch, first, text); text || delta > 0 {
		d.mark(s, ch, at, delta)
	}
	if ch.Finished && !s.Finished {
		s.Finished, s.FinishReason, s.FinishAt = true, finishReason(ch.FinishReason), at
	}
	if d.Generate && ch.Finished {
		d.Done = true // the final object: nothing follows it
	}
}

// tokenDelta returns the tokens choice ch of chunk c adds to s: from its logprobs when it
// carries them, else from the chunk's usage when c has one choice (a running total, see
// feedUsage), else −1 (unknown). It keeps the chunk's llama.cpp timings and TGI details on s.
func (d *Demux) tokenDelta(s *Sequence, c *Chunk, ch *Choice, first, text bool) int32 {
	delta := int32(-1)
	if len(c.Choices) == 1 && c.HasUsage {
		if d.Generate {
			first, s.continuous = false, false // the final object's total, never a chunk's delta
		}
		delta = s.feedUsage(c.Usage, first, text)
	} else {
		s.continuous = false
	}
	if len(c.Choices) == 1 && c.HasTimings {
		s.Timings, s.HasTimings = c.Timings, true
	}
	if len(c.Choices) == 1 && c.HasGenerate {
		s.Generate, s.HasGenerate = c.Generate, true
	}
	if ch.HasLogprobs {
		s.lpChunks++
		s.lpSum += ch.Logprobs
		if text && ch.Logprobs == 0 && s.lpWhy == whyNone {
			s.lpWhy = whyLogprobsEmpty
		}
		delta = clampDelta(ch.Logprobs)
	}
	return delta
}

// mark appends a mark of choice ch's text and token delta at `at` to s, counting where its
// tokens came from (logprobs, usage) and keeping its text when d.KeepText.
func (d *Demux) mark(s *Sequence, ch *Choice, at time.Duration, delta int32) {
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
		extra := ""
		if n > 0 && len(d.seqs) > n {
			// choices the request did not ask for: another numbering, or more choices
			prompts := "prompts"
			if n == 1 {
				prompts = "prompt"
			}
			extra = fmt.Sprintf("; choices[].index %d is out of range for %d %s (0 … %d)", len(d.seqs)-1, n, prompts, n-1)
		}
		return fmt.Errorf("%w (%d of %d sequences unfinished, [DONE] seen: %v%s)", ErrUnfinished, missing, n, d.Done, extra)
	}
	return nil
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
