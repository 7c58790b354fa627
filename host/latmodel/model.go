// Package latmodel fits a latency model to a matrix of measured cells and evaluates it: the
// per-forward decode latency of a batch as a function of its realised mean prompt length and
// batch size, built from physically motivated cost terms, chosen among candidate forms by
// leave-one-cell-out error, and written to a versioned JSON model file (schema
// genload.latmodel/v1, see [Model]). [Gate] compares two fitted models on a grid of
// (length, batch size) points for regression checks.
//
// # The cost terms
//
// One decode forward pass of a batch of B sequences whose prompts have mean length L̄ and
// longest length L_max (tokens), each generating m = max_tokens tokens, costs
//
//	T(L̄, B) = Σ_j β_j · x_j(L̄, B)                                             [ms]
//
// with the terms x_j (a form is a subset of them; "fixed" is in every form, kv_tail only
// with kv_read):
//
//	term      x_j                      β_j unit      where it comes from
//	fixed     1                        ms            weights read once per step, launch and scheduler overhead
//	per_seq   B                        ms/sequence   sampling, output processing, LM-head rows per sequence
//	kv_read   B·(L̄ + m/2)              ns/token      every decode step reads each sequence's whole KV cache;
//	                                                 the context grows from L to L + m over the decode, m/2 on average
//	kv_tail   L_max + m/2              ns/token      the longest sequence's split-KV tail: the attention kernel ends
//	                                                 when its longest sequence does
//	moe       E·(1 − (1 − k/E)^B)      µs/expert     mixture of experts: the expected number of distinct experts of
//	                                                 E that B tokens activate when each picks k uniformly; every
//	                                                 activated expert's weights are read once per layer
//
// β are fitted by weighted least squares (gonum mat QR on column-scaled regressors), cells
// weighted by 1/σ², σ being each cell's measured uncertainty (see [Obs]). Coefficients are
// kept in ms per unit of x_j in the file; [Term.Display] converts to the unit above.
package latmodel

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/genload/genload/host/compare"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/stats"
)

// Schema names the model file format; it changes when a field changes meaning.
const Schema = "genload.latmodel/v1"

// Term names (see the package documentation for each x_j).
const (
	TermFixed  = "fixed"
	TermPerSeq = "per_seq"
	TermKVRead = "kv_read"
	TermKVTail = "kv_tail"
	TermMoE    = "moe"
)

// termOrder is the order of terms in a form and in the model file.
var termOrder = []string{TermFixed, TermPerSeq, TermKVRead, TermKVTail, TermMoE}

// termInfo gives each term's display unit, the factor from ms per x-unit to it, and one line
// of doc.
var termInfo = map[string]struct {
	unit  string
	scale float64
	doc   string
}{
	TermFixed:  {"ms", 1, "per forward pass, whatever the batch"},
	TermPerSeq: {"ms/sequence", 1, "per sequence in the batch (× B)"},
	TermKVRead: {"ns/token", 1e6, "per cached token read, summed over the batch (× B·(L̄ + m/2))"},
	TermKVTail: {"ns/token", 1e6, "per token of the longest context (× L_max + m/2)"},
	TermMoE:    {"µs/expert", 1e3, "per expected distinct expert activated (× E·(1 − (1 − k/E)^B))"},
}

// Experts describes a mixture-of-experts model for the moe term: Experts routed experts per
// layer (E), Active of them per token (k), 1 ≤ k ≤ E.
type Experts struct {
	Experts int `json:"experts"`
	Active  int `json:"active"`
}

// Distinct returns E·(1 − (1 − k/E)^B): the expected number of distinct experts B tokens
// activate when each picks k of E uniformly and independently (an expert is missed by one token
// with probability 1 − k/E, by all B with (1 − k/E)^B).
func (e Experts) Distinct(batch float64) float64 {
	E, k := float64(e.Experts), float64(e.Active)
	return E * (1 - math.Pow(1-k/E, batch))
}

