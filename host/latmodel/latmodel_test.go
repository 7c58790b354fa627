package latmodel

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/results"
)

// truth is a known cost model in ms per unit of each term's x (see the package doc): the
// built-in engine's moe-30b-a3b profile at time scale 0.05 (fixed 2.1 ms, per_seq 15 µs,
// kv_read 36.4 ns, kv_tail 18.2 ns, moe 48 layers × 3.5 µs, all × 0.05).
var truth = map[string]float64{
	TermFixed:  2.1 * 0.05,
	TermPerSeq: 0.015 * 0.05,
	TermKVRead: 36.4e-6 * 0.05,
	TermKVTail: 18.2e-6 * 0.05,
	TermMoE:    48 * 3.5e-3 * 0.05,
}

var (
	lens    = []int{1000, 2000, 4000, 8000, 16000, 32000, 64000}
	batches = []int{1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 32, 48, 64}
	moe     = &Experts{Experts: 128, Active: 8}
)

const maxTokens = 100

// ratio is a made-up L_max / L̄ growing with B, as ragged lengths do (1 at B = 1).
func ratio(b int) float64 { return 1 + 0.8*math.Log(float64(b)) }

// synthetic returns the default matrix's cells with fwd from the terms of truth named in
// form, times (1 + rel·N(0,1)) with rel the relative noise, σ = rel·fwd (or 0.5 % when rel
// is 0).
func synthetic(form string, rel float64, rng *rand.Rand) []Obs {
	m := &Model{MaxTokens: maxTokens, Experts: moe}
	var obs []Obs
	for _, l := range lens {
		for _, b := range batches {
			o := Obs{SeqLen: l, Batch: b, MeanLen: float64(l), MaxLen: float64(l) * ratio(b), Runs: 1}
			for _, t := range formTerms(form) {
				o.FwdMs += truth[t] * m.x(t, o.input())
			}
			s := rel
			if s == 0 {
				s = 0.005
			}
			o.SigmaMs = s * o.FwdMs
			if rel > 0 {
				o.FwdMs *= 1 + rel*rng.NormFloat64()
			}
			obs = append(obs, o)
		}
	}
	return obs
}

const fullForm = "fixed+per_seq+kv_read+kv_tail+moe"

// Without noise the fit is exact: every coefficient equals the truth to 1e-9 relative, the
// leave-one-out errors vanish, and the full form is chosen (it is the only one with no error).
func TestFitExactWithoutNoise(t *testing.T) {
	m, err := Fit(synthetic(fullForm, 0, nil), FitOptions{MaxTokens: maxTokens, Experts: moe})
	if err != nil {
		t.Fatal(err)
	}
	if m.Form != fullForm {
		t.Fatalf("form %s, want %s", m.Form, fullForm)
	}
	for _, term := range m.Terms {
		if got, want := term.Coef, truth[term.Name]; math.Abs(got-want) > 1e-9*want {
			t.Errorf("%s = %.12g, want %.12g", term.Name, got, want)
		}
	}
	if m.LOOMaxRel > 1e-9 || m.R2 < 1-1e-12 {
		t.Errorf("LOO max %g, R² %.15f: want exact", m.LOOMaxRel, m.R2)
	}
	if m.N != 91 || m.DoF != 86 {
		t.Errorf("cells %d dof %d, want 91 and 86", m.N, m.DoF)
	}
}

// With 1 % Gaussian noise the 95 % intervals hold the truth about 95 % of the time: over 200
// noisy replicas of the matrix, each coefficient's interval covers it in at least 90 % of
// them (the binomial 95 % band at n = 200 is 92–98 %), and the form chosen with its intervals
// recovers the truth in the first replica.
func TestFitIntervalsCoverTheTruth(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const replicas = 200
	covered := map[string]int{}
	for r := 0; r < replicas; r++ {
		opt := FitOptions{MaxTokens: maxTokens, Experts: moe, Forms: []string{fullForm}}
		if r == 0 {
			opt.Forms = nil // the first replica also chooses the form
		}
		m, err := Fit(synthetic(fullForm, 0.01, rng), opt)
		if err != nil {
			t.Fatal(err)
		}
		if r == 0 && m.Form != fullForm {
			t.Errorf("chose %s at 1 %% noise, want %s; candidates %+v", m.Form, fullForm, m.Candidates)
		}
		for _, term := range m.Terms {
			if w := truth[term.Name]; term.Lo <= w && w <= term.Hi {
				covered[term.Name]++
			}
		}
	}
	for _, name := range formTerms(fullForm) {
		t.Logf("%s: interval covered the truth in %d of %d replicas", name, covered[name], replicas)
		if c := covered[name]; c < replicas*90/100 {
			t.Errorf("%s: interval covered the truth in %d of %d replicas, want ≥ 90 %%", name, c, replicas)
		}
	}
}

