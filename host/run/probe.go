package run

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/dispatch"
	"github.com/genload/genload/host/tokenizer"
)

// probeTexts are the capability probe's two tiny prompts (sent as text, or as their ids in
// the run's tokenizer).
var probeTexts = []string{"Hello, how are you today?", "The sky is blue because"}

// serverInfo is what the run learned about its server before the first cell.
type serverInfo struct {
	// cfg is the configuration with mode and prompt.format resolved ("auto" replaced by the
	// probe's choice, recorded in Config.Chosen); the caller's cfg when nothing was "auto".
	cfg *config.Config
	// caps is the probe's findings (shapes probed only when something was "auto").
	caps *dispatch.Capabilities
	// tokens counts tokens with the server's tokenizer (nil when it has no tokenize
	// endpoint); it has Count(ctx, text) (int, error).
	tokens *dispatch.TokenCounter
	// line is the one line printed about the choice ("" when nothing was chosen).
	line string
}

// clientOptions are the dispatch options of the run's requests (the probe's, and the
// cells'), from cfg.
func clientOptions(cfg *config.Config, target, model, apiKey string, workers []config.Worker) dispatch.Options {
	seed := int64(cfg.Seed & (1<<63 - 1))
	return dispatch.Options{
		Target: target, Workers: toDispatchWorkers(workers), Model: model,
		Temperature: cfg.Temperature, APIKey: apiKey, Seed: &seed,
		Retries: cfg.Warmup.Retries, RetryDelay: cfg.Warmup.RetryDelay.Duration,
		ConnectTimeout: cfg.Timeouts.Connect.Duration, FirstTokenTimeout: cfg.Timeouts.FirstToken.Duration,
		TotalTimeout: cfg.Timeouts.Total.Duration, ContinuousUsage: cfg.ContinuousUsage,
		StallSteps: cfg.Timeouts.StallSteps, StallMin: cfg.Timeouts.StallMin.Duration, Stall: cfg.Timeouts.Stall.Duration,
		GenerationDurationHeader: cfg.Headers.GenerationDuration, SpeculationAcceptanceHeader: cfg.Headers.SpeculationAcceptance,
		Logprobs: logprobsOf(cfg), KeepText: retokenize(cfg), API: apiOf(cfg),
	}
}

// ChosenAPI is the key in config.Config.Chosen that records which server API the run uses when
// the probe chose ollama's native API (its value starts with "ollama"); absent, the run
// speaks /v1/completions.
const ChosenAPI = "api"

// apiOf is the dispatch API of cfg: ollama's native API when the probe chose it.
func apiOf(cfg *config.Config) dispatch.API {
	if strings.HasPrefix(cfg.Chosen[ChosenAPI], string(dispatch.APIOllama)) {
		return dispatch.APIOllama
	}
	return dispatch.APIOpenAI
}

