package measure

import (
	"math"
	"slices"

	"github.com/genload/genload/host/stats"
)

// point is one mark of a sequence for a fit: t is its arrival (ns) and f its forward index
// (forward passes after the sequence's first mark: 0 for the first mark).
type point struct{ t, f float64 }

// maxFitPoints bounds the points of one sequence in a per-sequence fit; longer sequences are
// thinned to this many marks evenly spaced by index (the first and last kept), so that the
// pairwise fit costs at most maxFitPoints²/2 slopes per sequence (4,950) at any max_tokens.
// Thinning keeps the fit's robustness: a run of r outlying marks keeps about the same share of
// the thinned points as of all of them.
const maxFitPoints = 100

// maxWindowFitPoints is the same bound per sequence for the pooled full-batch fit.
const maxWindowFitPoints = 48

// fitScratch is the working memory of the fits of one Compute, reused from one sequence to
// the next so that a cell of B sequences allocates it once, not B times: thinned points,
// pairwise slopes, residuals. The zero value is ready to use.
type fitScratch struct {
	// pts are the points of the sequence at hand (fullSeq.points)
	pts     []point
	thinned []point
	slopes  []float64
	resid   []float64
	// the pooled fit's thinned points, cut at pooledEnds, and its sample of slopes
	pooledPts  []point
	pooledEnds []int
	sample     []float64
	// the local paces' buffers (localPaces, sequenceShift, earlyFirst)
	paces, res, resB, resA []float64
	edges                  []int
}

// thin returns at most n of ps, evenly spaced by index (point i of n is ps[round(i·(len−1)/
// (n−1))]), the first and last included: ps itself when it has at most n, else a view of
// sc's buffer, valid until the next thin on sc.
func (sc *fitScratch) thin(ps []point, n int) []point {
	if len(ps) <= n {
		return ps
	}
	out := grown(sc.thinned, n)
	for i := range n {
		out[i] = ps[int(math.Round(float64(i)*float64(len(ps)-1)/float64(n-1)))]
	}
	sc.thinned = out
	return out
}

// grown returns buf resized to n elements, reallocated only when its capacity is short.
func grown[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	return buf[:n]
}

// pairs is the number of pairs i < j of n points: n(n − 1)/2, the most slopes appendSlopes
// appends for them.
func pairs(n int) int { return n * (n - 1) / 2 }

// appendSlopes appends the slopes (t_j − t_i)/(f_j − f_i), i < j, of every pair of ps with
// distinct forward indices (ns per forward pass; at most pairs(len(ps)) of them).
func appendSlopes(dst []float64, ps []point) []float64 {
	for i := range ps {
		for j := i + 1; j < len(ps); j++ {
			if df := ps[j].f - ps[i].f; df != 0 {
				dst = append(dst, (ps[j].t-ps[i].t)/df)
			}
		}
	}
	return dst
}

// theilSen returns the Theil–Sen slope of t against f (ns per forward pass) — the median of
// the pairwise slopes (Theil 1950, Sen 1968) over ps thinned to maxFitPoints — and the
// intercept median(t − slope·f) (ns), so that t ≈ intercept + slope·f. ok is false with fewer
// than two distinct forward indices. The slopes and residuals live in sc (no allocation once
// it has grown to a sequence's size).
//
// The slope is unmoved by up to ~29 % of outlying points (its breakdown point,
// 1 − 1/√2): a first chunk held back and the few chunks bunched behind it, a read that
// coalesced chunks, a stall. With independent arrival noise it is median-unbiased whatever the
// noise's distribution (one-sided network delays included), since the difference of two
// independent, identically distributed delays is symmetric.
func (sc *fitScratch) theilSen(ps []point) (slope, intercept float64, ok bool) {
	ps = sc.thin(ps, maxFitPoints)
	s := appendSlopes(grown(sc.slopes, pairs(len(ps)))[:0], ps)
	sc.slopes = s
	if len(s) == 0 {
		return 0, 0, false
	}
	slope = stats.MedianInPlace(s)
	r := grown(sc.resid, len(ps))
	sc.resid = r
	for i, p := range ps {
		r[i] = p.t - slope*p.f
	}
	return slope, stats.MedianInPlace(r), true
}

// pooled is the pooled Theil–Sen fit of several sequences that share a slope but each have
// their own intercept: the median of the within-sequence pairwise slopes of all of them, each
// sequence thinned to maxWindowFitPoints (the intercepts cancel in each within-sequence
// difference). It keeps the thinned points, not the slopes: reset, add each sequence, then
// slope.
type pooled struct {
	sc   *fitScratch
	pts  []point
	ends []int // sequence k is pts[ends[k−1]:ends[k]]
}

