package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"strings"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/latmodel"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/run"
)

// expertFlags declares --experts and --active and returns a function giving the Experts they
// describe (nil when neither is set), whether the dense form was asked for (--experts 0 given
// explicitly), or a usage error.
func expertFlags(fs *flag.FlagSet, cmd string) func() (*latmodel.Experts, bool, error) {
	e := fs.Int("experts", 0, "mixture of experts: routed experts per layer E (with --active: adds the term E·(1 − (1 − k/E)^B)); 0 given explicitly fits the dense form. Default: the structure the runs record (built-in engine profile, the model's config.json)")
	k := fs.Int("active", 0, "mixture of experts: experts active per token k (1 ≤ k ≤ E)")
	return func() (*latmodel.Experts, bool, error) {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if *e == 0 && *k == 0 {
			return nil, set["experts"], nil
		}
		if *e < 1 || *k < 1 || *k > *e {
			return nil, false, exitcode.Errorf(exitcode.Usage, "--experts %d --active %d: want 1 ≤ active ≤ experts (see 'genload %s --help')", *e, *k, cmd)
		}
		return &latmodel.Experts{Experts: *e, Active: *k}, false, nil
	}
}

func cmdFit(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("fit", "genload fit [-o model.json] [--experts E --active k] [--hold-out N] RUN.json [RUN.json…]",
		`Fit per-forward decode latency to the measured cells of one or more runs (.json or .jsonl),
as a function of each cell's realised mean prompt length L̄ and batch size B:

  T = fixed + per_seq·B + kv_read·B·(L̄ + m/2) + kv_tail·(L_max + m/2) + moe·E·(1 − (1 − k/E)^B)

(m = max_tokens). Every candidate form (fixed and kv_read, with any of the others) is fitted
by weighted least squares, each cell weighted by its measured uncertainty, and the form with
the smallest leave-one-cell-out error is kept. The moe term is tried when the model is a
mixture of experts: as the runs record it (the built-in engine's profile, or the config.json
beside the tokenizer of an external server's model), or as --experts and --active say; a
dense model does not get it, and the output says where the structure came from. Prints the
coefficients with units and 95 % intervals, R², the leave-one-out median and max relative
error, the candidates and the per-cell residuals, every cell not fitted (outliers, partial
and failed cells) counted and listed; against the built-in engine also the profile's
parameters beside the fitted ones. -o writes the model file (JSON, schema
genload.latmodel/v1) and a plot of measured points (cells not fitted hollow) and fitted
curves beside it.

Runs given together are repeats of one deployment: they must share the served model, the
[labels], max_tokens and the target (built-in engine profile, time_scale, quirks and noise;
an external server's URL); --allow-mixed fits them together anyway. Only cells of status ok
with a per-forward figure are fitted. --hold-out N leaves every N-th cell out of the fit and
prints how well the model predicts them.

A cell whose leave-one-out error is an outlier — above 5 × the median over the cells and
above 25 % (a figure that is wrong, e.g. a host stall, not noisy) — is left out of the final
fit and listed with its reason (--keep-outliers fits it anyway). When the chosen form's
leave-one-cell-out median error exceeds --max-fit-error (default 10 %), fit warns on stderr
and 'genload gate' refuses the model: re-measure, or run with --repeat N and fit the repeats.`,
		[][2]string{
			{"fit a run and keep the model", "genload fit -o results/model.json results/20261201-101500.json"},
			{"a mixture of experts the run does not record (128 experts, 8 active per token)", "genload fit --experts 128 --active 8 -o model.json results/a.json"},
			{"fit on every other cell and predict the others", "genload fit --hold-out 2 results/a.json"},
		}, e)
	out := fs.String("o", "", "write the model file here (JSON) and its plot as <name>.png and .svg")
	plotPrefix := fs.String("plot", "", "write the plot as PREFIX.png and PREFIX.svg (default: beside -o)")
	holdOut := fs.Int("hold-out", 0, "leave every N-th cell (ascending L, then B) out of the fit and predict it (N ≥ 2; 0 = none)")
	mixed := fs.Bool("allow-mixed", false, "fit runs of different models or labels together")
	asJSON := fs.Bool("json", false, "print the model file on stdout instead of the tables")
	maxFitErr := fs.Float64("max-fit-error", 100*latmodel.DefaultMaxFitError, "warn when the chosen form's leave-one-cell-out median error exceeds PCT percent (0: never)")
	keepOutliers := fs.Bool("keep-outliers", false, "fit every cell, also those whose leave-one-out error is an outlier")
	experts := expertFlags(fs, "fit")
	files, err := parseFiles(fs, args)
	if err != nil {
		return err
	}
	ex, dense, err := experts()
	if err != nil {
		return err
	}
	if err := checkPct("fit", "--max-fit-error", *maxFitErr); err != nil {
		return err
	}
	if *holdOut < 0 || *holdOut == 1 {
		return exitcode.Errorf(exitcode.Usage, "--hold-out %d: want 0 (none) or N ≥ 2 (see 'genload fit --help')", *holdOut)
	}
	if len(files) == 0 {
		return exitcode.Errorf(exitcode.Usage, "no results file given (see 'genload fit --help')")
	}
	runs, err := results.ReadFiles(files)
	if err != nil {
		return err
	}
	m, held, err := latmodel.FitRuns(runs, files, *mixed, *holdOut, latmodel.FitOptions{Experts: ex, Dense: dense, KeepOutliers: *keepOutliers, Lookup: run.LookupProfileStructure})
	if err != nil {
		return err
	}
	m.Genload = version
	warnFit(m, *maxFitErr/100, e)
	if *asJSON {
		b, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s\n", b)
	} else if err := writeFit(m, held, *holdOut, e); err != nil {
		return err
	}
	return saveModel(m, *out, *plotPrefix, e)
}

