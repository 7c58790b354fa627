package run

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/genload/genload/corpus"
	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/dispatch"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/lengths"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/plan"
	"github.com/genload/genload/host/plugin"
	"github.com/genload/genload/host/prompt"
	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/tokenizer"
)

// setup is what a run learns before its first cell, stage by stage (run): the prompt inputs,
// the target and its model and context, the length bounds, the server's capabilities, the
// matrix, the plugins, and the results header. Each stage reads the fields the stages before it
// set and sets its own; close releases what they started (the engine, the client, the plugins).
type setup struct {
	cfg   *config.Config // resolved further by the target and the probe stages
	opt   Options
	start time.Time

	// inputs: the corpus, the tokenizer and the prompt builder
	rows       []corpus.Row
	corpusName string
	tok        *tokenizer.Tokenizer
	builder    *prompt.Builder
	newBuilder func(prompt.Template) (*prompt.Builder, error)
	// startTarget, modelAndContext, bounds: where requests go, and how long prompts may be
	eng                 *engine.Engine // nil unless the target is the built-in engine
	engineInfo          map[string]any
	target, model       string
	apiKey              string
	serverCtx, modelCtx int // tokens
	contextSrc          string
	workerCtx           []int // each routed worker's context (0: its server does not say)
	minLen, maxLen      int   // tokens
	// probe, matrix
	srv   *serverInfo
	cells []matrix.Cell
	// matrixCells counts the whole matrix's cells when a shard measures only some of them.
	matrixCells int
	// empty: the run is a shard with no cells, known before any target was started
	// (emptyShard); the stages after it did not run.
	empty   bool
	dropped []matrix.Dropped
	// loadPlugins, dispatcher, textPrompts: a cell's stages
	plugReady  chan loadedPlugins
	plugins    loadedPlugins
	joined     bool // plugins received from plugReady
	pluginInfo map[string]results.PluginInfo
	workers    []config.Worker
	stages     plan.Stages
	completer  Completer
	client     *dispatch.Client
	// the results header (made last)
	header results.Header
}

// run runs the setup's stages in order and returns the cell runner of the run (its Watcher
// still unset: the watcher's lines come after the run's first line). The error carries its
// exit code.
func (s *setup) run(ctx context.Context) (*cellRunner, error) {
	// The length plugin is compiled and loaded while the corpus is tokenized (its cost overlaps
	// prompt building); once the range of lengths is known, a pure plugin is asked for every
	// cell and held to the ABI (checkLengths), so that one failing on any cell fails the run
	// before the first cell.
	s.plugReady = make(chan loadedPlugins, 1)
	cfg := s.cfg
	exitcode.Go(func() { s.plugReady <- loadPlugins(ctx, cfg) })

	for _, stage := range []func(context.Context) error{
		s.inputs, s.emptyShard, s.startTarget, s.modelAndContext, s.bounds, s.probe, s.matrix, s.loadPlugins, s.dispatcher, s.textPrompts,
	} {
		if err := stage(ctx); err != nil {
			if ctx.Err() != nil {
				// Ctrl-C while the server was still loading, or during the probe: the stage's
				// error (a canceled request) is the interrupt's, not the target's.
				return nil, &exitcode.Error{Code: exitcode.Interrupted, Err: fmt.Errorf("interrupted before the first cell: %w", err)}
			}
			return nil, err
		}
		if s.empty {
			break
		}
	}
	s.header = s.makeHeader()
	cr := &cellRunner{cfg: s.cfg, stages: s.stages, client: s.client, metrics: &metricHistory{}}
	if retokenize(s.cfg) {
		cr.tok = s.tok
	}
	if s.completer != nil {
		cr.router = s.completer
	}
	if s.cfg.Mode == config.ModeRouted {
		cr.servers = serverKeys(s.cfg, s.workers)
		for _, w := range s.workers {
			cr.workerNames = append(cr.workerNames, w.Name)
		}
	}
	return cr, nil
}

// close releases what the stages started: the client, the engine, then the plugins (waiting
// for the loader when the setup ended before it joined it).
func (s *setup) close() {
	if s.client != nil {
		s.client.Close()
	}
	if s.eng != nil {
		s.eng.Close()
	}
	if s.plugReady != nil && !s.joined {
		s.plugins, s.joined = <-s.plugReady, true
	}
	if s.plugins.host != nil {
		s.plugins.host.Close(context.Background())
	}
}

