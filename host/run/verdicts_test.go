package run

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/genload/genload/host/compare"
	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/host/internal/textcheck"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/results"
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
func named(c *results.Cell, n warning.Name) []string {
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
			if c.Status != results.StatusOK || len(nr) > 0 {
				t.Errorf("%s: B = 8 runs at once on a server of 8: status %s, %q", c.Cell.Key(), c.Status, nr)
			}
		case 16:
			if c.Status != results.StatusPartial || len(nr) != 1 || !strings.Contains(nr[0], "ran at most 8 sequences at once, not B = 16") ||
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
	rec := results.Cell{Figures: &measure.Figures{Sequences: 1024}, Server: &scrape.CellMetrics{Occupancy: scrape.Occupy(samples, 1024)}}
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
	if c.Status != results.StatusPartial || f == nil || f.Counted != 3 || f.Failed != 1 || f.PerForward.N != 3 {
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
	plainOnly(t) // its verdict needs three sequences done within the 500 ms retry delay; host/dispatch races the resend
	res, stderr := runToml(t, routedFaulty(t, 1), false)
	c := res.Run.Cells[0]
	t.Logf("%s: %s, warnings %q", c.Cell.Key(), c.Status, c.Warnings)
	w := named(&c, warning.ResentAfterBatch)
	if c.Status != results.StatusPartial || len(w) != 1 || !strings.Contains(w[0], "when 3 of the other 3 sequences had finished") ||
		!strings.Contains(w[0], "status 503") {
		t.Errorf("status %s, resent-after-batch warnings %q\n%s", c.Status, w, stderr)
	}
	if c.Figures.Counted != 4 {
		t.Errorf("counted %d, want the 4 kept", c.Figures.Counted)
	}
}

// seqTruth collects the built-in engine's per-sequence truth (Config.SeqLog): each finished
// sequence of maxTokens tokens, its true time per decode forward pass in ms.
type seqTruth struct {
	mu        sync.Mutex
	maxTokens int
	fwd       []float64
}

func (s *seqTruth) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, line := range strings.Split(strings.TrimSpace(string(p)), "\n") {
		kv := map[string]float64{}
		for _, f := range strings.Fields(line) {
			if k, v, ok := strings.Cut(f, "="); ok {
				if x, err := strconv.ParseFloat(v, 64); err == nil {
					kv[k] = x
				}
			}
		}
		if int(kv["tokens"]) == s.maxTokens && int(kv["max_tokens"]) == s.maxTokens && kv["last_step"] > kv["first_step"] {
			s.fwd = append(s.fwd, (kv["last_ms"]-kv["first_ms"])/(kv["last_step"]-kv["first_step"]))
		}
	}
	return len(p), nil
}

// mean is the truth's mean over the sequences logged.
func (s *seqTruth) mean() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := 0.0
	for _, v := range s.fwd {
		sum += v
	}
	return sum / float64(len(s.fwd))
}

