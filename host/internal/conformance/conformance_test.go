package conformance

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/internal/logtest"
	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/run"
	"github.com/genload/genload/host/sse"
	"github.com/genload/genload/host/stats"
	"github.com/genload/genload/host/tokenizer"
)

// The run every row makes: a small matrix, enough decode steps per sequence for a 1 % figure.
const (
	maxTokens = 48   // per sequence, unless a row's genload function changes it
	tolerance = 0.01 // headline per-forward figure vs the engine's truth, relative
)

// The default matrix: one sequence and a batch of eight, at the longer of the two lengths
// the suite used (200 and 1,000 read alike in every row; the longer prefill is the harder
// start of a stream).
var (
	seqLens    = []int{1000}
	batchSizes = []int{1, 8}
)

// row is one server behaviour and what genload must make of it.
type row struct {
	name string
	// quirks are the engine's --quirk list (hide-truth is always added).
	quirks string
	// engine changes other engine settings (max_num_seqs, speculative decoding, dialect).
	engine func(*engine.Config)
	// genload changes the run's configuration.
	genload func(*config.Config)
	// check holds the behaviour-specific truths, cell by cell (truth.seqs is 0 when the
	// cell sent no measured request).
	check func(t *testing.T, c *results.Cell, tr *cellTruth)
	// checkRun looks at the whole run (its error and output), when given.
	checkRun func(t *testing.T, res *run.Result, err error, out string)
	// servers is the number of engines (default 1); with more, genload routes over them
	// (mode "routed", one worker per engine). lastQuirks are added to the last engine's.
	servers    int
	lastQuirks string
	// timeout bounds the run (default 60 s).
	timeout time.Duration
	// cells, when given, is the row's matrix (seq_lens, batch_sizes) instead of the
	// default's four cells: rows that check one start-of-stream behaviour run one cell.
	cells *[2][]int
	// expect says which headline figures a cell must have (default: defaultExpect). A
	// figure the expectation leaves present must be there and within the tolerance of the
	// engine's truth over the forward passes it timed; one it expects absent must be absent
	// with a reason containing the expected text, among the cell's warnings.
	expect func(r row, c *results.Cell, tr *cellTruth) expectation
	// failing lets cells fail without figures (the row's check says how they fail).
	failing bool
	// plain keeps the engine's own chunking: without it every chunk is merged with its
	// choice's next with probability 0.15 (quirk coalesce, about 1.18 tokens per chunk), so
	// that every row's figures also depend on counting each chunk's tokens, not its chunks.
	// Rows whose behaviour is the chunking (tokens per chunk, speculative decoding, one token
	// per chunk), or that fail before any cell, keep it plain.
	plain bool
}

// expectation is what a cell must show of its two headline figures: "" = present (and
// within the tolerance); else absent, with a reason containing this text.
type expectation struct{ fwd, window string }

// defaultExpect: both figures present, except that a cell whose every sequence left the
// counted set (none generated max_tokens, per the engine) has neither, and sequences routed
// over several servers share no batch.
func defaultExpect(r row, c *results.Cell, tr *cellTruth) expectation {
	var e expectation
	if tr.normal == 0 {
		e = expectation{fwd: "no sequence ran its max_tokens", window: "no counted sequences"}
	}
	if r.servers > 1 {
		e.window = "routed over"
	}
	return e
}

// one is the matrix of a row that checks one behaviour of the start of a stream: one cell of
// eight sequences (at L = 1,000 none is clamped to the shortest length, so each prompt's
// length names its sequence in the engine's log when routed).
var one = &[2][]int{{1000}, {8}}

