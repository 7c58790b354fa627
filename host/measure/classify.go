package measure

import (
	"fmt"
	"sort"
	"strings"

	"github.com/genload/genload/host/recording"
)

// Sequence classes: how a sequence of a cell ended. Only ClassFull sequences enter the
// per-forward figures and the full-batch window; any other class makes the cell partial.
const (
	// ClassFull: finished with max_tokens tokens (an exact count equal to max_tokens, or an
	// unverified count with finish_reason "length").
	ClassFull = "full"
	// ClassZeroToken: finished without any token-bearing chunk (no text, no token delta).
	ClassZeroToken = "zero_token"
	// ClassEarlyStop: finished before max_tokens: an exact count below it, or an unverified
	// count with a finish_reason other than "length" ("stop", "eos_token", … although
	// ignore_eos was sent).
	ClassEarlyStop = "early_stop"
	// ClassOverlong: more tokens than max_tokens (the server ignores it).
	ClassOverlong = "overlong"
	// ClassFailed: its request failed (Result.Requests[].Err).
	ClassFailed = "failed"
	// ClassUnfinished: no finish_reason arrived.
	ClassUnfinished = "unfinished"
)

// LeftOut is a sequence kept out of the per-forward figures because it did not run its
// max_tokens: its index in Result.Sequences, its class, finish_reason, completion tokens
// and whether that count is exact (sse.TokenSource.Exact).
type LeftOut struct {
	Sequence     int    `json:"sequence"`
	Class        string `json:"class"`
	FinishReason string `json:"finish_reason,omitempty"`
	Tokens       int    `json:"tokens"`
	Exact        bool   `json:"exact"`
}

// classify returns s's class (see the Class constants); failed reports that its request
// failed, maxTok is max_tokens (0: unknown, no early-stop or overlong class).
func classify(s *recording.Sequence, failed bool, maxTok int) string {
	exact, n := exactCount(s), tokensOf(s)
	switch {
	case failed:
		return ClassFailed
	case !s.Finished:
		return ClassUnfinished
	case s.Marks.Len() == 0:
		return ClassZeroToken
	case maxTok > 0 && n > maxTok: // a lower bound above max_tokens proves it too
		return ClassOverlong
	case maxTok > 0 && n < maxTok && (exact || s.FinishReason != "length"):
		return ClassEarlyStop
	}
	return ClassFull
}

// LeftOutSummary describes f.LeftOut in one phrase per class, largest first, e.g.
// "3 of 8 sequences finished with no token; 1 stopped early (finish_reason "stop" after 37
// of 100 tokens)". It returns "" when no sequence was left out.
func (f *Figures) LeftOutSummary(maxTokens int) string {
	if len(f.LeftOut) == 0 {
		return ""
	}
	by := map[string][]LeftOut{}
	for _, l := range f.LeftOut {
		by[l.Class] = append(by[l.Class], l)
	}
	classes := make([]string, 0, len(by))
	for c := range by {
		classes = append(classes, c)
	}
	sort.Slice(classes, func(i, j int) bool {
		if len(by[classes[i]]) != len(by[classes[j]]) {
			return len(by[classes[i]]) > len(by[classes[j]])
		}
		return classes[i] < classes[j]
	})
	var parts []string
	for i, c := range classes {
		ls := by[c]
		n := fmt.Sprintf("%d", len(ls))
		if i == 0 {
			n = fmt.Sprintf("%d of %d sequences", len(ls), f.Sequences)
		}
		parts = append(parts, n+" "+describeClass(c, ls, maxTokens))
	}
	return strings.Join(parts, "; ")
}

// describeClass phrases why sequences of class c were left out, naming the finish reasons
// and token counts seen.
func describeClass(c string, ls []LeftOut, maxTokens int) string {
	reasons := func() string {
		seen := map[string]int{}
		var order []string
		for _, l := range ls {
			r := l.FinishReason
			if r == "" {
				r = "none"
			}
			if seen[r] == 0 {
				order = append(order, r)
			}
			seen[r]++
		}
		q := make([]string, len(order))
		for i, r := range order {
			q[i] = fmt.Sprintf("%q", r)
		}
		return "finish_reason " + strings.Join(q, ", ")
	}
	lo, hi := ls[0].Tokens, ls[0].Tokens
	for _, l := range ls {
		lo, hi = min(lo, l.Tokens), max(hi, l.Tokens)
	}
	span := fmt.Sprintf("%d", lo)
	if hi != lo {
		span = fmt.Sprintf("%d–%d", lo, hi)
	}
	for _, l := range ls {
		if !l.Exact { // counted from chunks: a chunk may carry several tokens
			span = "at least " + span + " (counted in chunks)"
			break
		}
	}
	switch c {
	case ClassZeroToken:
		return fmt.Sprintf("finished with no token (%s, no text): the server returned nothing for them", reasons())
	case ClassEarlyStop:
		return fmt.Sprintf("stopped early (%s after %s of max_tokens %d tokens) although ignore_eos was sent", reasons(), span, maxTokens)
	case ClassOverlong:
		return fmt.Sprintf("generated %s tokens, more than max_tokens %d: the server ignores max_tokens", span, maxTokens)
	case ClassFailed:
		return "failed with their request"
	case ClassUnfinished:
		return "never received a finish_reason"
	}
	return c
}

// exactCount reports whether s's CompletionTokens is exact: its source is
// (sse.TokenSource.Exact) and it does not contradict the stream — a count below the number
// of token-bearing chunks (zero while text arrived: a server that puts all-zero usage on
// every chunk) is not, each such chunk carrying at least one token.
func exactCount(s *recording.Sequence) bool {
	return s.TokenSource.Exact() && s.CompletionTokens >= s.Marks.Len()
}

// tokensOf is s's completion tokens: CompletionTokens, or at least one per token-bearing chunk
// when the count contradicts the stream (a lower bound then).
func tokensOf(s *recording.Sequence) int { return max(s.CompletionTokens, s.Marks.Len()) }
