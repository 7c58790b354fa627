package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/cliflag"
	"github.com/genload/genload/host/plugin"
	"github.com/genload/genload/host/repeat"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/run"
)

// runFlags are genload run's flags, as newRunFlags defines them.
type runFlags struct {
	cfgPath, target, model, out, mode, lengths *string
	promptFormat                               *string
	runID, resume, shardSpec, cvStat           *string
	records                                    *string
	sets                                       cliflag.SetFlags
	seqLens, batches                           cliflag.IntList
	maxTokens, repeats, minRepeats, maxRepeats *int
	remeasure                                  *int
	seed                                       *uint64
	timeScale, untilCV, cvConfidence, maxCV    *float64
	keepGoing, wide                            *bool
	spinWait                                   *time.Duration
	legends                                    *report.Legends
}

// newRunFlags returns genload run's flag set and its flags: one definition for genload run and
// for genload k8s job, which checks the run flags it passes to its pods (checkRunArgs).
func newRunFlags(e *env) (*flag.FlagSet, *runFlags) {
	f := &runFlags{}
	fs := newFlagSet("run", "genload run [-c bench.toml] [--target URL] [--model NAME] [--out DIR] [flags]",
		`Run the benchmark matrix of a bench.toml: for each (sequence length L, batch size B) cell,
build B prompts whose lengths come from the length plugin (gamma k = 0.9 by default), warm the
server up with the exact prompts, send the measured request(s) and record per-forward-pass
latency, TTFT, ITL and E2E. Each finished cell is appended to results/<run-id>.jsonl at once;
the table is printed at the end, and results/<run-id>.json and .csv are written.

Flags override bench.toml, which overrides the defaults. Without -c, ./bench.toml is used when
it exists, else the defaults.`,
		[][2]string{
			{"the default matrix against the built-in engine", "genload run"},
			{"a real server, two sequence lengths", "genload run -c bench.toml --target http://127.0.0.1:8000 --model my-model --seq-lens 4000,8000"},
			{"uniform lengths, routed mode", "genload run --lengths uniform --mode routed"},
			{"a flatter gamma", "genload run --set k=4"},
			{"continue a run that was interrupted or failed", "genload run --resume results/20261130-101500.jsonl"},
			{"shard 0 of 4 (run the four anywhere, then genload merge their files)", "genload run --shard 0/4 --run-id nightly"},
			{"measure every cell even when some fail (the exit code still says which kind failed first)", "genload run --keep-going"},
			{"five repeats, failing (exit 6) when a cell's per-forward CV is above 5 % even at its lower bound", "genload run --repeat 5 --max-cv 5"},
			{"repeat each cell (interleaved, 2 to 8 times) until its CV's upper bound is within 3 %", "genload run --until-cv 3"},
		}, e)
	f.cfgPath = fs.String("c", "", "bench.toml to read (default ./bench.toml if present)")
	fs.StringVar(f.cfgPath, "config", "", "same as -c")
	f.target = fs.String("target", "", "\"builtin\" or the server's base URL (overrides [target])")
	f.model = fs.String("model", "", "model name (overrides [model])")
	f.out = fs.String("out", "", "results directory (overrides [out])")
	f.mode = fs.String("mode", "", "request shape: array, routed or n (overrides [mode])")
	f.promptFormat = fs.String("prompt-format", "", "prompts as tokens (token ids), text or auto (overrides [prompt] format)")
	f.lengths = fs.String("lengths", "", "length plugin name or .wasm path (overrides [lengths.plugin]; another plugin than the file's starts from an empty [lengths.config])")
	fs.Var(&f.sets, "set", "length plugin config key=value, over [lengths.config] (a TOML value, else a string); repeatable")
	f.maxTokens = fs.Int("max-tokens", 0, "tokens generated per sequence (overrides [max_tokens])")
	f.seed = fs.Uint64("seed", 0, "seed (overrides [seed])")
	fs.Var(&f.seqLens, "seq-lens", "comma-separated target mean lengths L in tokens (overrides [matrix.seq_lens])")
	fs.Var(&f.batches, "batch-sizes", "comma-separated batch sizes B (overrides [matrix.batch_sizes])")
	f.timeScale = fs.Float64("time-scale", 0, "built-in engine time scale (overrides [engine.time_scale])")
	f.spinWait = fs.Duration("spin-wait", 0, "built-in engine: spin instead of sleeping for this long before each step's planned end, e.g. 300us (overrides [engine.spin_wait])")
	f.keepGoing = fs.Bool("keep-going", false, "after a failed cell, measure the next ones instead of stopping (sets [run] on_error = \"continue\"); a run with a failed cell still exits non-zero")
	f.remeasure = fs.Int("remeasure-overrun", config.DefaultRemeasureOverrun, "send a cell's measured requests again, at most N times, while the built-in engine says its steps ran over the 2 % share of their plan (the host's delays); 0 = never (overrides [run] remeasure_overrun)")
	f.runID = fs.String("run-id", "", "name of the results files (default: UTC start time)")
	f.resume = fs.String("resume", "", "continue the run in this results .jsonl file (or run id in the results directory): skip its measured cells; the config must be the run's (default: taken from the file)")
	f.wide = wideFlag(fs)
	f.legends = legendFlag(fs)
	f.repeats = fs.Int("repeat", 1, "measure every cell N times, in interleaved rounds (one results file, a record per repeat; a built-in engine with [engine] noise draws each round with a seed of its own, derived from the configured one), then print their consistency (see 'genload consistency --help')")
	f.untilCV = fs.Float64("until-cv", 0, "repeat each cell, in interleaved rounds, until the --cv-confidence upper confidence bound of its per-forward CV is within PCT percent; cells that reach --max-repeats first are flagged (one results file, a record per repeat); 0 = off (each cell once)")
	f.minRepeats = fs.Int("min-repeats", 2, "with --until-cv: the fewest repeats of every cell (≥ 2)")
	f.maxRepeats = fs.Int("max-repeats", 8, "with --until-cv: the most repeats of any cell")
	f.cvConfidence = fs.Float64("cv-confidence", 0.9, "with --until-cv: the one-sided confidence of the CV's upper bound, in (0, 1); lower stops quiet cells sooner and lets more noisy cells pass as stable")
	f.maxCV, f.cvStat = cvFlags(fs)
	f.records = fs.String("records", "", "also write every request's record (send time, chunk times and token counts; schema genload.records/v1) to this new JSON Lines file")
	f.shardSpec = fs.String("shard", "", "measure shard I/N of the matrix: I 0-based, or JOB_COMPLETION_INDEX/N in a Kubernetes Indexed Job; run id <id>-shard-I-of-N (join the shards with genload merge)")
	return fs, f
}

