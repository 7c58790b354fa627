// Package run drives one benchmark run: it wires config → matrix → lengths plugin → prompts →
// dispatch (warmup, measured request) → measure → report, cell by cell, and starts the built-in
// engine when the target is "builtin".
//
// Every finished cell is appended and fsynced to results/<run-id>.jsonl before the next cell
// starts; on a failure or interruption the cells already measured stay on disk and are printed.
package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/genload/genload/corpus"
	"github.com/genload/genload/host/cell"
	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/dispatch"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/lengths"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/plugin"
	"github.com/genload/genload/host/prompt"
	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/scrape"
	"github.com/genload/genload/host/tokenizer"
)

// Options are the run's process-level settings (not part of bench.toml).
type Options struct {
	// Stdout receives the final table; Stderr progress and warnings.
	Stdout, Stderr io.Writer
	// Progress selects a progress bar (true, for terminals) or one plain line per cell.
	Progress bool
	// Version is genload's version, written into results.
	Version string
	// RunID names the results files. Default: UTC start time "20060102-150405".
	RunID string
	// Getenv reads environment variables (for the API key). Default os.Getenv.
	Getenv func(string) string
	// Resume is the .jsonl file of an earlier run to continue: its cells with status "ok" are
	// skipped, the others measured again, and records are appended to that file. The
	// configuration must be the one the run was started with.
	Resume string
}

// Result is what a run produced.
type Result struct {
	Run      *report.Run
	JSONL    string // results/<run-id>.jsonl
	JSON     string // results/<run-id>.json ("" if the run could not finish writing)
	CSV      string // results/<run-id>.csv
	Measured int    // cells with status ok
}