func rows() []row {
	rs := []row{
		{name: "baseline"},
		{name: "dialect-llamacpp", engine: func(c *engine.Config) { c.Dialect = engine.DialectLlamaCpp }, check: serverTimings},
		{name: "dialect-sglang", engine: func(c *engine.Config) { c.Dialect = engine.DialectSGLang }},
		{name: "metrics-fwd-vllm", check: metricsFwd},
		{name: "metrics-fwd-sglang", engine: func(c *engine.Config) { c.Dialect = engine.DialectSGLang }, check: metricsFwd},
		{name: "metrics-fwd-llamacpp", engine: func(c *engine.Config) { c.Dialect = engine.DialectLlamaCpp }, check: metricsFwd},
		{name: "metrics-fwd-tgi", engine: func(c *engine.Config) { c.Dialect = engine.DialectTGI },
			genload: shape(config.ModeRouted, config.FormatText), check: metricsFwd}, // TGI: strings only, ≤ 4 prompts
		{name: "zero-usage", quirks: "zero-usage", check: allTokens},
		{name: "no-usage", quirks: "no-usage", check: allTokens},
		{name: "no-usage-2-per-chunk", plain: true, quirks: "no-usage,tokens-per-chunk=2", check: allTokens},
		{name: "usage-every-chunk", quirks: "usage-every-chunk", check: allTokens},
		{name: "tokens-per-chunk-2", plain: true, quirks: "tokens-per-chunk=2", check: allTokens},
		{name: "stream-interval-3", plain: true, engine: func(c *engine.Config) { c.StreamInterval = 3 }, check: allTokens},
		{name: "coalesce-0.2", plain: true, quirks: "coalesce=0.2", check: allTokens},
		{name: "late-first-chunk-40ms", quirks: "late-first-chunk=40ms", check: allTokens},
		{name: "empty-first-chunk", quirks: "empty-first-chunk", check: allTokens},
		{name: "separate-finish", quirks: "separate-finish", check: allTokens},
		{name: "no-done", quirks: "no-done", check: allTokens},
		{name: "zero-token-0.4", quirks: "zero-token=0.4", check: partialWhenAbnormal},
		{name: "early-stop-5", quirks: "early-stop=5", check: partialWhenAbnormal},
		{name: "ignore-max-tokens-3", quirks: "ignore-max-tokens=3", check: partialWhenAbnormal},
		// The token-count probe sends n = 2 before the first cell: the run fails there, naming mode.
		{name: "ignore-n", plain: true, quirks: "ignore-n", genload: func(c *config.Config) { c.Mode = config.ModeN }, checkRun: namesSettings("ignore n", "mode")},
		{name: "truncate-600", quirks: "truncate=600", check: truncated(600)},
		{name: "no-model-len", quirks: "no-model-len", check: allTokens},
		{name: "add-bos-text", quirks: "add-bos", genload: func(c *config.Config) { c.Prompt.Format = config.FormatText }, check: exactPrompts},
		{name: "server-template-text", quirks: "server-template", genload: func(c *config.Config) { c.Prompt.Format = config.FormatText }, check: exactPrompts},
		{name: "strings-only", plain: true, quirks: "strings-only", genload: shape(config.ModeArray, config.FormatTokens), checkRun: namesSettings("prompt.format", "mode")},
		{name: "strings-only-routed", plain: true, quirks: "strings-only", genload: shape(config.ModeRouted, config.FormatTokens), checkRun: namesSettings("prompt.format")},
		{name: "strings-only-auto", quirks: "strings-only", genload: shape("auto", "auto"), check: allTokens},
		{name: "no-metrics", quirks: "no-metrics", check: attainmentUnknown},
		{name: "late-histogram", quirks: "late-histogram", check: metricsFwdOnFirstCell},
		// Two at a time, the eight sequences never all decode together: no full-batch window.
		{name: "max-num-seqs-2", engine: func(c *engine.Config) { c.MaxNumSeqs = 2 }, check: batchNotReached(2),
			expect: func(r row, c *results.Cell, tr *cellTruth) expectation {
				if c.Cell.Batch > 2 {
					return expectation{window: "finished before the last one received its first token"}
				}
				return defaultExpect(r, c, tr)
			}},
		{name: "spec-decoding-k3", plain: true, engine: func(c *engine.Config) { c.SpecTokens, c.SpecAcceptance = 3, 0.7 },
			genload: func(c *config.Config) { c.DraftTokens, c.MaxTokens = 3, 96 }}, // ≈ 2 tokens per forward: 96 tokens for ≈ 45 steps
		{name: "routed-2-servers", servers: 2, check: allTokens},
		{name: "routed-2-servers-metrics", servers: 2, check: scrapedEach},
		// The second server sends no usage and two tokens per chunk: the token-count probe
		// asks each server, and logprobs make both servers' counts exact.
		{name: "routed-2-servers-second-no-usage", servers: 2, lastQuirks: "no-usage,tokens-per-chunk=2", check: allTokens},
		// Zero usage with an early stop: an even split of the request's usage would leave the
		// whole cell unverified, so the probe asks for logprobs and the 7 others are timed.
		{name: "zero-usage-early-stop", quirks: "zero-usage,early-stop=5", check: partialWhenAbnormal},
		{name: "routed-2-servers-one-truncates", servers: 2, lastQuirks: "truncate=600", check: truncatedOn(1, 600)},
		{name: "hdr-fwd-spec-decoding-k3", plain: true, engine: func(c *engine.Config) { c.SpecTokens, c.SpecAcceptance = 3, 0.7 },
			genload: func(c *config.Config) { c.DraftTokens, c.MaxTokens = 3, 96 }, check: headerFwd},
		{name: "stall-20", plain: true, quirks: "stall=20", checkRun: stallDetected, check: stallCell, timeout: 20 * time.Second, failing: true,
			genload: func(c *config.Config) { c.Timeouts.StallMin.Duration = time.Second }},
		{name: "body-limit-20000", quirks: "body-limit=20000", check: bodyLimit(20000), failing: true},
	}
	// A bunch of K chunks leaves max_tokens − K forward passes to time: max_tokens is K + 48,
	// so that every row times about as many as the others (a mean over 17 passes, timed by two
	// arrivals, would need them within 1.2 ms of on time for a 1 % figure).
	for _, k := range []int{2, 5, 10, 15, 20, 30} {
		q := fmt.Sprintf("bunch-first=%d", k)
		tokens := func(c *config.Config) { c.MaxTokens = k + maxTokens }
		rs = append(rs,
			row{name: q, quirks: q, cells: one, genload: tokens, check: allTokens},
			row{name: q + "-routed", quirks: q, cells: one, genload: func(c *config.Config) { tokens(c); c.Mode = config.ModeRouted }, check: allTokens})
	}
	for _, f := range []string{"0.3", "0.6", "0.9", "1.5"} {
		q := "late-first-steps=" + f
		rs = append(rs, row{name: q, quirks: q, cells: one, check: allTokens})
	}
	return append(rs,
		// Usage only as the request's total (no continuous usage, no logprobs): 3 of 8
		// sequences finish with no token, or one stops after 3, and the chunks with text
		// equal the total — one token each, so the others are counted exactly.
		row{name: "usage-total-only-zero-token", plain: true, quirks: "usage-total-only,zero-token=0.375", cells: one, check: countedBy(measure.CountsOnePerChunk)},
		row{name: "usage-total-only-early-stop", plain: true, quirks: "usage-total-only,early-stop=3", cells: one, check: countedBy(measure.CountsOnePerChunk)},
		// ollama 0.6.8's OpenAI layer (behind a proxy that passes /v1 alone): text prompts,
		// routed, 1–3 tokens per chunk, the total only at the end: the per-chunk counts come
		// from re-encoding the text with the model's tokenizer.
		row{name: "ollama-tokenizer", plain: true, quirks: "no-native-api", engine: func(c *engine.Config) { c.Dialect = engine.DialectOllama },
			genload: shape(config.ModeRouted, config.FormatText), check: countedBy(measure.CountsTokenizer), checkRun: chosenAPI("")},
		// ollama itself: mode and prompt.format "auto" find it by GET /api/version, and every
		// request goes to its native /api/generate (newline-delimited JSON, the same 1–3
		// tokens per object): counts from eval_count, per-chunk counts from the tokenizer, and
		// the server's own eval_duration per forward pass of each sequence beside the client's.
		row{name: "ollama-native", plain: true, engine: func(c *engine.Config) { c.Dialect = engine.DialectOllama },
			genload: shape(config.ModeAuto, config.FormatAuto), check: ollamaNative, checkRun: chosenAPI("ollama")},
		// The same with the first ten objects of each sequence written together: the
		// estimator's bunched start on the native stream.
		row{name: "ollama-native-bunch-first=10", plain: true, quirks: "bunch-first=10", cells: one,
			engine:  func(c *engine.Config) { c.Dialect = engine.DialectOllama },
			genload: func(c *config.Config) { shape(config.ModeRouted, config.FormatText)(c); c.MaxTokens = 10 + maxTokens },
			check:   ollamaNative, checkRun: chosenAPI("ollama")},
		// Chunked prefill: eight prompts of 1,000 tokens in steps of 2,048, the first tokens
		// staggered over four steps each carrying another prefill chunk: not a late start.
		row{name: "chunked-prefill", engine: func(c *engine.Config) { c.MaxNumBatchedTokens = 2048 }, cells: one, check: notLate},
		// A server metric that echoes a constant (30 ms, far from the steps of 7–9 ms even on
		// a loaded host): the client's figures hold, the metric reads the constant.
		row{name: "constant-itl-30ms", quirks: "constant-itl=30ms", check: metricConstant(30 * time.Millisecond)},
	)
}

