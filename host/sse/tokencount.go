package sse

import (
	"strconv"
	"strings"
)

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
	// TokensUsageChunks: the request's usage, less the exact counts of its other sequences,
	// equals the number of chunks with text of the sequences without a count of their own:
	// since each such chunk carries at least one token, each carried exactly one, and each
	// sequence's count is its chunks with text (0 for one that finished without text); exact
	// per chunk.
	TokensUsageChunks TokenSource = "usage_equals_chunks"
)

// Exact reports whether a count from s is the server's own count of generated tokens
// (usage attributable to the sequence, or one logprobs entry per token) rather than
// inferred from chunks. A per-forward figure needs an exact count, or chunks known to carry
// one token each.
func (s TokenSource) Exact() bool {
	switch s {
	case TokensChoiceUsage, TokensRequestUsage, TokensEvenSplit, TokensLogprobs, TokensUsageChunks:
		return true
	}
	return false
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
	whyUsageShort
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
	case whyUsageShort:
		return "per-choice usage (" + i(a) + ") was below max_tokens (" + i(b) + ") on a sequence that finished with \"length\", while the request's usage is max_tokens for each of its sequences (per-chunk usage that lags a chunk behind)"
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
	case TokensUsageChunks:
		return "the request's usage equals its chunks with text: one token each"
	}
	return countedChunks
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
//   - a request usage below the request's chunks with text;
//   - per-choice usage below maxTokens when every sequence (two or more) finished with
//     "length" and the request's usage is maxTokens for each: usage that lags a chunk.
//
// Then, per sequence:
//  1. per-choice usage → TokensChoiceUsage;
//  2. one sequence and request usage → TokensRequestUsage (even when logprobs exist);
//  3. logprobs on every token-bearing chunk → TokensLogprobs, their sum;
//  4. request usage minus the counts of rules 1 and 3, R: one sequence left → it gets R
//     (TokensRequestUsage); k left whose chunks with text sum to R → each gets its chunks
//     with text (TokensUsageChunks: one token per chunk); else R = maxTokens × k and none
//     with more than maxTokens chunks with text → TokensEvenSplit, each maxTokens; a total
//     that does not split is used for no sequence;
//  5. otherwise Σ over marks of (Tokens if known, else 1) → TokensChunks.
//
// When the source of a sequence's mark deltas was discarded, or the known deltas sum above
// an exact count (or, all known, differ from it), every mark's Tokens becomes -1.
// The returned slice aliases the Demux until its next Reset.
func (d *Demux) Finalize(maxTokens int) []Sequence {
	for len(d.seqs) < d.Expect {
		d.seqs = append(d.seqs, Sequence{Index: len(d.seqs)})
	}
	texts, choiceSum, choiceN := d.checkChoiceSources()
	total := d.Usage.CompletionTokens
	choiceSum, choiceN = d.dropLaggingChoiceUsage(maxTokens, choiceSum, choiceN)
	reqOK, reqWhy, reqA, reqB := d.requestUsage(texts, choiceSum, choiceN)
	known, rest, restText, last := d.countKnown(reqOK, total)
	left := total - known // rule 4's R
	split, perChunk := false, false
	if reqOK && rest > 0 {
		if split, perChunk = d.splitRest(left, rest, restText, last, maxTokens); !split {
			reqWhy, reqA, reqB = whyReqNoSplit, total, rest
		}
	}
	for i := range d.seqs {
		s := &d.seqs[i]
		if s.TokenSource == "" {
			switch {
			case split && rest == 1:
				s.CompletionTokens, s.TokenSource = left, TokensRequestUsage
			case perChunk:
				s.CompletionTokens, s.TokenSource = s.textChunks, TokensUsageChunks
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

// checkChoiceSources clears every sequence's count and discards the per-choice usage below
// its chunks with text and the logprobs missing on a token-bearing chunk (keeping why). It
// returns the request's chunks with text and the sum and number of the usable per-choice
// counts.
func (d *Demux) checkChoiceSources() (texts, choiceSum, choiceN int) {
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
	return texts, choiceSum, choiceN
}

// countKnown applies Finalize's rules 1–3 (reqOK: the request's usage, total, is usable) and
// returns the tokens they counted, the seen sequences they left (rest, with restText chunks
// with text; last the last of them) for rule 4. An unseen sequence counts 0 by chunks.
func (d *Demux) countKnown(reqOK bool, total int) (known, rest, restText int, last *Sequence) {
	one := len(d.seqs) == 1
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
			restText += s.textChunks
			last = s
			continue
		}
		known += s.CompletionTokens
	}
	return known, rest, restText, last
}

// splitRest decides rule 4: whether the request's tokens left, left, split over the rest ≥ 1
// sequences countKnown left (restText chunks with text; last the last of them): all to the
// one left when it had no more chunks with text than that; one token per chunk with text when
// they sum to left (perChunk); else maxTokens each when left is maxTokens × rest and none had
// more than maxTokens chunks with text.
func (d *Demux) splitRest(left, rest, restText int, last *Sequence, maxTokens int) (split, perChunk bool) {
	switch {
	case rest == 1:
		return left >= last.textChunks, false
	case restText == left:
		return true, true
	case maxTokens <= 0 || left != maxTokens*rest:
		return false, false
	}
	for i := range d.seqs {
		if s := &d.seqs[i]; s.seen && s.TokenSource == "" && s.textChunks > maxTokens {
			return false, false
		}
	}
	return true, false
}

// dropLaggingChoiceUsage sets aside the per-choice counts below maxTokens when every sequence
// finished with "length" and the request counts max_tokens for each: such a count contradicts
// both (usage that counts the tokens before its chunk, not through it). choiceSum and choiceN
// (the sum and number of the choices' usable counts) are returned without them.
func (d *Demux) dropLaggingChoiceUsage(maxTokens, choiceSum, choiceN int) (int, int) {
	if !d.HasUsage || maxTokens <= 0 || len(d.seqs) < 2 || d.Usage.CompletionTokens != maxTokens*len(d.seqs) || !d.allLength() {
		return choiceSum, choiceN
	}
	for i := range d.seqs {
		if s := &d.seqs[i]; s.usageOK() && s.Usage.CompletionTokens < maxTokens {
			choiceSum -= s.Usage.CompletionTokens
			choiceN--
			s.usageWhy, s.whyA, s.whyB = whyUsageShort, s.Usage.CompletionTokens, maxTokens
		}
	}
	return choiceSum, choiceN
}

// requestUsage judges the request's own completion-token total against the texts chunks
// (texts: below them it cannot be right) and the choices' usable counts (choiceSum over
// choiceN choices: above the total, the choices' counts are set aside, and the total too
// unless it equals the chunks with text — then it is the stream's own count, one token a
// chunk, and the choices' counts are what is wrong: a server whose per-chunk usage counts the
// whole request's tokens). It returns whether the total is usable and, if not, why (with its
// two numbers).
func (d *Demux) requestUsage(texts, choiceSum, choiceN int) (ok bool, reason why, a, b int) {
	total := d.Usage.CompletionTokens
	switch {
	case !d.HasUsage:
		return false, whyNone, 0, 0
	case total < texts:
		return false, whyReqBelow, total, texts
	case choiceN > 0 && choiceSum > total:
		for i := range d.seqs {
			if s := &d.seqs[i]; s.usageOK() {
				s.usageWhy, s.whyA, s.whyB = whyUsageOverTotal, choiceSum, total
			}
		}
		if total == texts {
			return true, whyNone, 0, 0
		}
		return false, whyUsageOverTotal, choiceSum, total
	}
	return true, whyNone, 0, 0
}

// allLength reports whether every sequence of d arrived and finished with "length".
func (d *Demux) allLength() bool {
	for i := range d.seqs {
		if s := &d.seqs[i]; !s.seen || !s.Finished || s.FinishReason != "length" {
			return false
		}
	}
	return true
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
	switch {
	case s.lpMarks > 0:
		s.Deltas = TokensLogprobs
	case s.usageMarks > 0:
		s.Deltas = TokensChoiceUsage
	default:
		s.Deltas = ""
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
