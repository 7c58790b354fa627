package engine

import (
	"github.com/genload/genload/host/internal/logtest"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// meanCV returns the mean and the coefficient of variation (sample standard deviation / mean)
// of xs.
func meanCV(xs []float64) (mean, cv float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss/float64(len(xs)-1)) / mean
}

func TestNoiseFactorsHaveTheAskedCV(t *testing.T) {
	// The sample CV of n lognormal draws of CV c has a standard error ≈ c·sqrt((1 + 2c²)/(2n));
	// each tolerance below is ≥ 5 standard errors, and the seed is fixed, so the test is
	// deterministic and fails only if the draws do not have the asked size.
	cases := []struct {
		name        string
		n           Noise
		draws       int
		wantCV, tol float64 // tol relative to wantCV
	}{
		// 200,000 step draws of CV 0.05: SE ≈ 0.05/632 (0.16 % relative); tolerance 2 %.
		{"step 5 %", Noise{StepCV: 0.05, SlowFactor: 1, Seed: 1}, 200_000, 0.05, 0.02},
		// CV 0.5 (σ² = ln 1.25): SE ≈ 0.5·sqrt(1.5/400000) (0.19 %); tolerance 2 %.
		{"step 50 %", Noise{StepCV: 0.5, SlowFactor: 1, Seed: 2}, 200_000, 0.5, 0.02},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			z := newNoiser(c.n)
			z.newBurst()
			xs := make([]float64, c.draws)
			for i := range xs {
				xs[i] = z.factor()
			}
			mean, cv := meanCV(xs)
			t.Logf("%d draws: mean %.5f, CV %.5f (asked %.5f)", c.draws, mean, cv, c.wantCV)
			// The mean's SE is CV/sqrt(n) ≤ 0.5/447 = 0.11 %; tolerance 1 %.
			if math.Abs(mean-1) > 0.01 {
				t.Errorf("mean factor %.4f, want 1 ± 0.01", mean)
			}
			if math.Abs(cv/c.wantCV-1) > c.tol {
				t.Errorf("realised CV %.4f, want %.4f ± %.0f %%", cv, c.wantCV, 100*c.tol)
			}
		})
	}
	t.Run("burst 10 %", func(t *testing.T) {
		// 20,000 bursts of CV 0.1: SE ≈ 0.1·sqrt(1.02/40000) (0.5 % relative); tolerance 3 %.
		// Within a burst every step gets the same factor (no step noise).
		z := newNoiser(Noise{BurstCV: 0.1, SlowFactor: 1, Seed: 3})
		xs := make([]float64, 20_000)
		for i := range xs {
			z.newBurst()
			xs[i] = z.factor()
			for range 3 {
				if f := z.factor(); f != xs[i] {
					t.Fatalf("burst %d: step factor %v, want the burst's %v", i, f, xs[i])
				}
			}
		}
		_, cv := meanCV(xs)
		t.Logf("20000 bursts: CV %.5f (asked 0.1)", cv)
		if math.Abs(cv/0.1-1) > 0.03 {
			t.Errorf("realised burst CV %.4f, want 0.1 ± 3 %%", cv)
		}
	})
	t.Run("slow steps", func(t *testing.T) {
		// 200,000 steps at p = 0.01: 2000 slow steps expected, SE sqrt(2000·0.99) ≈ 44;
		// tolerance ±10 % (4.5 SE). Each slow step is exactly 5× (no other noise).
		z := newNoiser(Noise{SlowProb: 0.01, SlowFactor: 5, Seed: 4})
		slow := 0
		for range 200_000 {
			switch f := z.factor(); f {
			case 1:
			case 5:
				slow++
			default:
				t.Fatalf("factor %v, want 1 or 5", f)
			}
		}
		t.Logf("%d slow steps of 200000 (expected 2000)", slow)
		if slow < 1800 || slow > 2200 {
			t.Errorf("%d slow steps of 200000, want 2000 ± 200", slow)
		}
	})
	t.Run("seeded", func(t *testing.T) {
		a, b := newNoiser(Noise{StepCV: 0.1, SlowFactor: 1, Seed: 9}), newNoiser(Noise{StepCV: 0.1, SlowFactor: 1, Seed: 9})
		c := newNoiser(Noise{StepCV: 0.1, SlowFactor: 1, Seed: 10})
		same, diff := true, false
		for range 100 {
			x, y, w := a.factor(), b.factor(), c.factor()
			same = same && x == y
			diff = diff || x != w
		}
		if !same || !diff {
			t.Errorf("same seed gives the same draws: %v (want true); another seed differs: %v (want true)", same, diff)
		}
	})
}