// shard runs every n-th row from the i-th ("i/n", rows counted from 0), so that make test
// runs the suite as n processes side by side: a row waits on its engine's steps in real time
// at about 0.16 of a core, so two processes finish in half the time without contending for
// the cores. Processes, not parallel subtests: inside one Go process another row's prompt
// planning keeps a P for up to the scheduler's 10 ms time slice, and a client's reads then
// waited up to 10 ms for one (three rows at once failed their 1 % figures), where the
// kernel's scheduler wakes a process's reader at once.
var shard = flag.String("shard", "0/1", "run rows i, i+n, i+2n, … of the suite (i/n)")

// parseShard reads "i/n" with 0 ≤ i < n.
func parseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if ok {
		i, err = strconv.Atoi(a)
		if err == nil {
			n, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("-shard %q: want i/n with 0 ≤ i < n", s)
	}
	return i, n, nil
}

func TestConformance(t *testing.T) {
	first, every, err := parseShard(*shard)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(testplugins.EnvPluginDir, testplugins.Dir(t))
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatal(err)
	}
	for k, r := range rows() {
		if k%every != first {
			continue
		}
		t.Run(r.name, func(t *testing.T) {
			// One run per row, judged as it comes: no second chance.
			res, out, truths, runErr := runRow(t, r, tok)
			if r.checkRun != nil {
				r.checkRun(t, res, runErr, out)
			}
			if res == nil || res.Run == nil {
				if r.checkRun == nil {
					t.Fatalf("no results: %v\n%s", runErr, out)
				}
				return
			}
			if r.checkRun == nil && runErr != nil && r.check == nil {
				t.Errorf("run: %v", runErr)
			}
			expect := r.expect
			if expect == nil {
				expect = defaultExpect
			}
			for i := range res.Run.Cells {
				c := &res.Run.Cells[i]
				tr := truths.of(c)
				logCell(t, c, tr)
				switch {
				case c.Figures == nil && !r.failing:
					t.Errorf("%s: %s, no figures (%s), in a row whose cells must measure", c.Cell.Key(), c.Status, c.Error)
				case c.Figures != nil && tr.seqs == 0:
					t.Errorf("%s: figures, but the engine logged no measured sequence in the cell's time", c.Cell.Key())
				case c.Figures != nil:
					headline(t, c, tr, expect(r, c, tr))
				}
				if r.check != nil {
					r.check(t, c, tr)
				} else if c.Status != results.StatusOK {
					t.Errorf("%s: status %s: %s", c.Cell.Key(), c.Status, c.Error)
				}
			}
		})
	}
}

