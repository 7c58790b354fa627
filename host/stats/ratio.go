package stats

import (
	"math"

	"gonum.org/v1/gonum/stat"
)

// LogRatioInterval returns the change of b against a, two independent samples of a positive
// figure (each ≥ 2 values), as the ratio of their geometric means minus 1, and its two-sided
// Welch t interval at confidence conf (0.95 for 95 %), taken on the logarithms and mapped back:
//
//	ℓ = mean(ln b) − mean(ln a),  u_a = s²(ln a)/n_a,  u_b = s²(ln b)/n_b
//	ν = (u_a + u_b)² / (u_a²/(n_a − 1) + u_b²/(n_b − 1))          (Welch–Satterthwaite)
//	change = exp(ℓ) − 1,  [exp(ℓ ∓ t(1 − (1 − conf)/2; ν) · √(u_a + u_b)) − 1]
//
// A ratio of latencies is multiplicative: on the log scale a side twice as slow and one twice
// as fast are symmetric, and the bounds never pass −100 %. This is the unpaired form of the
// paired interval on log ratios (genload ab), for two runs' repeats of a cell. With no spread
// on either side the interval is the point. ok is false for fewer than two values on a side
// or a value ≤ 0 (no logarithm).
func LogRatioInterval(a, b []float64, conf float64) (change, lo, hi float64, ok bool) {
	nan := math.NaN()
	if len(a) < 2 || len(b) < 2 {
		return nan, nan, nan, false
	}
	logs := func(xs []float64) ([]float64, bool) {
		out := make([]float64, len(xs))
		for i, x := range xs {
			if !(x > 0) {
				return nil, false
			}
			out[i] = math.Log(x)
		}
		return out, true
	}
	la, okA := logs(a)
	lb, okB := logs(b)
	if !okA || !okB {
		return nan, nan, nan, false
	}
	ma, va := stat.MeanVariance(la, nil)
	mb, vb := stat.MeanVariance(lb, nil)
	na, nb := float64(len(a)), float64(len(b))
	l := mb - ma
	ua, ub := va/na, vb/nb
	if ua+ub == 0 {
		return math.Expm1(l), math.Expm1(l), math.Expm1(l), true
	}
	nu := (ua + ub) * (ua + ub) / (ua*ua/(na-1) + ub*ub/(nb-1))
	h := TQuantile(1-(1-conf)/2, nu) * math.Sqrt(ua+ub)
	return math.Expm1(l), math.Expm1(l - h), math.Expm1(l + h), true
}