// warnFit says on stderr which cells m's fit left out as outliers and, when m's
// leave-one-cell-out median error exceeds maxFitErr (a fraction; 0: never), that gate will
// refuse the model and what to do.
func warnFit(m *latmodel.Model, maxFitErr float64, e *env) {
	for _, o := range m.Outliers {
		report.Prose(e.stderr, "genload fit: ", "  ", fmt.Sprintf("outlier left out of the fit: cell L=%d,B=%d (fwd %.4g ms): %s", o.SeqLen, o.Batch, o.FwdMs, o.Reason))
	}
	if err := m.CheckQuality(maxFitErr); err != nil {
		report.Prose(e.stderr, "genload fit: ", "  ", fmt.Sprintf("WARNING: %v.", err))
		report.Prose(e.stderr, "  ", "  ", "The model does not describe its cells: 'genload gate' will refuse it. To fit it better: "+m.Remedy()+".")
	}
}

// writeFit prints a fitted model as genload fit shows it: the summary, the residuals, the
// comparison with the built-in engine profile the runs used (when they record one), and the
// held-out cells' predictions (every holdOut-th cell).
func writeFit(m *latmodel.Model, held []latmodel.Obs, holdOut int, e *env) error {
	m.WriteSummary(e.stdout)
	fmt.Fprintln(e.stdout)
	m.WriteResiduals(e.stdout)
	if m.Engine != nil {
		if p, from, checked, err := run.RecordedProfileFigures(m.Engine); err != nil {
			fmt.Fprintf(e.stdout, "\n(engine profile not compared: %v)\n", err)
		} else {
			m.WriteProfileComparison(e.stdout, p)
			if !checked {
				fmt.Fprintf(e.stdout, "\n(the runs record no profile hash: compared with the profile %s as it reads now)\n", from)
			}
		}
	}
	return m.WriteHeldOut(e.stdout, held, holdOut)
}

// saveModel writes the model file to out (none when "") and its plot as plotPrefix.png and
// .svg (plotPrefix "" with out set: beside the model file), naming what it wrote on stderr.
func saveModel(m *latmodel.Model, out, plotPrefix string, e *env) error {
	if out != "" {
		if err := m.WriteFile(out); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "model → %s\n", out)
		if plotPrefix == "" {
			plotPrefix = strings.TrimSuffix(out, ".json")
		}
	}
	if plotPrefix == "" {
		return nil
	}
	ch, err := latmodel.Plot(m)
	if err != nil {
		return err
	}
	png, svg, err := ch.Save(plotPrefix)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "plot → %s, %s\n", png, svg)
	return nil
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// checkPct returns a usage error unless v is a finite percentage ≥ 0.
func checkPct(cmd, name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return exitcode.Errorf(exitcode.Usage, "%s %v: want a percentage ≥ 0 (see 'genload %s --help')", name, v, cmd)
	}
	return nil
}

