package latmodel

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/stats"
)

// FitOptions configure [Fit].
type FitOptions struct {
	// MaxTokens is m, the tokens generated per sequence (≥ 1).
	MaxTokens int
	// Experts enables the moe term (nil: dense, the term is not tried).
	Experts *Experts
	// Forms restricts the candidate forms (each "fixed" or "fixed+…"); nil tries every form of
	// [Forms].
	Forms []string
	// KeepOutliers fits every cell, outliers included (see [Fit]).
	KeepOutliers bool
	// Dense, with Experts nil, fits the dense form even when the runs record a mixture of
	// experts (genload fit --experts 0). Lookup finds the structure of a built-in engine
	// profile for results files that predate its record (see [ResolveExperts]). Both are
	// used by [FitRuns] only.
	Dense  bool
	Lookup ProfileLookup
}

// Outlier rules of [Fit]: a cell is an outlier when the absolute relative error of its
// leave-one-out prediction exceeds both OutlierFactor × the median over the cells and
// OutlierMinRel. The median absolute error is the typical size of the model's error; 5 × it
// is far outside it (a Gaussian error exceeds 5 × its median absolute value, 3.4 σ, in fewer
// than 1 in 1 000 cells), and the 25 % floor keeps a good fit (median 0.5 %) from shedding
// cells that are merely 3 % off: only a figure that is wrong, not noisy, is left out.
const (
	OutlierFactor = 5.0
	OutlierMinRel = 0.25
)

// Outlier is a cell left out of the final fit, with why.
type Outlier struct {
	Obs
	Reason string `json:"reason"`
}

// Forms returns the candidate forms: fixed with every subset of per_seq, kv_read, kv_tail and
// (when moe) moe in which kv_tail comes with kv_read (the attention tail is a correction to
// the KV-cache read; alone, at one batch size, it is the same column as kv_read), fewest terms
// first. The fixed-only form is the flat server's, whose forward pass depends on neither L
// nor B within noise (short contexts on a large GPU); each form without a term is the fit
// with that term held at 0.
func Forms(moe bool) []string {
	opt := []string{TermPerSeq, TermKVRead, TermKVTail}
	if moe {
		opt = append(opt, TermMoE)
	}
	var forms [][]string
	for mask := 0; mask < 1<<len(opt); mask++ {
		f := []string{TermFixed}
		for i, t := range opt {
			if mask&(1<<i) != 0 {
				f = append(f, t)
			}
		}
		if slices.Contains(f, TermKVTail) && !slices.Contains(f, TermKVRead) {
			continue
		}
		slices.SortFunc(f, func(a, b string) int { return slices.Index(termOrder, a) - slices.Index(termOrder, b) })
		forms = append(forms, f)
	}
	slices.SortStableFunc(forms, func(a, b []string) int { return len(a) - len(b) })
	out := make([]string, len(forms))
	for i, f := range forms {
		out[i] = strings.Join(f, "+")
	}
	return out
}

// ErrTooFewCells is wrapped by Fit's error when there are fewer cells than a form needs.
var ErrTooFewCells = errors.New("too few cells to fit")

