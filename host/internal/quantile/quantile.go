// Package quantile is the old home of genload's nearest-rank rule, now [stats.NearestRank];
// it forwards to it until its last importer, host/measure, imports host/stats itself, and is
// then to be removed.
package quantile

import "github.com/genload/genload/host/stats"

// NearestRank is [stats.NearestRank].
func NearestRank(n int, q float64) int { return stats.NearestRank(n, q) }
