package main

import (
	"context"
	"fmt"

	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/cliflag"
	"github.com/genload/genload/host/tokenizer"
)

func cmdServe(ctx context.Context, args []string, e *env) error {
	cfg := engine.DefaultConfig()
	fs := newFlagSet("serve", "genload serve [--addr 127.0.0.1:8000] [engine flags]",
		`Start the built-in serving engine: an OpenAI-compatible server (/v1/completions, /v1/models,
/health, /tokenize, /detokenize, /metrics) that simulates continuous batching with a documented
cost model (batch size, sum and max of context lengths, prefill tokens, distinct MoE experts),
a prefix cache and optional speculative decoding. It serves until interrupted.

Point genload at it with: genload run --target http://127.0.0.1:8000`,
		[][2]string{
			{"serve the default MoE profile on port 8000", "genload serve"},
			{"a dense 8B profile at real-time speed, SGLang wire dialect", "genload serve --profile dense-8b --time-scale 1 --dialect sglang"},
			{"a llama.cpp-derived server: zero usage on every chunk, two tokens per chunk, a late first chunk",
				"genload serve --time-scale 1 --quirk zero-usage,tokens-per-chunk=2,late-first-chunk=40ms"},
			{"known noise (2 % per step, 5 % per request burst, one step in 1000 five times slower), with a step log",
				"genload serve --noise-step-cv 0.02 --noise-burst-cv 0.05 --noise-slow-prob 0.001 --noise-slow-factor 5 --step-log steps.log"},
		}, e)
	addr := fs.String("addr", "127.0.0.1:8000", "listen address (loopback by default)")
	tokPath := fs.String("tokenizer", "", "model dir or tokenizer.json for /tokenize and string prompts (default: embedded Qwen3)")
	engine.RegisterFlags(fs, &cfg)
	if err := cliflag.Parse(fs, args); err != nil {
		return err
	}
	var tok *tokenizer.Tokenizer
	var err error
	if *tokPath == "" {
		tok, err = tokenizer.Default()
	} else {
		tok, err = tokenizer.Load(*tokPath)
	}
	if err != nil {
		return exitcode.With(exitcode.InvalidConfig, err)
	}
	eng, err := engine.New(cfg, tok)
	if err != nil {
		return exitcode.With(exitcode.InvalidConfig, err)
	}
	url, err := eng.Start(*addr)
	if err != nil {
		return err
	}
	quirks := ""
	if q := cfg.Quirks.String(); q != "" {
		quirks = ", quirks " + q
	}
	if n := cfg.Noise.String(); n != "" {
		quirks += ", noise " + n
	}
	if cfg.StepLogFile != "" {
		quirks += ", step log " + cfg.StepLogFile
	}
	fmt.Fprintf(e.stderr, "genload serve: %s (profile %s, dialect %s, time scale %g, max_model_len %d%s) listening on %s\n",
		cfg.ModelName, cfg.Profile, cfg.Dialect, cfg.TimeScale, cfg.MaxModelLen, quirks, url)
	<-ctx.Done()
	return eng.Close()
}