// reset starts a pooled fit in sc, with room for seqs sequences.
func (p *pooled) reset(sc *fitScratch, seqs int) {
	p.sc, p.pts, p.ends = sc, grown(sc.pooledPts, seqs*maxWindowFitPoints)[:0], grown(sc.pooledEnds, seqs)[:0]
}

// add adds one sequence's points (arrival ns, forward index).
func (p *pooled) add(ps []point) {
	p.pts = append(p.pts, p.sc.thin(ps, maxWindowFitPoints)...)
	p.ends = append(p.ends, len(p.pts))
}

// pooledSample is one in how many slopes the pooled fit samples to bracket the median, and
// pooledDirect the slopes under which it selects among all of them at once.
const pooledSample, pooledDirect = 64, 1 << 16

// slope returns the common slope (ns per forward pass); ok is false without any pair.
//
// A cell of B sequences has up to B · pairs(maxWindowFitPoints) slopes (1.16 M at B = 1,024:
// 9 MB). They are not kept: a first pass counts them and keeps every pooledSample-th, whose
// order statistics bracket the median's rank (±(4√s + 8) of the s samples); a second pass
// counts the slopes below the bracket and keeps those inside it, among which the median's
// rank then lies — checked, else every slope is kept and selected from. Either way the
// median is the same order statistics of the same slopes, computed by the same arithmetic,
// so the same number: (lo + hi)/2 of the two middle ones for an even count, as
// stats.MedianInPlace.
func (p *pooled) slope() (float64, bool) {
	sc := p.sc
	sc.pooledPts, sc.pooledEnds = p.pts, p.ends
	most := 0
	for k, e := range p.ends {
		if k == 0 {
			most += pairs(e)
		} else {
			most += pairs(e - p.ends[k-1])
		}
	}
	m, sample := p.sampleSlopes(grown(sc.sample, most/pooledSample+1)[:0])
	sc.sample = sample
	if m == 0 {
		return 0, false
	}
	kHi, kLo := m/2, m/2
	if m%2 == 0 {
		kLo--
	}
	if m >= pooledDirect {
		slices.Sort(sample)
		s := len(sample)
		r, margin := kHi*s/m, 4*int(math.Sqrt(float64(s)))+8
		lo, hi := math.Inf(-1), math.Inf(1)
		if r-margin >= 0 {
			lo = sample[r-margin]
		}
		if r+margin < s {
			hi = sample[r+margin]
		}
		below, mid := p.bracketSlopes(lo, hi, grown(sc.slopes, (2*margin+1)*(m/s+1)*5/4)[:0])
		sc.slopes = mid
		if below <= kLo && kHi < below+len(mid) {
			v := stats.KthInPlace(mid, kHi-below)
			if m%2 == 1 {
				return v, true
			}
			return (slices.Max(mid[:kHi-below]) + v) / 2, true
		}
	}
	all := grown(sc.slopes, m)[:0]
	from := 0
	for _, e := range p.ends {
		all = appendSlopes(all, p.pts[from:e])
		from = e
	}
	sc.slopes = all
	return stats.MedianInPlace(all), true
}

// sampleSlopes counts the pairwise slopes (t_j − t_i)/(f_j − f_i), i < j, of distinct
// forward indices within each sequence (m), taken in appendSlopes' order, and appends every
// pooledSample-th of them to sample (the others are not computed).
func (p *pooled) sampleSlopes(sample []float64) (m int, _ []float64) {
	from := 0
	for _, e := range p.ends {
		ps := p.pts[from:e]
		from = e
		for i := range ps {
			for j := i + 1; j < len(ps); j++ {
				if df := ps[j].f - ps[i].f; df != 0 {
					if m%pooledSample == 0 {
						sample = append(sample, (ps[j].t-ps[i].t)/df)
					}
					m++
				}
			}
		}
	}
	return m, sample
}

// bracketSlopes counts the pairwise slopes below lo and appends those in [lo, hi] to mid.
func (p *pooled) bracketSlopes(lo, hi float64, mid []float64) (below int, _ []float64) {
	from := 0
	for _, e := range p.ends {
		ps := p.pts[from:e]
		from = e
		for i := range ps {
			for j := i + 1; j < len(ps); j++ {
				if df := ps[j].f - ps[i].f; df != 0 {
					switch x := (ps[j].t - ps[i].t) / df; {
					case x < lo:
						below++
					case x <= hi:
						mid = append(mid, x)
					}
				}
			}
		}
	}
	return below, mid
}
