package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/gputime"
	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/tokenizer"
)

// BenchmarkPerfUntilCV compares the two repeat protocols side by side on one matrix (L 1000,
// 2000, 4000 × B 1, 4, 8; 48 tokens; steps of 2–9 ms) against one long-lived built-in engine
// with known noise, so that both face the same noise process (an engine started per run
// would replay the same seeded noise in each of five fixed repeats): five fixed repeats
// (genload run --repeat 5) and one run with --until-cv 5 (2 to 8 repeats per cell). It
// reports, per protocol, the median and max per-cell CV of the mean per-forward latency (%)
// and the GPU time per GPU as the sum of the cells' wall times (s; run setup excluded, which
// would favour the one adaptive run over five), and the until-cv run's mean repeats per cell.
//
// Sub-benchmarks: the noise the issue names (2 % per step, 3 % per request burst) and a
// quiet engine (2 % per step, 0.5 % per burst), where most cells can stop after two repeats.
func BenchmarkPerfUntilCV(b *testing.B) {
	b.Setenv("GENLOAD_PLUGIN_DIR", testplugins.Dir(b))
	tok, err := tokenizer.Default()
	if err != nil {
		b.Fatal(err)
	}
	for _, v := range []struct{ name, noise string }{
		{"step2burst3", "step-cv=0.02,burst-cv=0.03,seed=1"},
		{"step2burst0.5", "step-cv=0.02,burst-cv=0.005,seed=1"},
	} {
		b.Run(v.name, func(b *testing.B) {
			ecfg := engine.DefaultConfig()
			ecfg.TimeScale = 1
			if ecfg.Noise, err = engine.ParseNoise(v.noise); err != nil {
				b.Fatal(err)
			}
			ecfg.VocabSize = max(ecfg.VocabSize, tok.VocabSize())
			eng, err := engine.New(ecfg, tok)
			if err != nil {
				b.Fatal(err)
			}
			defer eng.Close()
			url, err := eng.Start("127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			out := b.TempDir()
			cfg := writeConfig(b, fmt.Sprintf("target = %q\nmax_tokens = 48\nout = %q\n[matrix]\nseq_lens = [1000, 2000, 4000]\nbatch_sizes = [1, 4, 8]\n", url, out))
			for i := 0; b.Loop(); i++ {
				id := fmt.Sprintf("p%d", i)
				if code, _, stderr := cli(b, context.Background(), "run", "-c", cfg, "--run-id", id+"-fixed", "--repeat", "5"); code != exitcode.OK {
					b.Fatalf("--repeat 5: exit %d\n%s", code, stderr)
				}
				if code, _, stderr := cli(b, context.Background(), "run", "-c", cfg, "--run-id", id+"-until", "--until-cv", "5"); code != exitcode.OK {
					b.Fatalf("--until-cv 5: exit %d\n%s", code, stderr)
				}
				var fixed []*report.Run
				for k := 1; k <= 5; k++ {
					r, err := report.ReadFile(filepath.Join(out, fmt.Sprintf("%s-fixed-r%d.json", id, k)))
					if err != nil {
						b.Fatal(err)
					}
					fixed = append(fixed, r)
				}
				until, err := report.ReadFile(filepath.Join(out, id+"-until.json"))
				if err != nil {
					b.Fatal(err)
				}
				fc, err := report.Consistent(fixed)
				if err != nil {
					b.Fatal(err)
				}
				uc, err := report.ConsistentRepeats(until)
				if err != nil {
					b.Fatal(err)
				}
				fg := gputime.Of(fixed, 0, "").CellWall
				ug := gputime.Of([]*report.Run{until}, 0, "").CellWall
				cells := map[int]bool{}
				for _, c := range until.Cells {
					cells[c.Cell.Index] = true
				}
				b.ReportMetric(100*fc.MedianCV, "fixed5-median-cv-%")
				b.ReportMetric(100*fc.MaxCV, "fixed5-max-cv-%")
				b.ReportMetric(fg.Seconds(), "fixed5-gpu-s")
				b.ReportMetric(100*uc.MedianCV, "untilcv-median-cv-%")
				b.ReportMetric(100*uc.MaxCV, "untilcv-max-cv-%")
				b.ReportMetric(ug.Seconds(), "untilcv-gpu-s")
				b.ReportMetric(float64(len(until.Cells))/float64(len(cells)), "untilcv-repeats/cell")
				b.ReportMetric(float64(ug)/float64(fg), "gpu-ratio")
			}
		})
	}
}
