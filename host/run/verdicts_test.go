package run

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/scrape"
	"github.com/genload/genload/host/tokenizer"
	"github.com/genload/genload/host/warning"
)

// verdictEngine starts a built-in engine serving the default tokenizer with the dense-8b
// profile at time scale 1 (decode steps of 7–9 ms, long enough for the running gauge's 20 ms
// samples), no early EOS and seed 42, changed by set; it returns its base URL.
func verdictEngine(t *testing.T, set func(*engine.Config)) string {
	t.Helper()
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatal(err)
	}
	ecfg := engine.DefaultConfig()
	ecfg.Profile, ecfg.TimeScale, ecfg.EOSProbability, ecfg.Seed = "dense-8b", 1, 0, 42
	ecfg.VocabSize = max(ecfg.VocabSize, tok.VocabSize())
	if set != nil {
		set(&ecfg)
	}
	eng, err := engine.New(ecfg, tok)
	if err != nil {
		t.Fatal(err)
	}
	u, err := eng.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return u
}

// runToml runs genload with the bench.toml text src (out set to a temporary directory) and
// returns its result and its stderr; a run that fails is the test's failure unless failOK.
func runToml(t *testing.T, src string, failOK bool) (*Result, string) {
	t.Helper()
	t.Setenv(testplugins.EnvPluginDir, testplugins.Dir(t))
	cfg := probeCfg(t, fmt.Sprintf("out = %q\n", t.TempDir())+src)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	res, err := Run(ctx, cfg, Options{Stderr: &stderr, RunID: "verdict"})
	if err != nil && !failOK {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if res == nil || res.Run == nil {
		t.Fatalf("no results: %v\n%s", err, stderr.String())
	}
	return res, stderr.String()
}

// named returns the cell's warnings of kind n.
func named(c *report.Cell, n warning.Name) []string {
	var out []string
	for _, w := range c.NamedWarnings() {
		if w.Name == n {
			out = append(out, w.Text)
		}
	}
	return out
}

// A server that schedules at most 8 sequences per step, asked for B = 16: the gauge never
// reads 16. The cell was "ok ⚠" with its fwd (of a batch of 8) printed as B = 16's; it is
// partial now, its figures kept, the warning saying the batch they are for.
func TestBatchNotReachedIsPartial(t *testing.T) {
	url := verdictEngine(t, func(c *engine.Config) { c.MaxNumSeqs = 8 })
	res, stderr := runToml(t, fmt.Sprintf("target = %q\nmax_tokens = 32\n[matrix]\nseq_lens = [200]\nbatch_sizes = [8, 16]\n", url), false)
	for _, c := range res.Run.Cells {
		nr := named(&c, warning.BatchNotReached)
		t.Logf("%s: %s, fwd %.3f ms over %d, B seen %+v, warnings %q", c.Cell.Key(), c.Status, float64(c.Figures.PerForward.Mean)/1e6, c.Figures.PerForward.N, c.Server.Occupancy, c.Warnings)
		switch c.Cell.Batch {
		case 8:
			if c.Status != report.StatusOK || len(nr) > 0 {
				t.Errorf("%s: B = 8 runs at once on a server of 8: status %s, %q", c.Cell.Key(), c.Status, nr)
			}
		case 16:
			if c.Status != report.StatusPartial || len(nr) != 1 || !strings.Contains(nr[0], "ran at most 8 sequences at once, not B = 16") ||
				!strings.Contains(nr[0], "for a batch of at most 8") {
				t.Errorf("%s: status %s, not-reached warnings %q, want partial and at most 8\n%s", c.Cell.Key(), c.Status, nr, stderr)
			}
			if c.Figures.PerForward.N != 16 {
				t.Errorf("%s: fwd over %d sequences, want the 16 kept", c.Cell.Key(), c.Figures.PerForward.N)
			}
		}
	}
}

// A stressed server asked for B = 1,024 ramps up to 1,020 running and down again, its long
// tail at 1: the mode (1) made the summary "the server mostly ran 1 sequence at once"; the
// distribution says the batch was never reached, at most 1,020, mean 373.
func TestAttainmentReadsTheGaugesDistribution(t *testing.T) {
	var samples []int
	for v := 20; v <= 1020; v += 50 {
		samples = append(samples, v)
	}
	samples = append(samples, 1020, 1020, 1020, 1020)
	for v := 1000; v >= 100; v -= 100 {
		samples = append(samples, v)
	}
	for range 20 {
		samples = append(samples, 1)
	}
	rec := report.Cell{Figures: &measure.Figures{Sequences: 1024}, Server: &scrape.CellMetrics{Occupancy: scrape.Occupy(samples, 1024)}}
	ws, notReached := attainmentWarnings(config.Default(), matrix.Cell{SeqLen: 1000, Batch: 1024}, &rec)
	got := joined(ws, notReached)
	if !notReached || strings.Contains(got, "mostly ran 1 sequence") || !strings.Contains(got, "at most 1,020 sequences at once, not B = 1024") ||
		!strings.Contains(got, "mean 373") {
		t.Errorf("not reached %v, warnings:\n%s", notReached, got)
	}
}

// routedFaulty is the bench.toml of a routed cell of B = 4 over one built-in engine that
// answers its 4th completion request with 503 (no warmup, no token-count probe: the measured
// requests are the engine's first four, sent together), with retries retries.
func routedFaulty(t *testing.T, retries int) string {
	url := verdictEngine(t, func(c *engine.Config) { c.Faults.Status, c.Faults.Every = 503, 4 })
	return fmt.Sprintf("target = %q\nmode = \"routed\"\nmax_tokens = 32\ntoken_counts = \"usage\"\n[warmup]\ndisabled = true\nretries = %d\n[matrix]\nseq_lens = [200]\nbatch_sizes = [4]\n", url, retries)
}

// Routed, one of the B requests fails: the cell was an error, its three measured sequences
// lost; it is partial now, the failed request's sequence left out and the others kept.
func TestRoutedFailedRequestKeepsTheOthers(t *testing.T) {
	res, stderr := runToml(t, routedFaulty(t, 0), false)
	c := res.Run.Cells[0]
	f := c.Figures
	t.Logf("%s: %s %q, warnings %q", c.Cell.Key(), c.Status, c.Error, c.Warnings)
	if c.Status != report.StatusPartial || f == nil || f.Counted != 3 || f.Failed != 1 || f.PerForward.N != 3 {
		t.Fatalf("status %s, error %q, figures %+v\n%s", c.Status, c.Error, f, stderr)
	}
	if w := named(&c, warning.RequestFailed); len(w) != 1 || !strings.HasPrefix(w[0], "1 of 4 requests failed (their sequences are left out, the others kept): ") || !strings.Contains(w[0], "status 503") {
		t.Errorf("request-failed warnings %q", w)
	}
}

// Routed, one request fails and is resent after the 500 ms retry delay: the other three
// sequences (32 tokens of ~7 ms steps) had finished by then. The cell was "ok", the batch
// of 4 never reached; it says so and is partial.
func TestRoutedResendAfterTheBatchIsSaid(t *testing.T) {
	res, stderr := runToml(t, routedFaulty(t, 1), false)
	c := res.Run.Cells[0]
	t.Logf("%s: %s, warnings %q", c.Cell.Key(), c.Status, c.Warnings)
	w := named(&c, warning.ResentAfterBatch)
	if c.Status != report.StatusPartial || len(w) != 1 || !strings.Contains(w[0], "when 3 of the other 3 sequences had finished") ||
		!strings.Contains(w[0], "status 503") {
		t.Errorf("status %s, resent-after-batch warnings %q\n%s", c.Status, w, stderr)
	}
	if c.Figures.Counted != 4 {
		t.Errorf("counted %d, want the 4 kept", c.Figures.Counted)
	}
}
