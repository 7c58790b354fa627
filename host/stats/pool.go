package stats

import (
	"math"

	"gonum.org/v1/gonum/stat"
)

// Pool returns the figure of one quantity measured in n repeats x_1…x_n (a cell's mean
// per-forward latency in each of n runs or rounds) and its standard error:
//
//	fig = Σ x_k / n          (the mean of the repeats)
//	se  = s / √n             (s the sample standard deviation, n − 1; 0 for one repeat)
//
// NaN for both when there is no repeat. It is genload's one rule for pooling repeats, used
// by consistency, diff, plot, the HTML report and the latency model; RATIONALE.md says why
// the mean and not the median.
func Pool(xs []float64) (fig, se float64) {
	switch len(xs) {
	case 0:
		return math.NaN(), math.NaN()
	case 1:
		return xs[0], 0
	}
	mean, sd := stat.MeanStdDev(xs, nil)
	return mean, sd / math.Sqrt(float64(len(xs)))
}