// chooseAPI decides, before the capability probe, whether the run speaks ollama's native API:
// when every distinct server of the run answers GET /api/version as ollama does and the
// settings allow one text prompt per request (mode "routed" or "auto", prompt.format "text"
// or "auto"), one tiny native request (max_tokens 2) is sent to the first; when it is
// accepted with ollama's eval_count on its final object, cfg comes back with Chosen[ChosenAPI] (and mode and prompt.format resolved) and
// opts with API ollama. The native API is the same runner behind ollama's /v1 layer, so the
// client's figures are unchanged; what it adds is the server's own eval_count and
// eval_duration of each sequence (the server's figure beside the client's) and a prompt
// sent as it is ("raw": ollama's /v1/completions applies the model's template to a prompt
// genload already templated). line says what was found and chosen ("" for a server that is
// not ollama). Errors are only a canceled context's.
func chooseAPI(ctx context.Context, cfg *config.Config, opts dispatch.Options, tok *tokenizer.Tokenizer) (*config.Config, dispatch.Options, string, error) {
	timeout := max(cfg.Timeouts.Connect.Duration, 10*time.Second)
	var bases, versions []string
	seen := map[string]bool{}
	for _, w := range opts.Workers {
		u := w.URL
		if u == "" {
			u = opts.Target
		}
		if b := strings.TrimSuffix(strings.TrimSuffix(u, "/"), "/v1"); !seen[b] {
			seen[b] = true
			bases = append(bases, b)
		}
	}
	if len(bases) == 0 {
		bases = []string{strings.TrimSuffix(strings.TrimSuffix(opts.Target, "/"), "/v1")}
	}
	for _, b := range bases {
		v, err := dispatch.ProbeOllama(ctx, b, opts.APIKey, timeout)
		if ctx.Err() != nil {
			return nil, opts, "", ctx.Err()
		}
		if err != nil {
			if len(versions) > 0 { // a mix of servers: one API for all
				return cfg, opts, fmt.Sprintf("ollama at %s, but %s is not ollama (%v): /v1/completions for every server", bases[0], b, err), nil
			}
			return cfg, opts, "", nil
		}
		versions = append(versions, v)
	}
	where := fmt.Sprintf("ollama %s at %s", versions[0], bases[0])
	if len(bases) > 1 {
		where = fmt.Sprintf("ollama at every server (%s: %s)", strings.Join(bases, ", "), strings.Join(versions, ", "))
	}
	modeOK := cfg.Mode == config.ModeRouted || cfg.Mode == config.ModeAuto
	formatOK := cfg.Prompt.Format == config.FormatText || cfg.Prompt.Format == config.FormatAuto
	if !modeOK || !formatOK {
		return cfg, opts, fmt.Sprintf("%s: its native API (the server's own eval_duration of each sequence) takes one text prompt per request; with mode = %q and prompt.format = %q genload speaks /v1/completions (set mode = \"routed\" and prompt.format = \"text\" for the native API)",
			where, cfg.Mode, cfg.Prompt.Format), nil
	}
	native := opts
	native.API = dispatch.APIOllama
	client, err := probeClient(native)
	if err != nil {
		return nil, opts, "", err
	}
	defer client.Close()
	text := tok.Decode(tok.Encode(probeTexts[0]), false)
	rs, err := client.ProbeShapes(ctx, []dispatch.Shape{dispatch.ShapeString}, [][]int32{tok.Encode(probeTexts[0])}, []string{text})
	if err != nil {
		return nil, opts, "", err
	}
	switch {
	case !rs[0].Accepted:
		return cfg, opts, fmt.Sprintf("%s, but its native POST /api/generate failed (%s): /v1/completions instead", where, rs[0].Error), nil
	case !rs[0].Usage: // a server imitating ollama's API without its metrics
		return cfg, opts, fmt.Sprintf("%s, but its native POST /api/generate sent no eval_count: /v1/completions instead", where), nil
	}
	c2 := *cfg
	c2.Chosen = map[string]string{}
	for k, v := range cfg.Chosen {
		c2.Chosen[k] = v
	}
	why := "ollama's native API takes one text prompt per request"
	if cfg.Mode == config.ModeAuto {
		c2.Mode = config.ModeRouted
		c2.Chosen["mode"] = config.ModeRouted + ": " + why
	}
	if cfg.Prompt.Format == config.FormatAuto {
		c2.Prompt.Format = config.FormatText
		c2.Chosen["prompt.format"] = config.FormatText + ": " + why
	}
	c2.Chosen[ChosenAPI] = string(dispatch.APIOllama) + ": " + where + " (GET /api/version): its native POST /api/generate gives each sequence's eval_count and eval_duration, the server's figure beside the client's"
	return &c2, native, fmt.Sprintf("%s: requests go to its native POST /api/generate (raw prompts, mode = \"routed\", prompt.format = \"text\"), whose eval_count and eval_duration give the server's own time per forward pass of each sequence", where), nil
}

// probeClient is a client for the probes before the first cell: the run's options, sent to
// the first worker only (a probe's prompts are not the cells').
func probeClient(opts dispatch.Options) (*dispatch.Client, error) {
	if len(opts.Workers) > 1 {
		opts.Workers = opts.Workers[:1]
	}
	return dispatch.New(opts)
}

// logprobsOf is the body's "logprobs" for cfg: 1 when token counts come from logprobs.
func logprobsOf(cfg *config.Config) int {
	if cfg.TokenCounts == config.TokenCountsLogprobs {
		return 1
	}
	return 0
}

// allowedShapes lists, in order of preference, the prompt shapes that mode and format
// allow. Several workers need one request per prompt (routed); mode "n" sends one prompt.
func allowedShapes(mode, format string, severalWorkers bool) []dispatch.Shape {
	var out []dispatch.Shape
	for _, s := range dispatch.Shapes {
		m := string(s.Mode())
		okMode := mode == m || mode == config.ModeAuto && (m == config.ModeRouted || !severalWorkers) ||
			mode == config.ModeN && m == config.ModeRouted
		f := config.FormatTokens
		if s.Text() {
			f = config.FormatText
		}
		if okMode && (format == f || format == config.FormatAuto) {
			out = append(out, s)
		}
	}
	return out
}

// settingsFor returns mode and format that send shape s, keeping mode "n" (which sends one
// prompt with n = B).
func settingsFor(s dispatch.Shape, mode string) (string, string) {
	f := config.FormatTokens
	if s.Text() {
		f = config.FormatText
	}
	if mode == config.ModeN {
		return mode, f
	}
	return string(s.Mode()), f
}

