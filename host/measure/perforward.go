package measure

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/genload/genload/host/dispatch"
)

// forwardIndex returns each mark's forward index (see Figures), nil when unknown: with
// chunkForwards the mark index; else the cumulative exact token deltas minus the first
// mark's, when every mark has one (and they sum to an exact count, if there is one); else the
// mark index when an exact count equals the number of marks (one token per chunk).
func forwardIndex(s *dispatch.Sequence, chunkForwards bool) []float64 {
	n := s.Marks.Len()
	idx := func() []float64 {
		f := make([]float64, n)
		for i := range f {
			f[i] = float64(i)
		}
		return f
	}
	if chunkForwards {
		return idx()
	}
	f := make([]float64, n)
	cum, known := 0, true
	for i := range n {
		t := s.Marks.Get(i).Tokens
		if t < 0 {
			known = false
			break
		}
		cum += int(t)
		f[i] = float64(cum)
	}
	exact := s.TokenSource.Exact()
	if known && n > 0 && (!exact || cum == s.CompletionTokens) {
		f0 := f[0]
		for i := range f {
			f[i] -= f0
		}
		return f
	}
	if exact && s.CompletionTokens == n {
		return idx()
	}
	return nil
}

// perForward fills f.PerForward, PerForwardMethod, PerForwardEndpoints, the chunk offsets,
// the fit/endpoints cross-check and PerForwardReason from the full sequences.
func perForward(f *Figures, fulls []fullSeq, o Options, maxTok int) {
	var fits, ends, endsFitted []time.Duration
	var firstRes, lastRes []float64
	oneChunk, oneToken, unverified := 0, 0, 0
	for _, q := range fulls {
		s, n := q.s, q.s.Marks.Len()
		if n < 2 {
			if maxTok == 1 || (s.TokenSource.Exact() && s.CompletionTokens == 1) {
				oneToken++
			} else {
				oneChunk++
			}
			continue
		}
		t0, tl := s.Marks.At(0), s.Marks.At(n-1)
		var end time.Duration
		switch {
		case q.fwd != nil && q.fwd[n-1] > 0:
			end = time.Duration(math.Round(float64(tl-t0) / q.fwd[n-1]))
		case q.fwd == nil && s.TokenSource.Exact() && s.CompletionTokens >= 2:
			end = (tl - t0) / time.Duration(s.CompletionTokens-1)
		case q.fwd == nil:
			unverified++
			continue
		default: // every token in the first chunk, later chunks carrying text but no token
			oneChunk++
			continue
		}
		ends = append(ends, end)
		if q.fwd == nil || n < 3 {
			continue
		}
		ps := make([]point, n)
		for i := range n {
			ps[i] = point{float64(s.Marks.At(i)), q.fwd[i]}
		}
		slope, icpt, ok := theilSen(ps)
		if !ok || slope <= 0 {
			continue
		}
		fits = append(fits, time.Duration(math.Round(slope)))
		endsFitted = append(endsFitted, end)
		firstRes = append(firstRes, float64(t0)-icpt)
		lastRes = append(lastRes, float64(tl)-(icpt+slope*q.fwd[n-1]))
	}
	var samples []time.Duration
	switch {
	case len(fits) > 0 && len(fits) == len(ends):
		f.PerForwardMethod, samples = "fit", fits
	case len(ends) > 0:
		f.PerForwardMethod, samples = "endpoints", append([]time.Duration(nil), ends...)
	}
	if len(fits) > 0 {
		f.FirstChunkOffset = time.Duration(math.Round(median(firstRes)))
		f.LastChunkOffset = time.Duration(math.Round(median(lastRes)))
	}
	f.Hist.PerForward = histOf(samples)
	f.PerForward = Summarize(samples)
	if f.PerForwardMethod == "fit" {
		crossCheck(f, Summarize(endsFitted).Mean)
	}
	f.PerForwardEndpoints = Summarize(ends)

	var parts []string
	if f.PerForward.N == 0 && len(fulls) == 0 {
		parts = append(parts, "no sequence ran its max_tokens")
	}
	if lo := f.LeftOutSummary(maxTok); lo != "" {
		parts = append(parts, "left out: "+lo)
	}
	if unverified > 0 {
		parts = append(parts, fmt.Sprintf("token counts unverified: no usage and chunks may carry several tokens (%d of %d full sequences; continuous usage or logprobs give exact counts)", unverified, len(fulls)))
	}
	if oneChunk > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d full sequences received all their tokens in one chunk: no decode interval to time", oneChunk, len(fulls)))
	}
	if oneToken > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d full sequences generated a single token (max_tokens %d): a decode forward pass needs ≥ 2 tokens", oneToken, len(fulls), maxTok))
	}
	f.PerForwardReason = strings.Join(parts, "; ")
}

// crossCheck compares the fit's mean (f.PerForward) with the endpoint figure's mean over
// the same sequences and appends a failed check with the likely cause to f.Checks.
func crossCheck(f *Figures, ends time.Duration) {
	fit := f.PerForward.Mean
	if fit <= 0 || ends <= 0 {
		return
	}
	gap := float64(ends)/float64(fit) - 1
	if math.Abs(gap) <= EstimatorTolerance {
		return
	}
	half := fit / 2
	var cause string
	switch {
	case gap < 0 && f.FirstChunkOffset > half:
		cause = fmt.Sprintf("the first chunks arrive %.1f ms late (median) against the later ones: held back (Nagle's algorithm with delayed ACK on a server without TCP_NODELAY, or a late first flush), which shortens the decode time the endpoints see; the fit is not moved by it",
			Ms(f.FirstChunkOffset))
	case gap > 0 && f.FirstChunkOffset < -half:
		cause = fmt.Sprintf("the first chunks arrive %.1f ms early (median) against the later ones: sent before the decode steps began, which lengthens the decode time the endpoints see; the fit is not moved by it",
			-Ms(f.FirstChunkOffset))
	case gap > 0 && f.LastChunkOffset > half:
		cause = fmt.Sprintf("the last chunks arrive %.1f ms late (median): a delayed final flush lengthens the decode time the endpoints see", Ms(f.LastChunkOffset))
	default:
		cause = "the chunk intervals are irregular (chunks bunched by coalesced reads, or stalls): the endpoints depend on two arrivals, the fit on all of them"
	}
	f.Checks = append(f.Checks, fmt.Sprintf("per-forward estimators disagree: decode time / (tokens − 1) %.3f ms is %+.1f %% of the robust fit %.3f ms (the headline): %s",
		Ms(ends), 100*gap, Ms(fit), cause))
}

// windowCheck compares the window's endpoint form with its fit; the tolerance widens by the
// endpoint form's alignment error, half a step over Steps.
func windowCheck(f *Figures) {
	w := f.Window
	if !w.Valid || w.PerStep <= 0 {
		return
	}
	gap := float64(w.Endpoints)/float64(w.PerStep) - 1
	if math.Abs(gap) <= EstimatorTolerance+0.5/float64(w.Steps) {
		return
	}
	f.Checks = append(f.Checks, fmt.Sprintf("full-batch estimators disagree: (end − start) / %d steps %.3f ms is %+.1f %% of the robust fit %.3f ms (the headline): a first chunk that arrived late or early moved the window's start, or chunks bunched at its edges",
		w.Steps, Ms(w.Endpoints), 100*gap, Ms(w.PerStep)))
}
