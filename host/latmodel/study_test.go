package latmodel_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat"

	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/latmodel"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/stats"
)

// outcome counts a study's verdicts over its trials. Refused are baselines refused as too
// noisy to judge (or fitting poorly); Covered counts the trials whose mean-change bounds
// hold the true change (each bound one-sided at 95 %: a two-sided 90 % interval).
type outcome struct {
	Trials, Pass, Fail, CannotTell, Refused, Covered, Judged int
}

func pct(n, of int) string { return fmt.Sprintf("%.0f %%", 100*float64(n)/float64(max(of, 1))) }

// study runs trials gates of a new run against a baseline, each side measured repeats times
// with independent noise seeds (as genload run --repeat derives them), the new profile the
// baseline's with every cost × (1 + change), with the default thresholds (mean +15 %, point
// +50 %, one-sided 95 %, baseline noise ≤ ½ the mean threshold). Seeds are seed + trial·1000
// + 2·repeat (+1 for the new side): the same call draws the same runs.
func study(s sim, change float64, repeats, trials int, seed uint64) (outcome, error) {
	next := scaledProfile(s.prof, 1+change, fmt.Sprintf("%s-x%.2f", s.prof.Name, 1+change))
	o := outcome{Trials: trials}
	for t := range trials {
		var base, nw []*results.Run
		var bn, nn []string
		for k := range repeats {
			id := fmt.Sprintf("t%d-base-r%d", t, k+1)
			base, bn = append(base, s.run(id, s.prof, seed+uint64(1000*t+2*k))), append(bn, id)
			id = fmt.Sprintf("t%d-new-r%d", t, k+1)
			nw, nn = append(nw, s.run(id, next, seed+uint64(1000*t+2*k+1))), append(nn, id)
		}
		g, err := latmodel.RunGate(latmodel.GateRequest{Base: latmodel.Side{Runs: base, Names: bn}, New: latmodel.Side{Runs: nw, Names: nn},
			Thresholds: latmodel.Thresholds{MeanIncrease: 0.15, PointIncrease: 0.50, MaxFitError: latmodel.DefaultMaxFitError}})
		switch {
		case errors.Is(err, latmodel.ErrTooNoisy) || errors.Is(err, latmodel.ErrPoorFit):
			o.Refused++
			continue
		case err != nil:
			return o, fmt.Errorf("trial %d: %w", t, err)
		case g.Verdict == latmodel.VerdictPass:
			o.Pass++
		case g.Verdict == latmodel.VerdictFail:
			o.Fail++
		default:
			o.CannotTell++
		}
		o.Judged++
		if g.Mean.Lo <= change && change <= g.Mean.Hi {
			o.Covered++
		}
	}
	return o, nil
}

// The gate on runs drawn from the built-in engine's cost model and noise (step-cv 2 %,
// burst-cv 5 %, slow-prob 0.001 × 5), both sides measured twice (genload run --repeat 2):
// over 50 seeded trials each, a true +25 % regression must not pass (≤ 5 %), no change must
// not fail (≤ 5 %), and neither may be left undecided — cannot tell or a refused baseline —
// in more than 20 % of the trials. The mean change's one-sided 95 % bounds must hold the
// truth in at least 80 % of the judged trials (90 % expected; the level bound is
// conservative). The full table over repeat counts and sizes of change is
// TestGateSimulationStudyTable.
func TestGateSimulationStudy(t *testing.T) {
	const trials = 50
	s := defaultSim()
	for _, c := range []struct {
		change float64
		wrong  func(o outcome) int
		what   string
	}{{0, func(o outcome) int { return o.Fail }, "false fail"}, {0.25, func(o outcome) int { return o.Pass }, "false pass"}} {
		o, err := study(s, c.change, 2, trials, 1)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("change %+.0f %%, --repeat 2: %+v", 100*c.change, o)
		if w := c.wrong(o); w > trials*5/100 {
			t.Errorf("change %+.0f %%: %s in %d of %d trials (%s), want ≤ 5 %%", 100*c.change, c.what, w, trials, pct(w, trials))
		}
		if u := o.CannotTell + o.Refused; u > trials*20/100 {
			t.Errorf("change %+.0f %%: undecided in %d of %d trials (%d cannot tell, %d refused), want ≤ 20 %%", 100*c.change, u, trials, o.CannotTell, o.Refused)
		}
		if o.Covered < o.Judged*80/100 {
			t.Errorf("change %+.0f %%: the mean's bounds hold the truth in %d of %d judged trials, want ≥ 80 %%", 100*c.change, o.Covered, o.Judged)
		}
	}
}