// Fit fits the candidate forms to obs by weighted least squares (weights 1/σ²) and returns the
// model of the form with the smallest leave-one-cell-out weighted RMS error, among the forms
// whose every coefficient is ≥ 0: each term is a cost, and a negative coefficient is the fit
// borrowing from another term. This is the non-negative least-squares fit, chosen by leave-
// one-out: a form with a negative term is rejected (saying so), and the form without that term
// — the fit with the term held at 0 — is among the candidates. The chosen form's 95 %
// intervals are intersected with β ≥ 0 (a lower bound below 0 becomes 0: the true cost is not
// negative, so the interval covers it as often as before); they are intervals under the chosen
// form, as for any form chosen. The model's Obs carry each cell's fitted value, residual and
// leave-one-out prediction.
//
// Outliers: unless opt.KeepOutliers, a cell whose leave-one-out relative error under the
// chosen form is an outlier (see [OutlierFactor]) is left out and the forms are chosen again
// on the other cells; such cells are in Model.Outliers with the reason, never dropped
// silently. When the other cells cannot be fitted, the outliers are kept in the fit and their
// reason says so.
//
// Errors (carrying exitcode.InvalidConfig): no cell, fewer than p + 2 cells for every form
// (p terms: one degree of freedom for the interval, one left out), a non-finite or
// non-positive figure, length or σ (named by cell), no eligible form (each rejected form and
// why), bad Experts.
func Fit(obs []Obs, opt FitOptions) (*Model, error) {
	forms, err := checkFitInput(obs, opt)
	if err != nil {
		return nil, err
	}
	base := &Model{Schema: Schema, MaxTokens: opt.MaxTokens, Experts: opt.Experts}
	best, cands, screen, err := base.choose(obs, forms)
	if best == nil && (screen == nil || opt.KeepOutliers) {
		return nil, err
	}
	var outliers []Outlier
	if !opt.KeepOutliers {
		var rest []Obs
		// The chosen form judges the cells; when none is eligible (an absurd cell can drive a
		// coefficient below zero in every form), the form that predicts best does.
		det := best
		if det == nil {
			det = screen
		}
		outliers, rest = findOutliers(obs, det)
		if best == nil && len(outliers) == 0 {
			return nil, err
		}
		if len(outliers) > 0 {
			b2, c2, _, err2 := base.choose(rest, forms)
			switch {
			case err2 == nil:
				best, cands, obs = b2, c2, rest
			case best == nil:
				var which []string
				for _, o := range outliers {
					which = append(which, fmt.Sprintf("L=%d,B=%d", o.SeqLen, o.Batch))
				}
				return nil, exitcode.With(exitcode.InvalidConfig, fmt.Errorf("%w (also without the outlier cell(s) %s: %v)", err, strings.Join(which, " "), err2))
			default:
				// Without them nothing can be fitted: keep them, and say so.
				for i := range outliers {
					outliers[i].Reason += fmt.Sprintf("; kept in the fit: without the outliers %v", err2)
				}
			}
		}
	}
	m := base
	m.Outliers = outliers
	m.Candidates = cands
	m.setFit(obs, best)
	return m, nil
}

// checkFitInput checks Fit's arguments (see its errors) and returns the forms to try.
func checkFitInput(obs []Obs, opt FitOptions) ([]string, error) {
	if len(obs) == 0 {
		return nil, exitcode.Errorf(exitcode.InvalidConfig, "fit: no measured cell to fit")
	}
	if opt.MaxTokens < 1 {
		return nil, exitcode.Errorf(exitcode.InvalidConfig, "fit: max_tokens must be ≥ 1, got %d", opt.MaxTokens)
	}
	if err := opt.Experts.validate(); err != nil {
		return nil, err
	}
	var bad []error
	for _, o := range obs {
		for _, v := range []struct {
			name string
			x    float64
		}{{"fwd", o.FwdMs}, {"sigma", o.SigmaMs}, {"mean length", o.MeanLen}, {"max length", o.MaxLen}, {"batch size", float64(o.Batch)}} {
			if math.IsNaN(v.x) || math.IsInf(v.x, 0) || v.x <= 0 {
				bad = append(bad, fmt.Errorf("cell L=%d,B=%d: %s is %v (want a positive finite number)", o.SeqLen, o.Batch, v.name, v.x))
			}
		}
	}
	if len(bad) > 0 {
		return nil, exitcode.With(exitcode.InvalidConfig, fmt.Errorf("fit: %w", errors.Join(bad...)))
	}
	forms := opt.Forms
	if forms == nil {
		forms = Forms(opt.Experts != nil)
	}
	for _, form := range forms {
		for _, t := range formTerms(form) {
			if _, ok := termInfo[t]; !ok {
				return nil, exitcode.Errorf(exitcode.InvalidConfig, "fit: form %q: unknown term %q (known: %s)", form, t, strings.Join(termOrder, ", "))
			}
			if t == TermMoE && opt.Experts == nil {
				return nil, exitcode.Errorf(exitcode.InvalidConfig, "fit: form %q: the moe term needs the experts E and active k", form)
			}
		}
	}
	return forms, nil
}

// findOutliers splits obs by det's leave-one-out errors into the outliers (see
// [OutlierFactor], each with its reason) and the rest.
func findOutliers(obs []Obs, det *fitted) (outliers []Outlier, rest []Obs) {
	for i, o := range obs {
		rel := (det.looPred[i] - o.FwdMs) / o.FwdMs
		if math.Abs(rel) > OutlierFactor*det.looMed && math.Abs(rel) > OutlierMinRel {
			o.LOOMs, o.LOORel = det.looPred[i], rel
			outliers = append(outliers, Outlier{Obs: o, Reason: fmt.Sprintf(
				"leave-one-out error %+.1f %% (%.4g ms predicted from the other cells by %s, %.4g ms measured) is above %g × the median %.2f %% and above %g %%",
				100*rel, det.looPred[i], strings.Join(det.terms, "+"), o.FwdMs, OutlierFactor, 100*det.looMed, 100*OutlierMinRel)})
		} else {
			rest = append(rest, o)
		}
	}
	return outliers, rest
}

