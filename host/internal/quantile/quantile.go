// Package quantile holds genload's one quantile rule, the nearest-rank method, so that every
// percentile genload reports — per-forward latency, TTFT, ITL, E2E, prompt lengths — is
// computed the same way.
package quantile

import "math"

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
