package stats

import (
	"math"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// CV returns the coefficient of variation of xs, a fraction (0.05 is 5 %):
//
//	CV = s / x̄,   x̄ = Σ x_i / n,   s = √( Σ (x_i − x̄)² / (n − 1) )
//
// the sample standard deviation (Bessel-corrected: a few repeats are a sample of the runs
// one could make) over the mean, both gonum's stat.MeanStdDev. NaN for fewer than two values
// or a mean ≤ 0, where no relative spread is defined.
func CV(xs []float64) float64 {
	if len(xs) < 2 {
		return math.NaN()
	}
	mean, sd := stat.MeanStdDev(xs, nil)
	if !(mean > 0) {
		return math.NaN()
	}
	return sd / mean
}

// TQuantile returns the p-quantile of Student's t distribution with dof degrees of freedom
// (gonum distuv.StudentsT), the standard normal's for dof = +Inf or above 10⁶ (where the two
// agree to 1e-6). dof may be fractional (Welch–Satterthwaite); below 1 it is taken as 1, the
// widest t there is, rather than a distribution without a mean.
func TQuantile(p, dof float64) float64 {
	if math.IsInf(dof, 1) || dof > 1e6 {
		return distuv.UnitNormal.Quantile(p)
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: max(dof, 1)}.Quantile(p)
}

// TCDF is the cumulative distribution of [TQuantile]'s t at x, with the same degrees of
// freedom rule.
func TCDF(x, dof float64) float64 {
	if math.IsInf(dof, 1) || dof > 1e6 {
		return distuv.UnitNormal.CDF(x)
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: max(dof, 1)}.CDF(x)
}

// TInterval returns the mean of xs and its two-sided Student t interval at confidence conf
// (0.95 for 95 %):
//
//	x̄ ± t(1 − (1 − conf)/2; n − 1) · s / √n
//
// s the sample standard deviation. For fewer than two values the bounds are NaN (one value
// has no spread to bound it by); with no spread the interval is the mean itself.
func TInterval(xs []float64, conf float64) (mean, lo, hi float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	if len(xs) == 1 {
		return xs[0], math.NaN(), math.NaN()
	}
	mean, sd := stat.MeanStdDev(xs, nil)
	n := float64(len(xs))
	h := TQuantile(1-(1-conf)/2, n-1) * sd / math.Sqrt(n)
	return mean, mean - h, mean + h
}