// setFit fills m with the fit best of obs: the cells with their fitted value, residual and
// leave-one-out prediction, the range, the form and its terms, covariances, R², leave-one-out
// errors and scatter.
func (m *Model) setFit(obs []Obs, best *fitted) {
	m.N = len(obs)
	m.Obs = slices.Clone(obs)
	m.Range, m.TailRatio = rangeOf(obs)
	m.Form = strings.Join(best.terms, "+")
	for i, t := range best.terms {
		m.Terms = append(m.Terms, Term{Name: t, Coef: best.beta[i], SE: best.se[i], Lo: max(best.lo[i], 0), Hi: best.hi[i],
			Unit: termInfo[t].unit, Doc: termInfo[t].doc})
	}
	m.Cov, m.CovHC3 = best.cov, best.hc3
	m.DoF = len(obs) - len(best.terms)
	m.R2 = best.r2
	m.LOOMedianRel, m.LOOMaxRel = best.looMed, best.looMax
	for i := range m.Obs {
		m.Obs[i].FittedMs = best.fit[i]
		m.Obs[i].ResidualMs = m.Obs[i].FwdMs - best.fit[i]
		m.Obs[i].LOOMs = best.looPred[i]
		m.Obs[i].LOORel = (best.looPred[i] - m.Obs[i].FwdMs) / m.Obs[i].FwdMs
	}
	m.Scatter = scatterOf(m.Obs)
}

// choose fits every form of forms to obs and returns the eligible one with the smallest
// leave-one-out weighted RMS error, every candidate with its figures or why it was rejected,
// and the form with the smallest leave-one-out error among all that could be fitted, eligible
// or not (for finding outlier cells). The error (exitcode.InvalidConfig) lists each form's
// rejection when none is eligible.
func (m *Model) choose(obs []Obs, forms []string) (best *fitted, cands []Candidate, screen *fitted, err error) {
	for _, form := range forms {
		terms := formTerms(form)
		c := Candidate{Form: form}
		if len(obs) < len(terms)+2 {
			c.Rejected = fmt.Sprintf("%d cells, %s %d", len(obs), tooFewCells, len(terms)+2)
			cands = append(cands, c)
			continue
		}
		f, err := m.fit(obs, terms)
		if err != nil {
			c.Rejected = err.Error()
			cands = append(cands, c)
			continue
		}
		for i, t := range terms {
			if f.beta[i] < 0 && c.Rejected == "" {
				ti := termInfo[t]
				c.Rejected = fmt.Sprintf("%s coefficient %.3g %s < 0 (95 %% interval [%.3g, %.3g]): not a cost",
					t, f.beta[i]*ti.scale, ti.unit, f.lo[i]*ti.scale, f.hi[i]*ti.scale)
				if t != TermFixed {
					c.Rejected += "; the forms without it hold it at 0"
				}
			}
		}
		if err := m.loo(obs, terms, f); err != nil {
			if c.Rejected == "" {
				c.Rejected = err.Error()
			}
		} else if screen == nil || f.looRMS < screen.looRMS {
			screen = f
		}
		c.LOOWeighted, c.LOOMedianRel, c.LOOMaxRel = f.looRMS, f.looMed, f.looMax
		cands = append(cands, c)
		if c.Rejected == "" && (best == nil || f.looRMS < best.looRMS) {
			best = f
		}
	}
	if best == nil {
		var why []string
		for _, c := range cands {
			why = append(why, c.Form+": "+c.Rejected)
		}
		err := fmt.Errorf("fit: no form could be fitted to %d cells: %s", len(obs), strings.Join(why, "; "))
		if len(obs) < 3 {
			err = fmt.Errorf("fit: %w: %d cell(s), the smallest form needs 3 (1 term, one degree of freedom, one cell left out)", ErrTooFewCells, len(obs))
		}
		return nil, cands, screen, exitcode.With(exitcode.InvalidConfig, err)
	}
	return best, cands, screen, nil
}

