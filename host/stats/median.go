package stats

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Median returns the median of xs, in any order: its middle value, or the mean of the two
// middle values for an even count; NaN for an empty xs. xs is not changed (a copy is
// selected from; see [MedianInPlace] to avoid the copy).
func Median(xs []float64) float64 {
	return MedianInPlace(slices.Clone(xs))
}

// MedianInPlace is [Median] reordering v in place instead of copying it: a selection,
// O(len(v)) expected time and no allocation, for the many pairwise slopes of a Theil–Sen fit.
func MedianInPlace(v []float64) float64 {
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

// MedianDuration is [Median] of durations (0 for an empty d; d is not changed). For an even
// count the midpoint lo + (hi − lo)/2 is taken in whole nanoseconds, towards lo: at most
// 0.5 ns from the exact midpoint, and it cannot overflow.
func MedianDuration(d []time.Duration) time.Duration {
	return MedianDurationInPlace(slices.Clone(d))
}

// MedianDurationInPlace is [MedianDuration] reordering d in place instead of copying it: a
// selection, O(len(d)) expected time and no allocation.
func MedianDurationInPlace(d []time.Duration) time.Duration {
	n := len(d)
	if n == 0 {
		return 0
	}
	hi := selectKth(d, n/2)
	if n%2 == 1 {
		return hi
	}
	lo := d[0] // after selectKth, d[:n/2] holds the n/2 smallest values
	for _, x := range d[1 : n/2] {
		lo = max(lo, x)
	}
	return lo + (hi-lo)/2
}

// selectKth reorders v so that v[k] is its k-th smallest value (0-based), every value before
// it ≤ v[k] and every value after it ≥ v[k] (Hoare's selection, median-of-three pivot), and
// returns v[k]. v holds no NaN.
func selectKth[T cmp.Ordered](v []T, k int) T {
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

// KthInPlace reorders v so that v[k] is its k-th smallest value (0-based, 0 ≤ k < len(v)),
// every value before it ≤ v[k] and every value after it ≥ v[k], and returns v[k]: a
// selection, O(len(v)) expected time. v holds no NaN.
func KthInPlace[T cmp.Ordered](v []T, k int) T { return selectKth(v, k) }

// MADScale turns a median absolute deviation of Gaussian errors into their standard
// deviation: 1/Φ⁻¹(3/4) = 1.4826.
const MADScale = 1.4826

// RobustSigmaInPlace is the robust standard deviation of v about center: MADScale × the median
// of |v[i] − center|. v is overwritten with the absolute deviations (reordered); 0 for no value.
func RobustSigmaInPlace(v []float64, center float64) float64 {
	if len(v) == 0 {
		return 0
	}
	for i, x := range v {
		v[i] = math.Abs(x - center)
	}
	return MADScale * MedianInPlace(v)
}