func (e *Experts) validate() error {
	if e == nil {
		return nil
	}
	if e.Experts < 1 || e.Active < 1 || e.Active > e.Experts {
		return exitcode.Errorf(exitcode.InvalidConfig, "experts: want 1 ≤ active ≤ experts, got experts %d, active %d", e.Experts, e.Active)
	}
	return nil
}

// Input is what the model needs to know about a batch.
type Input struct {
	// MeanLen is the realised mean prompt length L̄, in tokens.
	MeanLen float64 `json:"mean_len"`
	// MaxLen is the longest prompt L_max, in tokens (0 in a prediction: the model's
	// [Model.TailRatio] gives it).
	MaxLen float64 `json:"max_len"`
	// Batch is the batch size B, in sequences.
	Batch int `json:"batch"`
}

// x returns the regressor of term for in (see the package documentation).
func (m *Model) x(term string, in Input) float64 {
	half := float64(m.MaxTokens) / 2
	b := float64(in.Batch)
	switch term {
	case TermFixed:
		return 1
	case TermPerSeq:
		return b
	case TermKVRead:
		return b * (in.MeanLen + half)
	case TermKVTail:
		return in.MaxLen + half
	case TermMoE:
		return m.Experts.Distinct(b)
	}
	panic("latmodel: unknown term " + term)
}

// Term is one fitted coefficient.
type Term struct {
	Name string `json:"name"`
	// Coef is β in ms per unit of x (see the package documentation), ≥ 0; SE its standard
	// error and [Lo, Hi] its 95 % confidence interval (Student t with the fit's degrees of
	// freedom), intersected with β ≥ 0.
	Coef float64 `json:"coef_ms"`
	SE   float64 `json:"se_ms"`
	Lo   float64 `json:"ci95_lo_ms"`
	Hi   float64 `json:"ci95_hi_ms"`
	// Unit is the display unit of Display; Doc says what the term is.
	Unit string `json:"unit"`
	Doc  string `json:"doc"`
}

// Display returns the coefficient and its 95 % interval in the term's display unit (Unit).
func (t Term) Display() (coef, lo, hi float64) {
	s := termInfo[t.Name].scale
	return t.Coef * s, t.Lo * s, t.Hi * s
}

// Obs is one measured cell as the fit uses it.
type Obs struct {
	// SeqLen and Batch are the cell's target L (tokens) and batch size B (sequences).
	SeqLen int `json:"seq_len"`
	Batch  int `json:"batch"`
	// MeanLen and MaxLen are the realised mean and longest prompt lengths, in tokens
	// (averaged over the runs the cell was measured in).
	MeanLen float64 `json:"mean_len"`
	MaxLen  float64 `json:"max_len"`
	// Clamped is the number of prompts clamped to the length bounds (max over runs).
	Clamped int `json:"clamped,omitempty"`
	// Runs is the number of runs the cell was measured in.
	Runs int `json:"runs"`
	// FwdMs is the per-forward latency (the cell's mean per-forward figure; over repeats,
	// the mean of two runs or the median of three or more), ms. SigmaMs is its uncertainty,
	// ms:
	//
	//	σ = √(s_rep² + s_est² + (0.005·fwd)²)
	//
	// s_rep = the repeats' standard error (0 with one run; SD/√2 with two; with three or more
	// √(π/2)·1.4826·MAD/√runs, the median's), s_est = the mean over runs of
	// |mean per-forward − Theil–Sen per-forward| (how far the mean forward pass is from the
	// typical one: stalls, a late first chunk), and a floor of 0.5 % for the timing jitter a
	// single run does not show. The fit weights the cell by 1/σ².
	FwdMs   float64 `json:"fwd_ms"`
	SigmaMs float64 `json:"sigma_ms"`
	// FittedMs, ResidualMs (fwd − fitted), LOOMs (predicted by the form fitted without this
	// cell) and LOORel ((LOO − fwd)/fwd) are filled by the fit.
	FittedMs   float64 `json:"fitted_ms"`
	ResidualMs float64 `json:"residual_ms"`
	LOOMs      float64 `json:"loo_ms"`
	LOORel     float64 `json:"loo_rel"`
}