// inputs reads the corpus and the tokenizer and makes the prompt builder (with the
// tokenizer's chat template when it has one).
func (s *setup) inputs(context.Context) error {
	cfg := s.cfg
	var err error
	if s.rows, s.corpusName, err = loadCorpus(cfg); err != nil {
		return exitcode.With(exitcode.InvalidConfig, err)
	}
	if s.tok, err = loadTokenizer(cfg); err != nil {
		return exitcode.With(exitcode.InvalidConfig, err)
	}
	tok := s.tok
	texts := make([]string, len(s.rows))
	for i, r := range s.rows {
		texts[i] = r.Text
	}
	var tmpl prompt.Template
	if tok.HasChatTemplate() {
		tmpl = func(content string) (string, error) {
			return tok.ApplyChatTemplate([]tokenizer.Message{{Role: "user", Content: content}}, true)
		}
	} else {
		fmt.Fprintf(s.opt.Stderr, "tokenizer %s has no chat template: prompts are raw completions (body + suffix)\n", tok.Name())
	}
	s.newBuilder = func(t prompt.Template) (*prompt.Builder, error) {
		b, err := prompt.New(tok, t, texts, prompt.Options{Suffix: cfg.Prompt.Suffix, Separator: cfg.Prompt.Separator})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tok.Name(), err)
		}
		return b, nil
	}
	if s.builder, err = s.newBuilder(tmpl); err != nil {
		return exitcode.With(exitcode.InvalidConfig, err)
	}
	return nil
}

// emptyShard finds a shard with no cells before the built-in engine is started for nothing:
// when the target is the built-in engine and no routed worker names a server of its own, the
// context is known without asking it — the smallest of [context], the engine's max_model_len
// and the tokenizer's, as modelAndContext resolves it — and so is the matrix. A shard with
// none of its cells sets s.empty, with the context, the bounds and the matrix's size for the
// header. Anything else (another target, a configuration the later stages refuse) leaves the
// decision to them.
func (s *setup) emptyShard(ctx context.Context) error {
	cfg := s.cfg
	if !s.opt.Shard.Enabled() || cfg.Target != config.Builtin {
		return nil
	}
	if cfg.Mode == config.ModeRouted || cfg.Mode == config.ModeAuto {
		for _, w := range cfg.ResolvedWorkers("") {
			if w.URL != "" {
				return nil // its server's context may be smaller, and drop cells
			}
		}
	}
	q, err := engine.ParseQuirks(cfg.Engine.Quirks)
	if err != nil {
		return nil // startBuiltin says what is wrong
	}
	serverCtx := engine.DefaultConfig().MaxModelLen
	if cfg.Engine.MaxModelLen > 0 {
		serverCtx = cfg.Engine.MaxModelLen
	}
	if q.NoModelLen {
		serverCtx = 0 // /v1/models will not say
	}
	tokCtx, tokSrc := s.tok.ModelMaxLen()
	modelCtx, src := resolveContext(cfg.Context, serverCtx, tokCtx, tokSrc)
	if modelCtx > 0 && cfg.MaxTokens >= modelCtx {
		return nil // modelAndContext refuses it
	}
	cells, dropped, err := matrix.Build(matrixSpec(cfg, modelCtx, len(s.rows)))
	if err != nil || len(s.opt.Shard.Cells(cells)) > 0 {
		return nil
	}
	s.modelCtx, s.contextSrc = modelCtx, src
	if err := s.bounds(ctx); err != nil {
		return err
	}
	s.empty, s.cells, s.dropped, s.matrixCells = true, nil, dropped, len(cells)
	return nil
}

