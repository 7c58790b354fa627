package measure

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/genload/genload/host/stats"

	"github.com/genload/genload/host/recording"
)

// Attainment states.
const (
	AttainmentReached            = "reached"
	AttainmentProbablyNotReached = "probably not reached"
	AttainmentUnknown            = "unknown"
)

// Attainment says whether a cell's B sequences were decoded as one batch, as far as the
// client's arrival marks show it (the server's running gauge, when there is one, is the
// better witness).
type Attainment struct {
	// State is AttainmentReached, AttainmentProbablyNotReached or AttainmentUnknown.
	State string `json:"state"`
	// Concurrency is the most sequences decoding at once as the client saw them: the
	// largest number of the intervals [first mark, last mark] of the counted sequences
	// that overlap at one instant.
	Concurrency int `json:"client_concurrency"`
	// Reason says what the state rests on.
	Reason string `json:"reason"`
}

// Attain infers the Attainment of a cell of batch size b from its sequences' marks
// (counted sequences: finished, with a token-bearing chunk):
//
//   - b = 1 and one counted sequence: reached.
//   - fewer than b counted sequences: probably not reached (the others streamed nothing).
//   - Concurrency < b: probably not reached — some of the B sequences never decoded while
//     the others did (a server that ran them one or two at a time). The spread of the
//     first tokens, in steps of the median chunk interval, is added to the reason.
//   - otherwise, over the full-occupancy window (latest first mark to earliest last mark),
//     a mark is "together" when a mark of another sequence arrived within a quarter of the
//     median chunk interval of it: sequences sharing forward passes receive their chunks
//     of a step together. At least 3 chunks of every sequence in the window are needed,
//     else unknown. With ≥ 80 % of the marks together: reached. Below that, unknown when
//     chunks carry more than one token (coalesced streams need not line up), else
//     probably not reached — the sequences overlapped without sharing forward passes (a
//     server that interleaves requests, or workers on different servers).
func Attain(res *recording.Result, b int) Attainment {
	return attain(res, b, nil)
}

// attain is Attain; gapMedian, when not nil, is the median of the streamed sequences' chunk
// intervals (Compute's ITL median: the same intervals), else they are gathered from res.
func attain(res *recording.Result, b int, gapMedian *time.Duration) Attainment {
	st := streamedOf(res, gapMedian == nil)
	seqs := st.seqs
	a := Attainment{State: AttainmentUnknown, Concurrency: concurrency(seqs)}
	switch {
	case len(seqs) == 0:
		a.Reason = "no sequence streamed a token"
		return a
	case b == 1 && len(seqs) == 1:
		a.State, a.Reason = AttainmentReached, "one sequence is its own batch"
		return a
	case len(seqs) < b:
		a.State, a.Reason = AttainmentProbablyNotReached, fmt.Sprintf("only %d of %d sequences streamed a token", len(seqs), b)
		return a
	}
	var step time.Duration
	if gapMedian != nil {
		step = *gapMedian
	} else {
		step = stats.MedianDurationInPlace(st.gaps)
	}
	if a.Concurrency < b {
		a.State = AttainmentProbablyNotReached
		a.Reason = fmt.Sprintf("at most %d of %d sequences were decoding at once as the client saw them", a.Concurrency, b)
		if step > 0 {
			spread := firstTokenSpread(seqs)
			a.Reason += fmt.Sprintf("; first tokens spread over %.1f ms ≈ %.0f chunk intervals", Ms(spread), float64(spread)/float64(step))
		}
		return a
	}
	if step <= 0 {
		a.Reason = "no chunk interval to compare arrivals with"
		return a
	}
	wStart, wEnd, _, ok := span(seqs)
	if !ok {
		a.Reason = "no full-occupancy window: a sequence finished before the last one received its first token"
		return a
	}
	tol := step / 4
	together, n, short := togetherInWindow(seqs, wStart, wEnd, tol)
	if short >= 0 {
		a.Reason = fmt.Sprintf("sequence %d has %d chunks in the window where all %d decode: too few to compare arrivals", short, n, b)
		return a
	}
	share := float64(together) / float64(n)
	var jitter time.Duration
	if share < reachedShare {
		jitter = intervalJitter(seqs, wStart, wEnd, step)
	}
	a.State, a.Reason = togetherVerdict(b, share, tol, jitter, st.tokens, st.marks)
	return a
}