// Routed over two built-in engines of one profile, the second at twice the time scale
// (decode steps of ~7 and ~14 ms): the cell's fwd is one mean over both servers' sequences,
// a blend of neither (≈ 10.6 ms), and nothing said so. Each server now has its own fwd and
// full-batch fwd, within 1 % of its own engine's truth (the mean over its sequences of
// (last − first token) / forward passes, from its sequence log), and the gap is a warning
// naming both. 128 tokens a sequence: a chunk read 7 ms late on a loaded machine (seen with
// 48, +1.03 %) moves a 14 ms server's fwd by 0.4 %.
func TestRoutedOverUnequalServersHasPerServerFigures(t *testing.T) {
	plainOnly(t) // each server's fwd within 1 % of its truth; routing is raced by the other routed tests
	const maxTokens = 128
	truths := []*seqTruth{{maxTokens: maxTokens}, {maxTokens: maxTokens}}
	var urls []string
	for i, scale := range []float64{1, 2} {
		urls = append(urls, verdictEngine(t, func(c *engine.Config) { c.TimeScale, c.SeqLog = scale, truths[i] }))
	}
	res, stderr := runToml(t, fmt.Sprintf("mode = \"routed\"\nmax_tokens = %d\n[matrix]\nseq_lens = [1000]\nbatch_sizes = [8]\n[[workers]]\nurl = %q\n[[workers]]\nurl = %q\n",
		maxTokens, urls[0], urls[1]), false)
	c := res.Run.Cells[0]
	t.Logf("%s: %s, fwd %.3f ms, warnings %q", c.Cell.Key(), c.Status, float64(c.Figures.PerForward.Mean)/1e6, c.Warnings)
	if len(c.PerServer) != 2 {
		t.Fatalf("%d per-server figures, want 2\n%s", len(c.PerServer), stderr)
	}
	for i, s := range c.PerServer {
		truth := truths[i].mean()
		fwd, win := float64(s.PerForward.Mean)/1e6, float64(s.Window.PerStep)/1e6
		t.Logf("server %s: fwd %.3f ms over %d, full-batch %.3f ms (valid %v %q), truth %.3f ms over %d sequences", s.Server, fwd, s.PerForward.N, win, s.Window.Valid, s.Window.Reason, truth, len(truths[i].fwd))
		if s.Server != urls[i] || s.Sequences != 4 || s.PerForward.N != 4 {
			t.Errorf("server %d: %s with %d sequences, fwd over %d; want %s, 4", i, s.Server, s.Sequences, s.PerForward.N, urls[i])
		}
		if math.Abs(fwd/truth-1) > 0.01 {
			t.Errorf("server %s: fwd %.3f ms is %+.2f %% off its truth %.3f ms", s.Server, fwd, 100*(fwd/truth-1), truth)
		}
		if !s.Window.Valid || math.Abs(win/truth-1) > 0.01 {
			t.Errorf("server %s: full-batch fwd %.3f ms (valid %v: %s), truth %.3f ms", s.Server, win, s.Window.Valid, s.Window.Reason, truth)
		}
	}
	w := named(&c, warning.ServersDiffer)
	if len(w) != 1 || !strings.Contains(w[0], urls[0]) || !strings.Contains(w[0], urls[1]) {
		t.Errorf("servers-differ warnings %q", w)
	}
	// The CSV has each server's figure.
	var csvText bytes.Buffer
	if b, err := os.ReadFile(res.CSV); err == nil {
		csvText.Write(b)
	}
	if !strings.Contains(csvText.String(), "per_server_per_forward_mean_ms") || !strings.Contains(csvText.String(), urls[0]+";"+urls[1]) {
		t.Errorf("CSV lacks the per-server columns:\n%s", csvText.String())
	}
}

// A server whose KV cache holds 4,096 tokens, asked for 8 prompts of ~1,000 tokens with 32
// tokens each: at most 3 fit at once (the scheduler preempts and recomputes the others). The
// cell was "ok"; the run now says so before sending anything, from the server's /metrics
// (vllm:cache_config_info), and the cell is partial with its figures kept.
func TestCellBeyondTheKVCacheIsSaidBeforeItIsSent(t *testing.T) {
	url := verdictEngine(t, func(c *engine.Config) { c.KVCacheTokens = 4096 })
	res, stderr := runToml(t, fmt.Sprintf("target = %q\nmax_tokens = 32\n[lengths]\nplugin = \"uniform\"\n[matrix]\nseq_lens = [200, 1000]\nbatch_sizes = [8]\n", url), false)
	first := strings.Index(stderr, "server capacity: ")
	want := "server capacity: the server holds 4,096 KV-cache tokens (vllm:cache_config_info num_gpu_blocks × block_size), too few for the B sequences of L=1000 B=8 at once (prompts of L tokens + max_tokens 32): their batch will not be reached, and the cells will say so"
	if first < 0 || unwrapped(stderr[first:]) != want {
		t.Errorf("no announcement of the cell beyond the KV cache:\n%s\nwant (wrapped within 120 columns)\n%s", stderr, want)
	}
	if long := textcheck.Wider(announcement(stderr[max(first, 0):]), report.NarrowWidth); len(long) > 0 {
		t.Errorf("announcement lines over %d columns: %q", report.NarrowWidth, long)
	}
	if strings.Contains(stderr[:max(first, 0)], "L=1000,B=8") {
		t.Errorf("the announcement comes after the cell:\n%s", stderr)
	}
	for _, c := range res.Run.Cells {
		w := named(&c, warning.CapacityShort)
		t.Logf("%s: %s, fwd %.3f ms, warnings %q", c.Cell.Key(), c.Status, float64(c.Figures.PerForward.Mean)/1e6, c.Warnings)
		switch c.Cell.SeqLen {
		case 200:
			if len(w) > 0 || c.Status != results.StatusOK {
				t.Errorf("%s fits (8 × 232 tokens): status %s, %q", c.Cell.Key(), c.Status, w)
			}
		case 1000:
			if c.Status != results.StatusPartial || len(w) != 1 || !strings.Contains(w[0], "server capacity too small: its KV cache is the limit: the 8 of the batch need ") ||
				!strings.Contains(w[0], ", it holds 4,096 KV-cache tokens (vllm:cache_config_info num_gpu_blocks × block_size): at most 3 of them run at once") || c.Figures.PerForward.N == 0 {
				t.Errorf("%s: status %s, capacity warnings %q, fwd over %d", c.Cell.Key(), c.Status, w, c.Figures.PerForward.N)
			}
		}
	}
}