func cmdRun(ctx context.Context, args []string, e *env) error {
	fs, f := newRunFlags(e)
	if err := cliflag.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return exitcode.Errorf(exitcode.Usage, "unexpected argument %q (see 'genload run --help')", fs.Arg(0))
	}
	rule, err := repeatRule(fs, f)
	if err != nil {
		return err
	}
	cfg, err := runConfig(fs, f)
	if err != nil {
		return err
	}
	opt := run.Options{Stdout: e.stdout, Stderr: e.stderr, Progress: e.tty, Version: version,
		RunID: *f.runID, Getenv: e.getenv, Resume: *f.resume, Wide: *f.wide, Legends: f.legends, Repeats: rule, Records: *f.records}
	if err := shardOptions(*f.shardSpec, e, &opt); err != nil {
		return err
	}
	if rule == nil {
		_, err = run.Run(ctx, cfg, opt)
		return err
	}
	c, err := run.Repeated(ctx, cfg, opt)
	if err != nil {
		return err
	}
	return threshold(c, *f.maxCV, *f.cvStat, *f.cvConfidence, e)
}

// repeatRule checks the repeat flags of genload run and returns the repeat protocol they ask
// for: nil for none (each cell once), a fixed count (--repeat N, N ≥ 2) or the stopping rule
// (--until-cv and its settings). Every error is a Usage error naming the flag.
func repeatRule(fs *flag.FlagSet, f *runFlags) (*repeat.Rule, error) {
	if err := checkCVFlags(*f.maxCV, *f.cvStat, "run"); err != nil {
		return nil, err
	}
	if *f.untilCV < 0 {
		return nil, exitcode.Errorf(exitcode.Usage, "--until-cv %g: want a CV target in percent > 0 (0 = off)", *f.untilCV)
	}
	if *f.untilCV == 0 {
		// The stopping rule's settings mean nothing without the rule: refuse them rather than
		// run each cell once as if they had been taken.
		given := map[string]bool{}
		fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
		for _, name := range []string{"min-repeats", "max-repeats", "cv-confidence"} {
			if given[name] {
				return nil, exitcode.Errorf(exitcode.Usage, "--%s is a setting of --until-cv, which is not given (see 'genload run --help')", name)
			}
		}
	}
	var rule *repeat.Rule
	if *f.untilCV != 0 {
		if *f.repeats > 1 || *f.resume != "" {
			return nil, exitcode.Errorf(exitcode.Usage, "--until-cv %g: not with --repeat or --resume (a run with repeats cannot be resumed: start a new one)", *f.untilCV)
		}
		if !(*f.cvConfidence > 0 && *f.cvConfidence < 1) {
			return nil, exitcode.Errorf(exitcode.Usage, "--cv-confidence %g: want a confidence in (0, 1), such as 0.9", *f.cvConfidence)
		}
		rule = &repeat.Rule{TargetCV: *f.untilCV / 100, MinRepeats: *f.minRepeats, MaxRepeats: *f.maxRepeats, Confidence: *f.cvConfidence}
	}
	if n := *f.repeats; n < 1 || (n > 1 && *f.resume != "") || (*f.maxCV > 0 && n < 2 && rule == nil) {
		return nil, exitcode.Errorf(exitcode.Usage, "--repeat %d: want N ≥ 1, not with --resume; --max-cv needs --repeat ≥ 2 or --until-cv (see 'genload run --help')", n)
	} else if n > 1 {
		rule = &repeat.Rule{Count: n}
	}
	if rule != nil {
		if err := rule.Validate(); err != nil {
			return nil, exitcode.With(exitcode.Usage, err)
		}
	}
	return rule, nil
}

