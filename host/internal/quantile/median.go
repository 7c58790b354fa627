package quantile

// Median returns the median of an ascending, non-empty sample: the middle value, or the mean
// of the two middle values for an even count. It is the rule for estimators built on medians
// (a cell's figure over three or more repeats, the median absolute deviation, the latency
// model's typical error), where the midpoint of an even sample is the textbook definition;
// percentiles that genload reports as figures use [NearestRank] instead, so that every
// reported percentile is one of the samples. It panics on an empty sample.
func Median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
