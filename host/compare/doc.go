// Package compare compares runs of genload with each other: whether they measured the same
// thing ([Identity], [CheckComparable], [RunsComparability]), the per-cell consistency of
// repeated runs or of one run's repeats ([Consistent], [ConsistentRepeats]: CV of per-forward
// latency), the per-cell change from one run to another ([Compare]), the pooling of a run's
// repeats into one figure per cell ([Pool], [PooledRun]), and the latency plot of one run or
// of two, before and after ([LatencyPlot]). It reads the records of package results and
// prints its tables with the helpers of package report.
package compare
