package measure

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/genload/genload/host/stats"
)

// Long intervals: a few chunk intervals that carry a share of a sequence's decode time.
//
// fwd (Figures.PerForward) is a sequence's mean forward pass from its first consistent chunk to
// its last: one forward pass that took 40 typical ones (a stall, preemption) raises it by 39
// typical forward passes over the passes timed, and so does a delivery lag that began
// mid-stream (from one chunk on, every chunk arrives D later: a buffering hop, a client that
// fell behind once and stayed behind). From the client's side both are one long interval
// after which every chunk is later by the same amount. fwd stays the mean — what the server's
// forward passes cost, the stall included if it was one; what the client adds is how much of
// the decode time such intervals carry and what the typical forward pass is without them.
//
// The typical forward pass of a sequence is its local pace (localPace): the median over its
// timed marks j of (t_m − t_j) / (f_m − f_j), m the first mark at least paceSpan forward
// passes after j. A level shift at one interval moves only the paceSpan windows that span it,
// of about N − paceSpan; steps that alternate (10/30 ms) and frames that arrive in pairs (0/40
// ms intervals) average out over paceSpan = 4, which their period (2) divides. Theil–Sen over
// every pair (PerForwardFit) is not robust to a shift at mid-stream: about half of its pairs
// span it.
//
// An interval is long when it exceeds the typical forward passes it spans by more than
// longExcess typical forward passes (for a one-token chunk: over 3 typical forward passes after
// the chunk before it). What a long interval added is the shift of the marks' level across it:
// the median residual t − s_k·f of up to shiftWindow marks after it minus that of up to
// shiftWindow marks before it, neither window reaching past another long interval; s_k is the
// median local pace over twice as many marks on either side, across other long intervals
// (steps that drift or slow down for a while keep their own pace there, where a pace over the
// whole sequence would turn the drift into levels; and the marks next to a long interval, or
// between two, read short paces). The window after starts at the last of the marks that came
// together right after the long interval (each within anchorTolMax of a forward pass of the
// next): a burst of chunks held back and released at once is late, its last chunk the least,
// and the chunks after a burst are on time again, so a hold-and-release adds nothing, while a
// stall or a lag that persists shifts every mark after it. Jitter that makes one interval long
// and the next short leaves the medians as they were. A long interval counts when it shifted
// the level by at least one typical forward pass and by shiftK standard errors of the
// difference — the two medians' and the local pace's carried over the forward passes between
// the windows (chunks each late by up to 3 steps make a median of 8 uncertain by a third of a
// step). The shifts of those that count, summed, are what the long intervals added to the
// decode time. The first timed interval is not judged here but by earlyFirst, against the
// anchor's tolerance.
//
// Limits: a lag that builds up over several intervals, each under longExcess typical forward
// passes, is not seen; a shift under a typical forward pass is not counted.
const (
	// paceSpan is the forward passes of one local pace.
	paceSpan = 4
	// longExcess is how many typical forward passes an interval must exceed its share by to be
	// long.
	longExcess = 2.0
	// shiftWindow is how many marks on either side of a long interval give its shift.
	shiftWindow = 8
	// shiftK is how many standard errors of the difference of the two windows' levels a shift
	// must reach to count.
	shiftK = 3
	// LongShareSaid is the least share of a cell's decode time (over its timed sequences) that
	// long intervals carry for the cell to be warned of them.
	LongShareSaid = 0.02
)

// LongIntervals describes the long chunk intervals of a cell's timed sequences (those with a
// PerForward sample) that shifted every chunk after them: see the comment above. Durations
// are in ns in JSON.
type LongIntervals struct {
	// Sequences is how many of the Of timed sequences hold at least one such interval;
	// MaxPerSequence the most one of them holds.
	Sequences      int `json:"sequences"`
	Of             int `json:"of"`
	MaxPerSequence int `json:"max_per_sequence"`
	// Longest is the longest of them, as the client saw it (ns).
	Longest time.Duration `json:"longest_ns"`
	// Share is the time they added (the level shifts, summed over the timed sequences) over
	// the timed sequences' decode time (from each one's first consistent chunk to its last):
	// 0.3 is 30 %.
	Share float64 `json:"share"`
	// Without is fwd without them: the mean over the timed sequences of (decode time − shift)
	// / forward passes timed (ns).
	Without time.Duration `json:"without_ns"`
	// Typical is the median of the timed sequences' local paces (ns): the typical forward pass.
	Typical time.Duration `json:"typical_ns"`
}

// localPace returns the median of localPaces(ps, …), 0 without one; scratch holds the paces,
// kept for the next call.
func localPace(ps []point, scratch *[]float64) float64 {
	paces := localPaces(ps, (*scratch)[:0])
	*scratch = paces
	if len(paces) == 0 {
		return 0
	}
	return stats.MedianInPlace(paces)
}