// fitted is one form's weighted least-squares fit.
type fitted struct {
	terms                  []string
	beta, se, lo, hi       []float64
	cov, hc3               [][]float64 // model-based s²(XᵀWX)⁻¹ and heteroscedasticity-consistent
	fit                    []float64   // ŷ per cell
	r2                     float64
	looPred                []float64
	looRMS, looMed, looMax float64
}

// design returns the regressor matrix of obs for terms, weighted rows √w_i·x_i, and the
// weighted response √w_i·y_i, with each column scaled by its largest absolute value (returned)
// so that QR works on columns of comparable size (x ranges from 1 to 10⁷ tokens).
func (m *Model) design(obs []Obs, terms []string) (*mat.Dense, *mat.VecDense, []float64) {
	n, p := len(obs), len(terms)
	x := mat.NewDense(n, p, nil)
	y := mat.NewVecDense(n, nil)
	scale := make([]float64, p)
	for i, o := range obs {
		sw := 1 / o.SigmaMs
		for j, t := range terms {
			v := m.x(t, o.input()) * sw
			x.Set(i, j, v)
			scale[j] = max(scale[j], math.Abs(v))
		}
		y.SetVec(i, o.FwdMs*sw)
	}
	for j := range scale {
		if scale[j] == 0 {
			scale[j] = 1
		}
		for i := 0; i < n; i++ {
			x.Set(i, j, x.At(i, j)/scale[j])
		}
	}
	return x, y, scale
}

// maxCond is the largest condition number of the scaled design accepted: beyond it two terms
// are not told apart by the cells (e.g. every cell has the same batch size).
const maxCond = 1e8

// solve returns the coefficients (in unscaled units) of the weighted fit of obs by terms.
func (m *Model) solve(obs []Obs, terms []string) ([]float64, *mat.Dense, []float64, error) {
	x, y, scale := m.design(obs, terms)
	if c := mat.Cond(x, 2); c > maxCond || math.IsInf(c, 0) || math.IsNaN(c) {
		return nil, nil, nil, fmt.Errorf("terms %s not separable on these cells (condition number %.3g): vary L and B more", strings.Join(terms, ", "), c)
	}
	var qr mat.QR
	qr.Factorize(x)
	var b mat.VecDense
	if err := qr.SolveVecTo(&b, false, y); err != nil {
		return nil, nil, nil, fmt.Errorf("least squares: %w", err)
	}
	beta := make([]float64, len(terms))
	for j := range beta {
		beta[j] = b.AtVec(j) / scale[j]
	}
	return beta, x, scale, nil
}