func (o Obs) input() Input { return Input{MeanLen: o.MeanLen, MaxLen: o.MaxLen, Batch: o.Batch} }

// Candidate is one form tried, with its leave-one-cell-out figures (also for a form rejected
// for a negative coefficient); Rejected says why a form was not eligible ("" when it was). A
// form that could not be fitted or left out cell by cell (too few cells, terms the cells do not
// separate) has no figures: they are absent from the file, and [Candidate.Scored] is false.
type Candidate struct {
	Form         string  `json:"form"`
	LOOWeighted  float64 `json:"loo_weighted_rms,omitempty"` // √(Σ w_i (fwd_i − loo_i)² / Σ w_i), ms
	LOOMedianRel float64 `json:"loo_median_rel,omitempty"`   // median |loo_i − fwd_i| / fwd_i
	LOOMaxRel    float64 `json:"loo_max_rel,omitempty"`      // max of the same
	Rejected     string  `json:"rejected,omitempty"`
}

// Scored reports whether the form has leave-one-out figures: it was fitted and left out cell
// by cell (a form fitting every cell exactly, of figures 0, is eligible).
func (c Candidate) Scored() bool {
	return c.Rejected == "" || c.LOOWeighted > 0 || c.LOOMaxRel > 0
}

// RatioPoint is the measured L_max / L̄ at one batch size (median over the cells of that
// batch size), used to predict the kv_tail term at a new point.
type RatioPoint struct {
	Batch int     `json:"batch"`
	Ratio float64 `json:"ratio"`
}

// Range is the measured domain of the fit: realised mean lengths (tokens) and batch sizes.
type Range struct {
	MeanLen [2]float64 `json:"mean_len"`
	Batch   [2]int     `json:"batch"`
}

