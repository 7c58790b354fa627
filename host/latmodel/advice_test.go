package latmodel

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/stats"
)

// The advice of a gate that cannot tell states what it assumes and gives a range: a single run
// cannot measure how far whole runs scatter, so its runs are assumed to scatter between what
// its cells' noise allows (u/√cells) and as much as its cells do (u); a side of r runs is
// taken between today's spread and its 90 % upper bound. The advice "4 runs" from a single
// run's cell noise did not hold (four runs then scattered ±13 %); the range says how far it
// may be off, and with two runs measured the upper end no longer collapses.
func TestDecideStatesItsAssumption(t *testing.T) {
	// A mean change of +12.1 % over 15 points against +15 %: two single runs (levels ±3.79 %
	// and ±3.0 % from their cells' scatter, 15 cells each) and a small coefficient part.
	lb, ln := Level{SD: 0.0379, DoF: 10, Runs: 1}, Level{SD: 0.03, DoF: 12, Runs: 1}
	lv := 1.121 * 1.121
	iv := interval(0.121, 0.95, component{0.0004, 10}, component{lv * lb.SD * lb.SD, lb.DoF}, component{lv * ln.SD * ln.SD, ln.DoF})
	iv.LevelSE = math.Sqrt(lv * (lb.SD*lb.SD + ln.SD*ln.SD))
	got := decide(iv, 0.15, "the mean change over 15 points", lb, ln, 15, 15)
	want := "5 to 26 runs of each side would decide the mean change over 15 points, 8 times in 10, if its estimate +12.1 % held and each run's " +
		"level scattered about its side's by ±1.0–3.8 % (baseline, one run: its cells' noise to its cells' scatter) and ±0.8–3.0 % " +
		"(new, one run: its cells' noise to its cells' scatter); more if the runs scatter more (genload run --repeat N: one file of N " +
		"repeats; or runs measured apart, comma-separated)"
	if got != want {
		t.Errorf("single runs:\n got %s\nwant %s", got, want)
	}
	// Four baseline runs measured a level of ±6.66 % (their levels scatter by 13.3 %): at the
	// low end of that, even 50 runs of each side do not close a 2.9 % gap, and it says so.
	lb4 := Level{SD: 0.0666, DoF: 3, Runs: 4}
	iv4 := interval(0.121, 0.95, component{0.0004, 10}, component{lv * lb4.SD * lb4.SD, lb4.DoF}, component{lv * ln.SD * ln.SD, ln.DoF})
	iv4.LevelSE = math.Sqrt(lv * (lb4.SD*lb4.SD + ln.SD*ln.SD))
	got = decide(iv4, 0.15, "the mean change over 15 points", lb4, ln, 15, 15)
	if !strings.HasPrefix(got, "the mean change over 15 points is 2.9 % from the threshold: even 50 runs of each side would not decide it if its estimate +12.1 % held and each run's level scattered about its side's by ±13.3–30.2 % (baseline, 4 runs: today's spread to its 90 % upper bound)") {
		t.Errorf("four baseline runs: %s", got)
	}
}

// The upper end of a measured side's scatter is a 90 % upper confidence bound on the runs'
// true scatter: over 2 000 draws of two and of four runs' levels it lies at or above the true
// SD in 88–92 % of them, where today's spread alone (what the advice assumed) does in 32 % (two
// runs: P(χ²₁ > 1)) and 39 % (four runs: P(χ²₃ > 3)).
func TestLevelScatterUpperBoundCovers(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const sigma, n = 0.05, 2000
	for _, r := range []int{2, 4} {
		hi, lo := 0, 0
		for i := 0; i < n; i++ {
			lv := make([]float64, r)
			var mean float64
			for k := range lv {
				lv[k] = sigma * rng.NormFloat64()
				mean += lv[k] / float64(r)
			}
			var ss float64
			for _, x := range lv {
				ss += (x - mean) * (x - mean)
			}
			s := math.Sqrt(ss / float64(r-1))
			sc := levelScatter(Level{SD: s / math.Sqrt(float64(r)), DoF: float64(r - 1), Runs: r}, 15)
			if math.Abs(sc.lo-s) > 1e-12 {
				t.Fatalf("low end %g, want today's spread %g", sc.lo, s)
			}
			if sc.hi >= sigma {
				hi++
			}
			if sc.lo >= sigma {
				lo++
			}
		}
		if hi < n*88/100 || hi > n*92/100 || lo > n*45/100 {
			t.Errorf("%d runs: upper bound ≥ the true scatter in %d of %d, today's spread in %d", r, hi, n, lo)
		}
		t.Logf("%d runs: upper bound covers in %d of %d, the spread alone in %d", r, hi, n, lo)
	}
}

