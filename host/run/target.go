package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/dispatch"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/tokenizer"
)

// allNamed reports whether every worker of ws names its own server URL.
func allNamed(ws []config.Worker) bool {
	for _, w := range ws {
		if w.URL == "" {
			return false
		}
	}
	return len(ws) > 0
}

// readAPIKey returns the key from [api_key_file] or the [api_key_env] variable ("" if none).
func readAPIKey(cfg *config.Config, getenv func(string) string) (string, error) {
	if cfg.APIKeyFile != "" {
		b, err := os.ReadFile(cfg.APIKeyFile)
		if err != nil {
			// The path is not secret (the one read: a relative one is resolved against the
			// bench.toml's directory); the content is never quoted.
			return "", fmt.Errorf("%s: [api_key_file]: cannot read the API key file %s: %w", cfg.Where("api_key_file"), cfg.APIKeyFile, errors.Unwrap(err))
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

func toDispatchWorkers(ws []config.Worker) []dispatch.Worker {
	out := make([]dispatch.Worker, len(ws))
	for i, w := range ws {
		out[i] = dispatch.Worker{Name: w.Name, URL: w.URL, Headers: w.Headers}
	}
	return out
}

// startBuiltin starts the built-in engine on a loopback port with bench.toml's [engine] table
// over the engine's defaults, serving the run's tokenizer; it returns the engine (to close),
// its base URL and what the results header records about it. start names this engine start
// among the invocation's (Options.EngineStart): the noise seed used is derived from the
// configured seed and start, and recorded.
func startBuiltin(cfg *config.Config, tok *tokenizer.Tokenizer, start string) (*engine.Engine, string, map[string]any, error) {
	ecfg := engine.DefaultConfig()
	if cfg.Engine.Profile != "" {
		// Checked here, not by engine.New, so that the error names the key and where it was set.
		if _, err := engine.LoadProfile(cfg.Engine.Profile); err != nil {
			return nil, "", nil, exitcode.With(exitcode.InvalidConfig, fmt.Errorf("%s: [engine.profile]: %w", cfg.Where("engine.profile"), err))
		}
		ecfg.Profile = cfg.Engine.Profile
	}
	if cfg.Engine.TimeScale > 0 {
		ecfg.TimeScale = cfg.Engine.TimeScale
	}
	if cfg.Engine.MaxModelLen > 0 {
		ecfg.MaxModelLen = cfg.Engine.MaxModelLen
	}
	if sw := cfg.Engine.SpinWait.Duration; sw > engine.MaxSpinWait {
		return nil, "", nil, exitcode.With(exitcode.InvalidConfig, fmt.Errorf("%s: [engine.spin_wait]: at most %v (a spin absorbs a late wake-up, not a step), got %v", cfg.Where("engine.spin_wait"), engine.MaxSpinWait, sw))
	}
	ecfg.SpinWait = cfg.Engine.SpinWait.Duration
	q, err := engine.ParseQuirks(cfg.Engine.Quirks)
	if err != nil {
		return nil, "", nil, exitcode.With(exitcode.InvalidConfig, fmt.Errorf("%s: [engine.quirks]: %w", cfg.Where("engine.quirks"), err))
	}
	ecfg.Quirks = q
	noise, err := engine.ParseNoise(cfg.Engine.Noise)
	if err != nil {
		return nil, "", nil, exitcode.With(exitcode.InvalidConfig, fmt.Errorf("%s: [engine.noise]: %w", cfg.Where("engine.noise"), err))
	}
	ecfg.Noise = noise.ForStart(start)
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
	info := map[string]any{"profile": ecfg.Profile, "time_scale": ecfg.TimeScale, "quirks": q.String(),
		"profile_hash":  ProfileHash(eng.Profile()),
		"max_model_len": ecfg.MaxModelLen, "model": ecfg.ModelName,
		"note": "figures are wall-clock at this time scale: divide by time_scale for the simulated GPU time"}
	if ecfg.SpinWait > 0 {
		info["spin_wait_us"] = ecfg.SpinWait.Microseconds()
	}
	if ecfg.TimeScale == 1 {
		info["note"] = "figures are wall-clock at time scale 1: they are the simulated GPU time"
	}
	if n := ecfg.Noise.String(); n != "" {
		info["noise"] = n // the step-time noise injected, so that a run's CV can be read against it
		if start != "" {
			// The seed in "noise" is the one used, derived: from the configured one and this.
			info["noise_seed_from"] = fmt.Sprintf("seed=%d of [engine] noise, engine start %q", noise.Seed, start)
		}
	}
	if path := ProfilePath(ecfg.Profile); path != "" {
		// The file as the run read it, absolute: "profile" is the path as configured, which
		// another directory cannot resolve; profile_hash says whether a file found there later
		// still holds the figures the run used.
		info["profile_path"] = path
	}
	return eng, url, info, nil
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

// workerContexts asks each routed worker's server (each distinct base URL once; the
// target's answer is known already) for /v1/models and returns every worker's context for
// model in tokens (0 when its server does not say), and the smallest with its source.
func workerContexts(ctx context.Context, cfg *config.Config, workers []config.Worker, target, model, apiKey string,
	targetCtx int, stderr io.Writer) (each []int, smallest int, src string, err error) {
	base := func(u string) string { return strings.TrimSuffix(strings.TrimSuffix(u, "/"), "/v1") }
	known := map[string]int{base(target): targetCtx}
	each = make([]int, len(workers))
	for i, w := range workers {
		b := base(w.URL)
		n, ok := known[b]
		if !ok {
			models, lerr := listModels(ctx, cfg, w.URL, apiKey, stderr)
			if lerr != nil {
				return nil, 0, "", fmt.Errorf("worker %s: %w", w.Name, lerr)
			}
			if _, n, err = pickModel(model, models, w.URL); err != nil {
				return nil, 0, "", fmt.Errorf("worker %s: %w", w.Name, err)
			}
			known[b] = n
		}
		each[i] = n
		if n > 0 && (smallest == 0 || n < smallest) {
			smallest, src = n, fmt.Sprintf("worker %s (%s) /v1/models max_model_len", w.Name, w.URL)
		}
	}
	return each, smallest, src, nil
}

// workerContext returns each[i], 0 when each does not have it.
func workerContext(each []int, i int) int {
	if i < len(each) {
		return each[i]
	}
	return 0
}
