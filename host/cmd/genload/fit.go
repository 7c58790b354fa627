package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/latmodel"
	"github.com/genload/genload/host/report"
)

// readResults reads results files; a file that cannot be read or decoded is invalid input.
// A JSON syntax error in a .json file (NaN, Infinity: JSON has no such numbers) is placed at
// its file:line:column and byte offset.
func readResults(files []string) ([]*report.Run, error) {
	if len(files) == 0 {
		return nil, exitcode.With(exitcode.InvalidConfig, report.ErrNoRuns)
	}
	runs := make([]*report.Run, len(files))
	for i, f := range files {
		r, err := report.ReadFile(f)
		if err != nil {
			return nil, exitcode.With(exitcode.InvalidConfig, placeSyntaxError(f, err))
		}
		runs[i] = r
	}
	return runs, nil
}

// placeSyntaxError returns err with the line, column and offset of a *json.SyntaxError in the
// .json file at path (a .jsonl reader names its line itself); other errors unchanged.
func placeSyntaxError(path string, err error) error {
	var se *json.SyntaxError
	if !errors.As(err, &se) || filepath.Ext(path) != ".json" {
		return err
	}
	b, rerr := os.ReadFile(path)
	if rerr != nil || se.Offset < 1 || se.Offset > int64(len(b)) {
		return fmt.Errorf("%w (at byte offset %d)", err, se.Offset)
	}
	at := se.Offset - 1 // the offending byte: Offset counts the bytes read, it included
	line := 1 + bytes.Count(b[:at], []byte("\n"))
	col := int(at) - bytes.LastIndexByte(b[:at], '\n')
	hint := ""
	if rest := b[at:]; bytes.HasPrefix(rest, []byte("NaN")) || bytes.HasPrefix(rest, []byte("Inf")) {
		hint = " (JSON has no NaN or Infinity: the figure written there is not a number)"
	}
	return fmt.Errorf("results: %s:%d:%d (byte offset %d): %w%s", path, line, col, se.Offset, se, hint)
}

// expertFlags declares --experts and --active and returns a function giving the Experts they
// describe (nil when neither is set) or a usage error.
func expertFlags(fs interface {
	Int(string, int, string) *int
}, cmd string) func() (*latmodel.Experts, error) {
	e := fs.Int("experts", 0, "mixture of experts: routed experts per layer E (with --active: adds the term E·(1 − (1 − k/E)^B))")
	k := fs.Int("active", 0, "mixture of experts: experts active per token k (1 ≤ k ≤ E)")
	return func() (*latmodel.Experts, error) {
		if *e == 0 && *k == 0 {
			return nil, nil
		}
		if *e < 1 || *k < 1 || *k > *e {
			return nil, exitcode.Errorf(exitcode.Usage, "--experts %d --active %d: want 1 ≤ active ≤ experts (see 'genload %s --help')", *e, *k, cmd)
		}
		return &latmodel.Experts{Experts: *e, Active: *k}, nil
	}
}