// decideShape picks the first accepted shape among allowed from the probe's results and
// says why; when none is accepted it returns the error naming the settings to change (and,
// when others were probed too, the shape that works).
func decideShape(cfg *config.Config, allowed []dispatch.Shape, results []dispatch.ShapeResult, url string) (dispatch.Shape, string, error) {
	byShape := map[dispatch.Shape]*dispatch.ShapeResult{}
	for i := range results {
		byShape[results[i].Shape] = &results[i]
	}
	var rejected []string
	for _, s := range allowed {
		r := byShape[s]
		if r == nil {
			continue
		}
		if r.Accepted {
			why := "the server accepts " + s.Describe()
			if len(rejected) > 0 {
				why = "the server rejected " + strings.Join(rejected, "; ") + ", and accepts " + s.Describe()
			}
			return s, why, nil
		}
		rejected = append(rejected, fmt.Sprintf("%s (%s)", s.Describe(), r.Reason()))
	}
	// Nothing the settings allow works: name the settings, and what would.
	var keys []string
	for _, k := range []struct{ key, val string }{{"mode", cfg.Mode}, {"prompt.format", cfg.Prompt.Format}} {
		keys = append(keys, fmt.Sprintf("[%s] = %q", k.key, k.val))
	}
	msg := fmt.Sprintf("%s: capability probe of %s: %s rejected: the server refused %s",
		cfg.Where("mode"), url, strings.Join(keys, " / "), strings.Join(rejected, "; "))
	for _, s := range dispatch.Shapes {
		if r := byShape[s]; r != nil && r.Accepted {
			m, f := settingsFor(s, cfg.Mode)
			var set []string
			if m != cfg.Mode {
				set = append(set, fmt.Sprintf("mode = %q", m))
			}
			if f != cfg.Prompt.Format {
				set = append(set, fmt.Sprintf("prompt.format = %q", f))
			}
			msg += fmt.Sprintf(". It accepts %s: set %s", s.Describe(), strings.Join(set, " and "))
			return "", "", errors.New(msg)
		}
	}
	return "", "", errors.New(msg + ". It accepted no prompt shape genload can send")
}

// probeServer runs the capability probe against the first worker before the first cell:
// the server API (chooseAPI: ollama's native API for an ollama server), /metrics and the
// tokenize endpoint always; the prompt shapes (tiny requests, max_tokens
// 2) when mode or prompt.format is "auto", to resolve them — array before routed, token
// ids before text — printing one line with the choice and why. When no shape the settings
// allow is accepted, it probes the others too and fails naming the settings to change.
// Shapes are not probed when both are set: a rejection then comes with the first request,
// and its hint names the setting.
func probeServer(ctx context.Context, cfg *config.Config, opts dispatch.Options, tok *tokenizer.Tokenizer, severalWorkers bool) (*serverInfo, error) {
	cfg, opts, apiLine, err := chooseAPI(ctx, cfg, opts, tok)
	if err != nil {
		return nil, err
	}
	info, err := probeShapes(ctx, cfg, opts, tok, severalWorkers)
	if err != nil || apiLine == "" {
		return info, err
	}
	if info.line != "" {
		apiLine += "\n" + info.line
	}
	info.line = apiLine
	return info, nil
}

// probeShapes is probeServer after the API is chosen: the capability probe, then (mode or
// prompt.format auto) each allowed prompt shape in order until one is accepted, and the
// settings that shape asks for.
func probeShapes(ctx context.Context, cfg *config.Config, opts dispatch.Options, tok *tokenizer.Tokenizer, severalWorkers bool) (*serverInfo, error) {
	info := &serverInfo{cfg: cfg}
	auto := cfg.Mode == config.ModeAuto || cfg.Prompt.Format == config.FormatAuto
	client, err := probeClient(opts)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	ids, texts := probePrompts(cfg, tok)
	allowed := []dispatch.Shape(nil)
	if auto {
		allowed = allowedShapes(cfg.Mode, cfg.Prompt.Format, severalWorkers)
	}
	timeout := max(cfg.Timeouts.Connect.Duration, 10*time.Second)
	caps, err := client.Probe(ctx, nil, ids, texts, timeout)
	if err != nil {
		return nil, err
	}
	info.caps, info.tokens = caps, caps.Tokenize
	if !auto {
		return info, nil
	}
	if err := probeInOrder(ctx, client, caps, allowed, ids, texts); err != nil {
		return nil, err
	}
	chosen, why, err := decideShape(cfg, allowed, caps.Shapes, caps.URL)
	if err != nil {
		if answer, ok := notOpenAI(caps.Shapes); ok {
			// Not the settings' fault: the target answers every shape with an HTML page.
			return nil, fmt.Errorf("%s: capability probe (every prompt shape): %w", cfg.Where("target"), answer)
		}
		// Probe the shapes the settings exclude, to say which one works.
		var others []dispatch.Shape
		for _, s := range dispatch.Shapes {
			if caps.Shape(s) == nil {
				others = append(others, s)
			}
		}
		if err := probeInOrder(ctx, client, caps, others, ids, texts); err != nil {
			return nil, err
		}
		_, _, err = decideShape(cfg, allowed, caps.Shapes, caps.URL)
		return nil, err
	}
	c2, mode, format, why := chosenSettings(cfg, chosen, why, severalWorkers)
	info.cfg = c2
	info.line = fmt.Sprintf("probe of %s: mode = %q, prompt.format = %q (auto): %s; %s", caps.URL, mode, format, why, capsSummary(caps, chosen))
	return info, nil
}