// A dense model (no moe term offered) with no tail: fixed + per_seq + kv_read, noise-free,
// is recovered exactly, and forms that lack per_seq predict the cells worse.
func TestFitDenseForm(t *testing.T) {
	const form = "fixed+per_seq+kv_read"
	m, err := Fit(synthetic(form, 0, nil), FitOptions{MaxTokens: maxTokens})
	if err != nil {
		t.Fatal(err)
	}
	for _, term := range m.Terms {
		want := 0.0
		if strings.Contains(form, term.Name) {
			want = truth[term.Name]
		}
		if math.Abs(term.Coef-want) > 1e-9*truth[TermFixed] {
			t.Errorf("%s = %.12g, want %.12g", term.Name, term.Coef, want)
		}
	}
	for _, c := range m.Candidates {
		if !strings.Contains(c.Form, TermPerSeq) && c.Rejected == "" && c.LOOMedianRel < 0.01 {
			t.Errorf("%s without per_seq predicts within %.3g %%", c.Form, 100*c.LOOMedianRel)
		}
		if strings.Contains(c.Form, TermMoE) {
			t.Errorf("moe form %s tried without experts", c.Form)
		}
	}
}

func wantCode(t *testing.T, err error, code exitcode.Code, substr string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %q", substr)
	}
	if exitcode.Of(err) != code || !strings.Contains(err.Error(), substr) {
		t.Fatalf("error %q (code %d), want code %d and %q", err, exitcode.Of(err), code, substr)
	}
}

func TestFitBadInput(t *testing.T) {
	opt := FitOptions{MaxTokens: maxTokens}
	_, err := Fit(nil, opt)
	wantCode(t, err, exitcode.InvalidConfig, "no measured cell")

	one := synthetic("fixed+kv_read", 0, nil)[:1]
	_, err = Fit(one, opt)
	wantCode(t, err, exitcode.InvalidConfig, "1 cell(s), the smallest form needs 3")
	if !errors.Is(err, ErrTooFewCells) {
		t.Errorf("%v is not ErrTooFewCells", err)
	}

	nan := synthetic("fixed+kv_read", 0, nil)
	nan[5].FwdMs = math.NaN()
	nan[9].SigmaMs = 0
	_, err = Fit(nan, opt)
	wantCode(t, err, exitcode.InvalidConfig, "cell L=1000,B=6: fwd is NaN")
	wantCode(t, err, exitcode.InvalidConfig, "cell L=1000,B=16: sigma is 0")

	// One batch size only: per_seq and fixed cannot be told apart, kv_read and kv_tail
	// neither; fixed + kv_read fits, and the fixed-only form (flat) predicts worse.
	var oneB []Obs
	for _, o := range synthetic("fixed+kv_read", 0, nil) {
		if o.Batch == 4 {
			oneB = append(oneB, o)
		}
	}
	m, err := Fit(oneB, opt)
	if err != nil {
		t.Fatal(err)
	}
	if m.Form != "fixed+kv_read" {
		t.Errorf("form %s, want fixed+kv_read", m.Form)
	}
	for _, c := range m.Candidates {
		if c.Form == "fixed" {
			if c.Rejected != "" || c.LOOMedianRel < 0.1 {
				t.Errorf("fixed only: rejected %q, LOO median %.3g; want fitted, with a large error (fwd grows with L)", c.Rejected, c.LOOMedianRel)
			}
			continue
		}
		if c.Form != "fixed+kv_read" && !strings.Contains(c.Rejected, "not separable") {
			t.Errorf("%s: rejected %q, want not separable", c.Form, c.Rejected)
		}
	}

	_, err = Fit(synthetic("fixed+kv_read", 0, nil), FitOptions{MaxTokens: maxTokens, Experts: &Experts{Experts: 8, Active: 9}})
	wantCode(t, err, exitcode.InvalidConfig, "want 1 ≤ active ≤ experts")
}

func TestPredictRangeAndRoundTrip(t *testing.T) {
	m, err := Fit(synthetic(fullForm, 0, nil), FitOptions{MaxTokens: maxTokens, Experts: moe})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "model.json")
	if err := m.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// At a measured batch size the prediction is the truth at L_max = ratio(B)·L̄.
	p, err := back.Predict(6000, 12, false)
	if err != nil {
		t.Fatal(err)
	}
	in := Input{MeanLen: 6000, MaxLen: 6000 * ratio(12), Batch: 12}
	var want float64
	for _, term := range formTerms(fullForm) {
		want += truth[term] * m.x(term, in)
	}
	if math.Abs(p.Ms-want) > 1e-9*want || p.Extrapolated {
		t.Errorf("predict 6000,12 = %+v, want %.9g ms", p, want)
	}

	_, err = back.Predict(128000, 12, false)
	wantCode(t, err, exitcode.OutOfRange, "mean length 128000 not in the measured [1000, 64000] tokens")
	if !errors.Is(err, ErrExtrapolation) {
		t.Errorf("%v is not ErrExtrapolation", err)
	}
	p, err = back.Predict(2000, 128, true)
	if err != nil || !p.Extrapolated || !strings.Contains(p.Why, "batch size 128 not in the measured [1, 64]") {
		t.Errorf("extrapolated: %+v, %v", p, err)
	}
	_, err = back.Predict(math.NaN(), 4, true)
	wantCode(t, err, exitcode.InvalidConfig, "got NaN")

	// A broken file names the file and line; a bad schema is named.
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte("{\n\"schema\": \"genload.latmodel/v1\",\n  oops\n}"), 0o644)
	_, err = ReadFile(bad)
	wantCode(t, err, exitcode.InvalidConfig, "bad.json:3:")
	os.WriteFile(bad, []byte(`{"schema": "genload.latmodel/v0", "form": "fixed"}`), 0o644)
	_, err = ReadFile(bad)
	wantCode(t, err, exitcode.InvalidConfig, `[schema] "genload.latmodel/v0", want "genload.latmodel/v1"`)
}