// localPaces appends to dst, for each mark j of ps (forward index strictly increasing), (t_m −
// t_j) / (f_m − f_j), m the first mark at least paceSpan forward passes after j, or, when fewer
// than paceSpan forward passes are left after the first j, the last mark (one pace).
func localPaces(ps []point, dst []float64) []float64 {
	m := 0
	for j := 0; j < len(ps)-1; j++ {
		m = max(m, j+1)
		for m < len(ps)-1 && ps[m].f-ps[j].f < paceSpan {
			m++
		}
		df := ps[m].f - ps[j].f
		if df < paceSpan && j > 0 { // the rest is shorter than a pace
			break
		}
		if df > 0 {
			dst = append(dst, (ps[m].t-ps[j].t)/df)
		}
	}
	return dst
}

// seqShift is one timed sequence's long intervals: the shift they added (ns), its decode
// time (ns) and forward passes timed, its local pace (ns), how many long intervals shifted the
// chunks after them and the longest of those (ns).
type seqShift struct {
	shift, decode, passes, pace, longest float64
	long                                 int
}

// sequenceShift judges the marks ps[a..e] (the timed span: first to last consistent mark) as
// the comment above says; ok is false with fewer than paceSpan + 2 marks or no pace. Its
// buffers are sc's (paces, res, resB, resA, edges), kept for the next call.
func sequenceShift(ps []point, a, e int, sc *fitScratch) (sh seqShift, ok bool) {
	if e-a < paceSpan+1 {
		return sh, false
	}
	s := localPace(ps[a:e+1], &sc.paces)
	if s <= 0 {
		return sh, false
	}
	sh = seqShift{decode: ps[e].t - ps[a].t, passes: ps[e].f - ps[a].f, pace: s}
	edges := append(sc.edges[:0], a)
	defer func() { sc.edges = edges }()
	for i := a + 2; i <= e; i++ {
		if ps[i].t-ps[i-1].t-s*(ps[i].f-ps[i-1].f) > longExcess*s {
			edges = append(edges, i)
		}
	}
	edges = append(edges, e+1)
	paces, r := sc.paces, sc.res
	defer func() { sc.paces, sc.res = paces, r }()
	median := func(win []point, pace float64) float64 {
		r = r[:0]
		for _, p := range win {
			r = append(r, p.t-pace*p.f)
		}
		return stats.MedianInPlace(r)
	}
	for k := 1; k < len(edges)-1; k++ {
		b := edges[k]
		before := ps[max(edges[k-1], b-shiftWindow):b]
		st := b
		for st+1 < edges[k+1] && ps[st+1].t-ps[st].t < anchorTolMax*s*(ps[st+1].f-ps[st].f) {
			st++
		}
		after := ps[st:min(edges[k+1], st+shiftWindow)]
		// the pace over twice the windows, across other long intervals: the marks next to a
		// long interval are the ones that made it long (the one before early, the one after
		// late), and the stretches between long intervals are the ones without a late mark,
		// so paces that end or start at them, or stay inside them, read short
		paces = localPaces(ps[st:min(e+1, st+2*shiftWindow)], localPaces(ps[max(a, b-2*shiftWindow):b], paces[:0]))
		sk, paceSE := s, 0.0
		if len(paces) > 0 {
			sk = stats.MedianInPlace(paces)
			paceSE = medianSE(paces, sk)
		}
		mb, ma := median(before, sk), median(after, sk)
		// the difference's standard error: the two medians', and the pace's carried over
		// the forward passes between the windows' middles
		dist := (after[len(after)/2].f - before[len(before)/2].f)
		se := math.Hypot(levelSE(before, after, mb, ma, sk, sc), paceSE*dist)
		if d := ma - mb; d >= s && d >= shiftK*se {
			sh.long++
			sh.shift += d
			sh.longest = max(sh.longest, ps[b].t-ps[b-1].t)
		}
	}
	return sh, true
}

// levelSE is the standard error of the difference of the median residuals mb and ma of the
// marks before and after (at pace s): the medians' standard errors (medianSE) of the residuals
// from their own window's median, combined. The residuals live in sc.resB and sc.resA.
func levelSE(before, after []point, mb, ma, s float64, sc *fitScratch) float64 {
	rb, ra := grown(sc.resB, len(before)), grown(sc.resA, len(after))
	sc.resB, sc.resA = rb, ra
	for i, p := range before {
		rb[i] = p.t - s*p.f
	}
	for i, p := range after {
		ra[i] = p.t - s*p.f
	}
	return math.Hypot(medianSE(rb, mb), medianSE(ra, ma))
}

// medianSE is the large-sample standard error of the median m of xs: 1.2533 σ / √n, σ =
// 1.4826 × the median absolute deviation from m (normal residuals); xs is reordered.
func medianSE(xs []float64, m float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return 1.2533 * stats.RobustSigmaInPlace(xs, m) / math.Sqrt(float64(len(xs)))
}