// Model is a fitted latency model: the model file (JSON, schema genload.latmodel/v1).
//
//	{"schema": "genload.latmodel/v1", "created": …, "genload_version": …,
//	 "model": served model, "labels": {…}, "max_tokens": m, "runs": [run ids],
//	 "experts": {"experts": E, "active": k} | absent,
//	 "form": "fixed+per_seq+kv_read", "terms": [Term…], "cov_ms2": p×p,
//	 "cells": n, "dof": n − p, "r2": …, "loo_median_rel": …, "loo_max_rel": …,
//	 "range": {…}, "tail_ratio": [{"batch": B, "ratio": L_max/L̄}…],
//	 "candidates": [Candidate…], "observations": [Obs…],
//	 "excluded": ["L=…,B=… in RUN: why"…], "outliers": [Obs… + "reason"]}
type Model struct {
	Schema  string    `json:"schema"`
	Created time.Time `json:"created"`
	Genload string    `json:"genload_version,omitempty"`
	// Model is the served model name of the runs; Labels their [labels] (nil: none).
	Model  string         `json:"model"`
	Labels map[string]any `json:"labels,omitempty"`
	// Mixed lists the differences between the runs fitted together when runs that are not
	// comparable were allowed to mix (--allow-mixed), "different labels: a.json {…} / b.json
	// {…}"; empty otherwise. Across lists the differences between instances of one deployment
	// the runs were measured on ("target: a.json http://h1 / b.json http://h2"): repeats.
	Mixed  []string `json:"mixed,omitempty"`
	Across []string `json:"across,omitempty"`
	// MaxTokens is the max_tokens m of the runs (the kv terms' context growth).
	MaxTokens int `json:"max_tokens"`
	// Runs are the run ids fitted; Engine the built-in engine's description when it was the
	// target (from the first run's header).
	Runs   []string       `json:"runs"`
	Engine map[string]any `json:"engine,omitempty"`
	// Targets are the external servers the runs measured, distinct, in run order (nil for the
	// built-in engine); Context and ContextSource the first run's model context in tokens and
	// where it was read (for an external server, usually its /v1/models). Absent from files
	// written before them.
	Targets       []string `json:"targets,omitempty"`
	Context       int      `json:"context,omitempty"`
	ContextSource string   `json:"context_source,omitempty"`
	// Experts is the mixture-of-experts shape given to the fit (nil: no moe term tried);
	// Structure says where the model's structure came from (flags, the runs' recorded
	// structure, or nothing known: see [ResolveExperts]).
	Experts   *Experts `json:"experts,omitempty"`
	Structure string   `json:"structure,omitempty"`
	// Form is the chosen form, its terms joined by "+"; Terms the coefficients in that order;
	// Cov their covariance matrix (ms² per unit²), Cov[i][j].
	Form  string      `json:"form"`
	Terms []Term      `json:"terms"`
	Cov   [][]float64 `json:"cov_ms2"`
	// CovHC3 is the heteroscedasticity-consistent (HC3) covariance of the same coefficients:
	// a prediction's standard error is the larger of the two (see [Model.PredictAt]); nil in
	// files written before it.
	CovHC3 [][]float64 `json:"cov_hc3_ms2,omitempty"`
	// N is the number of cells fitted and DoF = N − len(Terms).
	N   int `json:"cells"`
	DoF int `json:"dof"`
	// R2 is the weighted coefficient of determination, 1 − Σw(y−ŷ)² / Σw(y−ȳ_w)².
	R2 float64 `json:"r2"`
	// LOOMedianRel and LOOMaxRel are the chosen form's leave-one-cell-out median and max
	// relative error |ŷ_(−i) − y_i| / y_i.
	LOOMedianRel float64      `json:"loo_median_rel"`
	LOOMaxRel    float64      `json:"loo_max_rel"`
	Range        Range        `json:"range"`
	TailRatio    []RatioPoint `json:"tail_ratio"`
	Candidates   []Candidate  `json:"candidates"`
	Obs          []Obs        `json:"observations"`
	// Scatter is the robust relative scatter of the fitted cells about the model (1.4826 ×
	// the median |fwd − fitted| / fitted) and RunLevels each run's level against it: what
	// [Model.Level] makes the model's level uncertainty of.
	Scatter   float64    `json:"scatter_rel"`
	RunLevels []RunLevel `json:"run_levels,omitempty"`
	// Excluded are the cells of the runs not fitted, each with its reason; ExcludedCells the
	// same with their figures, for plots (an outlier is in Outliers instead).
	Excluded      []string       `json:"excluded,omitempty"`
	ExcludedCells []ExcludedCell `json:"excluded_cells,omitempty"`
	// Outliers are the measured cells left out of the final fit because their leave-one-out
	// error was an outlier (see [Fit]), each with its reason.
	Outliers []Outlier `json:"outliers,omitempty"`

	// files are the files the model was read from or fitted to, as given, for messages (not
	// written; nil: messages name its run ids).
	files []string
}

// called is how messages name the model: the files it came from, else its run ids, joined
// by ",".
func (m *Model) called() string {
	if len(m.files) > 0 {
		return strings.Join(m.files, ",")
	}
	return strings.Join(m.Runs, ",")
}

// ExcludedCell is a cell of a run that was not fitted: partial (fewer than B sequences
// counted), failed, or without a per-forward figure. FwdMs and MeanLen are its figures when it
// has them (0 otherwise).
type ExcludedCell struct {
	SeqLen  int     `json:"seq_len"`
	Batch   int     `json:"batch"`
	Run     string  `json:"run"`
	Reason  string  `json:"reason"`
	FwdMs   float64 `json:"fwd_ms,omitempty"`
	MeanLen float64 `json:"mean_len,omitempty"`
}

