package measure

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/genload/genload/host/recording"
)

// HeaderFigure is the per-forward latency from server headers, per succeeded request
// carrying the generation-duration header:
//
//	D = generation duration (header value; unit per Options.GenerationDurationUnit),
//	    taken to span the request's earliest first token to its latest last token over
//	    all of its sequences (the built-in engine's definition)
//	F = the decode forward passes inside D;  PerForward = D / F
//
// F is counted so that it spans the same interval as D. Let e be the request's sequence
// whose first chunk arrived first and r the one whose last chunk arrived last (e = r for
// a request of one sequence), T_r r's completion tokens, n_r its token-bearing chunks, and
// s the index of e's chunk nearest in time to r's first chunk (the forward passes between
// the two first tokens; 0 when they came from the same step):
//
//	Options.ChunkForwards (draft_tokens set: one chunk per forward pass)
//	                      F = s + (n_r − 1)
//	no acceptance header  F = s + (T_r − 1)   (one token per sequence per forward; s is
//	                      counted on e's chunks, so it needs e's chunks to carry one token
//	                      each whenever s > 0)
//	acceptance header a, a request of one sequence: F = (T − 1) / τ, with τ tokens per
//	forward pass in expectation:
//	      DraftTokens k > 0             τ = 1 + a·k   (a = accepted fraction of the k
//	                                    drafted tokens; each forward also yields one
//	                                    verified token)
//	      k unknown and a ≥ 1           τ = a         (a is already the mean accepted
//	                                    length per forward, as SGLang's spec_accept_length)
//	      k unknown and 0 ≤ a < 1       τ = 1/(1−a)   (the limit k → ∞ of the i.i.d.
//	                                    expectation (1−a^(k+1))/(1−a), Leviathan et al. 2023)
//
// With speculation, a request of several sequences has no figure without ChunkForwards:
// its D ends on the sequence that needed the most forward passes, and the mean tokens per
// forward says how many the average sequence needed, not the slowest one (the slowest
// of B needs more: the figure was 11–13 % high at B = 8–16, k = 3, α = 0.7, 40 tokens).
// Likewise, with chunks known to be forwards, the figure counts them rather than using
// 1 + a·k, which overstates the tokens per forward when drafts are cut short near
// max_tokens (+2.6 % at B = 1 on the same engine).
//
// TokensPerForward is the mean τ over the requests used: Σ(T − 1)/Σ(n − 1) over their
// sequences when chunks are counted, else the formula's τ. Reason is set when no request
// gave a figure (PerForward.N = 0): why the header could not give one.
type HeaderFigure struct {
	Requests         int     `json:"requests"`
	TokensPerForward float64 `json:"tokens_per_forward"`
	PerForward       Summary `json:"per_forward"`
	Reason           string  `json:"reason,omitempty"`
}

// headerFigure computes the HeaderFigure (see its doc comment): nil when the header is not
// configured or no succeeded request carried it, with a Reason when some did but none
// gave a per-forward figure.
func headerFigure(res *recording.Result, o Options) *HeaderFigure {
	if o.GenerationDurationHeader == "" {
		return nil
	}
	unit := o.GenerationDurationUnit
	if unit == 0 {
		unit = time.Second
	}
	seqs := map[int][]*recording.Sequence{}
	for i := range res.Sequences {
		s := &res.Sequences[i]
		seqs[s.Request] = append(seqs[s.Request], s)
	}
	var per []time.Duration
	var tauSum float64
	seen := 0
	reason := ""
	for i := range res.Requests {
		r := &res.Requests[i]
		if r.Err != nil || len(seqs[i]) == 0 {
			continue
		}
		d, ok := parseDuration(r.Headers[o.GenerationDurationHeader], unit)
		if !ok {
			continue
		}
		seen++
		acc := math.NaN()
		if o.SpeculationAcceptanceHeader != "" {
			if a, err := strconv.ParseFloat(strings.TrimSpace(r.Headers[o.SpeculationAcceptanceHeader]), 64); err == nil && a >= 0 {
				acc = a
			}
		}
		forwards, tau, why := requestForwards(seqs[i], acc, o)
		if why != "" {
			reason = why
			continue
		}
		per = append(per, time.Duration(math.Round(float64(d)/forwards)))
		tauSum += tau
	}
	if seen == 0 {
		return nil
	}
	if len(per) == 0 {
		return &HeaderFigure{Reason: reason}
	}
	return &HeaderFigure{Requests: len(per), TokensPerForward: tauSum / float64(len(per)), PerForward: Summarize(per)}
}

