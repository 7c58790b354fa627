package lengthfit

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

func gammaSample(k, theta float64, n int, seed uint64) []float64 {
	d := distuv.Gamma{Alpha: k, Beta: 1 / theta, Src: rand.New(rand.NewPCG(seed, 7))}
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = d.Rand()
	}
	return xs
}

// The profile-likelihood interval of k holds the true shape about 95 % of the time: over 1000
// samples of 400 lengths from gamma(k, θ) for each k, the count of intervals holding k is
// within the binomial band of a 95 % interval (950 expected; 929 … 971 is ±3 standard
// deviations of 6.9), and the median estimate is within 3 % of k.
func TestGammaIntervalCoversTheTrueShape(t *testing.T) {
	const reps, n = 1000, 400
	for _, k := range []float64{0.5, 0.9, 2, 5} {
		theta := 4000 / k // mean 4000 tokens
		hits := 0
		var ks []float64
		for r := range reps {
			res, err := FitAll(gammaSample(k, theta, n, uint64(r)+uint64(k*1000)), Options{})
			if err != nil {
				t.Fatal(err)
			}
			p := res.Get(Gamma).Param("k")
			if p.Lo <= k && k <= p.Hi {
				hits++
			}
			if !(p.Lo < p.Value && p.Value < p.Hi) {
				t.Fatalf("k = %v: interval [%v, %v] does not hold the estimate %v", k, p.Lo, p.Hi, p.Value)
			}
			ks = append(ks, p.Value)
		}
		med := median(ks)
		t.Logf("k = %v: %d/%d intervals hold it, median k̂ %.4f", k, hits, reps, med)
		if hits < 929 || hits > 971 {
			t.Errorf("k = %v: %d of %d intervals hold the true shape, want 929 … 971 (95 %%)", k, hits, reps)
		}
		if math.Abs(med/k-1) > 0.03 {
			t.Errorf("k = %v: median estimate %v, want within 3 %%", k, med)
		}
	}
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	for i := range s { // insertion sort: small
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
}

// digamma and trigamma, written here independently of gonum (recurrence up to x ≥ 6, then the
// asymptotic series; Abramowitz & Stegun 6.3.18 and 6.4.12).
func digamma(x float64) float64 {
	r := 0.0
	for x < 6 {
		r -= 1 / x
		x++
	}
	f := 1 / (x * x)
	return r + math.Log(x) - 0.5/x - f*(1.0/12-f*(1.0/120-f*(1.0/252-f*(1.0/240-f/132))))
}

func trigamma(x float64) float64 {
	r := 0.0
	for x < 6 {
		r += 1 / (x * x)
		x++
	}
	f := 1 / (x * x)
	return r + 1/x + f/2 + f/x*(1.0/6-f*(1.0/30-f*(1.0/42-f/30)))
}

// independentGammaK solves log k − ψ(k) = log x̄ − mean(log x) by Newton's method from k = 1.
func independentGammaK(xs []float64) float64 {
	var s, sl float64
	for _, x := range xs {
		s += x
		sl += math.Log(x)
	}
	n := float64(len(xs))
	gap := math.Log(s/n) - sl/n
	k := 0.5 / gap // start near the root for small gaps, below it otherwise
	for range 100 {
		f := math.Log(k) - digamma(k) - gap
		df := 1/k - trigamma(k)
		next := k - f/df
		if next <= 0 {
			next = k / 2
		}
		if math.Abs(next-k) < 1e-14*k {
			return next
		}
		k = next
	}
	return k
}

// The gamma MLE matches an independent solution of the likelihood equation, and the ends of
// the interval lie where twice the log-likelihood has dropped by χ²₁(0.95) = 3.841, computed
// here from the full log-likelihood with θ re-maximised (x̄/k) and Lgamma.
func TestGammaMatchesAnIndependentMLE(t *testing.T) {
	for _, k := range []float64{0.5, 0.9, 2, 5} {
		xs := gammaSample(k, 1000, 3000, 99)
		res, err := FitAll(xs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		p := res.Get(Gamma).Param("k")
		ind := independentGammaK(xs)
		if math.Abs(p.Value/ind-1) > 1e-7 {
			t.Errorf("k = %v: fit %v, independent Newton %v", k, p.Value, ind)
		}
		ll := func(k float64) float64 {
			var s float64
			for _, x := range xs {
				s += x
			}
			theta := s / float64(len(xs)) / k
			lg, _ := math.Lgamma(k)
			var l float64
			for _, x := range xs {
				l += (k-1)*math.Log(x) - x/theta - k*math.Log(theta) - lg
			}
			return l
		}
		top := ll(p.Value)
		for _, end := range []float64{p.Lo, p.Hi} {
			if d := 2 * (top - ll(end)); math.Abs(d-3.841459) > 1e-3 {
				t.Errorf("k = %v: at the interval end %v, 2Δℓ = %v, want 3.8415", k, end, d)
			}
		}
		if g := res.Get(Gamma); math.Abs(g.LogLik-top) > 1e-6*math.Abs(top) {
			t.Errorf("k = %v: reported log-likelihood %v, recomputed %v", k, g.LogLik, top)
		}
	}
}

// Each family is recognised by AIC on a large sample of its own, and its parameters recovered.
func TestTheFamilyOfTheSampleFitsBest(t *testing.T) {
	src := rand.New(rand.NewPCG(3, 4))
	n := 5000
	ln := make([]float64, n)
	wb := make([]float64, n)
	dl := distuv.LogNormal{Mu: 8, Sigma: 0.7, Src: src}
	dw := distuv.Weibull{K: 1.6, Lambda: 3000, Src: src}
	for i := range ln {
		ln[i], wb[i] = dl.Rand(), dw.Rand()
	}
	gm := gammaSample(2, 1000, n, 5)
	for _, c := range []struct {
		xs   []float64
		want string
	}{{ln, LogNormal}, {wb, Weibull}, {gm, Gamma}} {
		res, err := FitAll(c.xs, Options{Bins: 16})
		if err != nil {
			t.Fatal(err)
		}
		// The empirical table has many more parameters; the parametric family must beat the
		// other parametric ones.
		var best *Fit
		for i := range res.Fits {
			if f := &res.Fits[i]; f.Name != Empirical && (best == nil || f.AIC < best.AIC) {
				best = f
			}
		}
		if best.Name != c.want {
			t.Errorf("sample of %s: best parametric fit %s (AIC %v)", c.want, best.Name, best.AIC)
		}
		if best.KS > 0.02 {
			t.Errorf("sample of %s: KS %v of its own family, want < 0.02", c.want, best.KS)
		}
	}
	res, _ := FitAll(ln, Options{})
	if l := res.Get(LogNormal); math.Abs(l.Param("mu").Value-8) > 0.03 || math.Abs(l.Param("sigma").Value-0.7) > 0.02 {
		t.Errorf("lognormal params %+v", l.Params)
	}
	res, _ = FitAll(wb, Options{})
	if w := res.Get(Weibull); math.Abs(w.Param("c").Value/1.6-1) > 0.03 || math.Abs(w.Param("lambda").Value/3000-1) > 0.03 {
		t.Errorf("weibull params %+v", w.Params)
	}
	// Sorted best first by AIC.
	for i := 1; i < len(res.Fits); i++ {
		if res.Fits[i].AIC < res.Fits[i-1].AIC {
			t.Errorf("fits not sorted by AIC: %s %v before %s %v", res.Fits[i-1].Name, res.Fits[i-1].AIC, res.Fits[i].Name, res.Fits[i].AIC)
		}
	}
}

func TestKSDistance(t *testing.T) {
	// Sample 1, 2, 3 against the uniform CDF on [0, 6]: F = 1/6, 1/3, 1/2; the ECDF is 1/3,
	// 2/3, 1 after each point: D = max(1/3−1/6, 1/6−0, 2/3−1/3, 1/3−1/3, 1−1/2, 1/2−2/3) = 1/2.
	d := KS([]float64{1, 2, 3}, func(x float64) float64 { return x / 6 })
	if math.Abs(d-0.5) > 1e-12 {
		t.Errorf("KS = %v, want 0.5", d)
	}
	// Against [0, 2] (F = 1/2, 1, 1) the largest gap is just below the second point, where the
	// ECDF is still 1/3: 1 − 1/3 = 2/3.
	d = KS([]float64{1, 2, 3}, func(x float64) float64 { return min(x/2, 1) })
	if math.Abs(d-2.0/3) > 1e-12 {
		t.Errorf("KS = %v, want 2/3", d)
	}
}

// The closed forms on a sample worked by hand: lengths e, e², e³ have log-mean 2 and
// log-variance (1 + 0 + 1)/3, so lognormal μ = 2, σ = √(2/3); every AIC is 2p − 2ℓ with p = 2
// for the parametric fits and 2·bins for the table.
func TestClosedFormsAndAIC(t *testing.T) {
	res, err := FitAll([]float64{math.E, math.E * math.E, math.E * math.E * math.E}, Options{Bins: 2})
	if err != nil {
		t.Fatal(err)
	}
	l := res.Get(LogNormal)
	if math.Abs(l.Param("mu").Value-2) > 1e-12 || math.Abs(l.Param("sigma").Value-math.Sqrt(2.0/3)) > 1e-12 {
		t.Errorf("lognormal %+v, want mu 2, sigma %v", l.Params, math.Sqrt(2.0/3))
	}
	for _, f := range res.Fits {
		p := 2.0
		if f.Name == Empirical {
			p = 2 * f.Param("bins").Value
		}
		if math.Abs(f.AIC-(2*p-2*f.LogLik)) > 1e-9 {
			t.Errorf("%s: AIC %v, want 2·%v − 2·%v", f.Name, f.AIC, p, f.LogLik)
		}
	}
}

func TestBadSamplesAreClearErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		xs   []float64
		is   error
		text string
	}{
		{"empty", nil, ErrEmpty, "no lengths"},
		{"two", []float64{3, 4}, ErrTooFew, "too few lengths: 2, want at least 3"},
		{"negative", []float64{3, -4, 5}, ErrNegative, "length 1 is -4 tokens: negative length"},
		{"zero", []float64{3, 0, 5}, ErrZero, "length 1 is 0 tokens: zero length"},
		{"all equal", []float64{7, 7, 7, 7}, ErrAllEqual, "all 4 are 7 tokens"},
	} {
		_, err := FitAll(c.xs, Options{})
		if !errors.Is(err, c.is) || err.Error() == "" || !contains(err.Error(), c.text) {
			t.Errorf("%s: err = %v, want %v with %q", c.name, err, c.is, c.text)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
