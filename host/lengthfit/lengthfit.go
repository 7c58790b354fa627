// Package lengthfit fits distributions to prompt (or output) lengths by maximum likelihood and
// says which describes them best: the step from a production request log (host/trace) to the
// [lengths] settings of a benchmark.
//
// # The fits
//
// For n lengths x_i > 0 (tokens, treated as continuous), with x̄ = Σx_i/n and
// m = Σ log x_i / n:
//
//	gamma(k, θ)       density x^(k−1) e^(−x/θ) / (Γ(k) θ^k). For a given k the likelihood is
//	                  largest at θ = x̄/k, leaving the profile log-likelihood
//	                    ℓ(k)/n = (k − 1)·m − k − k·log(x̄/k) − log Γ(k),
//	                  maximised over log k by gonum's optimize (BFGS; its gradient is
//	                  k·(log k − ψ(k) − s), s = log x̄ − m > 0, zero at the classic MLE
//	                  equation log k − ψ(k) = s). k's 95 % interval is the profile-likelihood
//	                  interval {k : 2·(ℓ(k̂) − ℓ(k)) ≤ χ²₁(0.95) = 3.841}, found by bisection
//	                  in log k on either side of k̂ (Wilks; better than k̂ ± 1.96·se for
//	                  the skewed likelihood of a shape parameter).
//	lognormal(μ, σ)   closed form: μ = m, σ² = Σ(log x_i − μ)²/n.
//	Weibull(c, λ)     for a given c, λ = (Σx_i^c/n)^(1/c), leaving
//	                    ℓ(c)/n = log c − log(Σx_i^c/n) + (c − 1)·m − 1
//	                  (on lengths rescaled to x_i/x̄, which leaves c unchanged), maximised over
//	                  log c by optimize (BFGS).
//	empirical         the quantile table written for the empirical plugin (see [Table]): a
//	                  histogram whose bin edges are the sample's quantiles at j/bins, read as a
//	                  piecewise-uniform density, with log-likelihood Σ_i log(c_j / (n·w_j)) for
//	                  x_i in bin j of count c_j and width w_j.
//
// Goodness of fit: the Kolmogorov–Smirnov distance D = sup_x |F_n(x) − F(x)| between the
// sample's empirical CDF and the fitted CDF (gonum distuv's), and AIC = 2p − 2ℓ with p the
// fitted parameters (2 for each parametric fit; 2·bins for the table: its bins + 1 edges and
// bins − 1 free counts). The best fit is the one of lowest AIC. Since a benchmark cell rescales
// its lengths to mean L, only the shape (k, σ, c, the table's ratios) carries over to bench.toml.
package lengthfit

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/mathext"
	"gonum.org/v1/gonum/optimize"
	"gonum.org/v1/gonum/stat/distuv"
)

// Fit names.
const (
	Gamma     = "gamma"
	LogNormal = "lognormal"
	Weibull   = "weibull"
	Empirical = "empirical"
)

// chi2 is χ²₁(0.95), the profile-likelihood threshold of a 95 % interval (distuv's quantile).
var chi2 = distuv.ChiSquared{K: 1}.Quantile(0.95)

// Param is one fitted parameter; Lo and Hi are its 95 % interval when known (else NaN).
type Param struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Lo, Hi float64 `json:"-"`
}

// Fit is one distribution fitted to the lengths.
type Fit struct {
	// Name is Gamma, LogNormal, Weibull or Empirical.
	Name string `json:"name"`
	// Params are the fitted parameters: gamma k (shape) and theta (scale, tokens); lognormal
	// mu and sigma (of log tokens); weibull c (shape) and lambda (scale, tokens); empirical
	// bins.
	Params []Param `json:"params"`
	// LogLik is the maximised log-likelihood (natural log, density in 1/token); AIC = 2p − 2ℓ.
	LogLik float64 `json:"loglik"`
	AIC    float64 `json:"aic"`
	// KS is the Kolmogorov–Smirnov distance to the sample (0 … 1).
	KS float64 `json:"ks"`
	// CDF is the fitted distribution's CDF (tokens → probability).
	CDF func(float64) float64 `json:"-"`
}