// runRow starts the engine(s) with r's behaviour and runs genload against them; it returns
// the run's result, its output (table and progress), the engines' truth and the run's error.
func runRow(t *testing.T, r row, tok *tokenizer.Tokenizer) (*run.Result, string, *truthLog, error) {
	t.Helper()
	truths := &truthLog{t: t}
	var urls []string
	for i := 0; i < max(r.servers, 1); i++ {
		ecfg := engine.DefaultConfig()
		ecfg.Profile = "dense-8b" // decode steps of 7–9 ms at time scale 1: a 1 % figure survives ms of client jitter
		ecfg.TimeScale = 1
		ecfg.EOSProbability = 0
		ecfg.Seed = 42
		ecfg.VocabSize = max(ecfg.VocabSize, tok.VocabSize())
		list := "hide-truth," + r.quirks
		if !r.plain {
			list += ",coalesce=0.15"
		}
		if i == max(r.servers, 1)-1 && r.lastQuirks != "" {
			list += "," + r.lastQuirks
		}
		q, err := engine.ParseQuirks(list)
		if err != nil {
			t.Fatal(err)
		}
		ecfg.Quirks = q
		if r.engine != nil {
			r.engine(&ecfg)
		}
		log := &engineLog{}
		ecfg.SeqLog, ecfg.StepLog = log, &log.steps
		eng, err := engine.New(ecfg, tok)
		if err != nil {
			t.Fatal(err)
		}
		u, err := eng.Start("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { eng.Close() })
		log.start = eng.Started()
		truths.logs = append(truths.logs, log)
		urls = append(urls, u)
	}

	cfg := config.Default()
	cfg.Target = urls[0]
	if len(urls) > 1 {
		cfg.Mode = config.ModeRouted
		for _, u := range urls {
			cfg.Workers = append(cfg.Workers, config.Worker{URL: u})
		}
	}
	cfg.MaxTokens = maxTokens
	cfg.Matrix.SeqLens, cfg.Matrix.BatchSizes = seqLens, batchSizes
	if r.cells != nil {
		cfg.Matrix.SeqLens, cfg.Matrix.BatchSizes = r.cells[0], r.cells[1]
	}
	cfg.Out = t.TempDir()
	if r.genload != nil {
		r.genload(cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	truths.maxTokens = cfg.MaxTokens
	timeout := r.timeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out logtest.LockedBuffer
	res, runErr := run.Run(ctx, cfg, run.Options{Stdout: &out, Stderr: &out, RunID: "conformance", Version: "test"})
	return res, out.String(), truths, runErr
}

// headline holds the cell's headline per-forward figures to e: a figure e leaves present is
// there, within the tolerance of the engine's truth over the forward passes it says it timed
// (and the full-batch window inside the steps where every counted sequence decoded); a
// figure e expects absent is absent, with a reason that contains e's text among the cell's
// warnings.
func headline(t *testing.T, c *results.Cell, tr *cellTruth, e expectation) {
	t.Helper()
	f := c.Figures
	key := c.Cell.Key()
	switch {
	case e.window == "" && !f.Window.Valid:
		t.Errorf("%s: full-batch fwd absent (%q), want it within %.0f %% of the engine's", key, f.Window.Reason, 100*tolerance)
	case e.window == "" && !tr.windowTimed:
		t.Errorf("%s: full-batch fwd %.3f ms over %d steps of sequence %d, but the engine has no such steps: %s", key, ms(f.Window.PerStep), f.Window.Steps, f.Window.Ref, tr.windowWhy)
	case e.window == "" && tr.windowFrom < tr.latestFirst:
		t.Errorf("%s: full-batch fwd timed from engine step %d, before the last counted sequence's first token (step %d)", key, tr.windowFrom, tr.latestFirst)
	case e.window == "":
		if rel := ms(f.Window.PerStep)/tr.window - 1; math.Abs(rel) > tolerance {
			t.Errorf("%s: full-batch fwd %.3f ms is %+.2f %% off the engine's %.3f ms over the same %d steps", key, ms(f.Window.PerStep), 100*rel, tr.window, f.Window.Steps)
		}
	case f.Window.Valid:
		t.Errorf("%s: full-batch fwd %.3f ms, want it absent (%q)", key, ms(f.Window.PerStep), e.window)
	case !strings.Contains(f.Window.Reason, e.window) || !inWarnings(c, f.Window.Reason):
		t.Errorf("%s: full-batch fwd absent, reason %q; want one with %q among the warnings %q", key, f.Window.Reason, e.window, c.Warnings)
	}
	switch {
	case e.fwd == "" && f.PerForward.N == 0:
		t.Errorf("%s: fwd absent (%q), want it within %.0f %% of the engine's", key, f.PerForwardReason, 100*tolerance)
	case e.fwd == "" && tr.timed != f.PerForward.N:
		t.Errorf("%s: fwd over %d sequences, the engine has the timed steps of %d: %s", key, f.PerForward.N, tr.timed, tr.timedWhy)
	case e.fwd == "":
		if rel := ms(f.PerForward.Mean)/tr.timedFwd - 1; math.Abs(rel) > tolerance {
			t.Errorf("%s: fwd %.3f ms is %+.2f %% off the engine's %.3f ms over the same forward passes (mean over %d sequences)", key, ms(f.PerForward.Mean), 100*rel, tr.timedFwd, tr.timed)
		}
	case f.PerForward.N > 0:
		t.Errorf("%s: fwd %.3f ms over %d sequences, want it absent (%q)", key, ms(f.PerForward.Mean), f.PerForward.N, e.fwd)
	case !strings.Contains(f.PerForwardReason, e.fwd) || !inWarnings(c, f.PerForwardReason):
		t.Errorf("%s: fwd absent, reason %q; want one with %q among the warnings %q", key, f.PerForwardReason, e.fwd, c.Warnings)
	}
}

func inWarnings(c *results.Cell, s string) bool {
	for _, w := range c.Warnings {
		if strings.Contains(w, s) {
			return true
		}
	}
	return false
}

// logCell logs what genload printed for the cell next to the truth (the before/after record).
func logCell(t *testing.T, c *results.Cell, tr *cellTruth) {
	t.Helper()
	f := c.Figures
	if f == nil {
		t.Logf("%s: %s, no figures: %s", c.Cell.Key(), c.Status, c.Error)
		return
	}
	truth := "no measured request"
	if tr.seqs > 0 {
		truth = fmt.Sprintf("truth fwd %.3f over the timed passes (%.3f over all, %d normal of %d), window %.3f", tr.timedFwd, tr.perForward, tr.normal, tr.seqs, tr.window)
	}
	win := "–"
	if f.Window.Valid {
		win = fmt.Sprintf("%.3f/%d", ms(f.Window.PerStep), f.Window.Steps)
	}
	t.Logf("%s: %s counted %d/%d tokens %d (%v); fwd %.3f (n %d) full-batch %s; %s; error %q; warnings %q",
		c.Cell.Key(), c.Status, f.PerForward.N, f.Sequences, f.CompletionTokens, f.PerForwardCounts, ms(f.PerForward.Mean), f.PerForward.N, win, truth, c.Error, c.Warnings)
}

// Behaviour-specific truths.

// allTokens: every sequence is counted with max_tokens tokens, the cell is ok.
func allTokens(t *testing.T, c *results.Cell, tr *cellTruth) {
	t.Helper()
	if c.Status != results.StatusOK || c.Figures == nil {
		t.Errorf("%s: status %s: %s", c.Cell.Key(), c.Status, c.Error)
		return
	}
	if f := c.Figures; f.Counted != c.Cell.Batch || f.CompletionTokens != c.Cell.Batch*tr.maxTokens {
		t.Errorf("%s: counted %d/%d with %d tokens, the engine generated %d", c.Cell.Key(), f.Counted, c.Cell.Batch, f.CompletionTokens, c.Cell.Batch*tr.maxTokens)
	}
}

// partialWhenAbnormal: a cell with a sequence that did not generate exactly max_tokens
// (none, fewer, more) is "partial" with counted/B in its warnings (or table); else ok.
func partialWhenAbnormal(t *testing.T, c *results.Cell, tr *cellTruth) {
	t.Helper()
	if tr.seqs == 0 || c.Figures == nil {
		t.Errorf("%s: status %s: %s", c.Cell.Key(), c.Status, c.Error)
		return
	}
	if tr.normal == c.Cell.Batch {
		if c.Status != results.StatusOK {
			t.Errorf("%s: every sequence normal, status %s", c.Cell.Key(), c.Status)
		}
		return
	}
	if c.Status != "partial" {
		t.Errorf("%s: %d of B = %d sequences generated max_tokens (engine: %d sequences), status %q, want partial", c.Cell.Key(), tr.normal, c.Cell.Batch, tr.seqs, c.Status)
	}
	if want := fmt.Sprintf("%d/%d", tr.normal, c.Cell.Batch); !inWarnings(c, want) && !inTable(c, want) {
		t.Errorf("%s: neither the warnings %q nor the table row %q say %s sequences counted", c.Cell.Key(), c.Warnings, tableRow(c), want)
	}
}

// truncated: a cell whose prompts the server cut (prompt > C − max_tokens) is an error
// naming truncation; the others are ok.
func truncated(ctx int) func(*testing.T, *results.Cell, *cellTruth) {
	return func(t *testing.T, c *results.Cell, tr *cellTruth) {
		t.Helper()
		if c.Lengths.Max <= ctx-tr.maxTokens {
			if c.Status != results.StatusOK {
				t.Errorf("%s: no prompt cut, status %s: %s", c.Cell.Key(), c.Status, c.Error)
			}
			return
		}
		if c.Status != results.StatusError || !strings.Contains(c.Error, "truncat") {
			t.Errorf("%s: prompts up to %d tokens cut to %d by the server: status %s, error %q", c.Cell.Key(), c.Lengths.Max, ctx-tr.maxTokens, c.Status, c.Error)
		}
	}
}

// truncatedOn: like truncated, for the prompts routed to one worker (the others see the
// configured context).
func truncatedOn(worker, ctx int) func(*testing.T, *results.Cell, *cellTruth) {
	return func(t *testing.T, c *results.Cell, tr *cellTruth) {
		t.Helper()
		cut := 0
		for i, l := range c.Lengths.Each {
			if i < len(c.Workers) && c.Workers[i] == worker && l > ctx-tr.maxTokens {
				cut++
			}
		}
		if cut == 0 {
			if c.Status != results.StatusOK {
				t.Errorf("%s: no prompt cut, status %s: %s", c.Cell.Key(), c.Status, c.Error)
			}
			return
		}
		if c.Status != results.StatusError || !strings.Contains(c.Error, "truncat") {
			t.Errorf("%s: %d prompts cut to %d by worker %d: status %s, error %q", c.Cell.Key(), cut, ctx-tr.maxTokens, worker, c.Status, c.Error)
		}
	}
}

// exactPrompts: text prompts are counted by the server as genload built them.
func exactPrompts(t *testing.T, c *results.Cell, tr *cellTruth) {
	t.Helper()
	allTokens(t, c, tr)
	if c.PromptTokenDeviation != 0 {
		t.Errorf("%s: the server counted %+d prompt tokens more than genload built", c.Cell.Key(), c.PromptTokenDeviation)
	}
}

// shape sets the request shape (mode, prompt.format) explicitly.
func shape(mode, format string) func(*config.Config) {
	return func(c *config.Config) { c.Mode, c.Prompt.Format = mode, format }
}

// namesSettings: the run fails, and its error names each setting to change.
func namesSettings(keys ...string) func(*testing.T, *run.Result, error, string) {
	return func(t *testing.T, res *run.Result, err error, out string) {
		t.Helper()
		if err == nil {
			t.Errorf("the run succeeded against a server that rejects its prompts")
			return
		}
		for _, k := range keys {
			if !strings.Contains(err.Error(), k) {
				t.Errorf("error does not name [%s]: %v", k, err)
			}
		}
	}
}

// attainmentUnknown: without /metrics every cell says attainment is unknown.
func attainmentUnknown(t *testing.T, c *results.Cell, tr *cellTruth) {
	t.Helper()
	allTokens(t, c, tr)
	if !inWarnings(c, "attainment") || !inWarnings(c, "unknown") {
		t.Errorf("%s: no /metrics, warnings %q do not say attainment is unknown", c.Cell.Key(), c.Warnings)
	}
}

// metricsFwdOnFirstCell: the server-side step time is present on every cell, the first too
// (its histogram appears with the first cell's observations).
func metricsFwdOnFirstCell(t *testing.T, c *results.Cell, tr *cellTruth) {
	t.Helper()
	allTokens(t, c, tr)
	if c.Server == nil || !c.Server.Steps.HasStepTime {
		t.Errorf("%s: no metrics fwd (server %+v), warnings %q", c.Cell.Key(), c.Server, c.Warnings)
	}
}

// scrapedEach: routed over several servers, each server's /metrics is scraped and combined.
func scrapedEach(t *testing.T, c *results.Cell, tr *cellTruth) {
	t.Helper()
	allTokens(t, c, tr)
	if c.Server == nil || c.Server.Occupancy.Samples == 0 {
		t.Errorf("%s: no server metrics (%+v)", c.Cell.Key(), c.Server)
	}
}

// metricsFwd: the server-side step time from /metrics ("metrics fwd") is within the
// tolerance of the engine's truth, or absent with its reason among the warnings.
func metricsFwd(t *testing.T, c *results.Cell, tr *cellTruth) {
	t.Helper()
	allTokens(t, c, tr)
	if c.Server == nil || !c.Server.Steps.HasStepTime {
		if !inWarnings(c, "metrics") {
			t.Errorf("%s: no metrics fwd and no reason in the warnings %q", c.Cell.Key(), c.Warnings)
		}
		return
	}
	if rel := ms(c.Server.Steps.StepTime)/tr.perForward - 1; tr.normal > 0 && math.Abs(rel) > tolerance {
		t.Errorf("%s: metrics fwd %.3f ms is %+.2f %% off the engine's %.3f ms", c.Cell.Key(), ms(c.Server.Steps.StepTime), 100*rel, tr.perForward)
	}
}

// headerFwd: the figure from the timing headers ("hdr fwd") is within the tolerance of the
// engine's truth, or absent with its reason among the warnings.
func headerFwd(t *testing.T, c *results.Cell, tr *cellTruth) {
	t.Helper()
	allTokens(t, c, tr)
	h := c.Figures.Header
	if h == nil {
		if !inWarnings(c, "hdr") {
			t.Errorf("%s: no hdr fwd and no reason in the warnings %q", c.Cell.Key(), c.Warnings)
		}
		return
	}
	// The header times the request from its first token to its last: its truth is the mean
	// decode step over that span, which includes the steps before every sequence of the batch
	// had its first token (fewer sequences, cheaper steps).
	if rel := ms(h.PerForward.Mean)/tr.span - 1; tr.normal > 0 && math.Abs(rel) > tolerance {
		t.Errorf("%s: hdr fwd %.3f ms (%.2f tokens per forward) is %+.2f %% off the engine's %.3f ms over the request's span", c.Cell.Key(), ms(h.PerForward.Mean), h.TokensPerForward, 100*rel, tr.span)
	}
}

// batchNotReached: a server that runs at most n sequences at once makes every cell with
// B > n partial (every sequence counted, the warning naming the batch of n).
func batchNotReached(n int) func(*testing.T, *results.Cell, *cellTruth) {
	return func(t *testing.T, c *results.Cell, tr *cellTruth) {
		t.Helper()
		if c.Cell.Batch <= n {
			allTokens(t, c, tr)
			return
		}
		// Every sequence ran its max_tokens, but never all B at once: partial, figures kept.
		if f := c.Figures; c.Status != results.StatusPartial || f == nil || f.Counted != c.Cell.Batch || !inWarnings(c, fmt.Sprintf("at most %d sequences at once", n)) {
			t.Errorf("%s: the server ran at most %d sequences at once: status %s, warnings %q", c.Cell.Key(), n, c.Status, c.Warnings)
		}
	}
}

// tableRow is the cell's row of the results table (report.Table over the cell alone).
func tableRow(c *results.Cell) string {
	var b strings.Builder
	report.Table(&b, &results.Run{Cells: []results.Cell{*c}})
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, fmt.Sprintf("| %5d |", c.Cell.SeqLen)) || strings.HasPrefix(l, fmt.Sprintf("| %d |", c.Cell.SeqLen)) {
			return l
		}
	}
	return ""
}

// inTable reports whether the cell's table row has a column reading exactly want.
func inTable(c *results.Cell, want string) bool {
	for _, col := range strings.Split(tableRow(c), "|") {
		if strings.TrimSpace(col) == want {
			return true
		}
	}
	return false
}

// stallCell: the cell whose stream stopped fails with a stall error.
func stallCell(t *testing.T, c *results.Cell, tr *cellTruth) {
	t.Helper()
	if c.Status != results.StatusError || !strings.Contains(c.Error, "stall") {
		t.Errorf("%s: status %s, error %q: want a stall error", c.Cell.Key(), c.Status, c.Error)
	}
}

// stallDetected: a stream that stops sending fails its cell with a stall error instead of
// hanging the run.
func stallDetected(t *testing.T, res *run.Result, err error, out string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "stall") || strings.Contains(err.Error(), "interrupted") {
		t.Errorf("run error %v, want a stall detected (not the test's deadline)", err)
	}
}