// Run executes cfg (already validated). The error carries an exit code ([exitcode.Of]);
// Result is non-nil whenever a results file was created, even on error.
func Run(ctx context.Context, cfg *config.Config, opt Options) (*Result, error) {
	if opt.Stdout == nil {
		opt.Stdout = io.Discard
	}
	if opt.Stderr == nil {
		opt.Stderr = io.Discard
	}
	if opt.Getenv == nil {
		opt.Getenv = os.Getenv
	}
	start := time.Now()
	autoID := opt.RunID == ""
	if autoID {
		opt.RunID = start.UTC().Format("20060102-150405")
	}

	// The length plugin is compiled, loaded and asked for the lengths of every configured cell
	// while the corpus is tokenized below: its cost overlaps prompt building, and a plugin
	// that fails on any cell fails the run before any request is sent.
	plugReady := make(chan loadedPlugins, 1)
	exitcode.Go(func() { plugReady <- loadPlugins(ctx, cfg) })
	var pl loadedPlugins
	joined := false
	defer func() {
		if !joined { // an early return: wait for the loader, then release what it made
			pl = <-plugReady
		}
		if pl.host != nil {
			pl.host.Close(context.Background())
		}
	}()

	// Corpus and tokenizer.
	rows, corpusName, err := loadCorpus(cfg)
	if err != nil {
		return nil, exitcode.With(exitcode.InvalidConfig, err)
	}
	tok, err := loadTokenizer(cfg)
	if err != nil {
		return nil, exitcode.With(exitcode.InvalidConfig, err)
	}
	texts := make([]string, len(rows))
	for i, r := range rows {
		texts[i] = r.Text
	}
	var tmpl prompt.Template
	if tok.HasChatTemplate() {
		tmpl = func(content string) (string, error) {
			return tok.ApplyChatTemplate([]tokenizer.Message{{Role: "user", Content: content}}, true)
		}
	} else {
		fmt.Fprintf(opt.Stderr, "tokenizer %s has no chat template: prompts are raw completions (body + suffix)\n", tok.Name())
	}
	newBuilder := func(t prompt.Template) (*prompt.Builder, error) {
		b, err := prompt.New(tok, t, texts, prompt.Options{Suffix: cfg.Prompt.Suffix, Separator: cfg.Prompt.Separator})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tok.Name(), err)
		}
		return b, nil
	}
	builder, err := newBuilder(tmpl)
	if err != nil {
		return nil, exitcode.With(exitcode.InvalidConfig, err)
	}

	// Target: the built-in engine in-process, or a server. Routed workers that all name their
	// own server make the first of them the target: a built-in engine would be started for
	// nothing, and its model and context would be asked instead of the workers'.
	if ws := cfg.ResolvedWorkers(""); cfg.Target == config.Builtin && cfg.Mode != config.ModeArray && cfg.Mode != config.ModeN && allNamed(ws) {
		c2 := *cfg
		c2.Target = ws[0].URL
		cfg = &c2
		fmt.Fprintf(opt.Stderr, "target: %s (the first worker; every [[workers]] entry names its server, so no built-in engine is started)\n", cfg.Target)
	}
	target, engineInfo := cfg.Target, map[string]any(nil)
	if cfg.Target != config.Builtin && (cfg.Engine.Quirks != "" || cfg.Engine.TimeScale != 0 || cfg.Engine.Profile != "" || cfg.Engine.MaxModelLen != 0) {
		fmt.Fprintf(opt.Stderr, "[engine] is set but not used: the target is %s, not the built-in engine (give those settings to genload serve)\n", cfg.Target)
	}
	if cfg.Target == config.Builtin {
		eng, url, info, err := startBuiltin(cfg, tok)
		if err != nil {
			return nil, err
		}
		defer eng.Close()
		target, engineInfo = url, info
	}

	apiKey, err := readAPIKey(cfg, opt.Getenv)
	if err != nil {
		return nil, exitcode.With(exitcode.InvalidConfig, err)
	}

	// Model and context.
	models, err := listModels(ctx, cfg, target, apiKey, opt.Stderr)
	if err != nil {
		return nil, exitcode.With(exitcode.TargetFailed, err)
	}
	model, serverCtx, err := pickModel(cfg.Model, models, target)
	if err != nil {
		return nil, exitcode.With(exitcode.TargetFailed, err)
	}
	tokCtx, tokCtxSrc := tok.ModelMaxLen()
	modelCtx, contextSrc := resolveContext(cfg.Context, serverCtx, tokCtx, tokCtxSrc)
	// Routed workers on other servers are asked for their own context: the run's is the
	// smallest (the header records each worker's).
	var workerCtx []int
	if cfg.Mode == config.ModeRouted || cfg.Mode == config.ModeAuto {
		wc, smallest, src, err := workerContexts(ctx, cfg, cfg.ResolvedWorkers(target), target, model, apiKey, serverCtx, opt.Stderr)
		if err != nil {
			return nil, exitcode.With(exitcode.TargetFailed, err)
		}
		workerCtx = wc
		if smallest > 0 && (modelCtx == 0 || smallest < modelCtx) {
			modelCtx, contextSrc = smallest, src
		}
	}
	if modelCtx > 0 && cfg.MaxTokens >= modelCtx {
		return nil, exitcode.Errorf(exitcode.InvalidConfig, "%s: [max_tokens] %d leaves no room for a prompt in the context of %d tokens (%s)",
			cfg.Where("max_tokens"), cfg.MaxTokens, modelCtx, contextSrc)
	}

	minLen := cfg.Lengths.MinLen
	if minLen == 0 {
		minLen = builder.MinLen()
	}
	if minLen <= builder.Overhead() {
		return nil, exitcode.Errorf(exitcode.InvalidConfig, "%s: [lengths.min_len] %d must exceed the %d tokens of chat template and suffix",
			cfg.Where("lengths.min_len"), minLen, builder.Overhead())
	}
	maxLen := math.MaxInt32
	if modelCtx > 0 {
		maxLen = modelCtx - cfg.MaxTokens
	}
	if maxLen < minLen {
		return nil, exitcode.Errorf(exitcode.InvalidConfig, "context %d (%s) minus max_tokens %d is below the shortest prompt of %d tokens (chat template + suffix + body)",
			modelCtx, contextSrc, cfg.MaxTokens, minLen)
	}

	// Capability probe: /metrics, the tokenize endpoint, and — for mode or prompt.format
	// "auto" — the prompt shapes the server accepts; cfg from here on has them resolved.
	srv, err := probeServer(ctx, cfg, clientOptions(cfg, target, model, apiKey, cfg.ResolvedWorkers(target)), tok,
		len(cfg.ResolvedWorkers(target)) > 1)
	if err != nil {
		return nil, exitcode.With(exitcode.TargetFailed, err)
	}
	cfg = srv.cfg
	if srv.line != "" {
		fmt.Fprintln(opt.Stderr, srv.line)
	}
	cfg, line, err := resolveTokenCounts(ctx, cfg, clientOptions(cfg, target, model, apiKey, cfg.ResolvedWorkers(target)), tok)
	if err != nil {
		return nil, exitcode.With(exitcode.TargetFailed, err)
	}
	if line != "" {
		fmt.Fprintln(opt.Stderr, line)
	}

	// Matrix.
	cells, dropped, err := matrix.Build(matrix.Spec{
		SeqLens: cfg.Matrix.SeqLens, BatchSizes: cfg.Matrix.BatchSizes, Pairs: cfg.Matrix.Pairs,
		MaxKVCacheEntries: cfg.Matrix.MaxKVCacheEntries, AutoSeqLens: cfg.Matrix.AutoSeqLens,
		MinSeqLen: cfg.Matrix.MinSeqLen, Context: modelCtx, MaxTokens: cfg.MaxTokens, CorpusRows: len(rows),
		Distinct: cfg.Mode != config.ModeN,
	})
	if err != nil {
		return nil, exitcode.With(exitcode.InvalidConfig, fmt.Errorf("%s: %w", cfg.Where("matrix"), err))
	}

	// Plugins (loaded, and the lengths computed, while the corpus was tokenized).
	pl, joined = <-plugReady, true
	if pl.err != nil {
		return nil, pl.err
	}
	host, lengthsPlugin := pl.host, pl.lengths
	plugins := map[string]report.PluginInfo{"lengths": pluginInfo(lengthsPlugin.Info())}
	workers := cfg.ResolvedWorkers(target)
	stages := cell.Stages{Shape: recording.Mode(cfg.Mode), Lengths: lengths.Stage{Source: lengthsPlugin, Lo: minLen, Hi: maxLen},
		Workers: len(workers), MaxTokens: cfg.MaxTokens}
	if cfg.Mode == config.ModeN {
		stages.Lengths.Source = nil // the legacy shape: B sequences of one prompt of length L
	}
	var completer Completer
	if cfg.Mode == config.ModeRouted {
		rp, err := host.LoadRouter(ctx, cfg.Router.Plugin, cfg.Router.Config)
		if err != nil {
			return nil, exitcode.With(exitcode.PluginRejected, fmt.Errorf("%s: [router.plugin]: %w", cfg.Where("router.plugin"), err))
		}
		plugins["router"] = pluginInfo(rp.Info())
		stages.Router, completer = rp, rp
	}

	client, err := dispatch.New(clientOptions(cfg, target, model, apiKey, workers))
	if err != nil {
		return nil, exitcode.With(exitcode.InvalidConfig, err)
	}
	defer client.Close()

	// Text prompts: rendered and fitted as the server counts them.
	var text *textMode
	if cfg.Prompt.Format == config.FormatText {
		var counter prompt.Counter
		if srv.tokens != nil {
			counter = srv.tokens
		}
		text, err = newTextMode(ctx, cfg, tok, builder, newBuilder, counter, clientOptions(cfg, target, model, apiKey, workers), minLen, maxLen, opt.Stderr)
		if err != nil {
			return nil, exitcode.With(exitcode.TargetFailed, fmt.Errorf("text prompts: %w", err))
		}
		builder, maxLen = text.builder, text.maxLen
		stages.Lengths.Hi = maxLen
	}
	stages.Prompts = prompter{builder: builder, text: text}

	kind := "external"
	if cfg.Target == config.Builtin {
		kind = config.Builtin
	}
	header := report.Header{
		RunID: opt.RunID, Started: start.UTC(), Genload: opt.Version, Target: target, TargetKind: kind,
		Model: model, Context: modelCtx, ContextSource: contextSrc, Tokenizer: tok.Name(),
		Corpus: corpusName, CorpusRows: len(rows), PromptOverhead: builder.Overhead(), MinLen: minLen, MaxLen: maxLen,
		Plugins: plugins, Engine: engineInfo, Cells: cells, Dropped: dropped, Config: cfg,
	}
	if cfg.Mode == config.ModeRouted {
		for _, wk := range workers {
			header.Workers = append(header.Workers, report.Worker{Name: wk.Name, URL: wk.URL, Context: workerContext(workerCtx, len(header.Workers))})
		}
	}
	w, done, err := openResults(cfg, header, opt, autoID, len(cells))
	if err != nil {
		return nil, err
	}
	res := &Result{JSONL: w.Path(), Run: w.Run()}
	fmt.Fprintf(opt.Stderr, "genload %s: %s against %s (model %s, context %d from %s); results → %s\n",
		opt.Version, plural(len(cells), "cell"), target, model, modelCtx, contextSrc, w.Path())
	for _, d := range dropped {
		fmt.Fprintf(opt.Stderr, "dropped L=%d B=%d: %s\n", d.SeqLen, d.Batch, d.Reason)
	}

	cr := &cellRunner{cfg: cfg, stages: stages, client: client}
	if completer != nil {
		cr.router = completer
	}
	if w := newWatcher(ctx, cfg, target, apiKey, workers, opt.Stderr); w != nil {
		cr.watcher = w
	}
	prog := newProgress(opt.Stderr, opt.Progress, cells)
	runErr := func() error {
		for _, cell := range cells {
			if done[cell.Index] {
				// A stateful router (round robin) must see the same calls in the same order as
				// in the first run, so that resumed cells are routed as they would have been.
				if err := cr.replay(ctx, cell); err != nil {
					return exitcode.With(exitcode.PluginRejected, err)
				}
				prog.skip(cell)
				continue
			}
			rec, err := cr.measure(ctx, cell)
			if ctx.Err() != nil {
				rec.Status, rec.Error = report.StatusInterrupted, "interrupted"
			}
			if werr := w.Cell(rec); werr != nil {
				return werr
			}
			prog.done(rec)
			if err != nil {
				if ctx.Err() != nil {
					return exitcode.With(exitcode.Interrupted, fmt.Errorf("interrupted during cell %s", cell.Key()))
				}
				return fmt.Errorf("cell %s: %w", cell.Key(), err)
			}
		}
		return nil
	}()
	prog.finish()
	status := report.StatusOK
	switch {
	case exitcode.Of(runErr) == exitcode.Interrupted:
		status = report.StatusInterrupted
	case runErr != nil:
		status = report.StatusError
	}
	jsonPath, csvPath, ferr := w.Finish(status, runErr)
	res.JSON, res.CSV = jsonPath, csvPath
	for _, c := range res.Run.Cells {
		if report.Measured(c.Status) {
			res.Measured++
		}
	}
	report.Table(opt.Stdout, res.Run)
	fmt.Fprintf(opt.Stderr, "%d/%d cells measured in %s; results: %s", res.Measured, len(cells), time.Since(start).Round(100*time.Millisecond), res.JSONL)
	if jsonPath != "" {
		fmt.Fprintf(opt.Stderr, ", %s, %s", jsonPath, csvPath)
	}
	fmt.Fprintln(opt.Stderr)
	return res, errors.Join(runErr, ferr)
}