// reachedShare is the share of window marks arriving together (within a quarter of the
// median chunk interval of another sequence's) at and above which the sequences shared
// forward passes.
const reachedShare = 0.8

// jitterZ is the standard normal quantile of reachedShare, Φ⁻¹(0.9) = 1.2816: two sequences
// that share every forward pass, each chunk delayed by independent delivery jitter, see
// their arrival gaps spread as their chunk intervals do (the difference of two delays); with
// that spread σ, |gap| ≤ tol holds for reachedShare of the chunks only while tol ≥ jitterZ·σ.
const jitterZ = 1.2816

// intervalJitter is the spread of the chunk intervals inside [wStart, wEnd] about step (the
// cell's median interval): the median over seqs of each sequence's robust standard deviation
// (stats.RobustSigmaInPlace) of its intervals, ns. A server that runs its sequences in lock
// step and a network that delivers each chunk at once leave it near 0; delivery jitter of σ
// per chunk makes it about √2·σ.
func intervalJitter(seqs []*recording.Sequence, wStart, wEnd, step time.Duration) time.Duration {
	var iv []float64
	sig := make([]float64, 0, len(seqs))
	for _, s := range seqs {
		iv = iv[:0]
		for k := 1; k < s.Marks.Len(); k++ {
			if a, b := s.Marks.At(k-1), s.Marks.At(k); a >= wStart && b <= wEnd {
				iv = append(iv, float64(b-a))
			}
		}
		if len(iv) >= 2 {
			sig = append(sig, stats.RobustSigmaInPlace(iv, float64(step)))
		}
	}
	if len(sig) == 0 {
		return 0
	}
	return time.Duration(math.Round(stats.MedianInPlace(sig)))
}

// togetherVerdict is the state and reason of a cell whose b sequences all decoded at once
// from the share of their window marks that arrived together (within tol): reached at
// reachedShare or more. Below it: unknown when chunks carry over 1.05 tokens on average
// (tokens ÷ marks: coalesced streams need not line up), unknown when the chunk intervals
// spread by jitter (intervalJitter) beyond tol / jitterZ (delivery jitter alone would part
// the chunks of shared forward passes that often), else probably not reached.
func togetherVerdict(b int, share float64, tol, jitter time.Duration, tokens, marks int) (state, reason string) {
	switch {
	case share >= reachedShare:
		return AttainmentReached, fmt.Sprintf("all %d sequences decoding at once, %.0f %% of their chunks arriving together (within %.2f ms): they shared forward passes", b, 100*share, Ms(tol))
	case float64(tokens) > 1.05*float64(marks):
		return AttainmentUnknown, fmt.Sprintf("all %d sequences overlapped, but chunks carry %.2f tokens and only %.0f %% arrived together: coalesced streams need not line up", b, float64(tokens)/float64(marks), 100*share)
	case float64(jitter)*jitterZ > float64(tol):
		return AttainmentUnknown, fmt.Sprintf("all %d sequences overlapped and %.0f %% of their chunks arrived together (within %.2f ms), but their chunk intervals spread by %.2f ms (robust σ): delivery jitter that wide parts the chunks of shared forward passes as often, so the arrivals cannot tell", b, 100*share, Ms(tol), Ms(jitter))
	default:
		return AttainmentProbablyNotReached, fmt.Sprintf("all %d sequences overlapped, but only %.0f %% of their chunks arrived together (within %.2f ms): they did not share forward passes", b, 100*share, Ms(tol))
	}
}

// streamed are the sequences Attain counts — succeeded, finished, with a mark — with the sum
// of their completion tokens and marks, and every interval between consecutive marks of each
// (ns; the chunk intervals whose median is the step Attain compares arrivals with).
type streamed struct {
	seqs          []*recording.Sequence
	tokens, marks int
	gaps          []time.Duration
}

