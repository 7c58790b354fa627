package measure

import (
	"math"
	"slices"
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

// thin returns at most n of ps, evenly spaced by index, the first and last included.
func thin(ps []point, n int) []point {
	if len(ps) <= n {
		return ps
	}
	out := make([]point, n)
	for i := range n {
		out[i] = ps[int(math.Round(float64(i)*float64(len(ps)-1)/float64(n-1)))]
	}
	return out
}

// appendSlopes appends the slopes (t_j − t_i)/(f_j − f_i), i < j, of every pair of ps with
// distinct forward indices.
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

// median returns the median of v (mean of the two middle values for an even count),
// reordering v in place (a selection, O(len(v)) expected); NaN for an empty v.
func median(v []float64) float64 {
	n := len(v)
	if n == 0 {
		return math.NaN()
	}
	hi := selectKth(v, n/2)
	if n%2 == 1 {
		return hi
	}
	lo := v[0] // after selectKth, v[:n/2] holds the n/2 smallest values
	for _, x := range v[1 : n/2] {
		lo = max(lo, x)
	}
	return (lo + hi) / 2
}

// selectKth reorders v so that v[k] is its k-th smallest value (0-based), every value before
// it ≤ v[k] and every value after it ≥ v[k] (Hoare's selection, median-of-three pivot), and
// returns v[k].
func selectKth(v []float64, k int) float64 {
	lo, hi := 0, len(v)-1
	for hi > lo {
		if hi-lo < 16 {
			slices.Sort(v[lo : hi+1])
			break
		}
		mid := lo + (hi-lo)/2
		if v[mid] < v[lo] {
			v[mid], v[lo] = v[lo], v[mid]
		}
		if v[hi] < v[lo] {
			v[hi], v[lo] = v[lo], v[hi]
		}
		if v[hi] < v[mid] {
			v[hi], v[mid] = v[mid], v[hi]
		}
		pivot := v[mid]
		i, j := lo, hi
		for i <= j {
			for v[i] < pivot {
				i++
			}
			for v[j] > pivot {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return v[k]
		}
	}
	return v[k]
}

// theilSen returns the Theil–Sen slope of t against f (ns per forward pass) — the median of
// the pairwise slopes (Theil 1950, Sen 1968) — and the intercept median(t − slope·f), so that
// t ≈ intercept + slope·f. ok is false with fewer than two distinct forward indices.
//
// The slope is unmoved by up to ~29 % of outlying points (its breakdown point,
// 1 − 1/√2): a first chunk held back and the few chunks bunched behind it, a read that
// coalesced chunks, a stall. With independent arrival noise it is median-unbiased whatever the
// noise's distribution (one-sided network delays included), since the difference of two
// independent, identically distributed delays is symmetric.
func theilSen(ps []point) (slope, intercept float64, ok bool) {
	ps = thin(ps, maxFitPoints)
	s := appendSlopes(make([]float64, 0, len(ps)*(len(ps)-1)/2), ps)
	if len(s) == 0 {
		return 0, 0, false
	}
	slope = median(s)
	r := make([]float64, len(ps))
	for i, p := range ps {
		r[i] = p.t - slope*p.f
	}
	return slope, median(r), true
}

// pooledTheilSen returns the common slope of several sequences that share it but each have
// their own intercept: the median of the within-sequence pairwise slopes of all of them (the
// intercepts cancel in each within-sequence difference). ok is false without any pair.
func pooledTheilSen(seqs [][]point) (slope float64, ok bool) {
	var s []float64
	for _, ps := range seqs {
		s = appendSlopes(s, thin(ps, maxWindowFitPoints))
	}
	if len(s) == 0 {
		return 0, false
	}
	return median(s), true
}