// allNamed reports whether every worker of ws names its own server URL.
func allNamed(ws []config.Worker) bool {
	for _, w := range ws {
		if w.URL == "" {
			return false
		}
	}
	return len(ws) > 0
}

func loadCorpus(cfg *config.Config) ([]corpus.Row, string, error) {
	if cfg.Prompt.Corpus == "" {
		rows, err := corpus.Default()
		return rows, corpus.EmbeddedName, err
	}
	rows, err := corpus.Load(cfg.Prompt.Corpus)
	if err != nil {
		return nil, "", fmt.Errorf("%s: [prompt.corpus]: %w", cfg.Where("prompt.corpus"), err)
	}
	return rows, cfg.Prompt.Corpus, nil
}

func loadTokenizer(cfg *config.Config) (*tokenizer.Tokenizer, error) {
	if cfg.Tokenizer.Path == "" {
		return tokenizer.Default()
	}
	t, err := tokenizer.Load(cfg.Tokenizer.Path)
	if err != nil {
		return nil, fmt.Errorf("%s: [tokenizer.path]: %w", cfg.Where("tokenizer.path"), err)
	}
	return t, nil
}

// readAPIKey returns the key from [api_key_file] or the [api_key_env] variable ("" if none).
func readAPIKey(cfg *config.Config, getenv func(string) string) (string, error) {
	if cfg.APIKeyFile != "" {
		b, err := os.ReadFile(cfg.APIKeyFile)
		if err != nil {
			// The path is not secret; the content is never quoted.
			return "", fmt.Errorf("%s: [api_key_file]: cannot read the API key file: %w", cfg.Where("api_key_file"), errors.Unwrap(err))
		}
		return strings.TrimSpace(string(b)), nil
	}
	if cfg.APIKeyEnv != "" {
		return getenv(cfg.APIKeyEnv), nil
	}
	return "", nil
}