// medianSorted is stats.MedianDuration of an ascending d: its middle value, or lo + (hi −
// lo)/2 of the two middle ones (0 for an empty d).
func medianSorted(d []time.Duration) time.Duration {
	n := len(d)
	switch {
	case n == 0:
		return 0
	case n%2 == 1:
		return d[n/2]
	}
	lo, hi := d[n/2-1], d[n/2]
	return lo + (hi-lo)/2
}

// streamedOf returns the streamed sequences of res, in its order, with their chunk
// intervals when gaps is set.
func streamedOf(res *recording.Result, gaps bool) streamed {
	var st streamed
	for i := range res.Sequences {
		s := &res.Sequences[i]
		if s.Request >= len(res.Requests) || res.Requests[s.Request].Err != nil || !s.Finished || s.Marks.Len() == 0 {
			continue
		}
		st.seqs = append(st.seqs, s)
		st.tokens += s.CompletionTokens
		st.marks += s.Marks.Len()
	}
	if !gaps {
		return st
	}
	st.gaps = make([]time.Duration, 0, st.marks)
	for _, s := range st.seqs {
		for k := 1; k < s.Marks.Len(); k++ {
			st.gaps = append(st.gaps, s.Marks.At(k)-s.Marks.At(k-1))
		}
	}
	return st
}

// firstTokenSpread is the latest first mark of seqs less the earliest (ns).
func firstTokenSpread(seqs []*recording.Sequence) time.Duration {
	first, last := seqs[0].Marks.At(0), seqs[0].Marks.At(0)
	for _, s := range seqs[1:] {
		first, last = min(first, s.Marks.At(0)), max(last, s.Marks.At(0))
	}
	return last - first
}

// togetherInWindow counts the marks of seqs inside [wStart, wEnd] (n) and those of them
// "together": within tol (inclusive) of a mark of another sequence. short is the first
// sequence (index in seqs) with fewer than 3 marks in the window, n then its count; else
// short is −1.
func togetherInWindow(seqs []*recording.Sequence, wStart, wEnd, tol time.Duration) (together, n, short int) {
	near := 0
	for j, s := range seqs {
		in := 0
		for k := range s.Marks.Len() {
			at := s.Marks.At(k)
			if at >= wStart-tol && at <= wEnd+tol {
				near++
			}
			if at >= wStart && at <= wEnd {
				in++
			}
		}
		if in < 3 {
			return 0, in, j
		}
	}
	if tol > 0 && (wEnd-wStart)/tol < time.Duration(4*near+1024) {
		together, n = togetherByBuckets(seqs, wStart, wEnd, tol)
	} else {
		together, n = togetherBySort(seqs, wStart, wEnd, tol, near)
	}
	return together, n, -1
}

// bucket is what togetherByBuckets keeps of the marks in one interval of width tol: the
// earliest and the latest with their sequences, the earliest and latest of the other
// sequences (math.MaxInt64 / MinInt64 while there are none), and whether one holds marks of
// two sequences.
type bucket struct {
	first, last           time.Duration
	firstSeq, lastSeq     int
	firstOther, lastOther time.Duration
	used, several         bool
}

