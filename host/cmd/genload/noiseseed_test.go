package main

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/host/report"
	"gonum.org/v1/gonum/stat"
)

// --repeat 3 against the built-in engine with a per-request ("burst") noise of CV 5 %: each
// repeat starts its own engine, and each must draw its own noise (a seed derived from the
// configured one and the repeat, recorded in the header), so that the repeats' per-cell CV
// is the injected 5 % — not the host's sub-per-cent jitter, as when every engine replayed the
// same draws. The pooled CV, the root mean square of the 6 cells' CVs (12 degrees of freedom:
// its ratio to the true CV lies in [0.61, 1.39] with 95 % probability), must lie in
// [2.5 %, 10 %]; replayed draws gave a pooled CV of a few tenths of a per cent.
func TestRepeatDrawsIndependentNoisePerEngine(t *testing.T) {
	t.Setenv("GENLOAD_PLUGIN_DIR", testplugins.Dir(t))
	out := t.TempDir()
	cfg := writeConfig(t, fmt.Sprintf(`
max_tokens = 16
out = %q
[matrix]
seq_lens = [1000, 2000, 4000]
batch_sizes = [1, 4]
[engine]
time_scale = 1
noise = "burst-cv=0.05,seed=1"
`, out))
	code, stdout, stderr := cli(t, context.Background(), "run", "-c", cfg, "--run-id", "bn", "--repeat", "3")
	if code != exitcode.OK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	conf := engine.Noise{BurstCV: 0.05, SlowFactor: 1, Seed: 1}
	byCell := map[string][]float64{}
	for k := 1; k <= 3; k++ {
		r, err := report.ReadFile(filepath.Join(out, fmt.Sprintf("bn-r%d.json", k)))
		if err != nil {
			t.Fatal(err)
		}
		start := fmt.Sprintf("repeat %d", k)
		if want := conf.ForStart(start).String(); r.Header.Engine["noise"] != want {
			t.Errorf("repeat %d: header engine noise %v, want %q", k, r.Header.Engine["noise"], want)
		}
		if from, _ := r.Header.Engine["noise_seed_from"].(string); !strings.Contains(from, "seed=1") || !strings.Contains(from, start) {
			t.Errorf("repeat %d: noise_seed_from %q", k, from)
		}
		for _, c := range r.Cells {
			if c.Figures != nil && c.Figures.PerForward.N > 0 {
				byCell[c.Cell.Key()] = append(byCell[c.Cell.Key()], float64(c.Figures.PerForward.Mean))
			}
		}
	}
	var ss float64
	n := 0
	for key, xs := range byCell {
		if len(xs) < 2 {
			continue
		}
		m, sd := stat.MeanStdDev(xs, nil)
		t.Logf("%s: CV %.2f %% over %d repeats", key, 100*sd/m, len(xs))
		ss += (sd / m) * (sd / m)
		n++
	}
	if n < 5 {
		t.Fatalf("%d cells with ≥ 2 timed repeats, want ≥ 5 of 6", n)
	}
	pooled := math.Sqrt(ss / float64(n))
	t.Logf("pooled CV %.2f %% over %d cells (5 %% injected)", 100*pooled, n)
	if pooled < 0.025 || pooled > 0.10 {
		t.Errorf("pooled per-cell CV %.2f %%, want the injected 5 %% (within [2.5, 10] %%)", 100*pooled)
	}
}