func cmdFit(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("fit", "genload fit [-o model.json] [--experts E --active k] [--hold-out N] RUN.json [RUN.json…]",
		`Fit per-forward decode latency to the measured cells of one or more runs (.json or .jsonl),
as a function of each cell's realised mean prompt length L̄ and batch size B:

  T = fixed + per_seq·B + kv_read·B·(L̄ + m/2) + kv_tail·(L_max + m/2) + moe·E·(1 − (1 − k/E)^B)

(m = max_tokens). Every candidate form (fixed and kv_read, with any of the others; moe only
with --experts and --active) is fitted by weighted least squares, each cell weighted by its
measured uncertainty, and the form with the smallest leave-one-cell-out error is kept. Prints
the coefficients with units and 95 % intervals, R², the leave-one-out median and max relative
error, the candidates and the per-cell residuals; against the built-in engine also the
engine profile's parameters beside the fitted ones. -o writes the model file (JSON, schema
genload.latmodel/v1) and a plot of measured points and fitted curves beside it.

Runs given together are repeats of one deployment: they must share the served model, the
[labels], max_tokens and the target (built-in engine profile, time_scale, quirks and noise;
an external server's URL); --allow-mixed fits them together anyway. Only cells of status ok
with a per-forward figure are fitted. --hold-out N leaves every N-th cell out of the fit and
prints how well the model predicts them.

A cell whose leave-one-out error is an outlier — above 5 × the median over the cells and
above 25 % (a figure that is wrong, e.g. a host stall, not noisy) — is left out of the final
fit and listed with its reason (--keep-outliers fits it anyway). When the chosen form's
leave-one-cell-out median error exceeds --max-fit-error (default 10 %: above it the model
cannot tell the gate's default 15 % regression from its own error), fit warns on stderr and
'genload gate' refuses the model: re-measure, or run with --repeat N and fit the repeats.`,
		[][2]string{
			{"fit a run and keep the model", "genload fit -o results/model.json results/20261201-101500.json"},
			{"a mixture-of-experts model (128 experts, 8 active per token)", "genload fit --experts 128 --active 8 -o model.json results/a.json"},
			{"fit on every other cell and predict the others", "genload fit --hold-out 2 --experts 128 --active 8 results/a.json"},
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
	ex, err := experts()
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
	runs, err := readResults(files)
	if err != nil {
		return err
	}
	m, held, err := latmodel.FitRuns(runs, files, *mixed, *holdOut, latmodel.FitOptions{Experts: ex, KeepOutliers: *keepOutliers})
	if err != nil {
		return err
	}
	m.Genload = version
	for _, o := range m.Outliers {
		fmt.Fprintf(e.stderr, "genload fit: outlier left out of the fit: cell L=%d,B=%d (fwd %.4g ms): %s\n", o.SeqLen, o.Batch, o.FwdMs, o.Reason)
	}
	if err := m.CheckQuality(*maxFitErr / 100); err != nil {
		fmt.Fprintf(e.stderr, "genload fit: WARNING: %v.\n  The model does not describe its cells: 'genload gate' will refuse it. Re-measure (a loaded host stalls cells: see the residual table), or measure several times (genload run --repeat N) and fit the repeats together.\n", err)
	}
	if *asJSON {
		b, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s\n", b)
	} else {
		m.WriteSummary(e.stdout)
		fmt.Fprintln(e.stdout)
		m.WriteResiduals(e.stdout)
		profileComparison(e.stdout, m)
		if len(held) > 0 {
			v, err := m.Check(held)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "\nheld out (one cell in %d), predicted by the model fitted on the others:\n\n", *holdOut)
			v.WriteMarkdown(e.stdout)
		}
	}
	if *out != "" {
		if err := m.WriteFile(*out); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "model → %s\n", *out)
		if *plotPrefix == "" {
			*plotPrefix = strings.TrimSuffix(*out, ".json")
		}
	}
	if *plotPrefix != "" {
		ch, err := latmodel.Plot(m)
		if err != nil {
			return err
		}
		png, svg, err := ch.Save(*plotPrefix)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "plot → %s, %s\n", png, svg)
	}
	return nil
}

// checkPct returns a usage error unless v is a finite percentage ≥ 0.
func checkPct(cmd, name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return exitcode.Errorf(exitcode.Usage, "%s %v: want a percentage ≥ 0 (see 'genload %s --help')", name, v, cmd)
	}
	return nil
}

