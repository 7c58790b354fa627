// Package stats holds genload's statistics of small samples, one rule each, so that a figure
// means the same in every output:
//
//   - [Median]: the middle value, or the mean of the two middle values for an even count (the
//     textbook median; a Theil–Sen slope, a MAD, a "median" column, a median CV or change).
//   - [Quantile] and [NearestRank]: the nearest-rank q-quantile x[⌈q·n⌉ − 1] of the ascending
//     sample, the rule of every printed percentile (p50, p90, p99 of per-forward latency, TTFT,
//     ITL, E2E, prompt lengths, scraped gauges): a percentile is always one of the samples. A
//     p50 is a percentile, read by this rule; a median is read by [Median].
//   - [CV]: the sample standard deviation (n − 1) over the mean.
//   - [TQuantile], [TInterval]: Student's t and the t interval of a mean.
//   - [Pool]: the figure of a quantity measured in n repeats and its standard error, the mean
//     and SD/√n (the reasons are in RATIONALE.md).
//
// Means, standard deviations and the t and χ² distributions are gonum's (stat, stat/distuv);
// this package adds what gonum does not state as genload needs it: the midpoint median (gonum's
// stat.Quantile has no midpoint rule), the nearest-rank index exact at q·n = k (gonum's
// stat.Empirical takes 0.7·10 = 7.000000000000001 as above 7), and the absent values (NaN or
// zero, said per function) where a sample is too small.
package stats
