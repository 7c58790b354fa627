package latmodel

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/results"
)

// PredictGrid predicts m at every grid point. Points inside the measured range are in ps;
// points outside are in out, flagged — and predicted only when extrapolate, when they are in
// ps too. Out-of-range points are not fatal: the error, when some were left unpredicted,
// wraps ErrExtrapolation with exitcode.OutOfRange and counts them, and ps holds the others.
// A non-positive or non-finite point is an InvalidConfig error.
func (m *Model) PredictGrid(grid []GridPoint, extrapolate bool) (ps, out []Prediction, err error) {
	for _, g := range grid {
		p, err := m.Predict(g.MeanLen, g.Batch, true)
		if err != nil {
			return nil, nil, err
		}
		if p.Extrapolated {
			out = append(out, p)
			if !extrapolate {
				continue
			}
		}
		ps = append(ps, p)
	}
	if len(out) > 0 && !extrapolate {
		return ps, out, exitcode.With(exitcode.OutOfRange, fmt.Errorf("predict: %w: %d of %d point(s), not predicted (first: %s); --extrapolate to predict them",
			ErrExtrapolation, len(out), len(grid), out[0].Why))
	}
	return ps, out, nil
}

// WriteOutOfRange writes the points PredictGrid left out, one row each with where they
// lie outside the range; nothing for none.
func WriteOutOfRange(w io.Writer, out []Prediction, predicted bool) {
	if len(out) == 0 {
		return
	}
	if predicted {
		fmt.Fprintf(w, "\n%d point(s) outside the measured range, predicted by extrapolation (flagged above)\n", len(out))
		return
	}
	fmt.Fprintf(w, "\n%d point(s) outside the measured range, not predicted (--extrapolate to predict them):\n\n", len(out))
	rows := [][]string{{"mean len", "B", "outside the range"}}
	for _, p := range out {
		rows = append(rows, []string{fmt.Sprintf("%g", p.MeanLen), fmt.Sprint(p.Batch), p.Why})
	}
	table(w, rows)
}

// Side is one side of a gate: a model read from a model file (Model set), or the results
// files of one or more runs (repeats) to fit.
type Side struct {
	Model *Model
	Runs  []*results.Run
	Names []string
}

// ReadSide reads one side of a gate named as on the command line: a model file, or one or
// more results files comma-separated (repeats, fitted together; read by
// [results.ReadFiles]). Errors as ReadFile's and results.ReadFiles'.
func ReadSide(arg string) (Side, error) {
	files := strings.Split(arg, ",")
	if len(files) == 1 && IsModelFile(files[0]) {
		m, err := ReadFile(files[0])
		return Side{Model: m, Names: files}, err
	}
	runs, err := results.ReadFiles(files)
	return Side{Runs: runs, Names: files}, err
}

// ReadSides reads a gate's two sides ([ReadSide]): base, a model file or results files, and
// next, results files only (a model file there is exitcode.InvalidConfig). Errors name the
// side and its argument ("baseline ARG: …", "new ARG: …").
func ReadSides(base, next string) (b, n Side, err error) {
	if b, err = ReadSide(base); err != nil {
		return b, n, fmt.Errorf("baseline %s: %w", base, err)
	}
	if n, err = ReadSide(next); err != nil {
		return b, n, fmt.Errorf("new %s: %w", next, err)
	}
	if n.Model != nil {
		return b, n, exitcode.Errorf(exitcode.InvalidConfig, "NEW %s is a model file: want a results file (see 'genload gate --help')", next)
	}
	return b, n, nil
}

// GateRequest is everything a gate is asked: the two sides, the fit options for the sides
// fitted here (Fit.Experts/Dense from flags; Lookup for old files), the grid (nil: the
// default, see [DefaultGrid]), the thresholds, and whether to allow mixed groups and
// extrapolation.
type GateRequest struct {
	Base, New   Side
	Fit         FitOptions
	Grid        []GridPoint
	Thresholds  Thresholds
	AllowMixed  bool
	Extrapolate bool
}

// fitSide fits a side's runs (or returns its model) with opt.
func fitSide(s Side, allowMixed bool, opt FitOptions) (*Model, error) {
	m := s.Model
	if m == nil {
		var err error
		if m, _, err = FitRuns(s.Runs, s.Names, allowMixed, 0, opt); err != nil {
			return nil, err
		}
	}
	m.files = s.Names
	return m, nil
}

// RunGate fits what needs fitting and gates the new side against the baseline ([Gate]). A run
// given twice, within a side or on both, is refused ([results.CheckDistinct]): a side's runs are
// its repeats, and the two sides independent measurements.
// The new side is fitted with the flags' structure, else the structure its runs record, else
// the baseline model's experts (a baseline model file keeps the shape it was fitted with).
// Errors name the side ("baseline FILE: …", "new FILE: …").
func RunGate(req GateRequest) (*GateResult, error) {
	for _, sd := range []struct {
		name string
		s    Side
	}{{"baseline", req.Base}, {"new", req.New}} {
		if err := results.CheckDistinct(sd.s.Runs, sd.s.Names); err != nil {
			return nil, fmt.Errorf("%s: %w", sd.name, err)
		}
	}
	if len(req.Base.Runs) > 0 && len(req.New.Runs) > 0 {
		// The sides' models are independent measurements: a run on both sides is not.
		runs := append(slices.Clone(req.Base.Runs), req.New.Runs...)
		var names []string
		for i, n := range append(slices.Clone(req.Base.Names), req.New.Names...) {
			side := "baseline "
			if i >= len(req.Base.Names) {
				side = "new "
			}
			names = append(names, side+n)
		}
		if len(names) == len(runs) {
			if err := results.CheckDistinct(runs, names); err != nil {
				return nil, fmt.Errorf("gate: %w; a gate compares two measurements made apart", err)
			}
		}
	}
	base, err := fitSide(req.Base, req.AllowMixed, req.Fit)
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	nopt := req.Fit
	if nopt.Experts == nil && !nopt.Dense {
		if ex, _, err := ResolveExperts(nil, false, req.New.Runs, nopt.Lookup, req.AllowMixed); err == nil && ex == nil && !recordsStructure(req.New.Runs, nopt.Lookup) {
			nopt.Experts = base.Experts // nothing known of the new runs: the baseline's shape
		}
	}
	next, err := fitSide(req.New, req.AllowMixed, nopt)
	if err != nil {
		return nil, fmt.Errorf("new: %w", err)
	}
	grid := req.Grid
	if grid == nil {
		grid = DefaultGrid(base, next)
	}
	return Gate(base, next, grid, req.Thresholds, req.AllowMixed, req.Extrapolate)
}

// recordsStructure reports whether some run records its model structure (or has a built-in
// engine profile lookup finds).
func recordsStructure(runs []*results.Run, lookup ProfileLookup) bool {
	for _, r := range runs {
		if r.Header.Structure != nil {
			return true
		}
		if lookup != nil && r.Header.Engine != nil {
			if name, ok := r.Header.Engine["profile"].(string); ok && lookup(name) != nil {
				return true
			}
		}
	}
	return false
}