// ErrPoorFit is wrapped by [Model.CheckQuality]'s error: the model's leave-one-out error is
// too large for its predictions to be compared.
var ErrPoorFit = errors.New("poor fit")

// DefaultMaxFitError is the largest leave-one-cell-out median relative error (a fraction) a
// model may have for the gate to use it, and above which fit warns: 10 %. The gate's default
// mean threshold is 15 %; a model that misses its own typical cell by 10 % or more cannot tell
// a 15 % regression from its own error (two such models differ by that much with no
// regression at all). A clean matrix, against the built-in engine or a quiet server, fits to a
// median below 3 %.
const DefaultMaxFitError = 0.10

// FitQuality is how well a model describes its cells: R² (weighted) and the leave-one-cell-out
// median and max relative error, over Cells cells; Outliers is the number of cells left out.
// Flat is true for the fixed-only form, whose R² is 0 by construction (its fit is the
// weighted mean): the leave-one-out error, not R², says how well it describes the cells.
type FitQuality struct {
	Runs         string  `json:"runs"`
	Flat         bool    `json:"flat,omitempty"`
	Cells        int     `json:"cells"`
	Outliers     int     `json:"outliers,omitempty"`
	R2           float64 `json:"r2"`
	LOOMedianRel float64 `json:"loo_median_rel"`
	LOOMaxRel    float64 `json:"loo_max_rel"`
}

// Quality returns the model's fit figures.
func (m *Model) Quality() FitQuality {
	return FitQuality{Runs: strings.Join(m.Runs, ","), Cells: m.N, Outliers: len(m.Outliers), R2: m.R2, LOOMedianRel: m.LOOMedianRel, LOOMaxRel: m.LOOMaxRel, Flat: m.Form == TermFixed}
}

// String writes the figures, e.g. "R² 0.99812, leave-one-cell-out |error| median 1.20 %, max
// 4.01 % over 20 cells".
func (q FitQuality) String() string {
	r2 := fmt.Sprintf("R² %.5f", q.R2)
	if q.Flat {
		r2 = "flat (fixed only: R² 0 by construction)"
	}
	s := fmt.Sprintf("%s, leave-one-cell-out |error| median %.2f %%, max %.2f %% over %d cells", r2, 100*q.LOOMedianRel, 100*q.LOOMaxRel, q.Cells)
	if q.Outliers > 0 {
		s += fmt.Sprintf(" (%d outlier(s) left out)", q.Outliers)
	}
	return s
}

// CheckQuality returns nil when the model's leave-one-cell-out median relative error is at
// most maxMedian (a fraction; maxMedian ≤ 0 checks nothing), else an error wrapping ErrPoorFit
// (exitcode.InvalidConfig) with the model's runs, its figures and the limit.
func (m *Model) CheckQuality(maxMedian float64) error {
	if maxMedian <= 0 || m.LOOMedianRel <= maxMedian { // NaN fails
		return nil
	}
	return exitcode.With(exitcode.InvalidConfig, &PoorFitError{Model: m, err: fmt.Errorf("%w: the model of runs %s has a leave-one-cell-out median error of %.1f %%, above the %g %% accepted (%s)",
		ErrPoorFit, strings.Join(m.Runs, ", "), 100*m.LOOMedianRel, 100*maxMedian, m.Quality())})
}

// PoorFitError is CheckQuality's error: it wraps ErrPoorFit and carries the model, so that a
// caller can say what would fit it better (Model.Remedy).
type PoorFitError struct {
	Model *Model
	err   error
}

func (e *PoorFitError) Error() string { return e.err.Error() }
func (e *PoorFitError) Unwrap() error { return e.err }

// tooFewCells is in a Candidate's Rejected when the form had fewer cells than it needs (its
// terms + 2), before the number it needs.
const tooFewCells = "the form needs ≥"