// profileComparison prints, for a model of the built-in engine, each fitted term beside the
// engine profile's parameter it estimates, in simulated time (fitted ÷ the run's time scale).
// It prints nothing for another target, and a note when the profile cannot be read.
func profileComparison(w io.Writer, m *latmodel.Model) {
	name, _ := m.Engine["profile"].(string)
	ts, _ := m.Engine["time_scale"].(float64)
	if m.Engine == nil || ts <= 0 {
		return
	}
	p, err := engine.LoadProfile(name)
	if err != nil {
		fmt.Fprintf(w, "\n(engine profile not compared: %v)\n", err)
		return
	}
	want := map[string]struct {
		v   float64
		src string
	}{
		latmodel.TermFixed:  {p.FixedMs, "fixed_ms"},
		latmodel.TermPerSeq: {p.PerSeqMs, "per_seq_ms"},
		latmodel.TermKVRead: {p.KVReadNsPerToken, "kv_read_ns_per_token"},
		latmodel.TermKVTail: {p.KVTailNsPerToken, "kv_tail_ns_per_token"},
		latmodel.TermMoE:    {p.MoEExpertUs * float64(p.MoELayers), "moe_expert_us × moe_layers"},
	}
	fmt.Fprintf(w, "\nbuilt-in engine profile %s at time scale %g: fitted terms in simulated time (÷ %g)\n\n", p.Name, ts, ts)
	fmt.Fprintln(w, "| term | fitted (simulated) | 95 % interval | profile | parameter | fitted/profile |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, t := range m.Terms {
		c, lo, hi := t.Display()
		wv := want[t.Name]
		ratio := "–"
		if wv.v > 0 {
			ratio = strconv.FormatFloat(c/ts/wv.v, 'f', 3, 64)
		}
		fmt.Fprintf(w, "| %s | %.4g %s | [%.4g, %.4g] | %.4g | %s | %s |\n", t.Name, c/ts, t.Unit, lo/ts, hi/ts, wv.v, wv.src, ratio)
	}
	if p.IsMoE() && m.Experts == nil {
		fmt.Fprintf(w, "\nthe profile is a mixture of experts (%d experts, %d active): fit with --experts %d --active %d for its expert term\n",
			p.MoEExperts, p.MoETopK, p.MoEExperts, p.MoETopK)
	}
}

// parseGrid reads "L1,L2,…xB1,B2,…" (mean prompt lengths in tokens × batch sizes) into the
// points of their product, lengths outer.
func parseGrid(s string) ([]latmodel.GridPoint, error) {
	ls, bs, ok := strings.Cut(s, "x")
	if !ok {
		return nil, fmt.Errorf("--grid %q: want LENGTHSxBATCHES, e.g. 1000,4000x1,8,64", s)
	}
	var lens []float64
	for _, f := range strings.Split(ls, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			return nil, fmt.Errorf("--grid %q: length %q is not a positive number of tokens", s, f)
		}
		lens = append(lens, v)
	}
	var grid []latmodel.GridPoint
	var batches intList
	if err := batches.Set(bs); err != nil {
		return nil, fmt.Errorf("--grid %q: batch sizes: %v", s, err)
	}
	for _, l := range lens {
		for _, b := range batches {
			grid = append(grid, latmodel.GridPoint{MeanLen: l, Batch: b})
		}
	}
	return grid, nil
}