// The built-in engine's defaults (8,388,608 KV-cache tokens, 256 sequences) asked for
// L = 128,000 and B = 256 (the cell that ran 4 minutes at a few sequences at a time and came
// out "ok ⚠" with a 37.7 ms fwd): the run says before sending anything that 65 of the 256 fit
// its KV cache. At L = 200, B = 300 the KV cache holds all 300 and max_num_seqs (256) binds:
// the run said "the 300 sequences need 70,384 tokens of KV cache at once …, the server holds
// 8,388,608 KV-cache tokens, 256 sequences at once", as if the KV cache were short; it names
// the limit that binds, with its figure.
func TestBuiltinEngineCapacityIsAnnounced(t *testing.T) {
	eng, err := engine.New(engine.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	cfg := config.Default()
	cfg.MaxTokens = 100
	cr := &cellRunner{cfg: cfg, capacity: capacities(cfg, eng, "http://builtin", nil, nil)}
	var out bytes.Buffer
	cells := []matrix.Cell{{Index: 0, SeqLen: 128000, Batch: 256}, {Index: 1, SeqLen: 128000, Batch: 64}, {Index: 2, SeqLen: 1000, Batch: 256}, {Index: 3, SeqLen: 200, Batch: 300}}
	cr.announceCapacity(&out, cells)
	want := "server capacity: the server holds 8,388,608 KV-cache tokens (the built-in engine's kv_cache_tokens), too few for the B\n" +
		"  sequences of L=128000 B=256 at once (prompts of L tokens + max_tokens 100): their batch will not be reached, and the\n" +
		"  cells will say so\n" +
		"server capacity: the server runs at most 256 sequences at once (the built-in engine's max_num_seqs), fewer than the B\n" +
		"  sequences of L=200 B=300: their batch will not be reached (the others wait for a free slot), and the cells will say so\n"
	if out.String() != want {
		t.Errorf("announcement:\n%s\nwant\n%s", out.String(), want)
	}
	for _, tc := range []struct {
		lens      []int
		maxTokens int
		want      string
	}{
		{slices.Repeat([]int{128000}, 256), 100, "server capacity too small: its KV cache is the limit: the 256 of the batch need 32,796,672 tokens of KV cache at once (each prompt + max_tokens 100, in blocks of 16), it holds 8,388,608 KV-cache tokens (the built-in engine's kv_cache_tokens): at most 65 of them run at once, the others wait or are preempted and recomputed; the figures are kept, for a batch of at most 65"},
		{slices.Repeat([]int{200}, 300), 20, "server capacity too small: it runs at most 256 sequences at once (the built-in engine's max_num_seqs), fewer than the 300 of the batch; the KV cache is not the limit: they need 67,200 tokens of KV cache at once (each prompt + max_tokens 20, in blocks of 16), it holds 8,388,608: the others wait for a free slot; the figures are kept, for a batch of at most 256"},
	} {
		w, ok := capacityWarning(cr.capacity[0], tc.lens, tc.maxTokens, false, "")
		if !ok || w.Text != tc.want || w.Name != warning.CapacityShort {
			t.Errorf("cell warning %v %s\n%q\nwant\n%q", ok, w.Name, w.Text, tc.want)
		}
	}
}

// SGLang's max_running_requests = 4 and a KV cache of 161,721 tokens from /metrics, a routed
// server of 8 prompts: the sequences at once bind, with the figure and series that say so.
func TestRunningRequestsLimitIsNamed(t *testing.T) {
	fams, err := scrape.Parse(strings.NewReader("# TYPE sglang:max_total_num_tokens gauge\nsglang:max_total_num_tokens{name=\"m\"} 161721\n# TYPE sglang:max_running_requests gauge\nsglang:max_running_requests{name=\"m\"} 4\n"))
	if err != nil {
		t.Fatal(err)
	}
	c, ok := scrape.CapacityOf(scrape.Snapshot{Families: fams})
	if !ok {
		t.Fatal("no capacity")
	}
	w, ok := capacityWarning(c, slices.Repeat([]int{1000}, 8), 32, false, "http://a")
	want := "server http://a capacity too small: it runs at most 4 sequences at once (sglang:max_running_requests), fewer than the 8 routed to it; the KV cache is not the limit: they need 8,256 tokens of KV cache at once (each prompt + max_tokens 32, in blocks of 1), it holds 161,721: the others wait for a free slot; the figures are kept, for a batch of at most 4"
	if !ok || w.Text != want || warning.Classify(w.Text) != warning.CapacityShort {
		t.Errorf("warning %v\n%q\nwant\n%q", ok, w.Text, want)
	}
}

// unwrapped joins the first line of s with the indented lines that continue it.
func unwrapped(s string) string {
	return strings.Join(strings.Fields(announcement(s)), " ")
}

// announcement is the first line of s with the indented lines that continue it.
func announcement(s string) string {
	lines := strings.Split(s, "\n")
	n := 1
	for n < len(lines) && strings.HasPrefix(lines[n], "  ") {
		n++
	}
	return strings.Join(lines[:n], "\n")
}

// A server whose /metrics inter-token latency echoes a configured 10 ms whatever the load
// (quirk constant-itl), its truth hidden as on any other server: every cell said "per-forward
// estimates disagree … (a late first token or a stall shortens or lengthens the client's
// decode window)", blaming the client. From the second cell on, with the metric at the same
// value while the client's fwd moved by more than 10 %, the cell names the metric as not
// varying with load and compares it no more.
func TestMetricThatDoesNotVaryWithLoadIsNamed(t *testing.T) {
	plainOnly(t) // a verdict on the client's fwd moving by 10 %; the scraping is raced by host/scrape
	url := verdictEngine(t, func(c *engine.Config) {
		c.TimeScale = 0.5
		c.Quirks.ConstantITL, c.Quirks.HideTruth = 10*time.Millisecond, true
	})
	res, stderr := runToml(t, fmt.Sprintf("target = %q\nmax_tokens = 32\n[matrix]\nseq_lens = [200]\nbatch_sizes = [1]\npairs = [[8000, 32]]\n", url), false)
	if len(res.Run.Cells) != 2 {
		t.Fatalf("%d cells\n%s", len(res.Run.Cells), stderr)
	}
	for i, c := range res.Run.Cells {
		fixed, disagree := named(&c, warning.MetricConstant), named(&c, warning.SourcesDisagree)
		t.Logf("%s: fwd %.3f ms, metrics %.3f ms, warnings %q", c.Cell.Key(), float64(c.Figures.PerForward.Mean)/1e6, float64(c.Server.Steps.StepTime)/1e6, c.Warnings)
		for _, d := range disagree {
			if strings.Contains(d, "metrics fwd") && strings.Contains(d, "shortens or lengthens the client's decode window") {
				t.Errorf("%s blames the client for the server's fixed metric: %q", c.Cell.Key(), d)
			}
		}
		if i == 1 && (len(fixed) != 1 || !strings.Contains(fixed[0], "reads 10.000 ms in 2 cells (L=200,B=1; L=8000,B=32)") ||
			slices.ContainsFunc(disagree, func(d string) bool { return strings.Contains(d, "metrics fwd") })) {
			t.Errorf("%s: metric-constant %q, sources-disagree %q", c.Cell.Key(), fixed, disagree)
		}
	}
}

// The same matrix run twice against one server: the second run's prompts were already in
// its prefix cache when its warmups sent them (the first run had), which nothing said. The
// second run's cells now say so, as do its table's legend, consistency and diff of the two
// runs; the first run's say nothing of it.
func TestPromptsAlreadyCachedAreSaid(t *testing.T) {
	url := verdictEngine(t, func(c *engine.Config) { c.TimeScale = 0.2 })
	src := fmt.Sprintf("target = %q\nmax_tokens = 16\n[matrix]\nseq_lens = [300, 1000]\nbatch_sizes = [2, 4]\n", url)
	first, _ := runToml(t, src, false)
	second, _ := runToml(t, src, false)
	for i, r := range []*Result{first, second} {
		for _, c := range r.Run.Cells {
			w := named(&c, warning.PromptsCached)
			t.Logf("run %d %s: cache before %+v, warnings %q", i+1, c.Cell.Key(), c.CacheBefore, w)
			if got, want := len(w) == 1, i == 1; got != want || c.WasCached() != want {
				t.Errorf("run %d %s: already-cached warnings %q, WasCached %v", i+1, c.Cell.Key(), w, c.WasCached())
			}
		}
	}
	runs := []*results.Run{first.Run, second.Run}
	cons, err := compare.Consistent(runs)
	if err != nil {
		t.Fatal(err)
	}
	diff, err := compare.Compare(first.Run, second.Run)
	if err != nil {
		t.Fatal(err)
	}
	var table, cb, db bytes.Buffer
	report.Table(&table, second.Run)
	cons.WriteMarkdown(&cb)
	diff.WriteMarkdown(&db)
	note := "4 of 4 cell records found their prompts in the server's prefix cache before sending them"
	for name, out := range map[string]string{"legend": table.String(), "consistency": cb.String(), "diff": db.String()} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), note) {
			t.Errorf("%s lacks %q:\n%s", name, note, out)
		}
	}
	var firstTable bytes.Buffer
	report.Table(&firstTable, first.Run)
	if strings.Contains(firstTable.String(), "prefix cache before sending them") {
		t.Errorf("the first run's legend says its prompts were cached:\n%s", firstTable.String())
	}
}