// requestForwards returns F and τ of one request's sequences (see HeaderFigure), or why
// there is no figure. acc is the acceptance header's value, NaN when absent.
func requestForwards(seqs []*recording.Sequence, acc float64, o Options) (forwards, tau float64, why string) {
	var e, r *recording.Sequence
	for _, s := range seqs {
		if !s.Finished || s.Marks.Len() == 0 {
			return 0, 0, "a sequence of the request did not finish or streamed no token"
		}
		if e == nil || s.Marks.At(0) < e.Marks.At(0) {
			e = s
		}
		if r == nil || s.Marks.At(s.Marks.Len()-1) > r.Marks.At(r.Marks.Len()-1) {
			r = s
		}
	}
	// s: e's chunk nearest to r's first chunk
	ms, start := e.Marks, r.Marks.At(0)
	stagger := sort.Search(ms.Len(), func(i int) bool { return ms.At(i) >= start })
	if stagger == ms.Len() || (stagger > 0 && start-ms.At(stagger-1) <= ms.At(stagger)-start) {
		stagger--
	}
	switch {
	case o.ChunkForwards:
		tokens, chunks := 0, 0
		for _, s := range seqs {
			tokens += s.CompletionTokens - 1
			chunks += s.Marks.Len() - 1
		}
		forwards = float64(stagger + r.Marks.Len() - 1)
		if chunks > 0 {
			tau = float64(tokens) / float64(chunks)
		}
	case math.IsNaN(acc):
		if stagger > 0 && e.Marks.Len() != e.CompletionTokens {
			return 0, 0, fmt.Sprintf("the request's first tokens came %d chunks apart and chunks carry %.2f tokens: the forward passes between them are unknown",
				stagger, float64(e.CompletionTokens)/float64(e.Marks.Len()))
		}
		forwards, tau = float64(stagger+r.CompletionTokens-1), 1
	case len(seqs) > 1:
		return 0, 0, fmt.Sprintf("speculative decoding in a request of %d sequences: the generation duration ends on the sequence that needed the most forward passes, which the acceptance rate does not give (set draft_tokens: one chunk per forward pass is then counted)", len(seqs))
	default:
		switch {
		case o.DraftTokens > 0:
			tau = 1 + acc*float64(o.DraftTokens)
		case acc >= 1:
			tau = acc
		default:
			tau = 1 / (1 - acc)
		}
		forwards = float64(r.CompletionTokens-1) / tau
	}
	if forwards <= 0 {
		return 0, 0, "the request has no decode forward pass after its first token"
	}
	return forwards, tau, ""
}

// parseDuration reads "1.5", "1500ms", "1.5s", "1500000us" (bare numbers in unit).
func parseDuration(v string, unit time.Duration) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	mult := float64(unit)
	switch {
	case strings.HasSuffix(v, "ms"):
		v, mult = v[:len(v)-2], float64(time.Millisecond)
	case strings.HasSuffix(v, "us"):
		v, mult = v[:len(v)-2], float64(time.Microsecond)
	case strings.HasSuffix(v, "s"):
		v, mult = v[:len(v)-1], float64(time.Second)
	}
	x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || x < 0 {
		return 0, false
	}
	return time.Duration(x * mult), true
}