// runConfig returns genload run's configuration: the run's own from its results header
// (--resume without -c), else -c's file (or ./bench.toml, or the defaults), with the flags
// given over it — each naming the key it sets, so that messages about that key blame the flag,
// not the file — and validated.
func runConfig(fs *flag.FlagSet, f *runFlags) (*config.Config, error) {
	var cfg *config.Config
	var err error
	if *f.resume != "" {
		if !strings.HasSuffix(*f.resume, ".jsonl") {
			dir := "results"
			if *f.out != "" {
				dir = *f.out
			}
			*f.resume = filepath.Join(dir, *f.resume+".jsonl")
		}
		if *f.cfgPath == "" {
			// The run's own configuration, as recorded in its header.
			prev, err := results.ReadFile(*f.resume)
			if err != nil {
				return nil, exitcode.With(exitcode.InvalidConfig, err)
			}
			if prev.Header.Config == nil {
				return nil, exitcode.Errorf(exitcode.InvalidConfig, "%s: the header has no config", *f.resume)
			}
			cfg = prev.Header.Config
		}
	}
	if cfg == nil {
		if cfg, err = loadConfig(*f.cfgPath); err != nil {
			return nil, err
		}
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	for _, o := range []struct {
		flag, key string
		apply     func()
	}{
		{"target", "target", func() { cfg.Target = *f.target }},
		{"model", "model", func() { cfg.Model = *f.model }},
		{"out", "out", func() { cfg.Out = *f.out }},
		{"mode", "mode", func() { cfg.Mode = *f.mode }},
		{"prompt-format", "prompt.format", func() { cfg.Prompt.Format = *f.promptFormat }},
		{"lengths", "lengths.plugin", func() {
			if *f.lengths != cfg.Lengths.Plugin { // the file's [lengths.config] belongs to the file's plugin
				cfg.Lengths.Plugin, cfg.Lengths.Config = *f.lengths, map[string]any{}
				if *f.lengths == "gamma" {
					cfg.Lengths.Config["k"] = 0.9
				}
			}
		}},
		{"max-tokens", "max_tokens", func() { cfg.MaxTokens = *f.maxTokens }},
		{"seed", "seed", func() { cfg.Seed = *f.seed }},
		{"seq-lens", "matrix.seq_lens", func() { cfg.Matrix.SeqLens, cfg.Matrix.AutoSeqLens = f.seqLens, false }},
		{"batch-sizes", "matrix.batch_sizes", func() { cfg.Matrix.BatchSizes = f.batches }},
		{"time-scale", "engine.time_scale", func() { cfg.Engine.TimeScale = *f.timeScale }},
		{"spin-wait", "engine.spin_wait", func() { cfg.Engine.SpinWait.Duration = *f.spinWait }},
		{"remeasure-overrun", "run.remeasure_overrun", func() { cfg.Run.RemeasureOverrun = *f.remeasure }},
		{"keep-going", "run.on_error", func() {
			cfg.Run.OnError = config.OnErrorStop
			if *f.keepGoing {
				cfg.Run.OnError = config.OnErrorContinue
			}
		}},
	} {
		if set[o.flag] {
			cfg.Override(o.key, "--"+o.flag)
			o.apply()
		}
	}
	if len(f.sets) > 0 {
		kv, err := plugin.ParseSet(f.sets)
		if err != nil {
			return nil, exitcode.With(exitcode.Usage, err)
		}
		if cfg.Lengths.Config == nil {
			cfg.Lengths.Config = map[string]any{}
		}
		for k, v := range kv {
			cfg.Lengths.Config[k] = v
			cfg.Override("lengths.config."+k, "--set") // a message about k blames the flag, about the file's keys the file
		}
	}
	if err := cfg.Validate(); err != nil {
		if exitcode.Of(err) == exitcode.InvalidConfig && flagsOnly(err) {
			// every problem is a flag's value, not the file's: a usage error, as a flag
			// value that does not parse is
			return nil, &exitcode.Error{Code: exitcode.Usage, Err: err}
		}
		return nil, err
	}
	return cfg, nil
}

// flagsOnly reports whether every line of a validation error blames a flag ("flag --x: …",
// config.Config.Where for a key a flag set).
func flagsOnly(err error) bool {
	for _, line := range strings.Split(err.Error(), "\n") {
		if !strings.HasPrefix(line, "flag -") {
			return false
		}
	}
	return true
}

// checkRunArgs parses args as genload run's flags would be, for a command that passes them to
// a genload run elsewhere (genload k8s job: in every pod), so that a flag genload run does not
// know, a bad flag value or a stray argument is a Usage error here rather than a failed pod.
// The values are not applied to a configuration: what they set is checked when the pods run.
func checkRunArgs(args []string) error {
	fs, _ := newRunFlags(&env{stdout: io.Discard, stderr: io.Discard})
	if err := cliflag.Parse(fs, args); err != nil {
		if errors.Is(err, cliflag.ErrHelp) {
			return exitcode.Errorf(exitcode.Usage, "--help among the genload run flags after --")
		}
		return exitcode.Errorf(exitcode.Usage, "genload run flags after --: %v", err)
	}
	if fs.NArg() > 0 {
		return exitcode.Errorf(exitcode.Usage, "genload run flags after --: unexpected argument %q (see 'genload run --help')", fs.Arg(0))
	}
	return nil
}

// loadConfig reads path, or ./bench.toml when path is "" and the file exists, else defaults.
func loadConfig(path string) (*config.Config, error) {
	if path == "" {
		if _, err := os.Stat("bench.toml"); err == nil {
			path = "bench.toml"
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, exitcode.With(exitcode.InvalidConfig, err)
		} else {
			return config.Default(), nil
		}
	}
	return config.Load(path)
}