// bodyLimit: a cell whose request body exceeds the server's limit fails with an error that
// gives the body's size.
func bodyLimit(limit int) func(*testing.T, *results.Cell, *cellTruth) {
	return func(t *testing.T, c *results.Cell, tr *cellTruth) {
		t.Helper()
		if c.Status == results.StatusOK {
			return
		}
		if !strings.Contains(c.Error, "bytes") && !strings.Contains(c.Error, "MB") && !strings.Contains(c.Error, "kB") {
			t.Errorf("%s: reset by a %d-byte body limit: error %q does not give the body size", c.Cell.Key(), limit, c.Error)
		}
	}
}

// countedBy: allTokens or partialWhenAbnormal as the engine's truth says, and every timed
// sequence's forward passes rest on the evidence given (a measure Counts constant).
func countedBy(evidence string) func(*testing.T, *results.Cell, *cellTruth) {
	return func(t *testing.T, c *results.Cell, tr *cellTruth) {
		t.Helper()
		if tr.normal == c.Cell.Batch {
			allTokens(t, c, tr)
		} else {
			partialWhenAbnormal(t, c, tr)
		}
		if f := c.Figures; f != nil && (f.PerForward.N == 0 || f.PerForwardCounts[evidence] != f.PerForward.N) {
			t.Errorf("%s: fwd over %d sequences counted by %v, want all by %s (re-encoding: %v)", c.Cell.Key(), f.PerForward.N, f.PerForwardCounts, evidence, f.Retokenized)
		}
	}
}