// togetherByBuckets is togetherInWindow's count in two passes over the marks, without
// sorting them: the marks within tol of the window fall into intervals of width tol, [lo +
// i·tol, lo + (i+1)·tol); every mark within tol of a mark lies in its interval or the two
// beside it. In its own interval every mark is nearer than tol, so a mark has one of another
// sequence there when the interval holds two sequences; in the interval after it, when the
// earliest mark of a sequence other than its own is within tol (the earliest of all, or the
// earliest of the other sequences than the earliest's); before it, the same with the latest.
func togetherByBuckets(seqs []*recording.Sequence, wStart, wEnd, tol time.Duration) (together, n int) {
	lo := wStart - tol
	bs := make([]bucket, (wEnd+tol-lo)/tol+1)
	for i := range bs {
		bs[i].firstOther, bs[i].lastOther = math.MaxInt64, math.MinInt64
	}
	for j, s := range seqs {
		for k := range s.Marks.Len() {
			at := s.Marks.At(k)
			if at < lo || at > wEnd+tol {
				continue
			}
			b := &bs[(at-lo)/tol]
			switch {
			case !b.used:
				*b = bucket{first: at, last: at, firstSeq: j, lastSeq: j, firstOther: math.MaxInt64, lastOther: math.MinInt64, used: true}
				continue
			case j != b.firstSeq:
				b.several = true
			}
			// the earliest of the sequences other than the earliest mark's
			switch {
			case at < b.first:
				if j != b.firstSeq {
					b.firstOther = b.first
				}
				b.first, b.firstSeq = at, j
			case j != b.firstSeq:
				b.firstOther = min(b.firstOther, at)
			}
			switch {
			case at > b.last:
				if j != b.lastSeq {
					b.lastOther = b.last
				}
				b.last, b.lastSeq = at, j
			case j != b.lastSeq:
				b.lastOther = max(b.lastOther, at)
			}
		}
	}
	for j, s := range seqs {
		for k := range s.Marks.Len() {
			at := s.Marks.At(k)
			if at < wStart || at > wEnd {
				continue
			}
			n++
			i := int((at - lo) / tol)
			if bs[i].several || bs[i+1].earliestOther(j) <= at+tol || (i > 0 && bs[i-1].latestOther(j) >= at-tol) {
				together++
			}
		}
	}
	return together, n
}

// earliestOther is the earliest mark in b of a sequence other than seq (MaxInt64 when none).
func (b *bucket) earliestOther(seq int) time.Duration {
	switch {
	case !b.used:
		return math.MaxInt64
	case b.firstSeq != seq:
		return b.first
	}
	return b.firstOther
}

// latestOther is the latest mark in b of a sequence other than seq (MinInt64 when none).
func (b *bucket) latestOther(seq int) time.Duration {
	switch {
	case !b.used:
		return math.MinInt64
	case b.lastSeq != seq:
		return b.last
	}
	return b.lastOther
}

// togetherBySort is togetherInWindow's count over the near marks within tol of the window,
// sorted by arrival (a tolerance too fine for togetherByBuckets' intervals): each mark in the
// window looks at its neighbours within tol on either side. Whether a mark has one of another
// sequence within tol does not depend on the order of marks that arrived at the same instant.
func togetherBySort(seqs []*recording.Sequence, wStart, wEnd, tol time.Duration, near int) (together, n int) {
	type arrival struct {
		at  time.Duration
		seq int
	}
	all := make([]arrival, 0, near)
	for j, s := range seqs {
		for k := range s.Marks.Len() {
			if at := s.Marks.At(k); at >= wStart-tol && at <= wEnd+tol {
				all = append(all, arrival{at, j})
			}
		}
	}
	slices.SortFunc(all, func(x, y arrival) int { return cmp.Compare(x.at, y.at) })
	for i, m := range all {
		if m.at < wStart || m.at > wEnd {
			continue
		}
		n++
		found := false
		for k := i - 1; k >= 0 && m.at-all[k].at <= tol && !found; k-- {
			found = all[k].seq != m.seq
		}
		for k := i + 1; k < len(all) && all[k].at-m.at <= tol && !found; k++ {
			found = all[k].seq != m.seq
		}
		if found {
			together++
		}
	}
	return together, n
}

// concurrency is the largest number of the intervals [first mark, last mark] of seqs that
// overlap at one instant (touching ends overlap).
func concurrency(seqs []*recording.Sequence) int {
	type edge struct {
		at    time.Duration
		delta int
	}
	edges := make([]edge, 0, 2*len(seqs))
	for _, s := range seqs {
		edges = append(edges, edge{s.Marks.At(0), 1}, edge{s.Marks.At(s.Marks.Len() - 1), -1})
	}
	slices.SortFunc(edges, func(x, y edge) int {
		if c := cmp.Compare(x.at, y.at); c != 0 {
			return c
		}
		return cmp.Compare(y.delta, x.delta) // starts before ends at the same instant
	})
	best, cur := 0, 0
	for _, e := range edges {
		cur += e.delta
		best = max(best, cur)
	}
	return best
}