// pickModel returns the model to use and its context from /v1/models: the configured one
// (which must be listed) or the first listed.
func pickModel(want string, models []dispatch.Model, target string) (string, int, error) {
	if len(models) == 0 {
		if want == "" {
			return "", 0, fmt.Errorf("%s/v1/models lists no model; set [model]", target)
		}
		return want, 0, nil
	}
	if want == "" {
		return models[0].ID, models[0].MaxModelLen, nil
	}
	ids := make([]string, len(models))
	for i, m := range models {
		if m.ID == want {
			return m.ID, m.MaxModelLen, nil
		}
		ids[i] = m.ID
	}
	return "", 0, fmt.Errorf("[model] %q is not served by %s (it lists %s)", want, target, strings.Join(ids, ", "))
}

// resolveContext returns the smallest known context and where it came from.
func resolveContext(cfgCtx, serverCtx, tokCtx int, tokSrc string) (int, string) {
	type src struct {
		n    int
		name string
	}
	cands := []src{{cfgCtx, "bench.toml [context]"}, {serverCtx, "server /v1/models max_model_len"}, {tokCtx, "tokenizer " + tokSrc}}
	best := src{}
	for _, c := range cands {
		if c.n > 0 && (best.n == 0 || c.n < best.n) {
			best = c
		}
	}
	if best.n == 0 {
		return 0, "unknown"
	}
	return best.n, best.name
}