// noisyStep is one step-log line's noise factor, simulated duration and decode count.
type noisyStep struct {
	noise, fwdMs float64
	decode       int
}

func parseNoisySteps(t *testing.T, log string) []noisyStep {
	t.Helper()
	var out []noisyStep
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		s := noisyStep{noise: math.NaN()}
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "noise":
				s.noise, _ = strconv.ParseFloat(v, 64)
			case "fwd_ms":
				s.fwdMs, _ = strconv.ParseFloat(v, 64)
			case "decode":
				s.decode, _ = strconv.Atoi(v)
			}
		}
		if math.IsNaN(s.noise) {
			t.Fatalf("step line without noise=: %q", line)
		}
		out = append(out, s)
	}
	return out
}

func TestEngineStepTimesCarryTheNoise(t *testing.T) {
	// 60 sequential identical requests (each a burst: the engine is empty between them), 40
	// tokens each, with per-step CV 0.04 and per-burst CV 0.1, no prefix cache (so every
	// burst has the same unperturbed step times). The step log must show: the unperturbed
	// time fwd_ms / noise the same in every burst (the noise is all that differs); the
	// realised per-step CV within bursts and the burst CV across them near the asked ones.
	log := &logtest.LockedBuffer{}
	_, srv := newTestEngine(t, func(c *Config) {
		c.StepLog = log
		c.DisablePrefixCaching = true
		c.Profile = "dense-8b"
		c.Noise = Noise{StepCV: 0.04, BurstCV: 0.1, SlowFactor: 1, Seed: 11}
	})
	const bursts, tokens = 60, 40
	for range bursts {
		post(t, srv.URL+"/v1/completions", `{"prompt":`+idList(1, 64)+`,"max_tokens":`+strconv.Itoa(tokens)+`,"ignore_eos":true}`)
	}
	steps := parseNoisySteps(t, log.String())
	if len(steps) != bursts*tokens { // one prefill step (the first token), then 39 decode steps
		t.Fatalf("%d step lines, want %d × %d", len(steps), bursts, tokens)
	}
	var burstMeans, within []float64
	for b := range bursts {
		st := steps[b*tokens : (b+1)*tokens]
		var logs []float64
		sum := 0.0
		for i, s := range st {
			base, base0 := s.fwdMs/s.noise, steps[i].fwdMs/steps[i].noise
			if math.Abs(base/base0-1) > 1e-3 { // fwd_ms has 3 decimals of ~7 ms
				t.Fatalf("burst %d step %d: unperturbed %.4f ms, burst 0's %.4f ms", b, i, base, base0)
			}
			sum += s.noise
			logs = append(logs, math.Log(s.noise))
		}
		burstMeans = append(burstMeans, sum/tokens)
		// the step factor's spread, separated from the burst's by taking logs: the SD of
		// ln s is σ = sqrt(ln(1 + 0.04²)) ≈ 0.03999
		m := 0.0
		for _, l := range logs {
			m += l
		}
		m /= tokens
		for _, l := range logs {
			within = append(within, l-m)
		}
	}
	var ss float64
	for _, d := range within {
		ss += d * d
	}
	sdLog := math.Sqrt(ss / float64(bursts*(tokens-1)))
	_, burstCV := meanCV(burstMeans)
	t.Logf("step log: within-burst SD of ln(noise) %.5f (asked σ %.5f), CV across %d bursts %.4f (expected 0.1008)",
		sdLog, math.Sqrt(math.Log1p(0.04*0.04)), bursts, burstCV)
	// 2340 degrees of freedom: SE of the SD ≈ 1.5 %; tolerance 8 %.
	if want := math.Sqrt(math.Log1p(0.04 * 0.04)); math.Abs(sdLog/want-1) > 0.08 {
		t.Errorf("within-burst SD of ln(noise) %.4f, want %.4f ± 8 %%", sdLog, want)
	}
	// The burst means' CV is sqrt(0.1² + 0.04²/40) ≈ 0.1008 (the step noise averages out);
	// 60 bursts give an SE ≈ 9 %; tolerance 30 % (3.3 SE).
	if math.Abs(burstCV/0.1008-1) > 0.3 {
		t.Errorf("CV across bursts %.4f, want 0.1008 ± 30 %%", burstCV)
	}
}