// scaled returns a copy of m with every coefficient (and interval) multiplied by f.
func scaled(m *Model, f float64, runs string) *Model {
	c := *m
	c.Terms = append([]Term(nil), m.Terms...)
	for i := range c.Terms {
		c.Terms[i].Coef *= f
	}
	c.Runs = []string{runs}
	return &c
}

func TestGateThresholds(t *testing.T) {
	base, err := Fit(synthetic(fullForm, 0, nil), FitOptions{MaxTokens: maxTokens, Experts: moe})
	if err != nil {
		t.Fatal(err)
	}
	base.Runs = []string{"base"}
	th := Thresholds{MeanIncrease: 0.15, PointIncrease: 0.50}
	grid := DefaultGrid(base, base)
	if len(grid) != 91 {
		t.Fatalf("shared grid of %d points, want 91", len(grid))
	}
	// Every coefficient × 1.20: every point +20 %, the mean +20 % > 15 %: fail.
	g, err := Gate(base, scaled(base, 1.20, "slow20"), grid, th, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if g.Verdict != VerdictFail || math.Abs(g.Mean.Est-0.20) > 1e-9 || math.Abs(g.Max-0.20) > 1e-9 || exitcode.Of(g.Err()) != exitcode.ThresholdsFailed {
		t.Errorf("×1.20: mean %+v max %g verdict %v err %v", g.Mean, g.Max, g.Verdict, g.Err())
	}
	// Without noise the models know their coefficients and level exactly: zero-width bounds.
	if g.Mean.Hi-g.Mean.Lo > 1e-6 || g.BaseLevel.SD > 1e-9 {
		t.Errorf("×1.20 without noise: mean bounds %+v, baseline level %+v", g.Mean, g.BaseLevel)
	}
	// × 1.05: +5 % everywhere: pass.
	if g, _ = Gate(base, scaled(base, 1.05, "slow05"), grid, th, false, false); !g.Passed() || g.Err() != nil {
		t.Errorf("×1.05 failed: %v", g.Failed)
	}
	// Only the kv_read term × 3: long, large cells regress by more than 50 % while the mean
	// over the grid may stay lower; the point threshold names the largest point.
	c := scaled(base, 1, "kv")
	c.Terms[2].Coef *= 3
	g, _ = Gate(base, c, grid, Thresholds{MeanIncrease: 10, PointIncrease: 0.5}, false, false)
	if g.Passed() || !strings.Contains(strings.Join(g.Failed, ";"), "B=64") || g.MaxAt.SeqLen != 64000 {
		t.Errorf("kv ×3: %v at %+v", g.Failed, g.MaxAt)
	}

	// Different labels refuse unless allowed.
	other := scaled(base, 1, "other")
	other.Labels = map[string]any{"gpu_count": 8}
	_, err = Gate(base, other, grid, th, false, false)
	wantCode(t, err, exitcode.InvalidConfig, `gate: runs not comparable: different labels: baseline base {} / new other {gpu_count=8} (--allow-mixed to compare them anyway)`)
	if g, err = Gate(base, other, grid, th, true, false); err != nil || len(g.Warnings) != 1 {
		t.Errorf("allowed mixed: %v, %v", err, g.Warnings)
	}
	// A grid wholly beyond the measured range cannot be judged (exit 9), or is flagged.
	far := []GridPoint{{MeanLen: 128000, Batch: 8}}
	_, err = Gate(base, other, far, th, true, false)
	wantCode(t, err, exitcode.OutOfRange, "outside a model's measured range")
	if g, err = Gate(base, other, far, th, true, true); err != nil || !g.Points[0].Extrapolated {
		t.Errorf("extrapolated gate: %v %+v", err, g)
	}
	// Partly beyond: the points in range are judged, the others listed; a pass on them is
	// exit 9, a fail stays a fail.
	part := append([]GridPoint{{MeanLen: 4000, Batch: 8}}, far...)
	if g, err = Gate(base, scaled(base, 1.05, "slow05"), part, th, false, false); err != nil || len(g.Points) != 1 || len(g.OutOfRange) != 1 ||
		g.Verdict != VerdictPass || exitcode.Of(g.Err()) != exitcode.OutOfRange {
		t.Errorf("partly out of range, +5 %%: %v, %d judged, %d out, %s, exit %d", err, len(g.Points), len(g.OutOfRange), g.Verdict, exitcode.Of(g.Err()))
	}
	if g, err = Gate(base, scaled(base, 1.20, "slow20"), part, th, false, false); err != nil || exitcode.Of(g.Err()) != exitcode.ThresholdsFailed {
		t.Errorf("partly out of range, +20 %%: %v, exit %d", err, exitcode.Of(g.Err()))
	}
	_, err = Gate(base, other, nil, th, true, false)
	wantCode(t, err, exitcode.InvalidConfig, "empty grid")
}

// run builds a results file's Run from observations (status ok, a per-forward figure whose
// Theil–Sen twin agrees), with the given model and labels.
func run(id, model string, labels map[string]any, obs []Obs) *results.Run {
	cfg := config.Default()
	r := &results.Run{Header: results.Header{RunID: id, Model: model, Labels: labels, Config: cfg, Schema: results.Schema}}
	for _, o := range obs {
		d := time.Duration(o.FwdMs * 1e6)
		r.Cells = append(r.Cells, results.Cell{Status: results.StatusOK,
			Lengths: results.Lengths{Target: o.SeqLen, Mean: o.MeanLen, Max: int(o.MaxLen)},
			Figures: &measure.Figures{Sequences: o.Batch, Counted: o.Batch, PerForward: measure.Summary{N: o.Batch, Mean: d}, PerForwardFit: measure.Summary{N: o.Batch, Mean: d}}})
		r.Cells[len(r.Cells)-1].Cell.SeqLen, r.Cells[len(r.Cells)-1].Cell.Batch = o.SeqLen, o.Batch
	}
	return r
}

func TestFromRuns(t *testing.T) {
	obs := synthetic("fixed+per_seq+kv_read", 0, nil)
	a := run("a", "m", map[string]any{"gpu_count": int64(8)}, obs)
	// b repeats a, 2 % slower at every cell; JSON labels come back as float64.
	slow := append([]Obs(nil), obs...)
	for i := range slow {
		slow[i].FwdMs *= 1.02
	}
	b := run("b", "m", map[string]any{"gpu_count": 8.0}, slow)
	b.Cells[0].Status = results.StatusPartial
	got, src, err := FromRuns([]*results.Run{a, b}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 91 || len(src.Excluded) != 1 || !strings.Contains(src.Excluded[0], "L=1000,B=1 in b: status partial") {
		t.Fatalf("%d cells, excluded %v", len(got), src.Excluded)
	}
	// Cell L=1000,B=2: mean of x and 1.02x = 1.01x; s_rep = SD/√2 = (0.02x/√2)/√2 = 0.01x;
	// σ = √((0.01x)² + (0.005·1.01x)²), to the nanosecond rounding of the durations.
	o, x := got[1], obs[1].FwdMs
	wantSigma := math.Hypot(0.01*x, 0.005*1.01*x)
	if o.Runs != 2 || math.Abs(o.FwdMs-1.01*x) > 1e-6 || math.Abs(o.SigmaMs-wantSigma) > 1e-3*wantSigma {
		t.Errorf("repeat cell %+v, want fwd %.6g σ %.6g", o, 1.01*x, wantSigma)
	}
	if got[0].Runs != 1 {
		t.Errorf("the partial cell's repeat was used: %+v", got[0])
	}

	c := run("c", "other-model", nil, obs)
	_, _, err = FromRuns([]*results.Run{a, c}, nil, false)
	wantCode(t, err, exitcode.InvalidConfig, `runs not comparable: different model: a "m" / c "other-model"; different labels: a {gpu_count=8} / c {}; `+
		`they are not repeats of one deployment and are not fitted together (--allow-mixed forces it)`)
	if !errors.Is(err, ErrMixed) {
		t.Errorf("%v is not ErrMixed", err)
	}
	if _, src, err = FromRuns([]*results.Run{a, c}, nil, true); err != nil || len(src.Mixed) != 2 || src.Labels != nil {
		t.Errorf("allowed: %v %v", err, src)
	}
	c.Header.Config.MaxTokens = 50
	_, _, err = FromRuns([]*results.Run{a, c}, nil, true)
	wantCode(t, err, exitcode.InvalidConfig, "runs of different max_tokens cannot be fitted together, even with --allow-mixed: it is a term of the model (different model")
	// One run given twice is one run, not two repeats that agree exactly.
	_, _, err = FromRuns([]*results.Run{a, b, a}, []string{"a.json", "b.json", "copy-a.json"}, false)
	wantCode(t, err, exitcode.InvalidConfig, "the same run given twice: a.json and copy-a.json are one run (run a, started")
	if !errors.Is(err, results.ErrSameRun) {
		t.Errorf("%v is not ErrSameRun", err)
	}

	_, _, err = FromRuns(nil, nil, false)
	wantCode(t, err, exitcode.InvalidConfig, "no results file")
	empty := run("e", "m", nil, nil)
	_, _, err = FitRuns([]*results.Run{empty}, nil, false, 0, FitOptions{})
	wantCode(t, err, exitcode.InvalidConfig, "e: fit: no measured cell")
}

func TestPlotFiles(t *testing.T) {
	m, err := Fit(synthetic(fullForm, 0, nil), FitOptions{MaxTokens: maxTokens, Experts: moe})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := Plot(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Labels) != len(lens) || ch.Labels[0] != "L = 1000 tokens" {
		t.Errorf("legend %v", ch.Labels)
	}
	png, svg, err := ch.Save(filepath.Join(t.TempDir(), "fit"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{png, svg} {
		if st, err := os.Stat(p); err != nil || st.Size() < 10000 {
			t.Errorf("%s: %v (%d bytes)", p, err, st.Size())
		}
	}
}

func TestSplit(t *testing.T) {
	obs := synthetic("fixed+kv_read", 0, nil)
	fit, held := Split(obs, 2)
	if len(fit) != 46 || len(held) != 45 || held[0].Batch != 2 || fit[1].Batch != 3 {
		t.Errorf("split: %d fit, %d held, first held B=%d", len(fit), len(held), held[0].Batch)
	}
	m, err := Fit(fit, FitOptions{MaxTokens: maxTokens})
	if err != nil {
		t.Fatal(err)
	}
	v, err := m.Check(held)
	if err != nil || v.MaxRel > 1e-9 {
		t.Errorf("noise-free held-out error %g, %v", v.MaxRel, err)
	}
}

// The held-out cells are written under a line naming the split, one row each, then the summary;
// nothing when none was held out.
func TestWriteHeldOut(t *testing.T) {
	fit, held := Split(synthetic("fixed+kv_read", 0, nil), 3)
	m, err := Fit(fit, FitOptions{MaxTokens: maxTokens})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := m.WriteHeldOut(&b, held, 3); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.HasPrefix(out, "\nheld out (one cell in 3), predicted by the model fitted on the others:\n\n") ||
		!strings.Contains(out, fmt.Sprintf("held-out cells: %d · |error| median 0.00 %%, max 0.00 %%", len(held))) ||
		strings.Count(out, "\n") != len(held)+2+3+2 { // the line and a blank, header + rule + rows, a blank and the summary
		t.Errorf("held out:\n%s", out)
	}
	b.Reset()
	if err := m.WriteHeldOut(&b, nil, 0); err != nil || b.Len() != 0 {
		t.Errorf("nothing held out: %q, %v", b.String(), err)
	}
}

// Repeats pool by stats.Pool: a cell's figure over three runs is their mean, and its σ
// carries their spread (SD/√3) with the 0.5 % floor, so one disturbed run moves the cell and
// widens its σ alike (the fit then weighs it by 1/σ²).
func TestFromRunsPoolsRepeatsByTheMean(t *testing.T) {
	obs := synthetic("fixed+per_seq+kv_read", 0, nil)[:4]
	var runs []*results.Run
	for i, f := range []float64{1.01, 1.0, 10} {
		o := append([]Obs(nil), obs...)
		o[2].FwdMs = f
		runs = append(runs, run(fmt.Sprintf("r%d", i), "m", nil, o))
	}
	got, _, err := FromRuns(runs, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	// mean 4.003333; s = √(53.9401/2) = 5.193276, s/√3 = 2.998335; floor 0.005 · 4.003333
	c := got[2]
	wantSigma := math.Hypot(2.998335, 0.005*4.003333)
	if c.Runs != 3 || math.Abs(c.FwdMs-4.003333) > 1e-6 || math.Abs(c.SigmaMs-wantSigma) > 1e-5 {
		t.Errorf("cell over three runs: fwd %.7g σ %.7g (%d runs), want 4.003333 σ %.7g", c.FwdMs, c.SigmaMs, c.Runs, wantSigma)
	}
	// The cells measured alike in every run: the figure itself, σ the floor alone.
	if o := got[0]; math.Abs(o.FwdMs-obs[0].FwdMs) > 1e-6 || math.Abs(o.SigmaMs-0.005*o.FwdMs) > 1e-6 {
		t.Errorf("cell without spread: %+v, want fwd %.6g and σ the 0.5 %% floor", o, obs[0].FwdMs)
	}
}

// A cell whose figure is 20× too low (a broken measurement) is an outlier: it is left out of
// the final fit with its reason, and the other cells recover the truth within the intervals;
// KeepOutliers fits it, and the coefficients are then off.
func TestFitLeavesOutliersOut(t *testing.T) {
	const form = "fixed+per_seq+kv_read"
	obs := synthetic(form, 0.01, rand.New(rand.NewPCG(3, 4)))
	bad := 40 // L=8000, B=2; its σ stays that of the true figure, as a stall's spread is
	obs[bad].FwdMs /= 20
	opt := FitOptions{MaxTokens: maxTokens, Forms: []string{form}}
	m, err := Fit(obs, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Outliers) != 1 || m.Outliers[0].SeqLen != obs[bad].SeqLen || m.Outliers[0].Batch != obs[bad].Batch || m.N != len(obs)-1 {
		t.Fatalf("outliers %+v, %d cells fitted, want the one cell L=%d,B=%d left out", m.Outliers, m.N, obs[bad].SeqLen, obs[bad].Batch)
	}
	// Its leave-one-out prediction is the true figure, 20× the measured one: +1900 %.
	if o := m.Outliers[0]; o.LOORel < 15 || !strings.Contains(o.Reason, "leave-one-out error +") || !strings.Contains(o.Reason, "above 5 × the median") {
		t.Errorf("outlier %+v", o)
	}
	for _, term := range m.Terms {
		if w := truth[term.Name]; term.Lo > w || w > term.Hi {
			t.Errorf("%s: [%g, %g] misses the truth %g", term.Name, term.Lo, term.Hi, w)
		}
	}
	var b strings.Builder
	m.WriteSummary(&b)
	m.WriteResiduals(&b)
	if !strings.Contains(b.String(), "outlier left out of the fit: cell L=8000,B=2") || !strings.Contains(b.String(), "| – | – |") {
		t.Errorf("summary does not list the outlier:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "| σ ms |") || !strings.Contains(b.String(), "\nσ ms: the cell's uncertainty") {
		t.Errorf("the residual table's σ column is not explained under it:\n%s", b.String())
	}
	// The outlier was measured: the gate's default grid still has it.
	if g := DefaultGrid(m, m); len(g) != len(obs) {
		t.Errorf("shared grid of %d points, want the %d measured cells", len(g), len(obs))
	}
	// With the σ of its own (absurd) figure, 20× smaller, the cell weighs 400× more and drives
	// the fixed cost below zero in the one form offered: it is still found and left out.
	obs[bad].SigmaMs /= 20
	if _, err := Fit(obs, FitOptions{MaxTokens: maxTokens, Forms: []string{form}, KeepOutliers: true}); err == nil || !strings.Contains(err.Error(), "not a cost") {
		t.Errorf("kept, the heavy outlier: %v, want the form rejected", err)
	}
	if h, err := Fit(obs, opt); err != nil || len(h.Outliers) != 1 || h.Outliers[0].Batch != obs[bad].Batch || h.N != len(obs)-1 {
		t.Errorf("heavy outlier: %v, %+v", err, h)
	}
	obs[bad].SigmaMs *= 20
	opt.KeepOutliers = true
	k, err := Fit(obs, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(k.Outliers) != 0 || k.N != len(obs) || k.LOOMaxRel < 15 {
		t.Errorf("kept: %d outliers, %d cells, LOO max %g", len(k.Outliers), k.N, k.LOOMaxRel)
	}
}

// The intervals treat σ as relative weights: the covariance is s²·(XᵀWX)⁻¹ with s² the
// weighted residual variance, so σ all 5× too small (as when every cell's spread is
// understated by the same factor) give the same intervals, and still cover the truth in
// ≥ 90 % of 200 replicas; σ right up to a factor of 10 give intervals equal to 1e-9.
func TestFitIntervalsWithRelativeWeights(t *testing.T) {
	const form = "fixed+per_seq+kv_read+kv_tail"
	rng := rand.New(rand.NewPCG(5, 6))
	covered := map[string]int{}
	const replicas = 200
	for r := 0; r < replicas; r++ {
		obs := synthetic(form, 0.02, rng)
		for i := range obs {
			obs[i].SigmaMs /= 5
		}
		opt := FitOptions{MaxTokens: maxTokens, Forms: []string{form}, KeepOutliers: true}
		m, err := Fit(obs, opt)
		if err != nil {
			t.Fatal(err)
		}
		for _, term := range m.Terms {
			if w := truth[term.Name]; term.Lo <= w && w <= term.Hi {
				covered[term.Name]++
			}
		}
		if r == 0 {
			for i := range obs {
				obs[i].SigmaMs *= 10
			}
			m2, err := Fit(obs, opt)
			if err != nil {
				t.Fatal(err)
			}
			for i, term := range m.Terms {
				if d := math.Abs(m2.Terms[i].SE-term.SE) / term.SE; d > 1e-9 {
					t.Errorf("%s: SE %g with σ, %g with 10 σ", term.Name, term.SE, m2.Terms[i].SE)
				}
			}
		}
	}
	for _, name := range formTerms(form) {
		t.Logf("%s: covered in %d of %d", name, covered[name], replicas)
		if covered[name] < replicas*90/100 {
			t.Errorf("%s: interval covered the truth in %d of %d replicas with σ 5× too small", name, covered[name], replicas)
		}
	}
}

// A model whose leave-one-out median error exceeds the limit is refused by the gate, naming
// which model and its figures; under the limit the gate runs and reports both fits.
func TestGateRefusesAPoorFit(t *testing.T) {
	const form = "fixed+per_seq+kv_read"
	good, err := Fit(synthetic(form, 0.01, rand.New(rand.NewPCG(7, 8))), FitOptions{MaxTokens: maxTokens, Forms: []string{form}})
	if err != nil {
		t.Fatal(err)
	}
	poor, err := Fit(synthetic(form, 0.4, rand.New(rand.NewPCG(9, 10))), FitOptions{MaxTokens: maxTokens, Forms: []string{form}})
	if err != nil {
		t.Fatal(err)
	}
	good.Runs, poor.Runs = []string{"good"}, []string{"poor"}
	if poor.LOOMedianRel < 0.1 || good.LOOMedianRel > 0.02 {
		t.Fatalf("LOO medians: poor %g, good %g", poor.LOOMedianRel, good.LOOMedianRel)
	}
	grid := []GridPoint{{MeanLen: 4000, Batch: 8}}
	th := Thresholds{MeanIncrease: 0.15, PointIncrease: 0.5, MaxFitError: DefaultMaxFitError}
	g, err := Gate(poor, good, grid, th, false, false)
	wantCode(t, err, exitcode.InvalidConfig, "gate: baseline: poor fit: the model of runs poor has a leave-one-cell-out median error of")
	if !errors.Is(err, ErrPoorFit) || g == nil || g.BaseFit.LOOMedianRel != poor.LOOMedianRel {
		t.Errorf("%v, %+v", err, g)
	}
	_, err = Gate(good, poor, grid, th, false, false)
	wantCode(t, err, exitcode.InvalidConfig, "gate: new: poor fit")
	g, err = Gate(good, good, grid, th, false, false)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	g.WriteMarkdown(&b)
	if want := "baseline fit: " + good.Quality().String(); !strings.Contains(b.String(), want) || !strings.Contains(b.String(), "R² 0.99") {
		t.Errorf("gate output lacks %q:\n%s", want, b.String())
	}
	// Without the fit-error limit the poor baseline is still too noisy to judge: its level
	// is uncertain by its cells' 40 % scatter, more than half the 15 % threshold.
	th.MaxFitError = 0
	g, err = Gate(poor, good, grid, th, false, false)
	wantCode(t, err, exitcode.InvalidConfig, "gate: baseline too noisy to judge: the baseline poor knows its own mean level over the 1 points only to ±")
	if !errors.Is(err, ErrTooNoisy) || !strings.Contains(err.Error(), "genload run --repeat") || g.BaseNoise < 0.3 {
		t.Errorf("too noisy: %v (baseline noise %g)", err, g.BaseNoise)
	}
	th.MaxBaselineNoise = -1
	if g, err = Gate(poor, good, grid, th, false, false); err != nil || g.Verdict != VerdictCannotTell {
		t.Errorf("no limits: %v, verdict %v", err, g.Verdict)
	}
}

// Runs against different engine setups are not repeats: refused, naming the field and the
// files; a built-in engine's fresh URL per run is not a difference, nor another instance of an
// external deployment (noted). Cells with a zero or overflowed per-forward figure are errors
// naming the file, run and cell.
func TestFromRunsTargetsAndBadFigures(t *testing.T) {
	obs := synthetic("fixed+per_seq+kv_read", 0, nil)
	a, b := run("a", "m", nil, obs), run("b", "m", nil, obs)
	a.Header.Engine = map[string]any{"profile": "moe-30b-a3b", "time_scale": 0.05, "quirks": ""}
	b.Header.Engine = map[string]any{"profile": "dense-8b", "time_scale": 0.05, "quirks": ""}
	a.Header.TargetKind, b.Header.TargetKind = "builtin", "builtin"
	a.Header.Target, b.Header.Target = "http://127.0.0.1:4001", "http://127.0.0.1:4002"
	names := []string{"res/a.json", "res/b.json"}
	_, _, err := FromRuns([]*results.Run{a, b}, names, false)
	wantCode(t, err, exitcode.InvalidConfig, `runs not comparable: different engine profile: res/a.json moe-30b-a3b (hash not recorded) / res/b.json dense-8b (hash not recorded); they are not repeats`)
	if !errors.Is(err, ErrMixed) || strings.Contains(err.Error(), "target") || strings.Contains(err.Error(), "time scale") {
		t.Errorf("%v", err)
	}
	if _, src, err := FromRuns([]*results.Run{a, b}, names, true); err != nil || len(src.Mixed) != 1 {
		t.Errorf("allowed: %v %+v", err, src)
	}
	b.Header.Engine = map[string]any{"profile": "moe-30b-a3b", "time_scale": 0.2, "quirks": ""}
	_, _, err = FromRuns([]*results.Run{a, b}, names, false)
	wantCode(t, err, exitcode.InvalidConfig, `runs not comparable: different engine time scale: res/a.json 0.05 / res/b.json 0.2; they are not repeats`)
	b.Header.Engine = map[string]any{"profile": "moe-30b-a3b", "time_scale": 0.05, "quirks": "", "noise": "gauss 2%"}
	_, _, err = FromRuns([]*results.Run{a, b}, names, false)
	wantCode(t, err, exitcode.InvalidConfig, `different engine noise: res/a.json none / res/b.json "gauss 2%"`)
	b.Header.Engine = a.Header.Engine
	if _, _, err := FromRuns([]*results.Run{a, b}, names, false); err != nil {
		t.Errorf("same engine, other port: %v", err)
	}
	// Repeats of one noise model draw their own seeds (run --repeat): still repeats; another
	// size of noise is not.
	eng := func(noise string) map[string]any {
		return map[string]any{"profile": "moe-30b-a3b", "time_scale": 0.05, "quirks": "", "noise": noise}
	}
	a.Header.Engine, b.Header.Engine = eng("step-cv=0.02,burst-cv=0.05,seed=11"), eng("step-cv=0.02,burst-cv=0.05,seed=12")
	if _, _, err := FromRuns([]*results.Run{a, b}, names, false); err != nil {
		t.Errorf("repeats with their own noise seeds: %v", err)
	}
	b.Header.Engine = eng("step-cv=0.02,burst-cv=0.10,seed=12")
	_, _, err = FromRuns([]*results.Run{a, b}, names, false)
	wantCode(t, err, exitcode.InvalidConfig, `different engine noise: res/a.json "step-cv=0.02,burst-cv=0.05" / res/b.json "step-cv=0.02,burst-cv=0.10"`)
	// Two instances of one external deployment are repeats, the difference noted.
	a.Header.Engine, b.Header.Engine = nil, nil
	a.Header.TargetKind, b.Header.TargetKind = "external", "external"
	_, src, err := FromRuns([]*results.Run{a, b}, names, false)
	if err != nil || !slices.Equal(src.Across, []string{"target: res/a.json http://127.0.0.1:4001 / res/b.json http://127.0.0.1:4002"}) ||
		!slices.Equal(src.Targets, []string{"http://127.0.0.1:4001", "http://127.0.0.1:4002"}) {
		t.Errorf("two instances: %v, across %q, targets %q", err, src.Across, src.Targets)
	}
	// The built-in engine beside an external server is not a repeat of it.
	a.Header.Engine, a.Header.TargetKind = eng(""), "builtin"
	_, _, err = FromRuns([]*results.Run{a, b}, names, false)
	wantCode(t, err, exitcode.InvalidConfig, "runs not comparable: different target kind: res/a.json built-in engine / res/b.json external server; they are not repeats")

	z := run("base03", "m", nil, obs)
	z.Cells[0].Figures.PerForward.Mean = 0
	z.Cells[1].Figures.PerForward.Mean = math.MinInt64 // what 1e308 ms becomes when read
	_, _, err = FitRuns([]*results.Run{z}, []string{"null.json"}, false, 0, FitOptions{})
	wantCode(t, err, exitcode.InvalidConfig, "null.json (run base03): cell L=1000,B=1: per-forward mean (fwd) is 0 ms")
	wantCode(t, err, exitcode.InvalidConfig, "null.json (run base03): cell L=1000,B=2: per-forward mean (fwd) is beyond ±9.2e12 ms (the figure overflowed")
}

// The L_max/L̄ ratio and a length's mean length between measured batch sizes: linear in
// log B (B = 4 is halfway from 2 to 8), the nearest point's outside.
func TestInterpolationInLogB(t *testing.T) {
	m := &Model{TailRatio: []RatioPoint{{Batch: 2, Ratio: 1}, {Batch: 8, Ratio: 3}}}
	for b, want := range map[int]float64{1: 1, 2: 1, 4: 2, 8: 3, 16: 3} {
		if got := m.maxLenRatio(b); math.Abs(got-want) > 1e-12 {
			t.Errorf("ratio at B=%d: %v, want %v", b, got, want)
		}
	}
	obs := []Obs{{Batch: 1, MeanLen: 1000}, {Batch: 16, MeanLen: 2000}}
	if got := meanLenAt(obs, 4); math.Abs(got-1500) > 1e-9 {
		t.Errorf("mean length at B=4: %v, want 1500 (log₂ 4 is halfway to log₂ 16)", got)
	}
	if got := (&Model{}).maxLenRatio(4); got != 1 {
		t.Errorf("no ratio measured: %v, want 1", got)
	}
}

// A run of genload run --repeat 2 (one file, a record per cell and repeat, header repeats 2)
// fits as the two runs an earlier genload wrote for it: the same observations, and a level
// per repeat — the gate's measure of how far a whole run can be off.
func TestFixedRepeatsFitAsRuns(t *testing.T) {
	obs := synthetic("fixed+per_seq+kv_read", 0, nil)
	slow := append([]Obs(nil), obs...)
	for i := range slow {
		slow[i].FwdMs *= 1.04
	}
	a, b := run("t-r1", "m", nil, obs), run("t-r2", "m", nil, slow)
	one := run("t", "m", nil, nil)
	one.Header.Repeats = 2
	for k, r := range []*results.Run{a, b} {
		for _, c := range r.Cells {
			c.Repeat = k + 1
			one.Cells = append(one.Cells, c)
		}
	}
	mTwo, obsTwo, err := FitRuns([]*results.Run{a, b}, nil, false, 0, FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mOne, obsOne, err := FitRuns([]*results.Run{one}, []string{"t.json"}, false, 0, FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(obsOne, obsTwo) {
		t.Errorf("observations of the one file:\n%+v\nof the two:\n%+v", obsOne, obsTwo)
	}
	if len(mOne.RunLevels) != 2 || len(mTwo.RunLevels) != 2 || mOne.RunLevels[0].Level != mTwo.RunLevels[0].Level || mOne.RunLevels[1].Level != mTwo.RunLevels[1].Level ||
		mOne.RunLevels[0].Run != "t repeat 1" || mOne.RunLevels[1].Run != "t repeat 2" {
		t.Errorf("levels of the one file %+v, of the two %+v", mOne.RunLevels, mTwo.RunLevels)
	}
	// a run with a stopping rule stays one run, its repeats pooled per cell
	one.Header.Repeats, one.Header.UntilCV = 0, &results.StoppingRule{TargetCV: 0.05, MinRepeats: 2, MaxRepeats: 8, Confidence: 0.9}
	mU, obsU, err := FitRuns([]*results.Run{one}, nil, false, 0, FitOptions{})
	if err != nil || len(mU.RunLevels) != 1 || !reflect.DeepEqual(obsU, obsTwo) {
		t.Errorf("until_cv run: %v, levels %+v, observations equal to the two runs': %v", err, mU.RunLevels, reflect.DeepEqual(obsU, obsTwo))
	}
}

// A gate's side is a model file or comma-separated results files; the new side must be
// results, and an error names the side and its argument.
func TestReadSides(t *testing.T) {
	dir := t.TempDir()
	obs := synthetic("fixed+per_seq+kv_read", 0, nil)
	var files []string
	for _, id := range []string{"a", "b"} {
		p := filepath.Join(dir, id+".json")
		if err := results.WriteJSON(p, run(id, "m", nil, obs)); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	m, err := Fit(obs, FitOptions{MaxTokens: maxTokens})
	if err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "model.json")
	if err := m.WriteFile(model); err != nil {
		t.Fatal(err)
	}
	b, n, err := ReadSides(model, files[0]+","+files[1])
	if err != nil {
		t.Fatal(err)
	}
	if b.Model == nil || b.Runs != nil || len(b.Names) != 1 || n.Model != nil || len(n.Runs) != 2 || n.Runs[1].Header.RunID != "b" || len(n.Names) != 2 {
		t.Fatalf("sides: baseline %+v, new %+v", b, n)
	}
	_, _, err = ReadSides(files[0], model)
	wantCode(t, err, exitcode.InvalidConfig, "NEW "+model+" is a model file: want a results file")
	missing := filepath.Join(dir, "none.json")
	_, _, err = ReadSides(files[0]+","+missing, files[1])
	wantCode(t, err, exitcode.InvalidConfig, "baseline "+files[0]+","+missing+": results: open "+missing)
	_, _, err = ReadSides(files[0], missing)
	wantCode(t, err, exitcode.InvalidConfig, "new "+missing+": results: open "+missing)
}