func cmdPredict(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("predict", "genload predict MODEL.json (--seq-len L --batch B | --grid L1,L2xB1,B2) [--extrapolate] [--json]",
		`Predict per-forward decode latency (ms) from a model file written by 'genload fit', at a mean
prompt length L (tokens, the realised mean the model was fitted against) and batch size B, or
at every point of a grid. Each prediction has its standard error from the coefficients'
covariance (the fit's alone) and, for a model fitted to two or more runs, the 95 % prediction
interval of a new run's figure there: the fit's error and the spread of the runs' levels
(JSON: pi_lo_ms, pi_hi_ms). Points outside the measured range (mean length and batch size) are listed with
where they lie, not predicted, and the command exits with code 9 after printing the others;
--extrapolate predicts them too, flagged (exit 0).`,
		[][2]string{
			{"one point", "genload predict model.json --seq-len 6000 --batch 24"},
			{"a grid of 3 lengths × 4 batch sizes", "genload predict model.json --grid 2000,8000,32000x1,8,32,64"},
		}, e)
	seqLen := fs.Float64("seq-len", 0, "mean prompt length L̄ in tokens")
	batch := fs.Int("batch", 0, "batch size B (sequences)")
	gridS := fs.String("grid", "", "LENGTHSxBATCHES: predict at every (length, batch size) pair, e.g. 1000,4000x1,8,64")
	extrapolate := fs.Bool("extrapolate", false, "predict outside the measured range (flagged) instead of leaving those points out")
	asJSON := fs.Bool("json", false, "print the predictions as JSON")
	files, err := parseFiles(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return exitcode.Errorf(exitcode.Usage, "want one model file, got %d (see 'genload predict --help')", len(files))
	}
	var grid []latmodel.GridPoint
	switch {
	case *gridS != "" && (flagSet(fs, "seq-len") || flagSet(fs, "batch")):
		return exitcode.Errorf(exitcode.Usage, "--grid or --seq-len/--batch, not both (see 'genload predict --help')")
	case *gridS != "":
		if grid, err = latmodel.ParseGrid(*gridS); err != nil {
			return exitcode.With(exitcode.Usage, err)
		}
	default:
		var missing []string
		for _, name := range []string{"seq-len", "batch"} {
			if !flagSet(fs, name) {
				missing = append(missing, "--"+name)
			}
		}
		switch {
		case len(missing) == 2:
			return exitcode.Errorf(exitcode.Usage, "--seq-len and --batch are required, or --grid (see 'genload predict --help')")
		case len(missing) == 1:
			return exitcode.Errorf(exitcode.Usage, "%s is required (see 'genload predict --help')", missing[0])
		case math.IsNaN(*seqLen) || math.IsInf(*seqLen, 0) || *seqLen <= 0:
			return exitcode.Errorf(exitcode.Usage, "--seq-len %v: must be positive, a finite mean prompt length in tokens (see 'genload predict --help')", *seqLen)
		case *batch < 1:
			return exitcode.Errorf(exitcode.Usage, "--batch %d: must be positive, a batch size ≥ 1 (see 'genload predict --help')", *batch)
		}
		grid = []latmodel.GridPoint{{MeanLen: *seqLen, Batch: *batch}}
	}
	m, err := latmodel.ReadFile(files[0])
	if err != nil {
		return err
	}
	ps, outside, perr := m.PredictGrid(grid, *extrapolate)
	if perr != nil && exitcode.Of(perr) != exitcode.OutOfRange {
		return perr
	}
	if *asJSON {
		b, err := json.MarshalIndent(struct {
			Predictions []latmodel.Prediction `json:"predictions"`
			OutOfRange  []latmodel.Prediction `json:"out_of_range,omitempty"`
		}{ps, outside}, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s\n", b)
		return perr
	}
	fmt.Fprintf(e.stdout, "model %s (form %s, runs %s)\n\n", files[0], m.Form, strings.Join(m.Runs, ", "))
	latmodel.WritePredictions(e.stdout, m, ps)
	latmodel.WriteOutOfRange(e.stdout, outside, *extrapolate)
	return perr
}

func cmdGate(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("gate", "genload gate [--mean-increase 15] [--point-increase 50] [--grid L…xB…] [--json] BASELINE NEW",
		`Check a run for a latency regression against a baseline. BASELINE is a model file written by
'genload fit' or results files; NEW is results files; each side given as results files is
fitted here, several files of one side comma-separated (repeats, fitted together: a.json,b.json).
The first line says whether the two are comparable (served model, max_tokens, labels, engine
profile by name and hash; another engine profile is what a gate may compare). Both models are
evaluated on a grid — by default every cell the new run measured, at its realised mean length —
and each point's change new/baseline − 1 is printed with its bounds, as is the mean change over
the grid. The bounds count both models' coefficient covariance, their residual scatter and
their repeats, and each model's level uncertainty: a run's cells share its host, so a single run
may be off as a whole by as much as its cells scatter (RATIONALE.md). Each bound is one-sided
at --confidence (the points' Bonferroni-corrected over the grid).

The verdict, and the exit code:
  pass (0)         the mean's upper bound ≤ --mean-increase and every point's ≤ --point-increase
  fail (6)         the mean's lower bound > --mean-increase, or some point's > --point-increase
  cannot tell (8)  otherwise: a bound straddles a threshold; the output says how many repeats
                   of which run would decide it (genload run --repeat N, gated as repeats)
  out of range (9) a pass on the points in range, with grid points outside a model's measured
                   range listed and not judged (--extrapolate judges them, flagged)
Refused with exit code 3: a model whose leave-one-cell-out median error exceeds
--max-fit-error percent, a baseline whose own bound on its mean level over the grid is wider
than --max-baseline-noise × --mean-increase (too noisy to judge: it says how many repeats would
do), and models of another served model, [labels] or max_tokens (--allow-mixed compares them
anyway, with a warning).

The moe term is fitted as 'genload fit' does (the runs' recorded structure, or
--experts/--active); a new run that records nothing is fitted with the baseline's experts.`,
		[][2]string{
			{"this week's sweep against the kept model", "genload gate results/model.json results/20261208-101500.json"},
			{"two repeats of each side", "genload gate results/b1.json,results/b2.json results/n1.json,results/n2.json"},
			{"stricter, JSON for CI", "genload gate --mean-increase 10 --point-increase 25 --json results/base.json results/new.json"},
			{"on a grid of mean lengths × batch sizes", "genload gate --grid 2000,8000x1,8,32 model.json results/new.json"},
		}, e)
	meanInc := fs.Float64("mean-increase", 15, "fail when the mean per-point change exceeds PCT percent with its bounds")
	pointInc := fs.Float64("point-increase", 50, "fail when some point's change exceeds PCT percent with its bounds")
	gridS := fs.String("grid", "", "LENGTHSxBATCHES to evaluate at (mean prompt lengths in tokens × batch sizes); default: the new run's cells")
	extrapolate := fs.Bool("extrapolate", false, "judge grid points outside a model's measured range (flagged) instead of listing them unjudged")
	mixed := fs.Bool("allow-mixed", false, "compare models of different served models or labels")
	asJSON := fs.Bool("json", false, "print the result as JSON (for CI)")
	maxFitErr := fs.Float64("max-fit-error", 100*latmodel.DefaultMaxFitError, "refuse a model whose leave-one-cell-out median error exceeds PCT percent (0: accept any)")
	conf := fs.Float64("confidence", latmodel.DefaultConfidence, "one-sided confidence of each bound, in (0.5, 1)")
	maxNoise := fs.Float64("max-baseline-noise", latmodel.DefaultMaxBaselineNoise, "refuse a baseline whose own bound on its mean level is wider than FRAC × --mean-increase (0: accept any)")
	experts := expertFlags(fs, "gate")
	files, err := parseFiles(fs, args)
	if err != nil {
		return err
	}
	g, err := gate(files, gateFlags{*meanInc, *pointInc, *gridS, *extrapolate, *mixed, *maxFitErr, *conf, *maxNoise, experts})
	if *asJSON {
		// Always the verdict, its exit code and its reason, a refusal too (the message also
		// goes to stderr).
		b, jerr := latmodel.GateJSON(g, err)
		if jerr != nil {
			return jerr
		}
		fmt.Fprintf(e.stdout, "%s\n", b)
	} else if g != nil && g.Verdict != "" {
		g.WriteMarkdown(e.stdout)
	}
	if !*asJSON && g != nil && g.Verdict == "" && err != nil {
		// A refusal: the first line and both fits, then why.
		if g.Comparable != "" {
			report.Prose(e.stderr, "", "  ", g.Comparable)
		}
		g.WriteFits(e.stderr)
	}
	return err
}

// gateFlags are the flags of genload gate its judging needs.
type gateFlags struct {
	meanInc, pointInc float64
	grid              string
	extrapolate       bool
	mixed             bool
	maxFitErr, conf   float64
	maxNoise          float64
	experts           func() (*latmodel.Experts, bool, error)
}

// gate checks the flags, reads both sides and gates them: the result (nil when none was made;
// with no verdict when the gate refused) and the error the command ends with (g.Err() for a
// verdict).
func gate(files []string, f gateFlags) (*latmodel.GateResult, error) {
	ex, dense, err := f.experts()
	if err != nil {
		return nil, err
	}
	for _, v := range []struct {
		name string
		v    float64
	}{{"--mean-increase", f.meanInc}, {"--point-increase", f.pointInc}} {
		if math.IsNaN(v.v) || math.IsInf(v.v, 0) {
			return nil, exitcode.Errorf(exitcode.Usage, "%s %v: want a percentage (see 'genload gate --help')", v.name, v.v)
		}
	}
	if err := checkPct("gate", "--max-fit-error", f.maxFitErr); err != nil {
		return nil, err
	}
	if !(f.conf > 0.5 && f.conf < 1) {
		return nil, exitcode.Errorf(exitcode.Usage, "--confidence %v: want a one-sided confidence in (0.5, 1), such as 0.95 (see 'genload gate --help')", f.conf)
	}
	if !(f.maxNoise >= 0) || math.IsInf(f.maxNoise, 0) {
		return nil, exitcode.Errorf(exitcode.Usage, "--max-baseline-noise %v: want a fraction ≥ 0 of --mean-increase (see 'genload gate --help')", f.maxNoise)
	}
	if len(files) != 2 {
		return nil, exitcode.Errorf(exitcode.Usage, "want BASELINE and NEW, got %d argument(s); several files of one side are comma-separated (see 'genload gate --help')", len(files))
	}
	var grid []latmodel.GridPoint
	if f.grid != "" {
		if grid, err = latmodel.ParseGrid(f.grid); err != nil {
			return nil, exitcode.With(exitcode.Usage, err)
		}
	}
	base, next, err := latmodel.ReadSides(files[0], files[1])
	if err != nil {
		return nil, err
	}
	noise := f.maxNoise
	if noise == 0 {
		noise = -1 // accept any
	}
	g, err := latmodel.RunGate(latmodel.GateRequest{Base: base, New: next,
		Fit:        latmodel.FitOptions{Experts: ex, Dense: dense, Lookup: run.LookupProfileStructure},
		Grid:       grid,
		Thresholds: latmodel.Thresholds{MeanIncrease: f.meanInc / 100, PointIncrease: f.pointInc / 100, MaxFitError: f.maxFitErr / 100, Confidence: f.conf, MaxBaselineNoise: noise},
		AllowMixed: f.mixed, Extrapolate: f.extrapolate})
	if errors.Is(err, latmodel.ErrPoorFit) {
		remedy := "re-measure that run (a loaded host stalls cells: 'genload fit' lists its residuals and outliers), or measure several times (genload run --repeat N) and fit the repeats together"
		var pf *latmodel.PoorFitError
		if errors.As(err, &pf) {
			remedy = pf.Model.Remedy()
		}
		err = fmt.Errorf("%w; %s; --max-fit-error sets the limit", err, remedy)
	}
	if err != nil {
		return g, err
	}
	return g, g.Err()
}