// Remedy says what would fit m better, from what it was fitted to: re-measuring (a loaded
// host stalls cells); more cells when forms with more terms were rejected for too few (each
// needs at least its terms + 2 cells); more repeats than it has when it has several, else
// repeats at all.
func (m *Model) Remedy() string {
	parts := []string{"re-measure (a loaded host stalls cells: 'genload fit' lists the residuals and outliers)"}
	for _, c := range m.Candidates {
		if strings.Contains(c.Rejected, tooFewCells) {
			parts = append(parts, fmt.Sprintf("measure more cells (form %s was not fitted: %s; add sequence lengths or batch sizes)", c.Form, c.Rejected))
			break
		}
	}
	if r := len(m.RunLevels); r >= 2 {
		parts = append(parts, fmt.Sprintf("or more repeats than its %d (genload run --repeat N, N > %d), fitted together", r, r))
	} else {
		parts = append(parts, "or measure several times (genload run --repeat N) and fit the repeats together")
	}
	return strings.Join(parts, ", ")
}

// formTerms returns the term names of a form string ("fixed+per_seq+kv_read").
func formTerms(form string) []string { return strings.Split(form, "+") }

// LabelString writes labels sorted by key as "k=v, k=v" (strings quoted); "" for none
// ([compare.LabelText]).
func LabelString(labels map[string]any) string { return compare.LabelText(labels) }

// maxLenRatio returns L_max / L̄ at batch: the measured ratio at that batch size, else
// interpolated linearly in log B between the two nearest measured batch sizes, else the ratio
// of the nearest one (outside the measured range, which Predict flags).
func (m *Model) maxLenRatio(batch int) float64 {
	if len(m.TailRatio) == 0 {
		return 1
	}
	return interpLogB(m.TailRatio, batch, func(r RatioPoint) int { return r.Batch }, func(r RatioPoint) float64 { return r.Ratio })
}

// interpLogB interpolates y at batch size b between points pts (non-empty, ascending and
// distinct batch sizes, batch(p)), linearly in log B; outside their range, the nearest
// point's y.
func interpLogB[P any](pts []P, b int, batch func(P) int, y func(P) float64) float64 {
	i, found := slices.BinarySearchFunc(pts, b, func(p P, b int) int { return batch(p) - b })
	switch {
	case found:
		return y(pts[i])
	case i == 0:
		return y(pts[0])
	case i == len(pts):
		return y(pts[len(pts)-1])
	}
	lo, hi := pts[i-1], pts[i]
	t := (math.Log(float64(b)) - math.Log(float64(batch(lo)))) / (math.Log(float64(batch(hi))) - math.Log(float64(batch(lo))))
	return y(lo) + t*(y(hi)-y(lo))
}

// Prediction is the model's latency at one point.
type Prediction struct {
	Input
	// Ms is the predicted per-forward latency; SEMs its standard error from the
	// coefficients' covariance (√(xᵀ Cov x), the larger of Cov and CovHC3), ms.
	Ms   float64 `json:"ms"`
	SEMs float64 `json:"se_ms"`
	// PILoMs and PIHiMs are, for a model fitted to two or more runs (RunLevels), the 95 %
	// prediction interval of a new run's per-forward latency at the point, ms: on the log
	// scale ln Ms ± t(0.975; ν) · √(s²·(1 + 1/r) + (SEMs/Ms)²), s the SD of a run's level (a
	// new run's level varies as theirs did, about their mean, itself known to s/√r): the
	// sample SD of the r runs' levels, r − 1 degrees of freedom, but no less than a run's cells
	// allow, Scatter/√(N/r) (N cells over the runs; see Model.Level); SEMs the fit's, with the
	// fit's DoF; ν their Welch–Satterthwaite degrees of freedom, so that a fit's SE is not
	// scaled by the t of the runs' few degrees of freedom. It leaves out a single cell's
	// scatter about the model within a run (Model.Scatter). Both 0 for a model of one run:
	// its level spread is not measured.
	PILoMs float64 `json:"pi_lo_ms,omitempty"`
	PIHiMs float64 `json:"pi_hi_ms,omitempty"`
	// Extrapolated reports that the point lies outside the measured Range; Why says where.
	Extrapolated bool   `json:"extrapolated,omitempty"`
	Why          string `json:"why,omitempty"`
}