func pluginInfo(i plugin.Info) report.PluginInfo {
	return report.PluginInfo{Name: i.Name, Version: i.Version, Kind: i.Kind, Path: i.Path, SHA256: i.SHA256}
}

func toDispatchWorkers(ws []config.Worker) []dispatch.Worker {
	out := make([]dispatch.Worker, len(ws))
	for i, w := range ws {
		out[i] = dispatch.Worker{Name: w.Name, URL: w.URL, Headers: w.Headers}
	}
	return out
}

// cellWarnings flags cells whose measurement missed its target, and gives the reason of every
// absent figure (the table shows – for it).
func cellWarnings(cfg *config.Config, cell matrix.Cell, rec *report.Cell) []string {
	var ws []string
	f := rec.Figures
	if len(f.Errors) > 0 {
		ws = append(ws, fmt.Sprintf("%d request errors: %s", len(f.Errors), f.Errors[0]))
	}
	if p := f.Prompts; p != nil && p.TruncationError == "" {
		if m := p.Message(); m != "" {
			ws = append(ws, m)
		}
	}
	if f.ITL.N > 0 && f.ITL.P50 == 0 {
		ws = append(ws, "over half of the chunk intervals are 0: chunks arrived together in one read (the client fell behind, or the server or network coalesced them); per-forward figures are unreliable")
	}
	switch {
	case f.PerForward.N == 0:
		ws = append(ws, "no per-forward figure: "+f.PerForwardReason)
	case f.PerForwardReason != "":
		ws = append(ws, fmt.Sprintf("fwd over %d of %d sequences: %s", f.PerForward.N, f.Sequences, f.PerForwardReason))
	}
	if f.PerForward.N > 0 && f.TokensUnverified > 0 {
		ws = append(ws, fmt.Sprintf("%d of %d sequences' token counts are unverified (counted from chunks: the server sent no usable usage); the table shows them as a lower bound", f.TokensUnverified, f.Sequences))
	}
	if f.TokensPerChunk > 1.05 && cfg.DraftTokens == 0 && f.PerForward.N > 0 {
		ws = append(ws, fmt.Sprintf("chunks carry %.2f tokens on average: fwd counts one forward pass per token, which is right for a server that coalesces chunks (stream_interval) and wrong for one that speculates — then set draft_tokens = k to count forward passes",
			f.TokensPerChunk))
	}
	for _, n := range sortedKeys(f.TokenNotes) {
		ws = append(ws, fmt.Sprintf("token counts of %d of %d sequences: %s", f.TokenNotes[n], f.Sequences, n))
	}
	ws = append(ws, f.Checks...)
	ws = append(ws, estimateWarnings(f, rec.Server, cfg.DraftTokens > 0)...)
	if h := f.Header; h != nil && h.PerForward.N == 0 && h.Reason != "" {
		ws = append(ws, "hdr fwd absent: "+h.Reason)
	}
	if rec.Server != nil {
		ws = append(ws, rec.Server.Notes()...)
	}
	ws = append(ws, attainmentWarnings(cfg, cell, rec)...)
	if !f.Window.Valid && f.Window.Reason != "" {
		ws = append(ws, "no full-batch figure: "+f.Window.Reason)
	}
	if cfg.Mode == config.ModeRouted && rec.Workers != nil {
		used := map[int]bool{}
		for _, w := range rec.Workers {
			used[w] = true
		}
		if len(used) > 1 {
			ws = append(ws, fmt.Sprintf("routed over %d workers: B = %d is the total; each worker ran about %d sequences", len(used), cell.Batch, (cell.Batch+len(used)-1)/len(used)))
		}
	}
	return ws
}

