package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/genload/genload/host/compare"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/gputime"
	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/tokenizer"
)

var (
	untilCVSeed = flag.Uint64("untilcv-seed", 1, "BenchmarkPerfUntilCV: the engine's noise seed")
	untilCVOnly = flag.String("untilcv-only", "", "BenchmarkPerfUntilCV: measure only this adaptive protocol (e.g. untilcv10c80) beside the fixed repeats")
)

// BenchmarkPerfUntilCV compares the repeat protocols side by side on one matrix: five fixed
// repeats (genload run --repeat 5) and runs with --until-cv (2 to 8 repeats per cell, stable
// when the upper confidence bound of the cell's CV is within the target), both in interleaved
// rounds on one engine. Each protocol runs against its own built-in engine with known noise
// (its own seed: one engine for all would let a later protocol find the prefix cache warmed
// by an earlier one's prompts) and with the prefix cache off,
// so that every repeat of a cell costs the same in every protocol: a warmup and a measured
// request, each prefilling cold, as when the matrix does not fit in the KV cache between two
// visits of a cell. Per protocol P it reports
//
//	P-median-cv-%, P-max-cv-%     median and max per-cell CV of the mean per-forward latency
//	P-gpu-s                       GPU time per GPU: the sum of the cells' wall times (s; run
//	                              setup excluded, which would favour one adaptive run over five)
//	P-busy-s                      the engine's busy time: the sum of its steps' simulated
//	                              durations (s), which a loaded machine cannot inflate
//	P-repeats/cell                measured records per cell
//	P-median-err-%, P-max-err-%   median and max over the cells of |cell mean / truth − 1|,
//	                              the truth being the same matrix on a noise-free engine × the
//	                              noise's mean factor 1 + slow-prob · (slow-factor − 1)
//
// with P one of fixed5, untilcv10, untilcv5, untilcv10c80 (--cv-confidence 0.8). The CVs are
// what genload consistency prints; the errors say what the CVs do not — how far each
// protocol's cell means are from the value the noise was injected around.
//
// Sub-benchmarks:
//
//	field      48 cells (L 250…4000 × B 1…8, 32 tokens, steps of 2–13 ms at time scale 1)
//	           and noise fitted to a field measurement of five fixed repeats over 98 cells
//	           (median CV 0.87 %, P90 4.83 %, max 18.2 %): 0.8 % per request, 2 % per step,
//	           and one step in 2,200 15× slow — most cells quiet, a few hit by a slow step (a
//	           stall, a preemption). Simulated with 33 steps per request, five fixed repeats
//	           of this noise over 98 cells give a median CV of 0.82 %, P90 4.46 %, max 19.6 %
//	           (mean of 50 matrices).
//	uniform3   16 cells, 3 % per request on every cell and no slow steps: no quiet cells whose
//	           saved repeats could pay for the noisy ones, the case the adaptive rule helps least.
//
// The CVs measure the machine's timing jitter too: run it on an idle machine. The engine's
// noise seed is 1, or -untilcv-seed N (go test … -args -untilcv-seed N) to see how much the
// comparison owes to one draw of the noise; -untilcv-only P measures only protocol P beside
// the fixed repeats.
func BenchmarkPerfUntilCV(b *testing.B) {
	b.Setenv("GENLOAD_PLUGIN_DIR", testplugins.Dir(b))
	tok, err := tokenizer.Default()
	if err != nil {
		b.Fatal(err)
	}
	for _, v := range []struct {
		name, noise, seqLens, batches string
		adaptive                      [][]string // name, then genload run's flags
	}{
		{"field", "step-cv=0.02,burst-cv=0.008,slow-prob=0.00045,slow-factor=15,seed=%d", "[250, 500, 1000, 2000, 3000, 4000]", "[1, 2, 3, 4, 5, 6, 7, 8]", [][]string{
			{"untilcv10", "--until-cv", "10", "--cv-confidence", "0.9"}, {"untilcv5", "--until-cv", "5", "--cv-confidence", "0.9"}, {"untilcv10c80", "--until-cv", "10", "--cv-confidence", "0.8"}}},
		{"uniform3", "step-cv=0.02,burst-cv=0.03,seed=%d", "[500, 1000, 2000, 4000]", "[1, 2, 4, 8]", [][]string{{"untilcv10", "--until-cv", "10", "--cv-confidence", "0.9"}}},
	} {
		b.Run(v.name, func(b *testing.B) {
			noise, err := engine.ParseNoise(fmt.Sprintf(v.noise, *untilCVSeed))
			if err != nil {
				b.Fatal(err)
			}
			out := b.TempDir()
			// start starts an engine for one protocol — its own, so that no protocol finds the
			// prefix cache warmed by another's prompts — with its own noise seed and the prefix
			// cache off, so that every repeat of a cell costs the same in every protocol (a
			// warmup and a measured request, each prefilling cold, as on a deployment whose
			// matrix does not fit in the KV cache between two visits of a cell). It returns
			// the run's bench.toml.
			start := func(n engine.Noise, seed uint64, busy *busyTime) string {
				ecfg := engine.DefaultConfig()
				if busy != nil {
					ecfg.StepLog = busy
				}
				ecfg.TimeScale, ecfg.Noise, ecfg.DisablePrefixCaching = 1, n, true
				ecfg.Noise.Seed = seed
				ecfg.VocabSize = max(ecfg.VocabSize, tok.VocabSize())
				url := serveEngine(b, ecfg, tok)
				return writeConfig(b, fmt.Sprintf("target = %q\nmax_tokens = 32\nout = %q\n[matrix]\nseq_lens = %s\nbatch_sizes = %s\n", url, out, v.seqLens, v.batches))
			}
			for i := 0; b.Loop(); i++ {
				id := fmt.Sprintf("p%d", i)
				runCLI := func(cfg, runID string, args ...string) {
					if code, _, stderr := cli(b, context.Background(), append([]string{"run", "-c", cfg, "--run-id", runID}, args...)...); code != exitcode.OK {
						b.Fatalf("%s %v: exit %d\n%s", runID, args, code, stderr)
					}
				}
				read := func(name string) *results.Run {
					r, err := results.ReadFile(filepath.Join(out, name+".json"))
					if err != nil {
						b.Fatal(err)
					}
					return r
				}
				runCLI(start(engine.DefaultNoise(), 0, nil), id+"-truth")
				truth := map[compare.CellKey]float64{}
				for _, c := range read(id + "-truth").Cells {
					if c.Status == results.StatusOK && c.Figures != nil && c.Figures.PerForward.N > 0 {
						truth[compare.CellKey{SeqLen: c.Cell.SeqLen, Batch: c.Cell.Batch}] = float64(c.Figures.PerForward.Mean) * (1 + noise.SlowProb*(noise.SlowFactor-1))
					}
				}
				metrics := func(p string, c *compare.Consistency, runs []*results.Run, busy *busyTime) {
					b.ReportMetric(busy.seconds(), p+"-busy-s")
					b.ReportMetric(100*c.MedianCV, p+"-median-cv-%")
					b.ReportMetric(100*c.MaxCV, p+"-max-cv-%")
					b.ReportMetric(gputime.Of(runs, 0, "").CellWall.Seconds(), p+"-gpu-s")
					records := 0
					for _, r := range runs {
						records += len(r.Cells)
					}
					b.ReportMetric(float64(records)/float64(len(c.Cells)), p+"-repeats/cell")
					var errs []float64
					for _, cc := range c.Cells {
						if t, ok := truth[cc.CellKey]; ok {
							errs = append(errs, math.Abs(float64(cc.Mean)/t-1))
						}
					}
					if len(errs) != len(c.Cells) {
						b.Fatalf("%s: %d of %d cells have a noise-free value", p, len(errs), len(c.Cells))
					}
					slices.Sort(errs)
					b.ReportMetric(100*errs[(len(errs)+1)/2-1], p+"-median-err-%") // nearest rank, as the CVs
					b.ReportMetric(100*errs[len(errs)-1], p+"-max-err-%")
				}
				fixedBusy := new(busyTime)
				runCLI(start(noise, noise.Seed, fixedBusy), id+"-fixed", "--repeat", "5")
				fixed := read(id + "-fixed")
				fc, err := compare.ConsistentRepeats(fixed)
				if err != nil {
					b.Fatal(err)
				}
				metrics("fixed5", fc, []*results.Run{fixed}, fixedBusy)
				for k, a := range v.adaptive {
					if *untilCVOnly != "" && a[0] != *untilCVOnly {
						continue
					}
					name := id + "-" + a[0]
					busy := new(busyTime)
					runCLI(start(noise, noise.Seed+uint64(k+1), busy), name, a[1:]...)
					until := read(name)
					uc, err := compare.ConsistentRepeats(until)
					if err != nil {
						b.Fatal(err)
					}
					metrics(a[0], uc, []*results.Run{until}, busy)
				}
			}
		})
	}
}

// busyTime is an engine step log (engine.Config.StepLog: one line per step, one Write each)
// that keeps only the sum of the steps' fwd_ms — the simulated duration, noise included —
// which at time scale 1 is the time a GPU would have been busy, whatever else the machine
// running the benchmark was doing.
type busyTime struct {
	mu sync.Mutex
	ms float64
}

// Write adds the fwd_ms of the step line p.
func (t *busyTime) Write(p []byte) (int, error) {
	const key = " fwd_ms="
	if i := bytes.Index(p, []byte(key)); i >= 0 {
		v := p[i+len(key):]
		if j := bytes.IndexByte(v, ' '); j >= 0 {
			v = v[:j]
		}
		f, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
		if err != nil {
			return 0, fmt.Errorf("step log: fwd_ms %q: %w", v, err)
		}
		t.mu.Lock()
		t.ms += f
		t.mu.Unlock()
	}
	return len(p), nil
}

func (t *busyTime) seconds() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ms / 1000
}