// metricConstant: a server whose per-token metric echoes d reads d in metrics fwd whatever
// the steps took, while the client's figures hold (headline), and the cell's warnings name
// the metrics figure.
func metricConstant(d time.Duration) func(*testing.T, *results.Cell, *cellTruth) {
	return func(t *testing.T, c *results.Cell, tr *cellTruth) {
		t.Helper()
		allTokens(t, c, tr)
		if c.Server == nil || !c.Server.Steps.HasStepTime {
			t.Errorf("%s: no metrics fwd (server %+v)", c.Cell.Key(), c.Server)
			return
		}
		if rel := ms(c.Server.Steps.StepTime)/ms(d) - 1; math.Abs(rel) > tolerance {
			t.Errorf("%s: metrics fwd %.3f ms, the metric echoes %v", c.Cell.Key(), ms(c.Server.Steps.StepTime), d)
		}
		if !inWarnings(c, "metrics fwd") {
			t.Errorf("%s: metrics fwd %.3f ms against a client fwd of %.3f ms, and no warning names it: %q", c.Cell.Key(), ms(c.Server.Steps.StepTime), ms(c.Figures.PerForward.Mean), c.Warnings)
		}
	}
}

// serverTimings: llama.cpp's own timings of each sequence (its final chunk's "timings") give
// the server's figure, within the tolerance of the engine's truth over all of each
// sequence's forward passes.
func serverTimings(t *testing.T, c *results.Cell, tr *cellTruth) {
	t.Helper()
	allTokens(t, c, tr)
	st := c.Figures.ServerTimings
	if st == nil || st.PerForward.N != tr.normal {
		t.Errorf("%s: server timings %+v, want one per sequence (%d)", c.Cell.Key(), st, tr.normal)
		return
	}
	if rel := ms(st.PerForward.Mean)/tr.perForward - 1; math.Abs(rel) > tolerance {
		t.Errorf("%s: the server's timings read %.3f ms per forward pass, %+.2f %% off the engine's %.3f ms", c.Cell.Key(), ms(st.PerForward.Mean), 100*rel, tr.perForward)
	}
}

// ollamaNative: every timed sequence counted by the tokenizer (countedBy), every count from
// eval_count (the sequence's own usage), and ollama's eval_duration per forward pass of each
// sequence (the server's figure) within the tolerance of the engine's truth over all of its
// forward passes.
func ollamaNative(t *testing.T, c *results.Cell, tr *cellTruth) {
	t.Helper()
	countedBy(measure.CountsTokenizer)(t, c, tr)
	f := c.Figures
	if f == nil {
		return
	}
	if n := f.TokenSources[string(sse.TokensChoiceUsage)]; n != c.Cell.Batch {
		t.Errorf("%s: %d of %d sequences counted by their own usage (eval_count): %v", c.Cell.Key(), n, c.Cell.Batch, f.TokenSources)
	}
	st := f.ServerTimings
	if st == nil || st.Source != "ollama eval_duration" || st.PerForward.N != tr.normal {
		t.Errorf("%s: server figure %+v, want ollama's eval_duration of every sequence (%d)", c.Cell.Key(), st, tr.normal)
		return
	}
	t.Logf("%s: client fwd %.3f ms, full-batch %.3f ms, server (eval_duration) %.3f ms; truth %.3f ms (timed passes %.3f, window %.3f)",
		c.Cell.Key(), ms(f.PerForward.Mean), ms(f.Window.PerStep), ms(st.PerForward.Mean), tr.perForward, tr.timedFwd, tr.window)
	if rel := ms(st.PerForward.Mean)/tr.perForward - 1; math.Abs(rel) > tolerance {
		t.Errorf("%s: ollama's eval_duration reads %.3f ms per forward pass, %+.2f %% off the engine's %.3f ms", c.Cell.Key(), ms(st.PerForward.Mean), 100*rel, tr.perForward)
	}
}

// chosenAPI: the run succeeds, and its header records the API the probe chose (Chosen[api]
// starting with want; "" = none chosen: /v1/completions).
func chosenAPI(want string) func(*testing.T, *run.Result, error, string) {
	return func(t *testing.T, res *run.Result, err error, out string) {
		t.Helper()
		if err != nil || res == nil || res.Run == nil {
			t.Errorf("run: %v\n%s", err, out)
			return
		}
		got := res.Run.Header.Config.Chosen[run.ChosenAPI]
		if want == "" && got != "" || !strings.HasPrefix(got, want) {
			t.Errorf("chosen api %q, want %q", got, want)
		}
	}
}

// notLate: allTokens, and no warning that the first chunks of k of n sequences arrived late
// unless a truth bears it out by at least half of the lateness the warning says: the
// engine's own first tokens late against the line of the tokens right after them
// (cellTruth.firstLate), or the client's TTFT beyond the engine's (its send or read of the
// first chunk delayed: a host that deschedules the client) — medians when k > n/2, else the
// largest of each (a few sequences late). The client's excess includes the delivery every
// chunk has (0.1–0.6 ms on a quiet host), so a claim under ~1 ms is held less tightly.
func notLate(t *testing.T, c *results.Cell, tr *cellTruth) {
	t.Helper()
	allTokens(t, c, tr)
	said, k, n, ok := lateSaid(t, c)
	if !ok {
		return
	}
	of, clientLate := stats.Median, measure.Ms(c.Figures.TTFT.P50)-tr.ttft
	if 2*k <= n {
		of, clientLate = slices.Max[[]float64], measure.Ms(c.Figures.TTFT.Max)-tr.ttftMax
	}
	engineLate := math.Inf(-1)
	if len(tr.firstLate) > 0 {
		engineLate = of(tr.firstLate)
	}
	if max(engineLate, clientLate) < said/2 {
		t.Errorf("%s: a staggered start called late (+%.1f ms), while the engine's first tokens came %+.2f ms against the line of the tokens right after them and the client's TTFT %+.2f ms beyond the engine's (of %d of %d late: medians over half, else the largest): %q",
			c.Cell.Key(), said, engineLate, clientLate, k, n, c.Warnings)
	}
}

