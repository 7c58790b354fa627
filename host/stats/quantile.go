package stats

import (
	"cmp"
	"math"
)

// NearestRank returns the index into an ascending sample of n values of its nearest-rank
// q-quantile: ⌈q·n⌉ − 1, clamped to [0, n−1] (q ≤ 0 gives the minimum, q ≥ 1 the maximum;
// −1 for n = 0). Every quantile is then one of the samples. q·n is taken within 1e-9 of an
// integer as that integer, so that q = 0.7, n = 10 (7.000000000000001 in floating point) is
// the 7th value, not the 8th.
func NearestRank(n int, q float64) int {
	if n == 0 {
		return -1
	}
	i := int(math.Ceil(q*float64(n)-1e-9)) - 1
	return min(max(i, 0), n-1)
}

// Quantile returns the nearest-rank q-quantile of an ascending sample, sorted[NearestRank(n,
// q)] (durations, token counts, fractions alike); the zero value for an empty sample, which
// a caller that prints the figure says is absent.
func Quantile[T cmp.Ordered](sorted []T, q float64) T {
	if len(sorted) == 0 {
		var zero T
		return zero
	}
	return sorted[NearestRank(len(sorted), q)]
}