// fit fits obs by terms and fills coefficients, their covariance and intervals, fitted values
// and R². The covariance is s²·(XᵀWX)⁻¹ with s² = Σ w_i r_i² / (n − p): σ is taken as a
// relative weight and scaled to the residuals (so that intervals hold when the σ are right up
// to a common factor). Beside it, the heteroscedasticity-consistent HC3 covariance (MacKinnon
// and White 1985; Long and Ervin 2000 for small samples), which holds when the σ are wrong
// cell by cell — as two repeats' spread, of one degree of freedom per cell, makes them.
func (m *Model) fit(obs []Obs, terms []string) (*fitted, error) {
	beta, xs, scale, err := m.solve(obs, terms)
	if err != nil {
		return nil, err
	}
	n, p := len(obs), len(terms)
	f := &fitted{terms: terms, beta: beta, fit: make([]float64, n)}
	var chi2 float64
	ys, ws := make([]float64, n), make([]float64, n)
	for i, o := range obs {
		for j, t := range terms {
			f.fit[i] += beta[j] * m.x(t, o.input())
		}
		w := 1 / (o.SigmaMs * o.SigmaMs)
		r := o.FwdMs - f.fit[i]
		chi2 += w * r * r
		ys[i], ws[i] = o.FwdMs, w
	}
	dof := n - p
	s2 := chi2 / float64(dof)
	var xtx mat.SymDense
	xtx.SymOuterK(1, xs.T())
	var ch mat.Cholesky
	if !ch.Factorize(&xtx) {
		return nil, fmt.Errorf("terms %s: normal matrix not positive definite", strings.Join(terms, ", "))
	}
	var inv mat.SymDense
	if err := ch.InverseTo(&inv); err != nil {
		return nil, fmt.Errorf("terms %s: %w", strings.Join(terms, ", "), err)
	}
	// HC3: the sandwich (XᵀWX)⁻¹ [Σ x_i x_iᵀ e_i² / (1 − h_ii)²] (XᵀWX)⁻¹ in the weighted,
	// scaled coordinates, e_i the weighted residual and h_ii the leverage.
	meat := mat.NewSymDense(p, nil)
	row := mat.NewVecDense(p, nil)
	var hv mat.VecDense
	for i, o := range obs {
		for j := 0; j < p; j++ {
			row.SetVec(j, xs.At(i, j))
		}
		hv.MulVec(&inv, row)
		h := mat.Dot(row, &hv)
		e := (o.FwdMs - f.fit[i]) / o.SigmaMs / (1 - min(h, 1-1e-9))
		meat.SymRankOne(meat, e*e, row)
	}
	var tmp, hc3 mat.Dense
	tmp.Mul(&inv, meat)
	hc3.Mul(&tmp, &inv)
	t := stats.TQuantile(0.975, float64(dof))
	f.cov, f.hc3 = make([][]float64, p), make([][]float64, p)
	f.se, f.lo, f.hi = make([]float64, p), make([]float64, p), make([]float64, p)
	for i := 0; i < p; i++ {
		f.cov[i], f.hc3[i] = make([]float64, p), make([]float64, p)
		for j := 0; j < p; j++ {
			f.cov[i][j] = s2 * inv.At(i, j) / (scale[i] * scale[j])
			f.hc3[i][j] = hc3.At(i, j) / (scale[i] * scale[j])
		}
		f.se[i] = math.Sqrt(f.cov[i][i])
		f.lo[i], f.hi[i] = beta[i]-t*f.se[i], beta[i]+t*f.se[i]
	}
	mean := stat.Mean(ys, ws)
	var tss float64
	for i := range ys {
		tss += ws[i] * (ys[i] - mean) * (ys[i] - mean)
	}
	f.r2 = 1 - chi2/tss
	if tss == 0 {
		f.r2 = math.NaN()
	}
	return f, nil
}

// loo refits terms n times, each time without one cell, and records the left-out cell's
// prediction, the weighted RMS of the left-out errors and the median and max relative error.
func (m *Model) loo(obs []Obs, terms []string, f *fitted) error {
	n := len(obs)
	f.looPred = make([]float64, n)
	rel := make([]float64, n)
	var num, den float64
	rest := make([]Obs, 0, n-1)
	for i, o := range obs {
		rest = append(rest[:0], obs[:i]...)
		rest = append(rest, obs[i+1:]...)
		beta, _, _, err := m.solve(rest, terms)
		if err != nil {
			return fmt.Errorf("without cell L=%d,B=%d: %w", o.SeqLen, o.Batch, err)
		}
		for j, t := range terms {
			f.looPred[i] += beta[j] * m.x(t, o.input())
		}
		e := f.looPred[i] - o.FwdMs
		w := 1 / (o.SigmaMs * o.SigmaMs)
		num += w * e * e
		den += w
		rel[i] = math.Abs(e) / o.FwdMs
	}
	f.looRMS = math.Sqrt(num / den)
	f.looMed, f.looMax = stats.Median(rel), slices.Max(rel)
	return nil
}

// rangeOf returns the measured range of obs and the L_max / L̄ ratio per batch size (median
// over that batch size's cells, ascending batch).
func rangeOf(obs []Obs) (Range, []RatioPoint) {
	r := Range{MeanLen: [2]float64{math.Inf(1), 0}, Batch: [2]int{math.MaxInt, 0}}
	by := map[int][]float64{}
	for _, o := range obs {
		r.MeanLen[0], r.MeanLen[1] = min(r.MeanLen[0], o.MeanLen), max(r.MeanLen[1], o.MeanLen)
		r.Batch[0], r.Batch[1] = min(r.Batch[0], o.Batch), max(r.Batch[1], o.Batch)
		by[o.Batch] = append(by[o.Batch], o.MaxLen/o.MeanLen)
	}
	var ratios []RatioPoint
	for b, rs := range by {
		ratios = append(ratios, RatioPoint{Batch: b, Ratio: stats.Median(rs)})
	}
	slices.SortFunc(ratios, func(a, b RatioPoint) int { return a.Batch - b.Batch })
	return r, ratios
}