// ErrExtrapolation is wrapped by Predict's error for a point outside the measured range.
var ErrExtrapolation = errors.New("outside the measured range")

// Predict returns the per-forward latency at mean prompt length meanLen (tokens) and batch
// size batch. L_max is meanLen × [Model.TailRatio] at batch. A point outside [Model.Range] is
// an error wrapping ErrExtrapolation (carrying exitcode.OutOfRange) unless extrapolate is
// set, when it is returned flagged. Non-finite or non-positive inputs are errors.
func (m *Model) Predict(meanLen float64, batch int, extrapolate bool) (Prediction, error) {
	if math.IsNaN(meanLen) || math.IsInf(meanLen, 0) || meanLen <= 0 {
		return Prediction{}, exitcode.Errorf(exitcode.InvalidConfig, "predict: mean prompt length must be a positive number of tokens, got %v", meanLen)
	}
	if batch < 1 {
		return Prediction{}, exitcode.Errorf(exitcode.InvalidConfig, "predict: batch size must be ≥ 1, got %d", batch)
	}
	in := Input{MeanLen: meanLen, Batch: batch, MaxLen: meanLen * m.maxLenRatio(batch)}
	p := m.PredictAt(in)
	if p.Extrapolated {
		if !extrapolate {
			return p, exitcode.With(exitcode.OutOfRange, fmt.Errorf("predict L̄=%g B=%d: %w: %s", meanLen, batch, ErrExtrapolation, p.Why))
		}
	}
	return p, nil
}

// PredictAt returns the per-forward latency (ms) of a batch given by its batch size, realised
// mean and longest prompt lengths (in.MaxLen 0: mean length × [Model.TailRatio] at the batch
// size), with the standard error √(xᵀ Cov x) from the coefficients' covariance. It checks
// nothing: a point outside [Model.Range] is predicted and flagged (Extrapolated, Why), a
// non-positive input is computed as it is.
func (m *Model) PredictAt(in Input) Prediction {
	if in.MaxLen == 0 {
		in.MaxLen = in.MeanLen * m.maxLenRatio(in.Batch)
	}
	p := Prediction{Input: in}
	var why []string
	if in.MeanLen < m.Range.MeanLen[0]*(1-1e-9) || in.MeanLen > m.Range.MeanLen[1]*(1+1e-9) {
		why = append(why, fmt.Sprintf("mean length %g not in the measured [%g, %g] tokens", in.MeanLen, m.Range.MeanLen[0], m.Range.MeanLen[1]))
	}
	if in.Batch < m.Range.Batch[0] || in.Batch > m.Range.Batch[1] {
		why = append(why, fmt.Sprintf("batch size %d not in the measured [%d, %d]", in.Batch, m.Range.Batch[0], m.Range.Batch[1]))
	}
	p.Extrapolated, p.Why = len(why) > 0, strings.Join(why, "; ")
	x := m.regressors(in)
	for i, t := range m.Terms {
		p.Ms += t.Coef * x[i]
	}
	p.SEMs = math.Sqrt(max(m.quad(x), 0))
	if r := len(m.RunLevels); r >= 2 && p.Ms > 0 {
		lv := make([]float64, r)
		for i, x := range m.RunLevels {
			lv[i] = x.Level
		}
		sd := stat.StdDev(lv, nil)
		if n := m.runCells(); n > 0 {
			sd = max(sd, m.cellScatter()/math.Sqrt(float64(n)/float64(r)))
		}
		rel := p.SEMs / p.Ms
		se, dof := combine(component{sd * sd * (1 + 1/float64(r)), float64(r - 1)}, component{rel * rel, float64(max(m.DoF, 1))})
		h := stats.TQuantile(0.975, dof) * se
		p.PILoMs, p.PIHiMs = p.Ms*math.Exp(-h), p.Ms*math.Exp(h)
	}
	return p
}

