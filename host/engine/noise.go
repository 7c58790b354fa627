package engine

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
)

// Noise perturbs the cost model's step times with noise of a known size, so that a
// measurement protocol (repeats, stopping rules, A/B verdicts) can be tested against noise
// whose size is known rather than against the noise of the machine it runs on. The zero value
// is off. Every draw comes from one generator seeded with Seed and consumed by the scheduler
// goroutine alone, so a given sequence of steps gets the same perturbation on every run.
//
// A step of simulated duration T (see Profile) lasts
//
//	T' = T · b · s · w
//
// with
//
//	b  the burst factor: one draw per burst, lognormal, mean 1, CV BurstCV      [1]
//	s  the step factor: one draw per step, lognormal, mean 1, CV StepCV         [1]
//	w  SlowFactor with probability SlowProb, else 1 (one draw per step)         [1]
//
// A lognormal factor of CV c is exp(σ·Z − σ²/2) with σ² = ln(1 + c²) and Z standard normal:
// its mean is exactly 1 and its CV exactly c, and it is never negative. T' is what the engine
// sleeps (× Config.TimeScale), what Config.StepLog reports as fwd_ms and what the /metrics
// step histograms observe; the step-end times in Config.SeqLog are measured after the sleep,
// so the engine's truth includes the noise.
//
// A burst is the engine's work from idle to idle: it begins with a step planned when no
// sequence is running (none left from the previous step) and ends when the last sequence
// finishes. genload run sends one
// cell's warmup and then its measured request, each to an idle engine, so each is one burst:
// every forward pass of a measured request shares one b, and repeats of a cell draw
// independent b's — the per-cell noise that repeats must average out. Bursts are used rather
// than fixed time windows because a cell's length varies tenfold across a matrix, and a
// window would split some cells and join others.
type Noise struct {
	// StepCV is the coefficient of variation of the per-step factor s (0.02 = 2 %).
	// Defaults to 0 (off).
	StepCV float64
	// BurstCV is the coefficient of variation of the per-burst factor b (0.05 = 5 %), the
	// per-cell noise. Defaults to 0 (off).
	BurstCV float64
	// SlowProb is the probability that a step is slow (0.001 = one step in a thousand).
	// Defaults to 0 (off).
	SlowProb float64
	// SlowFactor multiplies the duration of a slow step; must be ≥ 1. Defaults to 1.
	SlowFactor float64
	// Seed seeds the noise generator. Defaults to 0.
	Seed uint64
}

// DefaultNoise returns no noise.
func DefaultNoise() Noise { return Noise{SlowFactor: 1} }

// On reports whether any noise is injected.
func (n Noise) On() bool {
	return n.StepCV > 0 || n.BurstCV > 0 || (n.SlowProb > 0 && n.SlowFactor != 1)
}

func (n Noise) validate() error {
	var errs []error
	cv := func(key string, v float64) {
		if !(v >= 0 && v <= 10) {
			errs = append(errs, fmt.Errorf("[%s] must be in [0, 10], got %v", key, v))
		}
	}
	cv("noise-step-cv", n.StepCV)
	cv("noise-burst-cv", n.BurstCV)
	if !(n.SlowProb >= 0 && n.SlowProb <= 1) {
		errs = append(errs, fmt.Errorf("[noise-slow-prob] must be in [0, 1], got %v", n.SlowProb))
	}
	if !(n.SlowFactor >= 1 && n.SlowFactor <= 1000) {
		errs = append(errs, fmt.Errorf("[noise-slow-factor] must be in [1, 1000], got %v", n.SlowFactor))
	}
	// One without the other injects nothing: a slow step of factor 1 is not slow.
	if n.SlowProb > 0 && n.SlowFactor == 1 {
		errs = append(errs, fmt.Errorf("[noise-slow-prob] %v without [noise-slow-factor] (> 1) injects nothing: give both", n.SlowProb))
	}
	if n.SlowFactor > 1 && n.SlowProb == 0 {
		errs = append(errs, fmt.Errorf("[noise-slow-factor] %v without [noise-slow-prob] (> 0) injects nothing: give both", n.SlowFactor))
	}
	return errors.Join(errs...)
}

// String returns the comma-separated form ParseNoise reads, "" when off.
func (n Noise) String() string {
	if !n.On() {
		return ""
	}
	var parts []string
	f := func(k string, v float64) { parts = append(parts, k+"="+strconv.FormatFloat(v, 'g', -1, 64)) }
	if n.StepCV > 0 {
		f("step-cv", n.StepCV)
	}
	if n.BurstCV > 0 {
		f("burst-cv", n.BurstCV)
	}
	if n.SlowProb > 0 && n.SlowFactor != 1 {
		f("slow-prob", n.SlowProb)
		f("slow-factor", n.SlowFactor)
	}
	parts = append(parts, "seed="+strconv.FormatUint(n.Seed, 10))
	return strings.Join(parts, ",")
}

