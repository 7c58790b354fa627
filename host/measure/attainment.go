package measure

import (
	"fmt"
	"slices"
	"sort"
	"time"

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
	var seqs []*recording.Sequence
	tokens, marks := 0, 0
	var gaps []time.Duration
	for i := range res.Sequences {
		s := &res.Sequences[i]
		if s.Request >= len(res.Requests) || res.Requests[s.Request].Err != nil || !s.Finished || s.Marks.Len() == 0 {
			continue
		}
		seqs = append(seqs, s)
		tokens += s.CompletionTokens
		marks += s.Marks.Len()
		for k := 1; k < s.Marks.Len(); k++ {
			gaps = append(gaps, s.Marks.At(k)-s.Marks.At(k-1))
		}
	}
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
	step := medianDuration(gaps)
	if a.Concurrency < b {
		a.State = AttainmentProbablyNotReached
		a.Reason = fmt.Sprintf("at most %d of %d sequences were decoding at once as the client saw them", a.Concurrency, b)
		first, last := seqs[0].Marks.At(0), seqs[0].Marks.At(0)
		for _, s := range seqs[1:] {
			first, last = min(first, s.Marks.At(0)), max(last, s.Marks.At(0))
		}
		if step > 0 {
			a.Reason += fmt.Sprintf("; first tokens spread over %.1f ms ≈ %.0f chunk intervals", Ms(last-first), float64(last-first)/float64(step))
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
	type arrival struct {
		at  time.Duration
		seq int
	}
	var all []arrival
	inWindow := make([]int, len(seqs))
	for j, s := range seqs {
		for k := 0; k < s.Marks.Len(); k++ {
			at := s.Marks.At(k)
			all = append(all, arrival{at, j})
			if at >= wStart && at <= wEnd {
				inWindow[j]++
			}
		}
	}
	for j, n := range inWindow {
		if n < 3 {
			a.Reason = fmt.Sprintf("sequence %d has %d chunks in the window where all %d decode: too few to compare arrivals", j, n, b)
			return a
		}
	}
	sort.Slice(all, func(i, k int) bool { return all[i].at < all[k].at })
	tol := step / 4
	together, n := 0, 0
	for i, m := range all {
		if m.at < wStart || m.at > wEnd {
			continue
		}
		n++
		near := false
		for k := i - 1; k >= 0 && m.at-all[k].at <= tol && !near; k-- {
			near = all[k].seq != m.seq
		}
		for k := i + 1; k < len(all) && all[k].at-m.at <= tol && !near; k++ {
			near = all[k].seq != m.seq
		}
		if near {
			together++
		}
	}
	share := float64(together) / float64(n)
	switch {
	case share >= 0.8:
		a.State = AttainmentReached
		a.Reason = fmt.Sprintf("all %d sequences decoding at once, %.0f %% of their chunks arriving together (within %.2f ms): they shared forward passes", b, 100*share, Ms(tol))
	case float64(tokens) > 1.05*float64(marks):
		a.Reason = fmt.Sprintf("all %d sequences overlapped, but chunks carry %.2f tokens and only %.0f %% arrived together: coalesced streams need not line up", b, float64(tokens)/float64(marks), 100*share)
	default:
		a.State = AttainmentProbablyNotReached
		a.Reason = fmt.Sprintf("all %d sequences overlapped, but only %.0f %% of their chunks arrived together (within %.2f ms): they did not share forward passes", b, 100*share, Ms(tol))
	}
	return a
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
	sort.Slice(edges, func(i, k int) bool {
		if edges[i].at != edges[k].at {
			return edges[i].at < edges[k].at
		}
		return edges[i].delta > edges[k].delta // starts before ends at the same instant
	})
	best, cur := 0, 0
	for _, e := range edges {
		cur += e.delta
		best = max(best, cur)
	}
	return best
}

// medianDuration is the nearest-rank median of d (Rank, 0 when empty); d is sorted in place.
func medianDuration(d []time.Duration) time.Duration {
	slices.Sort(d)
	return Rank(d, 0.5)
}
