package main

import (
	"context"
	"time"

	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/cliflag"
	"github.com/genload/genload/host/replay"
	"github.com/genload/genload/host/run"
	"github.com/genload/genload/host/tokenizer"
	"github.com/genload/genload/host/trace"
)

func cmdReplay(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("replay", "genload replay TRACE [--speed X] [--window START-END] [--max-concurrency N] [--target URL]",
		`Replay a request log open loop: each request is sent at its logged arrival time (divided by
--speed) whatever the server's state, with a token-id prompt of exactly the logged input
length — requests that shared prefix blocks share that prefix — and max_tokens = the logged
output length (ignore_eos; checked). The schedule and every prompt are built before the first
send. Each request's record (send time, every chunk's time and tokens, TTFT, E2E, status) is
appended to <out>/<id>.records.jsonl as it finishes; the summary (TTFT, ITL, TPOT, E2E,
goodput and how far the client lagged behind its schedule) is printed and written to
<out>/<id>.json. Without --target the built-in engine is started and its step log written to
<out>/<id>.steps.log, for 'genload gap'. Ctrl-C stops sending; the records written stay.`,
		[][2]string{
			{"ten minutes of the Mooncake trace at 10× against the built-in engine", "genload replay conversation_trace.jsonl --window 600s-1200s --speed 10"},
			{"a vLLM server, at most 64 requests in flight, goodput under SLOs", "genload replay trace.jsonl --target http://127.0.0.1:8000 --max-concurrency 64 --slo-ttft 2s --slo-tpot 50ms"},
		}, e)
	speed := fs.Float64("speed", 1, "time scale: 2 sends twice as fast as logged")
	window := fs.String("window", "", "START-END of the log's time to replay (Go durations or seconds, e.g. 600s-660s)")
	maxConc := fs.Int("max-concurrency", 0, "most requests in flight (0: no cap); a capped request waits and its lag shows it")
	target := fs.String("target", "", "server base URL (default: start the built-in engine)")
	model := fs.String("model", "", "model to request (default: the first /v1/models lists)")
	keyEnv := fs.String("api-key-env", "", "environment variable holding the API key")
	tokPath := fs.String("tokenizer", "", "the server's model dir or tokenizer.json (default: embedded Qwen3)")
	profile := fs.String("profile", engine.DefaultProfile, "built-in engine: cost-model profile")
	timeScale := fs.Float64("time-scale", 0.05, "built-in engine: wall seconds per simulated second")
	out := fs.String("out", "results", "directory of the files written")
	id := fs.String("id", "", "name of the files written (default replay-<UTC time>)")
	timeout := fs.Duration("timeout", 10*time.Minute, "bound on each request, send to end of stream")
	sloTTFT := fs.Duration("slo-ttft", 0, "goodput: TTFT (from the schedule) bound, e.g. 2s (0: none)")
	sloTPOT := fs.Duration("slo-tpot", 0, "goodput: TPOT bound, e.g. 50ms (0: none)")
	in := fs.String("input", "", "field of the prompt length (default input_length)")
	outField := fs.String("output", "", "field of the output length (default output_length)")
	timeField := fs.String("time", "", "field of the arrival time (default timestamp)")
	timeUnit := fs.Duration("time-unit", time.Millisecond, "unit of the arrival time field")
	if err := cliflag.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return exitcode.Errorf(exitcode.Usage, "want one request log (see 'genload replay --help')")
	}
	from, to, err := replay.ParseWindow(*window)
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	switch {
	case !(*speed > 0):
		return exitcode.Errorf(exitcode.Usage, "--speed %v: want a positive number", *speed)
	case *maxConc < 0:
		return exitcode.Errorf(exitcode.Usage, "--max-concurrency %d: want 0 (no cap) or more", *maxConc)
	case *timeScale <= 0:
		return exitcode.Errorf(exitcode.Usage, "--time-scale %v: want a positive number", *timeScale)
	}
	key := ""
	if *keyEnv != "" {
		key = e.getenv(*keyEnv)
	}
	c := replay.Command{Trace: fs.Arg(0), Fields: trace.Fields{Input: *in, Output: *outField, Time: *timeField, TimeUnit: *timeUnit},
		From: from, To: to, Speed: *speed, MaxConcurrency: *maxConc, Target: *target, Model: *model, APIKey: key,
		Tokenizer: *tokPath, Out: *out, ID: *id, Timeout: *timeout, SLOTTFT: *sloTTFT, SLOTPOT: *sloTPOT, Version: version,
		Engine: builtinForReplay(*profile, *timeScale)}
	_, err = c.Run(ctx, e.stdout, e.stderr)
	return err
}

// builtinForReplay starts the built-in engine on a loopback port with its step log in a file.
func builtinForReplay(profile string, timeScale float64) replay.Engine {
	return func(tok *tokenizer.Tokenizer, stepLog string) (string, map[string]any, func(), error) {
		cfg := engine.DefaultConfig()
		cfg.Profile, cfg.TimeScale, cfg.StepLogFile = profile, timeScale, stepLog
		cfg.VocabSize = max(cfg.VocabSize, tok.VocabSize())
		eng, err := engine.New(cfg, tok)
		if err != nil {
			return "", nil, nil, err
		}
		url, err := eng.Start("127.0.0.1:0")
		if err != nil {
			eng.Close()
			return "", nil, nil, err
		}
		info := map[string]any{"profile": cfg.Profile, "profile_hash": run.ProfileHash(eng.Profile()), "time_scale": cfg.TimeScale,
			"max_model_len": cfg.MaxModelLen, "model": cfg.ModelName, "max_num_seqs": cfg.MaxNumSeqs, "max_num_batched_tokens": cfg.MaxNumBatchedTokens}
		return url, info, func() { eng.Close() }, nil
	}
}