// ParseNoise reads a comma-separated list of key=value pairs — step-cv, burst-cv, slow-prob,
// slow-factor (floats) and seed (an unsigned integer) — over DefaultNoise, e.g.
// "step-cv=0.02,burst-cv=0.05,slow-prob=0.001,slow-factor=5,seed=7". "" is no noise. Errors
// name the key; a key given twice is an error.
func ParseNoise(list string) (Noise, error) {
	n := DefaultNoise()
	var errs []error
	seen := map[string]bool{}
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("noise %q: want key=value", item))
			continue
		}
		if seen[k] {
			errs = append(errs, fmt.Errorf("noise [%s]: given twice", k))
			continue
		}
		seen[k] = true
		var err error
		num := func(dst *float64) {
			f, perr := strconv.ParseFloat(v, 64)
			if perr != nil {
				err = fmt.Errorf("%q is not a number", v)
				return
			}
			*dst = f
		}
		switch k {
		case "step-cv":
			num(&n.StepCV)
		case "burst-cv":
			num(&n.BurstCV)
		case "slow-prob":
			num(&n.SlowProb)
		case "slow-factor":
			num(&n.SlowFactor)
		case "seed":
			var perr error
			if n.Seed, perr = strconv.ParseUint(v, 10, 64); perr != nil {
				err = fmt.Errorf("%q is not an unsigned integer", v)
			}
		default:
			err = errors.New("unknown key (known: step-cv, burst-cv, slow-prob, slow-factor, seed)")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("noise [%s]: %w", k, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return n, err
	}
	return n, n.validate()
}

func registerNoiseFlags(fs *flag.FlagSet, n *Noise) {
	fs.Float64Var(&n.StepCV, "noise-step-cv", n.StepCV, "CV of a lognormal per-step factor on step times (0.02 = 2 %), 0 = off")
	fs.Float64Var(&n.BurstCV, "noise-burst-cv", n.BurstCV, "CV of a lognormal factor drawn once per burst (idle to idle: one per request of a cell), 0 = off")
	fs.Float64Var(&n.SlowProb, "noise-slow-prob", n.SlowProb, "probability that a step is slow, 0 = off")
	fs.Float64Var(&n.SlowFactor, "noise-slow-factor", n.SlowFactor, "duration multiplier of a slow step (>= 1)")
	fs.Uint64Var(&n.Seed, "noise-seed", n.Seed, "seed of the step-time noise")
}

// ForStart returns n with its seed replaced by one derived from n.Seed and start, the name of
// what distinguishes one start of an engine from the other starts of the same configuration
// in one invocation ("repeat 2", "ab side B"). Engines started with the same seed replay the
// same draws, so that repeats of a matrix would agree on their noise and the two sides of an
// A/B comparison of a config against itself would cancel it in every pair; derived seeds make
// the starts' noise independent while a given (seed, start) still replays exactly. start ""
// returns n unchanged (a single engine start uses the configured seed, as genload serve
// --noise-seed does).
//
// The derived seed is the FNV-1a 64-bit hash of Seed's 8 bytes (little-endian) followed by
// start's bytes, passed through the SplitMix64 finaliser so that neighbouring starts get
// unrelated seeds.
func (n Noise) ForStart(start string) Noise {
	if start == "" {
		return n
	}
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], n.Seed)
	h.Write(b[:])
	h.Write([]byte(start))
	z := h.Sum64() + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	n.Seed = z ^ (z >> 31)
	return n
}

// ReseedNoise makes the engine's noise, from the next burst on (the next step planned when no
// sequence is running), draw from a generator seeded with seed — the draws an engine started
// with Noise.Seed = seed makes from its first burst — so that the repeats of one invocation
// measured on one engine (genload run --repeat, --until-cv: one seed per round, see
// Noise.ForStart) draw independent noise that a given seed still replays. It reports whether
// the engine injects noise at all (false: nothing to reseed). Safe to call from any goroutine.
func (e *Engine) ReseedNoise(seed uint64) bool {
	z := e.sched.noise
	if z == nil {
		return false
	}
	z.reseed.Store(&seed)
	return true
}

// noiser draws the factors of Noise; used by the scheduler goroutine only, except reseed.
type noiser struct {
	n            Noise
	rng          *rand.Rand
	sigS, sigB   float64 // lognormal σ of the step and burst factors
	burst        float64 // the current burst's factor b
	steps, slows uint64  // steps perturbed and slow steps drawn (tests)
	// reseed is the seed of the next burst's generator (Engine.ReseedNoise), nil for none.
	reseed atomic.Pointer[uint64]
}

func newNoiser(n Noise) *noiser {
	return &noiser{
		n:     n,
		rng:   noiseRand(n.Seed),
		sigS:  math.Sqrt(math.Log1p(n.StepCV * n.StepCV)),
		sigB:  math.Sqrt(math.Log1p(n.BurstCV * n.BurstCV)),
		burst: 1,
	}
}

// lognormal returns exp(σ·Z − σ²/2): mean 1, CV sqrt(exp(σ²) − 1).
func (z *noiser) lognormal(sig float64) float64 {
	if sig == 0 {
		return 1
	}
	return math.Exp(sig*z.rng.NormFloat64() - sig*sig/2)
}

// noiseRand is the noise generator of seed.
func noiseRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x6e6f697365)) } // "noise"

// newBurst draws the factor of a burst that starts now, from a new generator when a reseed
// is pending.
func (z *noiser) newBurst() {
	if seed := z.reseed.Swap(nil); seed != nil {
		z.n.Seed, z.rng = *seed, noiseRand(*seed)
	}
	z.burst = z.lognormal(z.sigB)
}

// factor returns the next step's multiplier b·s·w.
func (z *noiser) factor() float64 {
	f := z.burst * z.lognormal(z.sigS)
	z.steps++
	if z.n.SlowProb > 0 && z.rng.Float64() < z.n.SlowProb {
		f *= z.n.SlowFactor
		z.slows++
	}
	return f
}