// lateFirstRe reads the lateness a late-first-chunks warning says.
var lateFirstRe = regexp.MustCompile(`the first chunks of (\d+) of (\d+) sequences arrived late: their first chunk \+([0-9.]+) ms`)

// lateSaid returns the lateness (ms) c's late-first-chunks warning says and of how many (k)
// of n sequences, found false without one; it fails t for such a warning it cannot read
// (its wording changed: fix the pattern).
func lateSaid(t *testing.T, c *results.Cell) (ms float64, k, n int, found bool) {
	t.Helper()
	for _, w := range c.Warnings {
		if !strings.HasPrefix(w, "the first chunks of ") || !strings.Contains(w, " arrived late") {
			continue
		}
		m := lateFirstRe.FindStringSubmatch(w)
		if m == nil {
			t.Fatalf("%s: a late-first-chunks warning this test cannot read: %q", c.Cell.Key(), w)
		}
		k, err1 := strconv.Atoi(m[1])
		n, err2 := strconv.Atoi(m[2])
		v, err3 := strconv.ParseFloat(m[3], 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatalf("%s: late-first-chunks warning %q: %v", c.Cell.Key(), m[0], err)
		}
		return v, k, n, true
	}
	return 0, 0, 0, false
}

// The engine's truth.

// seqLine is one engine.Config.SeqLog line, with the index of the engine that wrote it.
type seqLine struct {
	engine                             int
	req, choice, prompt, asked, tokens int
	finish                             string
	arrival, first, last               float64 // ms since the first engine started
	firstStep, lastStep                int
}

// engineLog collects one engine's sequence lines and step lines.
type engineLog struct {
	logtest.LockedBuffer
	steps logtest.LockedBuffer // engine.Config.StepLog
	start time.Time            // the engine's Started
}

// truthLog is the truth of a run's engines.
type truthLog struct {
	t         testing.TB // of the row: a malformed log line fails it
	logs      []*engineLog
	maxTokens int // of the run's measured requests
	stepEnds  []map[int]float64
}

// lines returns every engine's sequences, times in ms since the first engine started.
func (l *truthLog) lines() []seqLine {
	var out []seqLine
	for i, el := range l.logs {
		off := float64(el.start.Sub(l.logs[0].start)) / 1e6
		for _, s := range el.lines(l.t) {
			s.engine = i
			s.arrival += off
			if s.tokens > 0 {
				s.first += off
				s.last += off
			}
			out = append(out, s)
		}
	}
	return out
}

func (l *engineLog) lines(t testing.TB) []seqLine {
	var out []seqLine
	for _, f := range logtest.Lines(l.String()) {
		out = append(out, seqLine{
			req: f.Int(t, "req"), choice: f.Int(t, "choice"), prompt: f.Int(t, "prompt"),
			asked: f.Int(t, "max_tokens"), tokens: f.Int(t, "tokens"), finish: f.Values["finish"],
			arrival: f.Float(t, "arrival_ms"), firstStep: f.Int(t, "first_step"), lastStep: f.Int(t, "last_step"),
			first: f.Float(t, "first_ms"), last: f.Float(t, "last_ms"),
		})
	}
	return out
}

// stepEnd returns when engine e's step n ended, in ms since the first engine started (the
// step log's wall-clock end, the same instant as the sequence log's times), ok false when the
// step is not in the log.
func (l *truthLog) stepEnd(e, n int) (float64, bool) {
	for len(l.stepEnds) < len(l.logs) {
		el := l.logs[len(l.stepEnds)]
		m := map[int]float64{}
		for _, f := range logtest.Lines(el.steps.String()) {
			at, err := time.Parse(time.RFC3339Nano, f.Values["time"])
			if err != nil {
				l.t.Fatalf("step log line %q: time: %v", f.Text, err)
			}
			m[f.Int(l.t, "step")] = float64(at.Sub(l.logs[0].start)) / 1e6
		}
		l.stepEnds = append(l.stepEnds, m)
	}
	v, ok := l.stepEnds[e][n]
	return v, ok
}

// cellTruth is the engine's truth about one cell's measured request(s), in ms.
type cellTruth struct {
	maxTokens    int // asked per sequence
	seqs, normal int // measured sequences; of which generated exactly max_tokens, "length"
	// perForward is the mean over normal sequences of (last − first) / (last step − first
	// step): the time per decode forward pass each one saw, over all of its steps.
	perForward float64
	// timedFwd is the mean over the timed sequences (timed of them: those with a fwd whose
	// engine line was found) of the time per forward pass over the forward passes genload
	// says it timed (Figures.PerForwardPasses, ending Figures.PerForwardTrail before the
	// sequence's last token); timedWhy says why a sequence with a fwd has no truth.
	timedFwd float64
	timed    int
	timedWhy string
	// window is the truth over the full-batch window's forward passes: Steps of its
	// reference sequence ending Trail before its last token, from engine step windowFrom; latestFirst is the step of the last
	// counted sequence's first token (the window must not start before it). windowTimed is
	// false, with windowWhy, when the reference's steps were not found.
	window                  float64
	windowFrom, latestFirst int
	windowTimed             bool
	windowWhy               string
	// firstLate holds, for each normal sequence whose steps are in the step log, how much
	// later (ms) its first token came than the tokens right after it imply: the engine's own
	// times, against which a "first chunks arrived late" is judged (see firstLateness).
	firstLate []float64
	// ttft and ttftMax are the median and the largest over the normal sequences of the
	// engine's time to first token (first token − arrival, ms): beside the client's TTFT,
	// what the client's own delay in sending and reading the first chunk added.
	ttft, ttftMax float64
	// span is the mean decode step over the whole span of the normal sequences, from the
	// earliest first token to the latest last token: (last − first) / (steps between) — what
	// a request's generation-duration header times, when the cell is one request.
	span float64
}