func cmdPredict(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("predict", "genload predict MODEL.json (--seq-len L --batch B | --grid L1,L2xB1,B2) [--extrapolate] [--json]",
		`Predict per-forward decode latency (ms) from a model file written by 'genload fit', at a mean
prompt length L (tokens, the realised mean the model was fitted against) and batch size B, or
at every point of a grid. Each prediction has its standard error from the coefficients'
covariance. A point outside the measured range (mean length and batch size) is refused unless
--extrapolate, when it is printed and flagged.`,
		[][2]string{
			{"one point", "genload predict model.json --seq-len 6000 --batch 24"},
			{"a grid of 3 lengths × 4 batch sizes", "genload predict model.json --grid 2000,8000,32000x1,8,32,64"},
		}, e)
	seqLen := fs.Float64("seq-len", 0, "mean prompt length L̄ in tokens")
	batch := fs.Int("batch", 0, "batch size B (sequences)")
	gridS := fs.String("grid", "", "LENGTHSxBATCHES: predict at every (length, batch size) pair, e.g. 1000,4000x1,8,64")
	extrapolate := fs.Bool("extrapolate", false, "predict outside the measured range (flagged) instead of refusing")
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
	case *gridS != "" && (*seqLen != 0 || *batch != 0):
		return exitcode.Errorf(exitcode.Usage, "--grid or --seq-len/--batch, not both (see 'genload predict --help')")
	case *gridS != "":
		if grid, err = parseGrid(*gridS); err != nil {
			return exitcode.With(exitcode.Usage, err)
		}
	default:
		var missing []string
		if *seqLen == 0 {
			missing = append(missing, "--seq-len")
		}
		if *batch == 0 {
			missing = append(missing, "--batch")
		}
		switch {
		case len(missing) == 2:
			return exitcode.Errorf(exitcode.Usage, "--seq-len and --batch are required, or --grid (see 'genload predict --help')")
		case len(missing) == 1:
			return exitcode.Errorf(exitcode.Usage, "%s is required (see 'genload predict --help')", missing[0])
		case math.IsNaN(*seqLen) || math.IsInf(*seqLen, 0) || *seqLen < 0:
			return exitcode.Errorf(exitcode.Usage, "--seq-len %v: want a positive finite mean prompt length in tokens (see 'genload predict --help')", *seqLen)
		case *batch < 1:
			return exitcode.Errorf(exitcode.Usage, "--batch %d: want a batch size ≥ 1 (see 'genload predict --help')", *batch)
		}
		grid = []latmodel.GridPoint{{MeanLen: *seqLen, Batch: *batch}}
	}
	m, err := latmodel.ReadFile(files[0])
	if err != nil {
		return err
	}
	var ps []latmodel.Prediction
	for _, g := range grid {
		p, err := m.Predict(g.MeanLen, g.Batch, *extrapolate)
		if err != nil {
			return fmt.Errorf("%w (--extrapolate to predict it anyway)", err)
		}
		ps = append(ps, p)
	}
	if *asJSON {
		b, err := json.MarshalIndent(ps, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s\n", b)
		return nil
	}
	fmt.Fprintf(e.stdout, "model %s (form %s, runs %s)\n\n", files[0], m.Form, strings.Join(m.Runs, ", "))
	latmodel.WritePredictions(e.stdout, ps)
	return nil
}

// modelOf reads path as a model file, or fits the results file(s) at path.
func modelOf(paths []string, mixed bool, ex *latmodel.Experts) (*latmodel.Model, error) {
	if len(paths) == 1 && latmodel.IsModelFile(paths[0]) {
		return latmodel.ReadFile(paths[0])
	}
	runs, err := readResults(paths)
	if err != nil {
		return nil, err
	}
	m, _, err := latmodel.FitRuns(runs, paths, mixed, 0, latmodel.FitOptions{Experts: ex})
	return m, err
}