// attainmentWarnings says whether the cell's B sequences ran as one batch. The server's
// running gauge decides where it was sampled (≥ 3 samples, every 20 ms; per server when
// routed over several, in Notes); otherwise the client's marks (measure.Attain) — and a cell
// whose attainment nobody can tell says so, since its figures may be for a smaller batch.
func attainmentWarnings(cfg *config.Config, cell matrix.Cell, rec *report.Cell) []string {
	if m := rec.Server; m != nil && len(m.Servers) > 1 {
		return nil // each server against its share of B: rec.Server.Notes
	}
	if m := rec.Server; m != nil && m.Occupancy.Samples >= 3 {
		o := m.Occupancy
		switch {
		case o.Max > cell.Batch:
			return []string{fmt.Sprintf("the server ran up to %d requests at once, more than B = %d: other load shares it", o.Max, cell.Batch)}
		case cfg.Mode != config.ModeN && o.Mode < cell.Batch:
			return []string{fmt.Sprintf("batch attainment: the server mostly ran %d sequences at once, not B = %d (%.0f %% of samples at B)", o.Mode, cell.Batch, 100*o.AtTarget)}
		}
		return nil
	}
	a := rec.Figures.Attainment
	if a == nil {
		return nil
	}
	src := "no running-requests gauge from /metrics"
	if rec.Server != nil {
		src = fmt.Sprintf("the running-requests gauge gave %d samples", rec.Server.Occupancy.Samples)
	}
	switch a.State {
	case measure.AttainmentProbablyNotReached:
		return []string{fmt.Sprintf("batch probably not reached (%s; the client's marks): %s", src, a.Reason)}
	case measure.AttainmentUnknown:
		return []string{fmt.Sprintf("batch attainment unknown (%s; the client's marks cannot tell: %s)", src, a.Reason)}
	}
	if rec.Server != nil {
		// The gauge exists but the cell was too short to sample it ≥ 3 times; the client's
		// marks agree with one batch of B.
		return nil
	}
	// The client's marks agree with one batch of B, but only the server can confirm it (and
	// only it can show other load sharing the batch).
	return []string{fmt.Sprintf("batch attainment unknown (%s): the client saw %d sequences decoding together, consistent with B = %d", src, a.Concurrency, cell.Batch)}
}