func TestStepLogFile(t *testing.T) {
	// Config.StepLogFile appends: two engines write to one file, and every line of both is there.
	path := filepath.Join(t.TempDir(), "steps.log")
	for i := range 2 {
		e, srv := newTestEngine(t, func(c *Config) { c.StepLogFile = path })
		post(t, srv.URL+"/v1/completions", `{"prompt":[1,2,3],"max_tokens":5,"ignore_eos":true}`)
		srv.Close()
		if err := e.Close(); err != nil {
			t.Fatalf("engine %d: close: %v", i, err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 10 || !strings.HasPrefix(lines[0], "time=") || !strings.Contains(lines[9], " step=5 active=1 decode=1 ") {
		t.Errorf("step log file has %d lines, want 2 × 5 (first %q, last %q)", len(lines), lines[0], lines[len(lines)-1])
	}
	cfg := DefaultConfig()
	cfg.StepLogFile = filepath.Join(path, "x") // a file under a file cannot be created
	if _, err := New(cfg, nil); err == nil || !strings.Contains(err.Error(), "[step-log]") {
		t.Errorf("New with an unopenable step log: %v, want an error naming [step-log]", err)
	}
}

func TestParseNoise(t *testing.T) {
	n, err := ParseNoise("step-cv=0.02, burst-cv=0.05,slow-prob=0.001,slow-factor=5,seed=7")
	if err != nil || n != (Noise{StepCV: 0.02, BurstCV: 0.05, SlowProb: 0.001, SlowFactor: 5, Seed: 7}) {
		t.Fatalf("ParseNoise = %+v, %v", n, err)
	}
	if back, err := ParseNoise(n.String()); err != nil || back != n {
		t.Errorf("ParseNoise(%q) = %+v, %v; want %+v", n.String(), back, err, n)
	}
	if n, err := ParseNoise(""); err != nil || n.On() {
		t.Errorf(`ParseNoise("") = %+v, %v; want off`, n, err)
	}
	for in, want := range map[string]string{
		"step-cv=x":       `noise [step-cv]: "x" is not a number`,
		"seed=-1":         `noise [seed]: "-1" is not an unsigned integer`,
		"slow-factor=0.5": "[noise-slow-factor] must be in [1, 1000]",
		"jitter=1":        "noise [jitter]: unknown key",
		"step-cv":         "want key=value",
		"burst-cv=-1":     "[noise-burst-cv] must be in [0, 10]",
		// a slow step of factor 1 is not slow: either alone injects nothing
		"slow-prob=0.1":            "[noise-slow-prob] 0.1 without [noise-slow-factor]",
		"slow-factor=5":            "[noise-slow-factor] 5 without [noise-slow-prob]",
		"step-cv=0.02,step-cv=0.5": "noise [step-cv]: given twice",
	} {
		if _, err := ParseNoise(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseNoise(%q) = %v, want an error containing %q", in, err, want)
		}
	}
}

func TestNoiseForStartDerivesDistinctSeeds(t *testing.T) {
	n := Noise{BurstCV: 0.05, SlowFactor: 1, Seed: 1}
	if got := n.ForStart(""); got != n {
		t.Errorf(`ForStart("") = %+v, want %+v unchanged`, got, n)
	}
	r1, r2, a, b := n.ForStart("repeat 1"), n.ForStart("repeat 2"), n.ForStart("ab side A"), n.ForStart("ab side B")
	seeds := map[uint64]string{n.Seed: "configured"}
	for name, m := range map[string]Noise{"repeat 1": r1, "repeat 2": r2, "ab side A": a, "ab side B": b} {
		if prev, dup := seeds[m.Seed]; dup {
			t.Errorf("%s: seed %d, the same as %s's", name, m.Seed, prev)
		}
		seeds[m.Seed] = name
		if m.BurstCV != n.BurstCV || m.SlowFactor != n.SlowFactor {
			t.Errorf("%s: %+v, want only the seed changed from %+v", name, m, n)
		}
	}
	// Deterministic: the same (seed, start) gives the same seed; another configured seed another.
	if again := n.ForStart("repeat 2"); again != r2 {
		t.Errorf("ForStart(repeat 2) twice: %d then %d", r2.Seed, again.Seed)
	}
	if other := (Noise{BurstCV: 0.05, SlowFactor: 1, Seed: 2}).ForStart("repeat 2"); other.Seed == r2.Seed {
		t.Errorf("seeds 1 and 2 derive the same seed %d for repeat 2", other.Seed)
	}
	// The draws differ: the first burst factors of the two repeats' generators.
	z1, z2 := newNoiser(r1), newNoiser(r2)
	z1.newBurst()
	z2.newBurst()
	if z1.burst == z2.burst {
		t.Errorf("repeats 1 and 2 draw the same first burst factor %v", z1.burst)
	}
}

// What a noise seed replays: the draws in the order of the engine's steps. Two engine starts of
// one seed that see the same requests in the same steps (here three cells' requests, each of
// one prompt array, sent one after the other) put every slow step in the same cell at the same
// step; a start that sees one more request first (a probe of 3 tokens) shifts every draw after
// it, so the slow steps land elsewhere — a run's placement replays only while its requests reach
// the engine in the same steps.
func TestNoiseSeedReplaysTheStepSequence(t *testing.T) {
	cells := []string{
		`{"prompt":[` + idList(1, 64) + `],"max_tokens":30,"ignore_eos":true}`,
		`{"prompt":[` + idList(100, 64) + `,` + idList(200, 64) + `],"max_tokens":30,"ignore_eos":true}`,
		`{"prompt":[` + idList(300, 64) + `,` + idList(400, 64) + `,` + idList(500, 64) + `,` + idList(600, 64) + `],"max_tokens":30,"ignore_eos":true}`,
	}
	start := func(probe bool) []float64 {
		log := &logtest.LockedBuffer{}
		_, srv := newTestEngine(t, func(c *Config) {
			c.StepLog = log
			c.DisablePrefixCaching = true
			c.Profile = "dense-8b"
			c.Noise = Noise{SlowProb: 0.1, SlowFactor: 40, Seed: 3}
		})
		if probe {
			post(t, srv.URL+"/v1/completions", `{"prompt":`+idList(7, 8)+`,"max_tokens":3,"ignore_eos":true}`)
		}
		for _, b := range cells {
			post(t, srv.URL+"/v1/completions", b)
		}
		steps := parseNoisySteps(t, log.String())
		if probe {
			steps = steps[3:] // the probe's prefill and 2 decode steps
		}
		out := make([]float64, len(steps))
		for i, s := range steps {
			out[i] = s.noise
		}
		return out
	}
	a, b, shifted := start(false), start(false), start(true)
	if len(a) != 90 || !slices.Equal(a, b) {
		t.Fatalf("same seed, same steps: %d and %d steps, noise equal %v", len(a), len(b), slices.Equal(a, b))
	}
	slow := func(n []float64) (at []int) {
		for i, f := range n {
			if f == 40 {
				at = append(at, i)
			}
		}
		return at
	}
	if len(slow(a)) == 0 || slices.Equal(slow(a), slow(shifted)) {
		t.Fatalf("slow steps at %v, after a probe at %v: want some, moved by the probe's 3 draws", slow(a), slow(shifted))
	}
	t.Logf("slow steps of the 90 at %v; after a 3-step probe at %v", slow(a), slow(shifted))
}