// Param returns the parameter called name (NaN value when absent).
func (f *Fit) Param(name string) Param {
	for _, p := range f.Params {
		if p.Name == name {
			return p
		}
	}
	return Param{Name: name, Value: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
}

// Summary describes the sample. Lengths are in tokens; CV is the standard deviation (1/n)
// over the mean; percentiles are nearest-rank.
type Summary struct {
	N                       int
	Mean, CV                float64
	Min, P50, P90, P99, Max float64
}

// Result is every fit of one sample, best (lowest AIC) first.
type Result struct {
	Summary Summary
	Fits    []Fit
	// Table is the empirical fit's quantile table.
	Table Table
}

// Best returns the fit of lowest AIC.
func (r *Result) Best() *Fit { return &r.Fits[0] }

// Get returns the fit called name, or nil.
func (r *Result) Get(name string) *Fit {
	for i := range r.Fits {
		if r.Fits[i].Name == name {
			return &r.Fits[i]
		}
	}
	return nil
}

// Options configure [FitAll].
type Options struct {
	// Bins is the number of quantile bins of the empirical table. Default 32.
	Bins int
}

// Errors of [FitAll]; each returned error wraps one and says which value and where it is.
var (
	ErrEmpty    = errors.New("no lengths")
	ErrNegative = errors.New("negative length")
	ErrZero     = errors.New("zero length")
	ErrAllEqual = errors.New("every length is the same")
	ErrTooFew   = errors.New("too few lengths")
)

// ValueError is a bad length of the sample: Index is its position in the slice given to
// FitAll, so that a caller can name the record it came from.
type ValueError struct {
	Index int
	Value float64
	Err   error // ErrNegative, ErrZero or a non-finite value's
}

func (e *ValueError) Error() string {
	switch {
	case errors.Is(e.Err, ErrZero):
		return fmt.Sprintf("length %d is 0 tokens: %v (every fit needs log x; drop empty requests)", e.Index, e.Err)
	case errors.Is(e.Err, ErrNegative):
		return fmt.Sprintf("length %d is %v tokens: %v", e.Index, e.Value, e.Err)
	}
	return fmt.Sprintf("length %d is %v: %v", e.Index, e.Value, e.Err)
}

func (e *ValueError) Unwrap() error { return e.Err }

// MinN is the fewest lengths FitAll fits.
const MinN = 3

// FitAll fits every distribution of the package documentation to xs (tokens). Errors: no
// lengths (ErrEmpty), fewer than MinN (ErrTooFew), a negative, zero or non-finite length (a
// *ValueError wrapping ErrNegative, ErrZero), every length equal (ErrAllEqual: no shape to
// fit), or an optimizer that did not converge.
func FitAll(xs []float64, opt Options) (*Result, error) {
	if opt.Bins <= 0 {
		opt.Bins = 32
	}
	n := len(xs)
	switch {
	case n == 0:
		return nil, ErrEmpty
	case n < MinN:
		return nil, fmt.Errorf("%w: %d, want at least %d", ErrTooFew, n, MinN)
	}
	var sum, sumLog float64
	for i, x := range xs {
		switch {
		case math.IsNaN(x) || math.IsInf(x, 0):
			return nil, &ValueError{i, x, errors.New("want a finite number of tokens")}
		case x < 0:
			return nil, &ValueError{i, x, ErrNegative}
		case x == 0:
			return nil, &ValueError{i, x, ErrZero}
		}
		sum += x
		sumLog += math.Log(x)
	}
	sorted := slices.Clone(xs)
	sort.Float64s(sorted)
	if sorted[0] == sorted[n-1] {
		return nil, fmt.Errorf("%w: all %d are %v tokens", ErrAllEqual, n, sorted[0])
	}
	s := sample{x: sorted, n: float64(n), mean: sum / float64(n), mlog: sumLog / float64(n)}
	r := &Result{Summary: summarize(sorted, s.mean)}
	g, err := s.gamma()
	if err != nil {
		return nil, err
	}
	w, err := s.weibull()
	if err != nil {
		return nil, err
	}
	r.Table = NewTable(sorted, opt.Bins)
	for _, f := range []Fit{g, s.lognormal(), w, s.empirical(r.Table)} {
		f.KS = KS(sorted, f.CDF)
		r.Fits = append(r.Fits, f)
	}
	sort.SliceStable(r.Fits, func(i, j int) bool { return r.Fits[i].AIC < r.Fits[j].AIC })
	return r, nil
}

func summarize(sorted []float64, mean float64) Summary {
	n := len(sorted)
	var ss float64
	for _, x := range sorted {
		ss += (x - mean) * (x - mean)
	}
	rank := func(q float64) float64 { return sorted[max(0, int(math.Ceil(q*float64(n)))-1)] }
	return Summary{N: n, Mean: mean, CV: math.Sqrt(ss/float64(n)) / mean,
		Min: sorted[0], P50: rank(0.5), P90: rank(0.9), P99: rank(0.99), Max: sorted[n-1]}
}

// sample is the sorted lengths and their sufficient statistics.
type sample struct {
	x          []float64
	n          float64
	mean, mlog float64
}

// gammaProfile is ℓ(k)/n of the package documentation.
func (s *sample) gammaProfile(k float64) float64 {
	lg, _ := math.Lgamma(k)
	return (k-1)*s.mlog - k - k*math.Log(s.mean/k) - lg
}

func (s *sample) gamma() (Fit, error) {
	gap := math.Log(s.mean) - s.mlog // s > 0 by Jensen (not all equal)
	// Minka's closed-form approximation of the root, as the start.
	k0 := (3 - gap + math.Sqrt((gap-3)*(gap-3)+24*gap)) / (12 * gap)
	prob := optimize.Problem{
		Func: func(u []float64) float64 { return -s.gammaProfile(math.Exp(u[0])) },
		Grad: func(g, u []float64) {
			k := math.Exp(u[0])
			g[0] = -k * (math.Log(k) - mathext.Digamma(k) - gap)
		},
	}
	u, err := minimize1(prob, math.Log(k0))
	if err != nil {
		return Fit{}, fmt.Errorf("gamma fit: %w", err)
	}
	k := math.Exp(u)
	best := s.gammaProfile(k)
	drop := func(k float64) float64 { return 2 * s.n * (best - s.gammaProfile(k)) } // increasing away from k̂
	lo := bisectLog(drop, k, -1)
	hi := bisectLog(drop, k, +1)
	theta := s.mean / k
	d := distuv.Gamma{Alpha: k, Beta: 1 / theta}
	ll := s.logLik(d.LogProb) // = n·ℓ(k̂)/n: the profile holds every term
	return Fit{Name: Gamma, Params: []Param{{Name: "k", Value: k, Lo: lo, Hi: hi}, {Name: "theta", Value: theta, Lo: math.NaN(), Hi: math.NaN()}},
		LogLik: ll, AIC: 4 - 2*ll, CDF: d.CDF}, nil
}

// bisectLog returns the k on side dir (−1 below k̂, +1 above) of k̂ where drop(k) = χ²₁(0.95),
// by bisection in log k (drop grows away from k̂). It returns 0 or +Inf when the interval is
// open on that side within a factor 10⁶.
func bisectLog(drop func(float64) float64, khat float64, dir float64) float64 {
	a, b := math.Log(khat), math.Log(khat)
	step := 0.05
	for drop(math.Exp(b)) < chi2 {
		a = b
		b += dir * step
		step *= 2
		if math.Abs(b-math.Log(khat)) > math.Log(1e6) {
			if dir < 0 {
				return 0
			}
			return math.Inf(1)
		}
	}
	for range 100 {
		m := (a + b) / 2
		if drop(math.Exp(m)) < chi2 {
			a = m
		} else {
			b = m
		}
		if math.Abs(b-a) < 1e-12 {
			break
		}
	}
	return math.Exp((a + b) / 2)
}

func (s *sample) lognormal() Fit {
	var ss float64
	for _, x := range s.x {
		d := math.Log(x) - s.mlog
		ss += d * d
	}
	sigma := math.Sqrt(ss / s.n)
	d := distuv.LogNormal{Mu: s.mlog, Sigma: sigma}
	ll := s.logLik(d.LogProb)
	return Fit{Name: LogNormal, Params: []Param{{Name: "mu", Value: s.mlog, Lo: math.NaN(), Hi: math.NaN()}, {Name: "sigma", Value: sigma, Lo: math.NaN(), Hi: math.NaN()}},
		LogLik: ll, AIC: 4 - 2*ll, CDF: d.CDF}
}

func (s *sample) weibull() (Fit, error) {
	// On y = x/x̄ (c is scale-free): ℓ(c)/n = log c − log(Σy^c/n) + (c − 1)·m_y − 1.
	y := make([]float64, len(s.x))
	ly := make([]float64, len(s.x))
	for i, x := range s.x {
		y[i] = x / s.mean
		ly[i] = math.Log(y[i])
	}
	my := s.mlog - math.Log(s.mean)
	moments := func(c float64) (m0, m1 float64) { // Σy^c/n, Σy^c·log y/n
		for i := range y {
			p := math.Exp(c * ly[i])
			m0 += p
			m1 += p * ly[i]
		}
		return m0 / s.n, m1 / s.n
	}
	prob := optimize.Problem{
		Func: func(u []float64) float64 {
			c := math.Exp(u[0])
			m0, _ := moments(c)
			return -(math.Log(c) - math.Log(m0) + (c-1)*my - 1)
		},
		Grad: func(g, u []float64) {
			c := math.Exp(u[0])
			m0, m1 := moments(c)
			g[0] = -c * (1/c - m1/m0 + my)
		},
	}
	// Start from the lognormal σ: c ≈ 1.28/σ (the Weibull's log has sd π/(c√6)).
	var ss float64
	for _, l := range ly {
		ss += (l - my) * (l - my)
	}
	c0 := math.Pi / math.Sqrt(6) / math.Max(math.Sqrt(ss/s.n), 1e-6)
	u, err := minimize1(prob, math.Log(c0))
	if err != nil {
		return Fit{}, fmt.Errorf("weibull fit: %w", err)
	}
	c := math.Exp(u)
	m0, _ := moments(c)
	lambda := s.mean * math.Pow(m0, 1/c)
	d := distuv.Weibull{K: c, Lambda: lambda}
	ll := s.logLik(d.LogProb)
	return Fit{Name: Weibull, Params: []Param{{Name: "c", Value: c, Lo: math.NaN(), Hi: math.NaN()}, {Name: "lambda", Value: lambda, Lo: math.NaN(), Hi: math.NaN()}},
		LogLik: ll, AIC: 4 - 2*ll, CDF: d.CDF}, nil
}

func (s *sample) empirical(t Table) Fit {
	ll := s.logLik(t.LogProb)
	return Fit{Name: Empirical, Params: []Param{{Name: "bins", Value: float64(len(t.Counts)), Lo: math.NaN(), Hi: math.NaN()}},
		LogLik: ll, AIC: 2*float64(2*len(t.Counts)) - 2*ll, CDF: t.CDF}
}

func (s *sample) logLik(logProb func(float64) float64) float64 {
	var ll float64
	for _, x := range s.x {
		ll += logProb(x)
	}
	return ll
}

// minimize1 minimizes a function of one variable from u0 with BFGS and returns the minimizer.
func minimize1(p optimize.Problem, u0 float64) (float64, error) {
	res, err := optimize.Minimize(p, []float64{u0}, &optimize.Settings{GradientThreshold: 1e-11, MajorIterations: 500}, &optimize.BFGS{})
	if err != nil && res == nil {
		return 0, err
	}
	if res.Status != optimize.GradientThreshold && res.Status != optimize.FunctionConvergence && res.Status != optimize.Success {
		g := make([]float64, 1)
		p.Grad(g, res.X)
		if math.Abs(g[0]) > 1e-6 {
			return 0, fmt.Errorf("the optimizer stopped with status %v at gradient %.3g", res.Status, g[0])
		}
	}
	return res.X[0], nil
}

// KS returns the Kolmogorov–Smirnov distance sup_x |F_n(x) − F(x)| between the empirical CDF
// of sorted (ascending) and cdf: max over i of i/n − F(x_(i)) and F(x_(i)) − (i − 1)/n.
func KS(sorted []float64, cdf func(float64) float64) float64 {
	n := float64(len(sorted))
	d := 0.0
	for i, x := range sorted {
		f := cdf(x)
		d = max(d, float64(i+1)/n-f, f-float64(i)/n)
	}
	return d
}