// sortedKeys returns m's keys in ascending order (so that warnings come out the same in
// every run).
func sortedKeys(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// sameRun checks that a resumed run is the one that was started: same configuration (the
// file path aside) and same cells. The error lists every difference as key: before → now.
// Keys the stored configuration lacks (added to genload since) are not compared, and a key
// stored as "auto" matches what the capability probe resolved it to now.
func sameRun(before, now report.Header) error {
	flat := func(h report.Header) map[string]string {
		c := *h.Config
		c.File = ""
		b, _ := json.Marshal(struct {
			Config    config.Config
			Tokenizer string
			Corpus    string
			Cells     []matrix.Cell
		}{c, h.Tokenizer, h.Corpus, h.Cells})
		var v any
		_ = json.Unmarshal(b, &v)
		out := map[string]string{}
		var walk func(prefix string, v any)
		walk = func(prefix string, v any) {
			switch x := v.(type) {
			case map[string]any:
				for k, e := range x {
					walk(strings.TrimPrefix(prefix+"."+k, "."), e)
				}
			default:
				j, _ := json.Marshal(x)
				out[prefix] = string(j)
			}
		}
		walk("", v)
		return out
	}
	if before.Config == nil {
		return errors.New("its header has no config")
	}
	a, b := flat(before), flat(now)
	var diffs []string
	// Only the stored keys are compared: a key the stored configuration lacks was added to
	// genload after the run was started, so the run did not have it (the results schema's
	// compatibility rule: new keys are optional for readers of older files).
	for k, va := range a {
		vb, ok := b[k]
		if ok && va == `"auto"` && now.Config.Chosen[strings.TrimPrefix(k, "Config.")] != "" {
			continue // "auto" then, resolved by the probe now
		}
		if !ok || va != vb {
			diffs = append(diffs, fmt.Sprintf("%s: %s → %s", k, va, b[k]))
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	sort.Strings(diffs)
	return fmt.Errorf("the configuration differs from the run's (before → now):\n  %s", strings.Join(diffs, "\n  "))
}

// estimateWarnings (chunkForwards: the client counts chunks as forward passes, draft_tokens
// set) holds every per-forward estimate of a cell against the best reference and
// flags a gap above 5 %. The reference is the built-in engine's own decode step time when it
// is known, else the client's figure. /metrics on vLLM and SGLang is an inter-token latency:
// per token, not per forward pass, when chunks carry several tokens (speculative decoding).
func estimateWarnings(f *measure.Figures, m *scrape.CellMetrics, chunkForwards bool) []string {
	if f.PerForward.N == 0 {
		return nil
	}
	type est struct {
		name string
		d    time.Duration
	}
	ref := est{"the client's fwd", f.PerForward.Mean}
	var others []est
	if m != nil && m.Steps.HasTruthDecode && m.Steps.TruthDecodeStepTime > 0 {
		ref = est{"the engine's own decode step time", m.Steps.TruthDecodeStepTime}
		others = append(others, est{"client fwd", f.PerForward.Mean})
	}
	if d := headerMean(f); d > 0 {
		others = append(others, est{"hdr fwd (timing headers)", d})
	}
	if m != nil && m.Steps.HasStepTime && m.Steps.StepTime > 0 {
		others = append(others, est{"metrics fwd (/metrics)", m.Steps.StepTime})
	}
	var ws []string
	for _, e := range others {
		dev := float64(e.d)/float64(ref.d) - 1
		if math.Abs(dev) <= 0.05 {
			continue
		}
		why := "a late first token or a stall shortens or lengthens the client's decode window"
		switch {
		case strings.HasPrefix(e.name, "metrics") && f.TokensPerChunk > 1.05:
			why = fmt.Sprintf("chunks carry %.2f tokens: the server's inter-token latency is per token, not per forward pass", f.TokensPerChunk)
		case strings.HasPrefix(e.name, "client") && f.TokensPerChunk > 1.05 && !chunkForwards:
			why = "speculative decoding: see draft_tokens"
		case strings.HasPrefix(e.name, "hdr"):
			why = "the header's generation time or acceptance does not match the forward passes seen (check draft_tokens)"
		}
		ws = append(ws, fmt.Sprintf("per-forward estimates disagree: %s %.3f ms is %+.0f %% of %s %.3f ms (%s)",
			e.name, float64(e.d)/1e6, 100*dev, ref.name, float64(ref.d)/1e6, why))
	}
	return ws
}

// headerMean is the mean per-forward latency from the server's timing headers (0 if none).
func headerMean(f *measure.Figures) time.Duration {
	if f.Header == nil {
		return 0
	}
	return f.Header.PerForward.Mean
}

// summarize shortens a joined error whose parts repeat (B routed requests failing alike) to
// "N requests failed: <message>". Hints for errors whose fix is known come with each
// request's error (dispatch's table of known server messages).
func summarize(err error) error {
	var parts []string
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			parts = append(parts, e.Error())
		}
	} else {
		parts = []string{err.Error()}
	}
	msg := parts[0]
	if len(parts) > 1 {
		distinct := map[string]bool{}
		for _, p := range parts {
			distinct[p] = true
		}
		if len(distinct) == 1 {
			msg = fmt.Sprintf("%d requests failed: %s", len(parts), parts[0])
		} else {
			msg = fmt.Sprintf("%d requests failed; first: %s", len(parts), parts[0])
		}
	}
	if msg == err.Error() {
		return err
	}
	return errors.New(msg) // the caller attaches the exit code
}

// loadedPlugins is the outcome of loadPlugins.
type loadedPlugins struct {
	host    *plugin.Host
	lengths *plugin.LengthsPlugin
	err     error // carries exitcode.PluginRejected
}

// loadPlugins creates the plugin host, loads the length plugin and calls it once for every
// (L, B) of the configured grid and pairs with the range the run uses ([1, 2³¹−1]; the host
// clamps afterwards). Results of "pure" plugins are cached by the plugin host, so the per-cell
// calls of the run are answered from memory; for other plugins the calls only validate.
// The host is returned (to be closed) even on error.
func loadPlugins(ctx context.Context, cfg *config.Config) loadedPlugins {
	host, err := plugin.NewHost(ctx, plugin.Options{Dir: cfg.Plugins.Dir, CallTimeout: cfg.Plugins.CallTimeout.Duration,
		MemoryLimitPages: uint32(cfg.Plugins.MemoryLimitMiB * 16), Seed: cfg.Seed})
	if err != nil {
		return loadedPlugins{err: exitcode.With(exitcode.PluginRejected, err)}
	}
	lp, err := host.LoadLengths(ctx, cfg.Lengths.Plugin, cfg.Lengths.Config)
	if err != nil {
		key := "lengths.plugin"
		if pe := (*plugin.Error)(nil); errors.As(err, &pe) && pe.Export == "genload_init" {
			key = "lengths.config" // the plugin rejected its configuration
		}
		return loadedPlugins{host: host, err: exitcode.With(exitcode.PluginRejected, fmt.Errorf("%s: [%s]: %w", cfg.Where(key), key, err))}
	}
	if cfg.Mode == config.ModeN || !lp.Info().HasCap("pure") {
		return loadedPlugins{host: host, lengths: lp}
	}
	var pairs [][2]int
	for _, p := range cfg.Matrix.Pairs {
		pairs = append(pairs, [2]int{p[0], p[1]})
	}
	if !cfg.Matrix.AutoSeqLens {
		var grid [][2]int
		for _, l := range cfg.Matrix.SeqLens {
			for _, b := range cfg.Matrix.BatchSizes {
				grid = append(grid, [2]int{l, b})
			}
		}
		pairs = append(pairs, grid...)
	}
	if err := lengths.Prefetch(ctx, lp, pairs); err != nil {
		return loadedPlugins{host: host, err: exitcode.With(exitcode.PluginRejected, err)}
	}
	return loadedPlugins{host: host, lengths: lp}
}

// plural returns "1 cell", "2 cells".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// startBuiltin starts the built-in engine on a loopback port with bench.toml's [engine] table
// over the engine's defaults, serving the run's tokenizer; it returns the engine (to close),
// its base URL and what the results header records about it.
func startBuiltin(cfg *config.Config, tok *tokenizer.Tokenizer) (*engine.Engine, string, map[string]any, error) {
	ecfg := engine.DefaultConfig()
	if cfg.Engine.Profile != "" {
		ecfg.Profile = cfg.Engine.Profile
	}
	if cfg.Engine.TimeScale > 0 {
		ecfg.TimeScale = cfg.Engine.TimeScale
	}
	if cfg.Engine.MaxModelLen > 0 {
		ecfg.MaxModelLen = cfg.Engine.MaxModelLen
	}
	q, err := engine.ParseQuirks(cfg.Engine.Quirks)
	if err != nil {
		return nil, "", nil, exitcode.With(exitcode.InvalidConfig, fmt.Errorf("%s: [engine.quirks]: %w", cfg.Where("engine.quirks"), err))
	}
	ecfg.Quirks = q
	ecfg.Seed = int64(cfg.Seed)
	ecfg.VocabSize = max(ecfg.VocabSize, tok.VocabSize()) // the engine serves the run's tokenizer
	eng, err := engine.New(ecfg, tok)
	if err != nil {
		return nil, "", nil, exitcode.With(exitcode.InvalidConfig, fmt.Errorf("built-in engine: %w", err))
	}
	url, err := eng.Start("127.0.0.1:0")
	if err != nil {
		eng.Close()
		return nil, "", nil, fmt.Errorf("built-in engine: %w", err)
	}
	return eng, url, map[string]any{"profile": ecfg.Profile, "time_scale": ecfg.TimeScale, "quirks": q.String(),
		"max_model_len": ecfg.MaxModelLen, "model": ecfg.ModelName,
		"note": "figures are wall-clock at this time scale: divide by time_scale for the simulated GPU time"}, nil
}

// openResults creates the run's JSONL file — or, with opt.Resume, opens the earlier run's for
// appending after checking it is the same run — and returns the indices of cells already
// measured. A default run id that exists already gets a -2, -3, … suffix.
func openResults(cfg *config.Config, header report.Header, opt Options, autoID bool, cells int) (*report.Writer, map[int]bool, error) {
	done := map[int]bool{}
	if opt.Resume != "" {
		w, err := report.Resume(opt.Resume)
		if err != nil {
			return nil, nil, exitcode.With(exitcode.InvalidConfig, err)
		}
		if err := sameRun(w.Run().Header, header); err != nil {
			return nil, nil, exitcode.With(exitcode.InvalidConfig, fmt.Errorf("cannot resume %s: %w", opt.Resume, err))
		}
		for _, c := range w.Run().Cells {
			if report.Measured(c.Status) {
				done[c.Cell.Index] = true
			}
		}
		fmt.Fprintf(opt.Stderr, "resuming %s: %d of %d cells already measured\n", opt.Resume, len(done), cells)
		return w, done, nil
	}
	for i := 2; ; i++ {
		w, err := report.Create(cfg.Out, header)
		switch {
		case err == nil:
			return w, done, nil
		case !errors.Is(err, os.ErrExist):
			return nil, nil, err
		case !autoID || i > 100:
			return nil, nil, exitcode.With(exitcode.InvalidConfig, fmt.Errorf("%w: choose another --run-id, or continue that run with --resume", err))
		}
		header.RunID = fmt.Sprintf("%s-%d", opt.RunID, i)
	}
}

// listModels asks the target for its models, retrying a server that is unreachable or not
// ready yet (429, 5xx: a server still loading its model answers 503) as the warmup retries:
// [warmup] retries times, waiting retry_delay, doubled each time.
func listModels(ctx context.Context, cfg *config.Config, target, apiKey string, stderr io.Writer) ([]dispatch.Model, error) {
	delay := cfg.Warmup.RetryDelay.Duration
	for attempt := 0; ; attempt++ {
		models, err := dispatch.ListModels(ctx, target, apiKey, cfg.Timeouts.Connect.Duration)
		var me *dispatch.ModelsError
		if err == nil || attempt >= cfg.Warmup.Retries || !errors.As(err, &me) || !me.Retryable() {
			if err != nil && attempt > 0 {
				err = fmt.Errorf("%w (after %d retries)", err, attempt)
			}
			return models, err
		}
		fmt.Fprintf(stderr, "%v; retrying in %v\n", err, delay)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay *= 2
	}
}