func cmdGate(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("gate", "genload gate [--mean-increase 15] [--point-increase 50] [--grid L…xB…] [--json] BASELINE NEW",
		`Check a run for a latency regression against a baseline. BASELINE is a model file written by
'genload fit' or a results file (fitted here); NEW is a results file (fitted here). Both
models are evaluated on a grid — by default the cells both were fitted on, at their realised
mean lengths — and each point's change new/baseline − 1 is printed. The gate fails, with exit
code 6, when the mean change over the grid exceeds --mean-increase percent or the change at
any point exceeds --point-increase percent.

Each model's fit quality is printed: R² and the leave-one-cell-out median and max relative
error. A model whose leave-one-cell-out median error exceeds --max-fit-error percent (default
10) is refused with exit code 3: it misses its own cells by more than two thirds of the
default 15 % threshold, so a regression of that size cannot be told from the model's error
(a baseline run with host-stalled cells fits badly and would pass real regressions).
Re-measure it, or measure several times (genload run --repeat N) and fit the repeats together.

The two must be of the same served model, [labels] and max_tokens (--allow-mixed compares
them anyway, with a warning). A --grid point outside either model's measured range is refused
unless --extrapolate (then flagged). --experts/--active apply to the fits made here; without
them NEW is fitted with the baseline model's experts, if it has them.`,
		[][2]string{
			{"this week's sweep against the kept model", "genload gate results/model.json results/20261208-101500.json"},
			{"two runs, stricter, JSON for CI", "genload gate --mean-increase 10 --point-increase 25 --json results/base.json results/new.json"},
			{"on a grid of mean lengths × batch sizes", "genload gate --grid 2000,8000x1,8,32 model.json results/new.json"},
		}, e)
	meanInc := fs.Float64("mean-increase", 15, "fail when the mean per-point change exceeds PCT percent")
	pointInc := fs.Float64("point-increase", 50, "fail when any point's change exceeds PCT percent")
	gridS := fs.String("grid", "", "LENGTHSxBATCHES to evaluate at (mean prompt lengths in tokens × batch sizes); default: the shared cells")
	extrapolate := fs.Bool("extrapolate", false, "evaluate grid points outside a model's measured range (flagged) instead of refusing")
	mixed := fs.Bool("allow-mixed", false, "compare models of different served models or labels")
	asJSON := fs.Bool("json", false, "print the result as JSON (for CI)")
	maxFitErr := fs.Float64("max-fit-error", 100*latmodel.DefaultMaxFitError, "refuse a model whose leave-one-cell-out median error exceeds PCT percent (0: accept any)")
	experts := expertFlags(fs, "gate")
	files, err := parseFiles(fs, args)
	if err != nil {
		return err
	}
	ex, err := experts()
	if err != nil {
		return err
	}
	for _, v := range []struct {
		name string
		v    float64
	}{{"--mean-increase", *meanInc}, {"--point-increase", *pointInc}} {
		if math.IsNaN(v.v) || math.IsInf(v.v, 0) {
			return exitcode.Errorf(exitcode.Usage, "%s %v: want a percentage (see 'genload gate --help')", v.name, v.v)
		}
	}
	if err := checkPct("gate", "--max-fit-error", *maxFitErr); err != nil {
		return err
	}
	if len(files) != 2 {
		return exitcode.Errorf(exitcode.Usage, "want BASELINE and NEW, got %d file(s) (see 'genload gate --help')", len(files))
	}
	base, err := modelOf(files[:1], *mixed, ex)
	if err != nil {
		return fmt.Errorf("baseline %s: %w", files[0], err)
	}
	if ex == nil {
		ex = base.Experts // fit the new run with the baseline's expert shape
	}
	if latmodel.IsModelFile(files[1]) {
		return exitcode.Errorf(exitcode.Usage, "NEW %s is a model file: want a results file (see 'genload gate --help')", files[1])
	}
	next, err := modelOf(files[1:], *mixed, ex)
	if err != nil {
		return fmt.Errorf("new %s: %w", files[1], err)
	}
	grid := latmodel.SharedGrid(base, next)
	if *gridS != "" {
		if grid, err = parseGrid(*gridS); err != nil {
			return exitcode.With(exitcode.Usage, err)
		}
	}
	g, err := latmodel.Gate(base, next, grid, latmodel.Thresholds{MeanIncrease: *meanInc / 100, PointIncrease: *pointInc / 100, MaxFitError: *maxFitErr / 100}, *mixed, *extrapolate)
	if errors.Is(err, latmodel.ErrPoorFit) {
		g.WriteFits(e.stderr)
		return fmt.Errorf("%w; re-measure that run (a loaded host stalls cells: 'genload fit' lists its residuals and outliers), or measure several times (genload run --repeat N) and fit the repeats together; --max-fit-error sets the limit", err)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		b, err := json.MarshalIndent(struct {
			Base       string               `json:"baseline"`
			New        string               `json:"new"`
			Thresholds latmodel.Thresholds  `json:"thresholds"`
			BaseFit    latmodel.FitQuality  `json:"baseline_fit"`
			NewFit     latmodel.FitQuality  `json:"new_fit"`
			Points     []latmodel.GatePoint `json:"points"`
			Mean       float64              `json:"mean_change"`
			Max        float64              `json:"max_change"`
			MaxAt      latmodel.GridPoint   `json:"max_at"`
			Passed     bool                 `json:"passed"`
			Failed     []string             `json:"failed,omitempty"`
			Warnings   []string             `json:"warnings,omitempty"`
		}{g.Base, g.New, g.Thresholds, g.BaseFit, g.NewFit, g.Points, g.Mean, g.Max, g.MaxAt, g.Passed(), g.Failed, g.Warnings}, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s\n", b)
	} else {
		g.WriteMarkdown(e.stdout)
	}
	return g.Err()
}