// startTarget picks the target — the built-in engine in-process, or a server — and reads the
// API key. Routed workers that all name their own server make the first of them the target: a
// built-in engine would be started for nothing, and its model and context would be asked
// instead of the workers'.
func (s *setup) startTarget(context.Context) error {
	cfg := s.cfg
	if ws := cfg.ResolvedWorkers(""); cfg.Target == config.Builtin && cfg.Mode != config.ModeArray && cfg.Mode != config.ModeN && allNamed(ws) {
		c2 := *cfg
		c2.Target = ws[0].URL
		cfg = &c2
		s.cfg = cfg
		fmt.Fprintf(s.opt.Stderr, "target: %s (the first worker; every [[workers]] entry names its server, so no built-in engine is started)\n", cfg.Target)
	}
	s.target = cfg.Target
	if cfg.Target != config.Builtin && (cfg.Engine.Quirks != "" || cfg.Engine.TimeScale != 0 || cfg.Engine.SpinWait.Duration != 0 || cfg.Engine.Profile != "" || cfg.Engine.MaxModelLen != 0) {
		fmt.Fprintf(s.opt.Stderr, "[engine] is set but not used: the target is %s, not the built-in engine (give those settings to genload serve)\n", cfg.Target)
	}
	if cfg.Target == config.Builtin {
		eng, url, info, err := startBuiltin(cfg, s.tok, s.opt.EngineStart)
		if err != nil {
			return err
		}
		s.eng, s.target, s.engineInfo = eng, url, info
	}
	key, err := readAPIKey(cfg, s.opt.Getenv)
	if err != nil {
		return exitcode.With(exitcode.InvalidConfig, err)
	}
	s.apiKey = key
	return nil
}

// modelAndContext asks the target for its models and picks the run's, and resolves the
// context: the smallest of bench.toml's, the server's and the tokenizer's — and, routed, of
// every worker's server (the header records each worker's).
func (s *setup) modelAndContext(ctx context.Context) error {
	cfg := s.cfg
	models, err := listModels(ctx, cfg, s.target, s.apiKey, s.opt.Stderr)
	if err != nil {
		return exitcode.With(exitcode.TargetFailed, err)
	}
	if s.model, s.serverCtx, err = pickModel(cfg.Model, models, s.target); err != nil {
		return exitcode.With(exitcode.TargetFailed, err)
	}
	tokCtx, tokCtxSrc := s.tok.ModelMaxLen()
	s.modelCtx, s.contextSrc = resolveContext(cfg.Context, s.serverCtx, tokCtx, tokCtxSrc)
	if cfg.Mode == config.ModeRouted || cfg.Mode == config.ModeAuto {
		wc, smallest, src, err := workerContexts(ctx, cfg, cfg.ResolvedWorkers(s.target), s.target, s.model, s.apiKey, s.serverCtx, s.opt.Stderr)
		if err != nil {
			return exitcode.With(exitcode.TargetFailed, err)
		}
		s.workerCtx = wc
		if smallest > 0 && (s.modelCtx == 0 || smallest < s.modelCtx) {
			s.modelCtx, s.contextSrc = smallest, src
		}
	}
	if s.modelCtx > 0 && cfg.MaxTokens >= s.modelCtx {
		return exitcode.Errorf(exitcode.InvalidConfig, "%s: [max_tokens] %d leaves no room for a prompt in the context of %d tokens (%s)",
			cfg.Where("max_tokens"), cfg.MaxTokens, s.modelCtx, s.contextSrc)
	}
	return nil
}

// bounds sets the range every prompt length is clamped to: [min_len, context − max_tokens].
func (s *setup) bounds(context.Context) error {
	cfg, b := s.cfg, s.builder
	s.minLen = cfg.Lengths.MinLen
	if s.minLen == 0 {
		s.minLen = b.MinLen()
	}
	if s.minLen <= b.Overhead() {
		return exitcode.Errorf(exitcode.InvalidConfig, "%s: [lengths.min_len] %d must exceed the %d tokens of chat template and suffix",
			cfg.Where("lengths.min_len"), s.minLen, b.Overhead())
	}
	s.maxLen = math.MaxInt32
	if s.modelCtx > 0 {
		s.maxLen = s.modelCtx - cfg.MaxTokens
	}
	if s.maxLen < s.minLen {
		return exitcode.Errorf(exitcode.InvalidConfig, "context %d (%s) minus max_tokens %d is below the shortest prompt of %d tokens (chat template + suffix + body)",
			s.modelCtx, s.contextSrc, cfg.MaxTokens, s.minLen)
	}
	return nil
}