// of returns the truth of cell c: the sequences of measured requests (the run's max_tokens
// asked) that arrived while c ran, each matched to its sequence in the cell (see match).
func (l *truthLog) of(c *results.Cell) *cellTruth {
	from := float64(c.Started.Sub(l.logs[0].start)) / 1e6
	to := from + float64(time.Duration(c.Elapsed))/1e6
	tr := &cellTruth{maxTokens: l.maxTokens}
	var normal []seqLine
	var sum float64
	spanFirst, spanLast := math.Inf(1), math.Inf(-1)
	spanFirstStep, spanLastStep := 0, 0
	for _, s := range l.lines() {
		if s.asked != l.maxTokens || s.arrival < from || s.arrival > to {
			continue
		}
		tr.seqs++
		if s.tokens != l.maxTokens || s.finish != "length" || s.lastStep <= s.firstStep {
			continue
		}
		tr.normal++
		normal = append(normal, s)
		sum += (s.last - s.first) / float64(s.lastStep-s.firstStep)
		tr.latestFirst = max(tr.latestFirst, s.firstStep)
		if s.first < spanFirst {
			spanFirst, spanFirstStep = s.first, s.firstStep
		}
		if s.last > spanLast {
			spanLast, spanLastStep = s.last, s.lastStep
		}
	}
	if spanLastStep > spanFirstStep {
		tr.span = (spanLast - spanFirst) / float64(spanLastStep-spanFirstStep)
	}
	if tr.normal > 0 {
		tr.perForward = sum / float64(tr.normal)
	}
	if c.Figures == nil {
		return tr
	}
	ttfts := make([]float64, 0, len(normal))
	for _, s := range normal {
		if late, ok := l.firstLateness(s); ok {
			tr.firstLate = append(tr.firstLate, late)
		}
		ttfts = append(ttfts, s.first-s.arrival)
	}
	if len(ttfts) > 0 {
		tr.ttftMax = slices.Max(ttfts)
		tr.ttft = stats.MedianInPlace(ttfts)
	}
	seqOf := l.match(c, normal)
	// each timed sequence over its last k forward passes
	sum = 0
	for i, k := range c.Figures.PerForwardPasses {
		if k == 0 {
			continue
		}
		s, ok := seqOf[i]
		if !ok {
			tr.timedWhy = fmt.Sprintf("sequence %d has no engine line of its own", i)
			continue
		}
		end := s.lastStep // the step of the last timed token
		if i < len(c.Figures.PerForwardTrail) {
			end -= c.Figures.PerForwardTrail[i]
		}
		a, ok1 := l.stepEnd(s.engine, end-k)
		b, ok2 := l.stepEnd(s.engine, end)
		if !ok1 || !ok2 || end-k < s.firstStep {
			tr.timedWhy = fmt.Sprintf("sequence %d: steps %d–%d are not its own (%d–%d)", i, end-k, end, s.lastStep, s.firstStep)
			continue
		}
		sum += (b - a) / float64(k)
		tr.timed++
	}
	if tr.timed > 0 {
		tr.timedFwd = sum / float64(tr.timed)
	}
	// the window over the reference's last Steps forward passes
	if w := c.Figures.Window; w.Valid {
		s, ok := seqOf[w.Ref]
		if !ok {
			tr.windowWhy = fmt.Sprintf("the reference sequence %d has no engine line of its own", w.Ref)
			return tr
		}
		end := s.lastStep - w.Trail
		tr.windowFrom = end - w.Steps
		a, ok1 := l.stepEnd(s.engine, tr.windowFrom)
		b, ok2 := l.stepEnd(s.engine, end)
		if !ok1 || !ok2 {
			tr.windowWhy = fmt.Sprintf("steps %d–%d are not in the step log", tr.windowFrom, end)
			return tr
		}
		tr.window, tr.windowTimed = (b-a)/float64(w.Steps), true
	}
	return tr
}

// firstLateness returns how much later (ms) sequence s's first token came than the tokens
// right after it imply: with t_i the end of the step of its token i (t_0 its first token, one
// token a step), d the median of t_{i+1} − t_i over 1 ≤ i < lateWindow and the line's
// intercept the median of t_i − i·d over those tokens, t_0 − intercept. Local and robust: a
// late start is late against the chunks that follow it, while steps that change pace later
// in the stream (a host that got busier, a batch that grew) leave it on time, and one slow
// step among them does not move the line. ok false when s has fewer than lateWindow + 1
// tokens, is not in every step from its first to its last, or a step is missing from the log.
func (l *truthLog) firstLateness(s seqLine) (float64, bool) {
	n := s.lastStep - s.firstStep + 1
	if n != s.tokens || n <= lateWindow {
		return 0, false
	}
	t := make([]float64, lateWindow+1)
	t[0] = s.first
	for i := 1; i <= lateWindow; i++ {
		end, ok := l.stepEnd(s.engine, s.firstStep+i)
		if !ok {
			return 0, false
		}
		t[i] = end
	}
	gaps := make([]float64, 0, lateWindow-1)
	for i := 1; i < lateWindow; i++ {
		gaps = append(gaps, t[i+1]-t[i])
	}
	d := stats.MedianInPlace(gaps)
	at := make([]float64, 0, lateWindow)
	for i := 1; i <= lateWindow; i++ {
		at = append(at, t[i]-float64(i)*d)
	}
	return t[0] - stats.MedianInPlace(at), true
}

// lateWindow is how many tokens after the first firstLateness draws its line through.
const lateWindow = 5

// match returns the engine line of each of c's sequences, by index: in a request of several
// prompts, its choice; with one prompt per request, a line of the same server (worker) and
// prompt length (c.Lengths.Each) — prompts of the same length on one server (clamped to the
// shortest) are paired in order, which moves the truth only when their timed forward passes
// differ — or, for a prompt the server cut, its longest line shorter than the prompt.
func (l *truthLog) match(c *results.Cell, lines []seqLine) map[int]seqLine {
	out := map[int]seqLine{}
	reqs := map[[2]int]int{}
	for _, s := range lines {
		reqs[[2]int{s.engine, s.req}]++
	}
	if len(reqs) == 1 { // one request of several prompts: choice i is sequence i
		for _, s := range lines {
			out[s.choice] = s
		}
		return out
	}
	byKey := map[[2]int][]seqLine{}
	for _, s := range lines {
		byKey[[2]int{s.engine, s.prompt}] = append(byKey[[2]int{s.engine, s.prompt}], s)
	}
	worker := func(i int) int {
		if i < len(c.Workers) {
			return c.Workers[i]
		}
		return 0
	}
	var left []int
	for i, n := range c.Lengths.Each {
		if ss := byKey[[2]int{worker(i), n}]; len(ss) > 0 {
			out[i] = ss[0]
			byKey[[2]int{worker(i), n}] = ss[1:]
		} else {
			left = append(left, i)
		}
	}
	// a server that cut a prompt logs fewer prompt tokens than were sent: the longest
	// unmatched line of the server no longer than the prompt
	for _, i := range left {
		best := [2]int{-1, -1}
		for k, ss := range byKey {
			if k[0] == worker(i) && len(ss) > 0 && k[1] < c.Lengths.Each[i] && k[1] > best[1] {
				best = k
			}
		}
		if best[0] >= 0 {
			out[i] = byKey[best][0]
			byKey[best] = byKey[best][1:]
		}
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