// longIntervals returns the cell's LongIntervals over the full sequences timed (passes[idx] >
// 0: Figures.PerForwardPasses), nil when none holds a long interval that shifted the chunks
// after it; sc is the working memory.
func longIntervals(fulls []fullSeq, passes []int, sc *fitScratch) *LongIntervals {
	var li LongIntervals
	var shift, decode, without float64
	var paces []float64
	for _, q := range fulls {
		if !q.known() || q.idx >= len(passes) || passes[q.idx] == 0 {
			continue
		}
		sh, ok := sequenceShift(q.points(&sc.pts), q.con.first, q.end, sc)
		if !ok {
			continue
		}
		li.Of++
		paces = append(paces, sh.pace)
		shift, decode = shift+sh.shift, decode+sh.decode
		without += (sh.decode - sh.shift) / sh.passes
		if sh.long > 0 {
			li.Sequences++
			li.MaxPerSequence = max(li.MaxPerSequence, sh.long)
			li.Longest = max(li.Longest, time.Duration(math.Round(sh.longest)))
		}
	}
	if li.Sequences == 0 || decode <= 0 {
		return nil
	}
	li.Share = shift / decode
	li.Without = time.Duration(math.Round(without / float64(li.Of)))
	li.Typical = time.Duration(math.Round(stats.MedianInPlace(paces)))
	return &li
}

// earlyFirst appends to f.Checks the first chunks that arrived early: a timed sequence's first
// consistent chunk (a) earlier than the chunks after it imply — the earliest of the anchorNear
// next marks' arrivals carried back to a at the local pace of the anchorSlopeW marks after a
// (up to a long interval) — by more than the cell's tolerance jit.beyond(pace), said when their earliness moves
// fwd by lateSaid or more and their median is beyond anchorK robust deviations of the cell's
// jitter. The anchor's scan keeps an early first chunk in the figure (a slow
// first step is a real forward pass of the sequence); this says what it weighs. sc is the
// working memory.
func earlyFirst(f *Figures, fulls []fullSeq, jit jitter, sc *fitScratch) {
	var early, tols []float64
	var anchors []int
	var heads, onLine float64
	timed := 0
	for _, q := range fulls {
		if !q.known() || q.idx >= len(f.PerForwardPasses) || f.PerForwardPasses[q.idx] == 0 {
			continue
		}
		timed++
		a, e := q.con.first, q.end
		if e-a < paceSpan+1 {
			continue
		}
		ps := q.points(&sc.pts)
		s := localPace(ps[a:e+1], &sc.paces)
		if s <= 0 {
			continue
		}
		// the marks after a up to a long interval, and their own pace (steps slower at the
		// start, as when prefills share them, keep theirs)
		hi := min(e, a+anchorSlopeW)
		for j := a + 2; j <= hi; j++ {
			if ps[j].t-ps[j-1].t-s*(ps[j].f-ps[j-1].f) > longExcess*s {
				hi = j - 1
				break
			}
		}
		if sa := localPace(ps[a+1:hi+1], &sc.paces); sa > 0 {
			s = sa
		}
		// the earliest prediction of the anchorNear nearest, as the anchor's scan judges a late
		// one: what delays a chunk makes it late, never early (frames sent in pairs put every
		// other chunk a step late, the others on time)
		pred := math.Inf(1)
		for j := a + 1; j <= min(hi, a+anchorNear); j++ {
			pred = min(pred, ps[j].t-s*(ps[j].f-ps[a].f))
		}
		d := pred - ps[a].t
		if d <= jit.beyond(s) {
			continue
		}
		early, tols, anchors = append(early, d), append(tols, jit.beyond(s)), append(anchors, a)
		span := ps[e].t - ps[a].t
		heads += span / (ps[e].f - ps[a].f)
		onLine += (span - d) / (ps[e].f - ps[a].f)
	}
	if len(early) == 0 || onLine <= 0 {
		return
	}
	// said, as late first chunks are, when their earliness is beyond the cell's jitter (not
	// only beyond the cap of the tolerance) and moves the figure by lateSaid or more: chunks
	// each late by up to 3 steps make a first chunk on time look early by half of that
	gap := onLine/heads - 1
	if med := stats.MedianInPlace(slices.Clone(early)); -gap < lateSaid || med <= anchorK*jit.sigma {
		return
	}
	// the chunk each figure starts at: chunk 0, or — when the chunks before it were set aside
	// as late (the late-first-chunks check) — a later one, named so that the two checks are
	// seen to speak of different chunks
	which := "their first chunk"
	if slices.Sort(anchors); anchors[len(anchors)/2] > 0 {
		which = fmt.Sprintf("the chunk each one's fwd starts at (chunk %d, median, the chunks before it set aside as late)", anchors[len(anchors)/2])
	}
	f.Checks = append(f.Checks, fmt.Sprintf("the first chunks of %d of %d sequences arrived early: %s %.1f ms (median) earlier than the chunks after it imply, beyond the cell's jitter (tolerance %.2f ms, median; robust deviation %.3f ms) — a slow first decode step (a prefill sharing it), or a lag that began after the first chunk (a first flush sent at once, the chunks after it buffered), which the client cannot tell apart: fwd includes the long first interval; on the line of the chunks after it fwd would read %+.1f %%",
		len(early), timed, which, stats.MedianInPlace(early)/1e6, stats.MedianInPlace(tols)/1e6, jit.sigma/1e6, 100*gap))
}