// probePrompts returns the probe's prompts as token ids and their texts: as many tiny prompts
// as the largest batch of the matrix, so that a server that limits the prompts of one request
// (TGI: 4) rejects the array shape here, not at the first cell of B = 8. (A limit on the
// body's size is not seen with tiny prompts.)
func probePrompts(cfg *config.Config, tok *tokenizer.Tokenizer) (ids [][]int32, texts []string) {
	n := len(probeTexts)
	for _, b := range cfg.Matrix.BatchSizes {
		n = max(n, b)
	}
	for _, p := range cfg.Matrix.Pairs {
		if len(p) == 2 {
			n = max(n, p[1])
		}
	}
	ids = make([][]int32, n)
	texts = make([]string, n)
	for i := range n {
		ids[i] = tok.Encode(probeTexts[i%len(probeTexts)])
		texts[i] = tok.Decode(ids[i], false)
	}
	return ids, texts
}

// probeInOrder probes shapes one at a time, in order, until one is accepted, appending each
// answer to caps.Shapes; the error is a probe's that got no answer.
func probeInOrder(ctx context.Context, client *dispatch.Client, caps *dispatch.Capabilities, shapes []dispatch.Shape, ids [][]int32, texts []string) error {
	for _, s := range shapes {
		rs, err := client.ProbeShapes(ctx, []dispatch.Shape{s}, ids, texts)
		if err != nil {
			return err
		}
		caps.Shapes = append(caps.Shapes, rs...)
		if rs[0].Accepted {
			return nil
		}
	}
	return nil
}

// chosenSettings returns a copy of cfg with the mode and prompt.format the chosen shape asks
// for set where cfg says auto, each with why in Chosen; the two settings, and why (with the
// reason for one request per prompt when severalWorkers asks for it).
func chosenSettings(cfg *config.Config, chosen dispatch.Shape, why string, severalWorkers bool) (c2 *config.Config, mode, format, reason string) {
	c := *cfg
	c.Chosen = map[string]string{}
	for k, v := range cfg.Chosen {
		c.Chosen[k] = v
	}
	mode, format = settingsFor(chosen, cfg.Mode)
	if severalWorkers && cfg.Mode == config.ModeAuto {
		why += " (several workers: one request per prompt)"
	}
	if cfg.Mode == config.ModeAuto {
		c.Mode = mode
		c.Chosen["mode"] = mode + ": " + why
	}
	if cfg.Prompt.Format == config.FormatAuto {
		c.Prompt.Format = format
		c.Chosen["prompt.format"] = format + ": " + why
	}
	return &c, mode, format, why
}

// notOpenAI returns the one-line answer (dispatch.NotOpenAIAnswer) of the first shape when
// every shape probed was refused with an HTML page: the target is not an OpenAI-compatible
// server, whatever the shape.
func notOpenAI(results []dispatch.ShapeResult) (error, bool) {
	var first error
	for _, r := range results {
		answer, ok := dispatch.NotOpenAIAnswer(r.Err)
		if r.Accepted || !ok {
			return nil, false
		}
		if first == nil {
			first = answer
		}
	}
	return first, first != nil
}

// capsSummary says what else the probe found: usage, /metrics, tokenize.
func capsSummary(caps *dispatch.Capabilities, chosen dispatch.Shape) string {
	var parts []string
	if r := caps.Shape(chosen); r != nil {
		switch {
		case r.ContinuousUsage:
			parts = append(parts, "usage on every chunk")
		case r.Usage:
			parts = append(parts, "usage at the end only")
		default:
			parts = append(parts, "no usage")
		}
	}
	if caps.Metrics {
		parts = append(parts, "/metrics answers")
	} else {
		parts = append(parts, "no /metrics")
	}
	if caps.Tokenize != nil {
		parts = append(parts, fmt.Sprintf("POST /tokenize (%s)", caps.Tokenize.Dialect))
	} else {
		parts = append(parts, "no tokenize endpoint")
	}
	return strings.Join(parts, ", ")
}