// options are the dispatch options of the run's requests to workers.
func (s *setup) options(workers []config.Worker) dispatch.Options {
	return clientOptions(s.cfg, s.target, s.model, s.apiKey, workers)
}

// probe runs the capability probe (/metrics, the tokenize endpoint, and — for mode or
// prompt.format "auto" — the prompt shapes the server accepts) and the token-count probe;
// cfg from here on has them resolved.
func (s *setup) probe(ctx context.Context) error {
	ws := s.cfg.ResolvedWorkers(s.target)
	srv, err := probeServer(ctx, s.cfg, s.options(ws), s.tok, len(ws) > 1)
	if err != nil {
		return exitcode.With(exitcode.TargetFailed, err)
	}
	s.srv, s.cfg = srv, srv.cfg
	if srv.line != "" {
		fmt.Fprintln(s.opt.Stderr, srv.line)
	}
	cfg, line, err := resolveTokenCounts(ctx, s.cfg, s.options(s.cfg.ResolvedWorkers(s.target)), s.tok)
	if err != nil {
		return exitcode.With(exitcode.TargetFailed, err)
	}
	s.cfg = cfg
	if line != "" {
		fmt.Fprintln(s.opt.Stderr, line)
	}
	return nil
}

// matrix builds the run's cells for the resolved context.
func (s *setup) matrix(context.Context) error {
	cfg := s.cfg
	var err error
	s.cells, s.dropped, err = matrix.Build(matrixSpec(cfg, s.modelCtx, len(s.rows)))
	if err != nil {
		key := "matrix"
		if ke := (*matrix.KeyError)(nil); errors.As(err, &ke) {
			key = ke.Key // the key at fault: the flag that set it, not another [matrix] flag
		}
		return exitcode.With(exitcode.InvalidConfig, fmt.Errorf("%s: %w", cfg.Where(key), err))
	}
	s.matrixCells = len(s.cells)
	s.cells = s.opt.Shard.Cells(s.cells) // every cell keeps its whole-matrix Index (and so its prompts)
	return nil
}

// matrixSpec is the matrix of cfg for a model context of modelCtx tokens (0 = unknown) and a
// corpus of rows rows.
func matrixSpec(cfg *config.Config, modelCtx, rows int) matrix.Spec {
	return matrix.Spec{
		SeqLens: cfg.Matrix.SeqLens, BatchSizes: cfg.Matrix.BatchSizes, Pairs: cfg.Matrix.Pairs,
		MaxKVCacheEntries: cfg.Matrix.MaxKVCacheEntries, AutoSeqLens: cfg.Matrix.AutoSeqLens,
		MinSeqLen: cfg.Matrix.MinSeqLen, Context: modelCtx, MaxTokens: cfg.MaxTokens, CorpusRows: rows,
	}
}

// loadPlugins joins the plugin loader (the lengths computed while the corpus was tokenized),
// loads the router when routed, and sets the plan's stages.
func (s *setup) loadPlugins(ctx context.Context) error {
	cfg := s.cfg
	s.plugins, s.joined = <-s.plugReady, true
	if s.plugins.err != nil {
		return s.plugins.err
	}
	lp := s.plugins.lengths
	s.pluginInfo = map[string]results.PluginInfo{"lengths": pluginInfo(lp.Info())}
	s.workers = cfg.ResolvedWorkers(s.target)
	s.stages = plan.Stages{Shape: recording.Mode(cfg.Mode), Lengths: lengths.Stage{Source: lp, Lo: s.minLen, Hi: s.maxLen},
		Workers: len(s.workers), MaxTokens: cfg.MaxTokens}
	if cfg.Mode == config.ModeN {
		s.stages.Lengths.Source = nil   // the legacy shape: B sequences of one prompt of length L
		delete(s.pluginInfo, "lengths") // not used: the header does not name it
		fmt.Fprintf(s.opt.Stderr, "mode \"n\": each cell sends one prompt of length L with n = B — B identical sequences, the shape older benchmarks used; the length plugin %s is ignored, and fwd reads lower than for a ragged batch of distinct prompts (shared prefix, and a mixture-of-experts model routes identical tokens to the same experts)\n", lp.Info().Name)
	}
	if err := checkLengths(ctx, lp, s.stages.Lengths, s.cells); err != nil {
		return err
	}
	if cfg.Mode == config.ModeRouted {
		rp, err := s.plugins.host.LoadRouter(ctx, cfg.Router.Plugin, cfg.Router.Config)
		if ce, ok := plugin.AsConfigError(err, "router.config", cfg.Router.Config); ok {
			return exitcode.With(exitcode.PluginRejected, fmt.Errorf("%s: %w", cfg.Where(ce.Key), ce))
		}
		if err != nil {
			return exitcode.With(exitcode.PluginRejected, fmt.Errorf("%s: [router.plugin]: %w", cfg.Where("router.plugin"), err))
		}
		s.pluginInfo["router"] = pluginInfo(rp.Info())
		s.stages.Router, s.completer = rp, rp
	}
	return nil
}

