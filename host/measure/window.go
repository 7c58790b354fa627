package measure

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/genload/genload/host/stats"

	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/sse"
)

// fullSeq is a full sequence: its index in Result.Sequences, how its forward indices follow
// from its marks (fwd, with the tokenizer's per-chunk counts in tokens; see Figures and
// forwardIndexTok: its marks as fit points are points) and what they rest on (a Counts
// constant), and the marks' consistency scan (see scan; set by scanAll).
type fullSeq struct {
	idx    int
	s      *recording.Sequence
	counts string
	fwd    fwdKind
	tokens []int32 // fwdTokenizer: the tokens of each chunk, one count per mark
	con    consistency
	end    int // the last consistent mark (scanEnd)
}

// span is the full-occupancy span of seqs (each with ≥ 1 mark): from the latest first mark
// (every sequence has its first token) to the earliest last mark (the first one finishes),
// and the index in seqs of the sequence whose last mark ends it (the first such). ok is false
// when the span is empty. It is the one definition of the window both the full-batch figure
// (window) and the batch attainment (Attain) read.
func span(seqs []*recording.Sequence) (start, end time.Duration, ref int, ok bool) {
	return spanOf(len(seqs), func(i int) sse.Marks { return seqs[i].Marks })
}

// spanOf is span over n sequences whose marks marks(i) gives.
func spanOf(n int, marks func(i int) sse.Marks) (start, end time.Duration, ref int, ok bool) {
	m := marks(0)
	start, end = m.At(0), m.At(m.Len()-1)
	for i := 1; i < n; i++ {
		m := marks(i)
		start = max(start, m.At(0))
		if l := m.At(m.Len() - 1); l < end {
			end, ref = l, i
		}
	}
	return start, end, ref, end > start
}

// window computes the full-occupancy Window (see its doc comment) over the full sequences.
// tokensPerChunk is only used to say why forward indices are unknown.
func window(seqs []fullSeq, tokensPerChunk float64, sc *computeScratch) Window {
	if len(seqs) == 0 {
		return Window{Reason: "no counted sequences"}
	}
	start, end, r, _ := spanOf(len(seqs), func(i int) sse.Marks { return seqs[i].s.Marks })
	ref := seqs[r]
	w := Window{Start: start, End: end, Ref: ref.idx}
	for _, s := range seqs {
		if s.s.Marks.Len() < 2 {
			w.Reason = "a sequence received all its tokens in one chunk: when it decoded is unknown"
			return w
		}
	}
	if end <= start {
		w.Reason = "a sequence finished before the last one received its first token"
		return w
	}
	for _, s := range seqs {
		if !s.known() && !exactCount(s.s) {
			w.Reason = "token counts unverified (no usable usage, chunks may carry several tokens): the forward passes in the window cannot be counted"
			return w
		}
		if !s.known() {
			w.Reason = fmt.Sprintf("per-chunk token counts unknown (chunks carry %.2f tokens on average, no per-chunk usage): the forward passes in the window cannot be counted", tokensPerChunk)
			return w
		}
	}
	// the reference's first mark of the step that ended at start or later — its first at or
	// after start less half its median interval per forward pass (the chunks of one step
	// arrive together, but not in one order) — then its first consistent mark from there
	ms, n := ref.s.Marks, ref.s.Marks.Len()
	ps := ref.points(&sc.fit.pts)
	half := time.Duration(medianPass(ps, &sc.scan.rates) / 2)
	k := min(sort.Search(n, func(i int) bool { return ms.At(i) >= start-half }), n-1)
	k2 := k
	for k2 < n-1 && !ref.con.member[k2] {
		k2++
	}
	e := max(ref.end, k2)
	w.Steps, w.Trail = int(math.Round(ps[e].f-ps[k2].f)), int(math.Round(ps[n-1].f-ps[e].f))
	if w.Steps == 0 {
		w.Reason = "no forward pass inside the window"
		return w
	}
	if d := ps[n-1].f - ps[k].f; d > 0 {
		w.Endpoints = time.Duration(math.Round(float64(end-start) / d))
	}
	if bunched(ms, ps, k2) {
		w.Reason = "the chunks of the window's reference sequence arrived mostly together (over half of their intervals under a tenth of its mean forward pass): the forward passes cannot be timed"
		return w
	}
	if w.Steps < MinWindowSteps {
		w.Reason = fmt.Sprintf("the window where all %d counted sequences decode together holds %d forward passes, fewer than the %d a figure needs", len(seqs), w.Steps, MinWindowSteps)
		return w
	}
	w.Valid = true
	w.PerStep = time.Duration(math.Round((ps[e].t - ps[k2].t) / (ps[e].f - ps[k2].f)))
	if slope, ok := pooledFit(seqs, start, end, sc); ok && slope > 0 {
		w.Fit = time.Duration(math.Round(slope))
	}
	return w
}

// pooledFit is the pooled Theil–Sen slope (ns per forward pass, see pooled) over the
// consistent marks of every sequence of seqs inside [start, end], gathered one sequence at a
// time in a buffer of sc.
func pooledFit(seqs []fullSeq, start, end time.Duration, sc *computeScratch) (float64, bool) {
	var p pooled
	p.reset(&sc.fit, len(seqs))
	for _, s := range seqs {
		in := sc.window[:0]
		ps := s.points(&sc.fit.pts)
		for i := range s.s.Marks.Len() {
			if t := s.s.Marks.At(i); t >= start && t <= end && s.con.member[i] {
				in = append(in, point{float64(t), ps[i].f})
			}
		}
		sc.window = in
		p.add(in)
	}
	return p.slope()
}

// medianPass is the median time per forward pass (ns) over the consecutive marks of ps (0
// with fewer than two); scratch holds the rates, kept for the next call.
func medianPass(ps []point, scratch *[]float64) float64 {
	r := (*scratch)[:0]
	for i := 1; i < len(ps); i++ {
		if df := ps[i].f - ps[i-1].f; df > 0 {
			r = append(r, (ps[i].t-ps[i-1].t)/df)
		}
	}
	*scratch = r
	if len(r) == 0 {
		return 0
	}
	return stats.MedianInPlace(r)
}
