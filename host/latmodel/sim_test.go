package latmodel_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/stats"
)

// The simulation study draws each cell's figures from the built-in engine's cost model
// (engine.Profile.StepTime) and its documented noise model (engine.Noise: a lognormal factor
// per burst — one per measured request, so one per cell — a lognormal factor per step, and
// slow steps), instead of running the engine in real time: a default matrix that takes the
// real engine two minutes is drawn here in milliseconds, and hundreds of trials fit in a
// test. What it leaves out is the host (a shared machine's sleep overshoot and stalls), which
// real runs add on top; RATIONALE.md compares the two.

// sim describes what is simulated: a profile, its noise, the time scale and the matrix.
type sim struct {
	prof      engine.Profile
	noise     engine.Noise
	timeScale float64
	maxTokens int
	lens      []int
	batches   []int
	gammaK    float64
}

// defaultSim is bench.toml's matrix against the default profile at the default time scale,
// with the noise of README's example: step-cv 2 %, burst-cv 5 %, a slow step (×5) in a
// thousand.
func defaultSim() sim {
	p, err := engine.LoadProfile(engine.DefaultProfile)
	if err != nil {
		panic(err)
	}
	n, err := engine.ParseNoise("step-cv=0.02,burst-cv=0.05,slow-prob=0.001,slow-factor=5")
	if err != nil {
		panic(err)
	}
	return sim{prof: p, noise: n, timeScale: 0.05, maxTokens: 100, gammaK: 0.9,
		lens:    []int{1000, 2000, 4000, 8000, 16000, 32000, 64000},
		batches: []int{1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 32, 48, 64}}
}

// scaled returns the profile with every cost coefficient multiplied by f (a regression of
// f − 1 at every cell).
func scaledProfile(p engine.Profile, f float64, name string) engine.Profile {
	q := p
	q.Name = name
	for _, c := range []*float64{&q.FixedMs, &q.PerSeqMs, &q.KVReadNsPerToken, &q.KVTailNsPerToken, &q.PrefillNsPerToken, &q.PrefillAttnNsPerPair, &q.MoEExpertUs} {
		*c *= f
	}
	return q
}

// gammaLengths are the B midpoint quantiles of Gamma(shape k, mean L) rescaled to mean L and
// rounded, as the gamma length plugin draws them.
func gammaLengths(k float64, l, b int) []int {
	g := distuv.Gamma{Alpha: k, Beta: k / float64(l)}
	q := make([]float64, b)
	var sum float64
	for i := range q {
		q[i] = g.Quantile((float64(i) + 0.5) / float64(b))
		sum += q[i]
	}
	out := make([]int, b)
	for i := range q {
		out[i] = max(1, int(math.Round(q[i]*float64(l)*float64(b)/sum)))
	}
	return out
}

// lognormal returns exp(σZ − σ²/2), of mean 1 and CV c (engine.Noise's factors).
func lognormal(rng *rand.Rand, cv float64) float64 {
	if cv == 0 {
		return 1
	}
	s := math.Sqrt(math.Log1p(cv * cv))
	return math.Exp(s*rng.NormFloat64() - s*s/2)
}

// cellFigures returns a cell's mean per-forward time and its robust twin (the median step:
// what the Theil–Sen figure is to stalls), wall ms: decode steps j = 1 … m−1, every sequence
// of the batch decoding in each (array mode), contexts L_i + j, experts the expected distinct
// (layer, expert) pairs of B tokens, each step's simulated time × the burst factor b (one per
// cell) × a step factor × a slow factor, × the time scale.
func (s sim) cellFigures(p engine.Profile, lens []int, rng *rand.Rand) (mean, robust float64) {
	b := len(lens)
	var sum, mx int64
	for _, l := range lens {
		sum += int64(l)
		mx = max(mx, int64(l))
	}
	experts := 0
	if p.IsMoE() {
		e, k := float64(p.MoEExperts), float64(p.MoETopK)
		experts = int(math.Round(float64(p.MoELayers) * e * (1 - math.Pow(1-k/e, float64(b)))))
	}
	burst := lognormal(rng, s.noise.BurstCV)
	steps := make([]float64, 0, s.maxTokens-1)
	for j := 1; j < s.maxTokens; j++ {
		t := float64(p.StepTime(engine.StepShape{Seqs: b, DecodeSeqs: b, SumCtx: sum + int64(b*j), MaxCtx: mx + int64(j), Experts: experts})) / 1e6
		f := burst * lognormal(rng, s.noise.StepCV)
		if s.noise.SlowProb > 0 && rng.Float64() < s.noise.SlowProb {
			f *= s.noise.SlowFactor
		}
		steps = append(steps, t*f*s.timeScale)
	}
	for _, v := range steps {
		mean += v
	}
	mean /= float64(len(steps))
	slices.Sort(steps)
	return mean, stats.Median(steps)
}

// run draws one run of the matrix against profile p with noise seed seed, as a results file
// would hold it: header (model, max_tokens, engine profile, noise, structure) and one ok cell
// per (L, B) with its realised lengths and per-forward figures.
func (s sim) run(id string, p engine.Profile, seed uint64) *results.Run {
	rng := rand.New(rand.NewPCG(seed, 0x73696d)) // "sim"
	cfg := config.Default()
	cfg.MaxTokens = s.maxTokens
	h := results.Header{Type: "header", Schema: results.Schema, RunID: id, Model: "genload-sim", TargetKind: "builtin", Config: cfg,
		Engine: map[string]any{"profile": p.Name, "time_scale": s.timeScale, "noise": s.noise.String() + fmt.Sprintf(",seed=%d", seed)}}
	if p.IsMoE() {
		h.Structure = &results.ModelStructure{Kind: results.StructureMoE, Experts: p.MoEExperts, Active: p.MoETopK, Source: "simulated profile " + p.Name}
	}
	r := &results.Run{Header: h}
	for _, l := range s.lens {
		for _, b := range s.batches {
			ls := gammaLengths(s.gammaK, l, b)
			mean, robust := s.cellFigures(p, ls, rng)
			var tot, mx, mn int
			mn = math.MaxInt
			for _, v := range ls {
				tot, mx, mn = tot+v, max(mx, v), min(mn, v)
			}
			d, dr := time.Duration(math.Round(mean*1e6)), time.Duration(math.Round(robust*1e6))
			r.Cells = append(r.Cells, results.Cell{Type: "cell", Cell: matrix.Cell{Index: len(r.Cells), SeqLen: l, Batch: b}, Status: results.StatusOK,
				Lengths: results.Lengths{Target: l, Min: mn, Mean: float64(tot) / float64(b), Max: mx},
				Figures: &measure.Figures{Sequences: b, Counted: b, PerForward: measure.Summary{N: b, Mean: d}, PerForwardFit: measure.Summary{N: b, Mean: dr}}})
		}
	}
	return r
}