// dispatcher makes the client of the cells' requests.
func (s *setup) dispatcher(context.Context) error {
	c, err := dispatch.New(s.options(s.workers))
	if err != nil {
		return exitcode.With(exitcode.InvalidConfig, err)
	}
	s.client = c
	return nil
}

// textPrompts prepares text prompts (rendered and fitted as the server counts them) when
// prompt.format is "text", and sets the plan's prompts stage.
func (s *setup) textPrompts(ctx context.Context) error {
	var text *textMode
	if s.cfg.Prompt.Format == config.FormatText {
		var counter prompt.Counter
		if s.srv.tokens != nil {
			counter = s.srv.tokens
		}
		var err error
		text, err = newTextMode(ctx, s.cfg, s.tok, s.builder, s.newBuilder, counter, s.options(s.workers), s.minLen, s.maxLen, s.opt.Stderr)
		if err != nil {
			return exitcode.With(exitcode.TargetFailed, fmt.Errorf("text prompts: %w", err))
		}
		s.builder, s.maxLen = text.builder, text.maxLen
		s.stages.Lengths.Hi = s.maxLen
	}
	s.stages.Prompts = prompter{builder: s.builder, text: text}
	return nil
}

// makeHeader is the results header of the run.
func (s *setup) makeHeader() results.Header {
	cfg := s.cfg
	kind := "external"
	if cfg.Target == config.Builtin {
		kind = config.Builtin
	}
	h := results.Header{
		RunID: s.opt.RunID, Started: s.start.UTC(), Genload: s.opt.Version, Target: s.target, TargetKind: kind,
		Model: s.model, Context: s.modelCtx, ContextSource: s.contextSrc, Tokenizer: s.tok.Name(),
		Corpus: s.corpusName, CorpusRows: len(s.rows), PromptOverhead: s.builder.Overhead(), MinLen: s.minLen, MaxLen: s.maxLen,
		Plugins: s.pluginInfo, Engine: s.engineInfo, Cells: s.cells, Dropped: s.dropped, Config: cfg,
	}
	if st, err := modelStructure(cfg, s.engineInfo); err != nil {
		fmt.Fprintf(s.opt.Stderr, "model structure not recorded (genload fit will need --experts E --active k for a mixture of experts): %v\n", err)
	} else {
		h.Structure = st
	}
	if r := s.opt.Repeats; r != nil {
		headerRepeats(&h, r)
		s.repeatNoise(r.WithDefaults().MaxRepeats)
	}
	if s.opt.Shard.Enabled() {
		h.Shard = &results.Shard{Index: s.opt.Shard.Index, Count: s.opt.Shard.Count, MatrixCells: s.matrixCells}
	}
	if cfg.Mode == config.ModeRouted {
		for _, wk := range s.workers {
			h.Workers = append(h.Workers, results.Worker{Name: wk.Name, URL: wk.URL, Context: workerContext(s.workerCtx, len(h.Workers))})
		}
	}
	return h
}

// watcher returns the run's /metrics watcher (nil when metrics are off or unavailable; the
// reason is printed).
func (s *setup) watcher(ctx context.Context) Watcher {
	if w := newWatcher(ctx, s.cfg, s.target, s.apiKey, s.workers, s.opt.Stderr); w != nil {
		return w
	}
	return nil
}