// quad returns the larger of aᵀ·Cov·a and aᵀ·CovHC3·a: the variance of the linear combination
// a of the coefficients, model-based or heteroscedasticity-consistent, whichever is wider.
func (m *Model) quad(a []float64) float64 {
	v := quadForm(m.Cov, a)
	if m.CovHC3 != nil {
		v = max(v, quadForm(m.CovHC3, a))
	}
	return v
}

// quadForm returns aᵀ·c·a (entries of c missing count as 0).
func quadForm(c [][]float64, a []float64) float64 {
	var v float64
	for i := range a {
		for j := range a {
			if i < len(c) && j < len(c[i]) {
				v += a[i] * c[i][j] * a[j]
			}
		}
	}
	return v
}

// Validate checks a model read from a file: schema, a known form whose terms match Terms,
// finite coefficients, a covariance of the right shape, a range, and Experts for a moe term.
func (m *Model) Validate() error {
	var errs []error
	if m.Schema != Schema {
		errs = append(errs, fmt.Errorf("[schema] %q, want %q", m.Schema, Schema))
	}
	names := formTerms(m.Form)
	if len(names) != len(m.Terms) {
		errs = append(errs, fmt.Errorf("[form] %q has %d terms, [terms] %d", m.Form, len(names), len(m.Terms)))
	}
	for i, t := range m.Terms {
		if _, ok := termInfo[t.Name]; !ok {
			errs = append(errs, fmt.Errorf("[terms] %d: unknown term %q (known: %s)", i, t.Name, strings.Join(termOrder, ", ")))
		} else if i < len(names) && names[i] != t.Name {
			errs = append(errs, fmt.Errorf("[terms] %d is %q, [form] says %q", i, t.Name, names[i]))
		}
		if math.IsNaN(t.Coef) || math.IsInf(t.Coef, 0) {
			errs = append(errs, fmt.Errorf("[terms] %s: coefficient %v", t.Name, t.Coef))
		}
		if t.Name == TermMoE && m.Experts == nil {
			errs = append(errs, errors.New("[terms] moe without [experts]"))
		}
	}
	if len(m.Cov) != len(m.Terms) || slices.ContainsFunc(m.Cov, func(r []float64) bool { return len(r) != len(m.Terms) }) {
		errs = append(errs, fmt.Errorf("[cov_ms2] must be %d×%d", len(m.Terms), len(m.Terms)))
	}
	if m.CovHC3 != nil && (len(m.CovHC3) != len(m.Terms) || slices.ContainsFunc(m.CovHC3, func(r []float64) bool { return len(r) != len(m.Terms) })) {
		errs = append(errs, fmt.Errorf("[cov_hc3_ms2] must be %d×%d", len(m.Terms), len(m.Terms)))
	}
	if math.IsNaN(m.Scatter) || m.Scatter < 0 {
		errs = append(errs, fmt.Errorf("[scatter_rel] %v: want a fraction ≥ 0", m.Scatter))
	}
	if err := m.Experts.validate(); err != nil {
		errs = append(errs, err)
	}
	if !(m.Range.MeanLen[0] > 0 && m.Range.MeanLen[1] >= m.Range.MeanLen[0] && m.Range.Batch[0] >= 1 && m.Range.Batch[1] >= m.Range.Batch[0]) {
		errs = append(errs, fmt.Errorf("[range] %v is not a range", m.Range))
	}
	if m.MaxTokens < 1 {
		errs = append(errs, fmt.Errorf("[max_tokens] must be ≥ 1, got %d", m.MaxTokens))
	}
	return exitcode.With(exitcode.InvalidConfig, errors.Join(errs...))
}
