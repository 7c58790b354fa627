package measure

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/genload/genload/host/stats"
)

// Theil–Sen on a line with 25 % of the points far off returns the line's slope exactly.
func TestTheilSenOutliers(t *testing.T) {
	var ps []point
	for i := range 40 {
		y := 3 + 5*float64(i)
		if i%4 == 0 {
			y += 1000
		}
		ps = append(ps, point{t: y, f: float64(i)})
	}
	var sc fitScratch
	if slope, icpt, ok := sc.theilSen(ps); !ok || slope != 5 || icpt != 3 {
		t.Fatalf("slope %v intercept %v ok %v", slope, icpt, ok)
	}
}

// The pooled fit, which keeps a sample of the slopes and those near the median instead of all
// of them, returns the very median of all the within-sequence slopes (bit for bit) on
// generated cells of 2–1,500 sequences of 1–60 marks: clean lines, noisy ones, ties (arrivals
// on a coarse clock) and outliers.
func TestPooledSlopeIsTheMedianOfAllSlopes(t *testing.T) {
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 9))
		var sc fitScratch
		var p pooled
		p.reset(&sc, 0)
		var all []float64
		nseq := []int{2, 40, 300, 1500}[seed%4]
		for range nseq {
			n := 1 + rng.IntN(60)
			ps := make([]point, n)
			for i := range ps {
				at := 1e9 + 5e6*float64(i) + 1e5*rng.NormFloat64()
				switch seed % 3 {
				case 1: // a coarse clock: many equal slopes
					at = math.Round(at/1e6) * 1e6
				case 2: // outliers
					if rng.IntN(5) == 0 {
						at += 3e7 * rng.Float64()
					}
				}
				ps[i] = point{at, float64(i)}
			}
			p.add(ps)
			var th fitScratch
			all = appendSlopes(all, th.thin(ps, maxWindowFitPoints))
		}
		got, ok := p.slope()
		want := stats.MedianInPlace(all)
		if !ok || math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("seed %d, %d slopes: pooled slope %v (ok %v), the median of all %v", seed, len(all), got, ok, want)
		}
	}
}

// A cell whose sampled slopes are all outliers (65,536 sequences of two marks: one slope each,
// every pooledSample-th of them 200 times the others) makes the sample's bracket miss the
// median's rank; the pooled fit sees it and selects among all the slopes.
func TestPooledSlopeWhenTheSampleMisleads(t *testing.T) {
	var sc fitScratch
	var p pooled
	p.reset(&sc, 0)
	var all []float64
	for k := range pooledDirect {
		step := 5e6 + float64(k%7)
		if k%pooledSample == 0 {
			step = 1e9
		}
		ps := []point{{1e9, 0}, {1e9 + step, 1}}
		p.add(ps)
		all = appendSlopes(all, ps)
	}
	got, ok := p.slope()
	if want := stats.MedianInPlace(all); !ok || got != want {
		t.Fatalf("pooled slope %v (ok %v), the median of all %v", got, ok, want)
	}
}