// With --extrapolate, a baseline whose bound is wide only because of the points beyond its
// measured cells is refused saying so — repeats of the same cells would not narrow it — and
// the same grid without those points is judged.
func TestTooNoisyFromExtrapolating(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	obs := synthetic("fixed+per_seq+kv_read", 0, nil)
	var small []Obs
	for _, o := range obs {
		if o.Batch <= 4 && o.SeqLen <= 8000 {
			small = append(small, o)
		}
	}
	fit := func(id string, f float64) *Model {
		m, _, err := FitRuns([]*results.Run{run(id, "m", nil, shifted(small, f, 0.02, rng))}, []string{id + ".json"}, false, 0, FitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m.files = []string{id + ".json"}
		return m
	}
	base, next := fit("base", 1), fit("new", 1.02)
	inRange := []GridPoint{{MeanLen: 2000, Batch: 4}, {MeanLen: 8000, Batch: 2}}
	far := append(inRange, GridPoint{MeanLen: 2000, Batch: 4096}, GridPoint{MeanLen: 8000, Batch: 4096})
	th := Thresholds{MeanIncrease: 0.15, PointIncrease: 0.5}
	if g, err := Gate(base, next, inRange, th, false, false); err != nil || g.BaseNoise > 0.075 {
		t.Fatalf("in range: %v (baseline noise %v)", err, g.BaseNoise)
	}
	g, err := Gate(base, next, far, th, false, true)
	t.Logf("baseline noise %.4f over the far grid", g.BaseNoise)
	if !errors.Is(err, ErrTooNoisy) || exitcode.Of(err) != exitcode.InvalidConfig ||
		!strings.Contains(err.Error(), "the baseline base.json knows its own mean level over the 4 points only to ±10.1 %") ||
		!strings.Contains(err.Error(), "the width comes from extrapolating: over its 2 points in range it is ±") ||
		!strings.Contains(err.Error(), "the 2 extrapolated ones lie beyond the cells it measured (mean length 1000–8000 tokens, batch size 1–4), where its coefficients are uncertain and repeats of the same cells do not remove that; measure the baseline over the grid's range, or gate without --extrapolate") ||
		strings.Contains(err.Error(), "times (genload run --repeat") {
		t.Errorf("extrapolated: %v", err)
	}
}

// The advised number of runs decides the gate DecidePower of the time when what it assumes
// holds: a true mean change of +8 % against a +15 % threshold, each run's level scattering by
// 5 % on both sides and 3 runs of each today (their spread exactly that). Followed — that
// many runs of each side drawn 4 000 times, each time the one-sided 95 % Welch bound held
// against the threshold — it decides 77–90 % of the time; the bound of t_q standard errors
// alone (power 0.5) advised fewer runs, which decided about half the time.
func TestDecideAdviceHasItsPower(t *testing.T) {
	const sigma, change, limit, r = 0.05, 0.08, 0.15, 3
	lb := Level{SD: sigma / math.Sqrt(r), DoF: r - 1, Runs: r}
	ln := lb
	iv := interval(change, 0.95, component{1e-12, math.Inf(1)}, component{lb.SD * lb.SD, lb.DoF}, component{ln.SD * ln.SD, ln.DoF})
	iv.LevelSE = math.Sqrt(lb.SD*lb.SD + ln.SD*ln.SD)
	advice := decide(iv, limit, "the mean change", lb, ln, 15, 15)
	var k int
	if _, err := fmt.Sscanf(strings.TrimPrefix(strings.TrimPrefix(advice, "about "), "at least "), "%d", &k); err != nil || k <= r {
		t.Fatalf("advice %q: no number of runs above today's %d", advice, r)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const draws = 4000
	decided := 0
	for range draws {
		var mb, mn, sb, sn float64
		b, n := make([]float64, k), make([]float64, k)
		for i := range k {
			b[i], n[i] = sigma*rng.NormFloat64(), change+sigma*rng.NormFloat64()
			mb, mn = mb+b[i]/float64(k), mn+n[i]/float64(k)
		}
		for i := range k {
			sb, sn = sb+(b[i]-mb)*(b[i]-mb)/float64(k-1), sn+(n[i]-mn)*(n[i]-mn)/float64(k-1)
		}
		se, dof := combine(component{sb / float64(k), float64(k - 1)}, component{sn / float64(k), float64(k - 1)})
		if mn-mb+stats.TQuantile(0.95, dof)*se < limit {
			decided++
		}
	}
	share := float64(decided) / draws
	t.Logf("%d runs of each side decided %.3f of %d draws", k, share, draws)
	if share < 0.77 || share > 0.9 {
		t.Errorf("advice %q: %d runs of each side decided %d of %d draws (%.2f), want 0.77–0.90 (power %.1f)", advice, k, decided, draws, share, DecidePower)
	}
}