// The study's table (RATIONALE.md): 100 seeded trials per row, repeat counts 1, 2, 3, true
// changes 0, +10, +15, +20 and +25 %. It takes minutes on two shared cores, so it runs with
// GENLOAD_GATE_STUDY=1 (go test ./host/latmodel -run TestGateSimulationStudyTable -v); it
// holds the targets at --repeat 2 and 3 as TestGateSimulationStudy does, and at the
// threshold itself (+15 %) neither verdict may be given in more than 5 % of the trials.
func TestGateSimulationStudyTable(t *testing.T) {
	if os.Getenv("GENLOAD_GATE_STUDY") == "" {
		t.Skip("the full simulation study takes minutes: GENLOAD_GATE_STUDY=1 runs it")
	}
	const trials = 100
	s := defaultSim()
	var b strings.Builder
	fmt.Fprintf(&b, "| --repeat | true change | pass | fail | cannot tell | refused (baseline too noisy) | mean's bounds hold the truth |\n|---|---|---|---|---|---|---|\n")
	for r := 1; r <= 3; r++ {
		for _, c := range []float64{0, 0.10, 0.15, 0.20, 0.25} {
			o, err := study(s, c, r, trials, uint64(1+1000000*r))
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "| %d | %+.0f %% | %s | %s | %s | %s | %d of %d |\n", r, 100*c, pct(o.Pass, trials), pct(o.Fail, trials), pct(o.CannotTell, trials), pct(o.Refused, trials), o.Covered, o.Judged)
			if r < 2 {
				continue
			}
			switch {
			case c == 0 && (o.Fail > trials/20 || o.CannotTell+o.Refused > trials/5):
				t.Errorf("--repeat %d, no change: %+v", r, o)
			case c == 0.25 && (o.Pass > trials/20 || o.CannotTell+o.Refused > trials/5):
				t.Errorf("--repeat %d, +25 %%: %+v", r, o)
			case c == 0.15 && (o.Pass > trials/20 || o.Fail > trials/20):
				t.Errorf("--repeat %d, +15 %% (the threshold): %+v", r, o)
			}
		}
	}
	t.Logf("\n%s", b.String())
}

// logRatioSpread returns, over the cells two runs share, the mean and the robust SD (1.4826 ×
// MAD) of ln(fwd_b / fwd_a).
func logRatioSpread(a, b *results.Run) (mean, sd float64) {
	fwd := map[[2]int]float64{}
	for _, c := range a.Cells {
		fwd[[2]int{c.Cell.SeqLen, c.Cell.Batch}] = float64(c.Figures.PerForward.Mean)
	}
	var r []float64
	for _, c := range b.Cells {
		if f, ok := fwd[[2]int{c.Cell.SeqLen, c.Cell.Batch}]; ok {
			r = append(r, math.Log(float64(c.Figures.PerForward.Mean)/f))
		}
	}
	mean = stat.Mean(r, nil)
	slices.Sort(r)
	med := stats.Median(r)
	dev := make([]float64, len(r))
	for i, x := range r {
		dev[i] = math.Abs(x - med)
	}
	slices.Sort(dev)
	return mean, 1.4826 * stats.Median(dev)
}

// The simulator is the engine's cost model and noise model: without noise, the fit recovers
// the profile's coefficients (× the time scale) to 1 %; with the study's noise, two runs'
// cells differ as √2 × the per-cell noise — √(burst-cv² + step-cv²/99 + slow steps) ≈ 5.15 %,
// so ln(r2/r1) has a robust SD of about 7.3 % — and their levels agree to ~1 %.
func TestSimulatorIsTheEnginesCostAndNoise(t *testing.T) {
	s := defaultSim()
	quiet := s
	quiet.noise = engine.DefaultNoise()
	m, _, err := latmodel.FitRuns([]*results.Run{quiet.run("q", s.prof, 1)}, nil, false, 0, latmodel.FitOptions{Forms: []string{"fixed+per_seq+kv_read+kv_tail+moe"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{latmodel.TermFixed: s.prof.FixedMs, latmodel.TermPerSeq: s.prof.PerSeqMs, latmodel.TermKVRead: s.prof.KVReadNsPerToken,
		latmodel.TermKVTail: s.prof.KVTailNsPerToken, latmodel.TermMoE: s.prof.MoEExpertUs * float64(s.prof.MoELayers)}
	for _, term := range m.Terms {
		if c, _, _ := term.Display(); math.Abs(c/s.timeScale/want[term.Name]-1) > 0.01 {
			t.Errorf("noise-free fit: %s %.4g (simulated), profile %.4g", term.Name, c/s.timeScale, want[term.Name])
		}
	}
	mean, sd := logRatioSpread(s.run("a", s.prof, 11), s.run("b", s.prof, 12))
	t.Logf("two simulated runs: level difference %+.2f %%, robust SD of ln(r2/r1) %.2f %%", 100*mean, 100*sd)
	if sd < 0.055 || sd > 0.095 || math.Abs(mean) > 0.02 {
		t.Errorf("two simulated runs: level difference %+.2f %%, robust SD %.2f %%; want ~0 and ~7.3 %%", 100*mean, 100*sd)
	}
}
