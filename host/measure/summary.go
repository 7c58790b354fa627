// Package measure turns the per-sequence arrival records of one cell (a recording.Result)
// into per-cell figures: latency per forward pass (three ways), TTFT, ITL, E2E, token
// counts and errors.
//
// Everything here is arithmetic on recorded monotonic offsets; durations stay
// time.Duration (nanoseconds) until they are written out, where Summary marshals them as
// milliseconds (float64) so that sub-millisecond ITLs survive.
package measure

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/genload/genload/host/stats"
)

// Summary describes a sample of durations.
//
// Percentiles use the nearest-rank method: Pq = x[⌈q·N⌉−1] of the sorted sample (q in
// (0, 1]), so every percentile is one of the samples and lies in [Min, Max]. Mean is the
// arithmetic mean rounded to the nanosecond. N = 0 leaves every field zero.
type Summary struct {
	N    int
	Mean time.Duration
	P50  time.Duration
	P90  time.Duration
	P99  time.Duration
	Min  time.Duration
	Max  time.Duration
}

// Summarize returns the Summary of samples. It sorts samples in place.
func Summarize(samples []time.Duration) Summary {
	n := len(samples)
	if n == 0 {
		return Summary{}
	}
	slices.Sort(samples)
	var sum float64
	for _, s := range samples {
		sum += float64(s)
	}
	return Summary{
		N:    n,
		Mean: time.Duration(math.Round(sum / float64(n))),
		P50:  Rank(samples, 0.50),
		P90:  Rank(samples, 0.90),
		P99:  Rank(samples, 0.99),
		Min:  samples[0],
		Max:  samples[n-1],
	}
}

// Rank returns the nearest-rank q-quantile x[⌈q·N⌉−1] of an ascending sample (0 for an
// empty one; q ≤ 0 gives the minimum, q ≥ 1 the maximum): genload's one quantile rule,
// stats.NearestRank.
func Rank(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[stats.NearestRank(len(sorted), q)]
}

// summaryJSON is Summary with milliseconds as float64.
type summaryJSON struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean_ms"`
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	Min  float64 `json:"min_ms"`
	Max  float64 `json:"max_ms"`
}

// Ms converts a duration to milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fromMs(v float64) time.Duration { return time.Duration(math.Round(v * float64(time.Millisecond))) }

// MarshalJSON writes {"n","mean_ms","p50_ms","p90_ms","p99_ms","min_ms","max_ms"}, the
// durations in milliseconds (float64, nanosecond resolution kept).
func (s Summary) MarshalJSON() ([]byte, error) {
	return json.Marshal(summaryJSON{s.N, Ms(s.Mean), Ms(s.P50), Ms(s.P90), Ms(s.P99), Ms(s.Min), Ms(s.Max)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Summary) UnmarshalJSON(b []byte) error {
	var j summaryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	for _, v := range []float64{j.Mean, j.P50, j.P90, j.P99, j.Min, j.Max} {
		if math.IsNaN(v) || math.Abs(v) >= maxMs {
			return fmt.Errorf("summary: %g ms is beyond what a duration holds (±%.3g ms)", v, maxMs)
		}
	}
	*s = Summary{j.N, fromMs(j.Mean), fromMs(j.P50), fromMs(j.P90), fromMs(j.P99), fromMs(j.Min), fromMs(j.Max)}
	return nil
}

// maxMs bounds a figure in ms that converts to a time.Duration (int64 nanoseconds) without
// overflowing: about 106 days.
const maxMs = float64(math.MaxInt64) / float64(time.Millisecond)

// summarizeSelect is Summarize without sorting: the percentiles are selected (three
// selections of a shrinking range, O(N) expected), Min and Max scanned, and the Mean taken
// from the exact integer sum. It returns the same Summary as Summarize bit for bit: the
// selected values are the same order statistics, and while the sum of |samples| stays under
// 2⁵³ ns (104 days) every partial sum of Summarize's float64 sum is an exact integer in any
// order, so it equals the integer sum; above that it sorts and sums as Summarize does. It also
// returns the sample's median (stats.MedianDuration's: lo + (hi − lo)/2 of the two middle
// values for an even N; 0 when empty). samples is reordered.
func summarizeSelect(samples []time.Duration) (Summary, time.Duration) {
	n := len(samples)
	if n == 0 {
		return Summary{}, 0
	}
	var sum int64
	var abs uint64
	lo, hi := samples[0], samples[0]
	for _, s := range samples {
		sum += int64(s)
		if abs += uint64(max(s, -s)); abs >= 1<<53 { // (−MinInt64 is MinInt64: 2⁶³ as uint64)
			sm := Summarize(samples)
			return sm, medianSorted(samples)
		}
		lo, hi = min(lo, s), max(hi, s)
	}
	i50, i90, i99 := stats.NearestRank(n, 0.50), stats.NearestRank(n, 0.90), stats.NearestRank(n, 0.99)
	sm := Summary{N: n, Mean: time.Duration(math.Round(float64(sum) / float64(n))), Min: lo, Max: hi}
	// the median's order statistics first: n/2, and for an even n the largest below it
	mid := stats.KthInPlace(samples, n/2)
	med := mid
	if n%2 == 0 {
		below := slices.Max(samples[:n/2])
		med = below + (mid-below)/2
	}
	// i50 is n/2 − 1 or n/2: among the n/2 + 1 smallest; i90 and i99 at or above n/2
	sm.P50 = stats.KthInPlace(samples[:n/2+1], i50)
	sm.P90 = mid
	if i90 > n/2 {
		sm.P90 = stats.KthInPlace(samples[n/2+1:], i90-n/2-1)
	}
	sm.P99 = sm.P90
	if i99 > i90 {
		sm.P99 = stats.KthInPlace(samples[i90+1:], i99-i90-1)
	}
	return sm, med
}
