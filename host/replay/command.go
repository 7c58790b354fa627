package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/genload/genload/corpus"
	"github.com/genload/genload/host/dispatch"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/prompt"
	"github.com/genload/genload/host/records"
	"github.com/genload/genload/host/tokenizer"
	"github.com/genload/genload/host/trace"
)

// Engine starts the built-in engine for a replay without a target: it logs its steps to
// stepLog and serves tok; it returns its base URL, what to record of it, and a stop function.
// host/cmd/genload provides it (only it and host/run may import the engine).
type Engine func(tok *tokenizer.Tokenizer, stepLog string) (url string, info map[string]any, stop func(), err error)

// Command is a replay as `genload replay` asks for it.
type Command struct {
	// Trace is the request log; Format and Fields say how to read it (host/trace).
	Trace  string
	Format string
	Fields trace.Fields
	// From and To are the window of log time (To = 0: to the end); Speed the time scale.
	From, To time.Duration
	Speed    float64
	// MaxConcurrency caps the requests in flight (0: none).
	MaxConcurrency int
	// Target is the server's base URL ("" starts the built-in engine through Engine); Model
	// the model to ask for ("" the first listed); APIKey the bearer token.
	Target, Model, APIKey string
	Engine                Engine
	// Tokenizer is a Hugging Face model directory or tokenizer.json ("" the embedded Qwen3):
	// it must be the server's, since prompts are token ids.
	Tokenizer string
	// Out is the directory of the files written; ID names them (default "replay-<UTC time>").
	Out, ID string
	// Timeout bounds each request, from send to the end of its stream (0: none).
	Timeout time.Duration
	// SLOTTFT and SLOTPOT are goodput's bounds (0: none).
	SLOTTFT, SLOTPOT time.Duration
	// Version is genload's.
	Version string
}

// Run reads the log, builds the schedule and its prompts, starts the built-in engine when
// there is no target, sends the schedule (Run) and writes <id>.records.jsonl, <id>.json (the
// Summary) and, on the built-in engine, its step log <id>.steps.log in Out; it prints the
// summary to stdout and progress to stderr. Errors carry their exit code: a bad log or window
// (InvalidConfig), a target that cannot be reached (TargetFailed), Ctrl-C (Interrupted: the
// records and the summary of what finished are written first).
func (c Command) Run(ctx context.Context, stdout, stderr io.Writer) (*Summary, error) {
	fields := c.Fields
	fields.RequireTime, fields.RequireOutput = true, true // a schedule needs both
	tr, err := trace.Read(c.Trace, c.Format, fields)
	if err != nil {
		return nil, exitcode.With(exitcode.InvalidConfig, err)
	}
	tok, b, err := c.promptBuilder()
	if err != nil {
		return nil, err
	}
	if c.ID == "" {
		c.ID = "replay-" + time.Now().UTC().Format("20060102-150405")
	}
	if err := os.MkdirAll(c.Out, 0o755); err != nil {
		return nil, err
	}
	base := filepath.Join(c.Out, c.ID)
	for _, p := range []string{base + ".records.jsonl", base + ".json"} {
		if _, err := os.Lstat(p); err == nil {
			return nil, exitcode.Errorf(exitcode.InvalidConfig, "--id %s: %s exists (an earlier replay's): choose another --id or --out, or remove it (nothing started)", c.ID, p)
		}
	}
	extra := map[string]any{"trace": c.Trace, "speed": c.Speed, "window_ms": []float64{records.Ms(c.From), records.Ms(c.To)},
		"max_concurrency": c.MaxConcurrency, "tokenizer": tok.Name()}
	target, steps, timeScale := c.Target, "", 0.0
	if target == "" {
		steps = base + ".steps.log"
		url, info, stop, err := c.Engine(tok, steps)
		if err != nil {
			return nil, exitcode.With(exitcode.InvalidConfig, fmt.Errorf("built-in engine: %w", err))
		}
		defer stop()
		target, extra["engine"] = url, info
		timeScale, _ = info["time_scale"].(float64)
	}
	model, context, err := c.servedModel(ctx, target)
	if err != nil {
		return nil, err
	}
	sched, err := NewSchedule(tr.Requests, c.From, c.To, c.Speed, context)
	if err != nil {
		return nil, exitcode.With(exitcode.InvalidConfig, fmt.Errorf("%s: %w", c.Trace, err))
	}
	client, err := dispatch.New(dispatch.Options{Target: target, Model: model, APIKey: c.APIKey, TotalTimeout: c.Timeout, ContinuousUsage: true, SpareConns: SpareConns})
	if err != nil {
		return nil, exitcode.With(exitcode.InvalidConfig, err)
	}
	defer client.Close()
	rate := RateText(len(sched.Items), sched.Rate())
	if rate != "" {
		rate = ": " + rate
	}
	fmt.Fprintf(stderr, "replay: %s of %s (log time %v-%v at speed %g%s) against %s (%s); building prompts…\n",
		plural(len(sched.Items), "request"), c.Trace, sched.From, sched.To, c.Speed, rate, target, model)
	if n := TimeScaleNote(timeScale, c.Speed); n != "" {
		fmt.Fprintf(stderr, "replay: %s\n", n)
	}
	sum, err := Run(ctx, Options{Schedule: sched, Blocks: b, Sender: client, MaxConcurrency: c.MaxConcurrency,
		Records: base + ".records.jsonl", SLOTTFT: c.SLOTTFT, SLOTPOT: c.SLOTPOT, Stderr: stderr,
		Header: records.Header{ID: c.ID, Genload: c.Version, Target: target, Model: model, Extra: extra}})
	if sum == nil {
		return nil, err
	}
	sum.TimeScale = timeScale
	if werr := c.writeSummary(sum, stdout, base, steps, records.Header{Source: "replay", ID: c.ID, Genload: c.Version, Target: target, Model: model, Extra: extra}); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return sum, err
	}
	if sum.Interrupted {
		return sum, exitcode.Errorf(exitcode.Interrupted, "interrupted after sending %d of %s; the records of the %d that finished are in %s",
			sum.Sent, plural(sum.Scheduled, "request"), sum.Finished, filepath.Join(c.Out, sum.Records))
	}
	return sum, nil
}

// promptBuilder loads the tokenizer (--tokenizer, else the default) and the prompt builder
// over the embedded corpus.
func (c Command) promptBuilder() (*tokenizer.Tokenizer, *prompt.Builder, error) {
	var tok *tokenizer.Tokenizer
	var err error
	if c.Tokenizer == "" {
		tok, err = tokenizer.Default()
	} else {
		tok, err = tokenizer.Load(c.Tokenizer)
	}
	if err != nil {
		return nil, nil, exitcode.With(exitcode.InvalidConfig, err)
	}
	rows, err := corpus.Default()
	if err != nil {
		return nil, nil, exitcode.With(exitcode.InvalidConfig, err)
	}
	texts := make([]string, len(rows))
	for i, r := range rows {
		texts[i] = r.Text
	}
	b, err := prompt.New(tok, nil, texts, prompt.Options{Suffix: "."})
	if err != nil {
		return nil, nil, exitcode.With(exitcode.InvalidConfig, err)
	}
	return tok, b, nil
}

// servedModel returns the model to replay against (--model, else the first the target
// lists) and its context length (0 when the target does not say).
func (c Command) servedModel(ctx context.Context, target string) (string, int, error) {
	models, err := dispatch.ListModels(ctx, target, c.APIKey, 30*time.Second)
	if err != nil {
		return "", 0, exitcode.With(exitcode.TargetFailed, err)
	}
	model, context := c.Model, 0
	for _, m := range models {
		if model == "" || m.ID == model {
			model, context = m.ID, m.MaxModelLen
			break
		}
	}
	if model == "" {
		return "", 0, exitcode.Errorf(exitcode.TargetFailed, "%s/v1/models lists no model; give --model", target)
	}
	return model, context, nil
}

// writeSummary completes sum (the records file's header, else h; the records and step log
// relative to Out), writes it as base.json and prints it to stdout with the files written.
func (c Command) writeSummary(sum *Summary, stdout io.Writer, base, steps string, h records.Header) error {
	sum.Header = h
	if f, rerr := records.Read(sum.Records); rerr == nil {
		sum.Header = f.Header
	}
	sum.Records = filepath.Base(sum.Records)
	if steps != "" {
		sum.Steps = filepath.Base(steps)
	}
	js, _ := json.MarshalIndent(sum, "", "  ")
	werr := os.WriteFile(base+".json", append(js, '\n'), 0o644)
	sum.WriteText(stdout)
	fmt.Fprintf(stdout, "\nwrote %s.json, %s", base, filepath.Join(c.Out, sum.Records))
	if sum.Steps != "" {
		fmt.Fprintf(stdout, ", %s", filepath.Join(c.Out, sum.Steps))
	}
	fmt.Fprintln(stdout)
	return werr
}

// ParseWindow reads --window START-END: two times of the log, each a Go duration ("90s",
// "10m") or a number of seconds, with 0 ≤ START < END; END may be left out ("600-": to the
// end, returned as 0). Errors name the flag: a negative or missing start ("-5s-10s"), an end
// not after the start ("0-0", "660s-600s"), a time that is neither.
func ParseWindow(s string) (from, to time.Duration, err error) {
	if s == "" {
		return 0, 0, nil
	}
	const want = "want START-END of the log's time with 0 ≤ START < END (e.g. 600s-660s, 600-660 in seconds, or 600- to the end)"
	if strings.HasPrefix(strings.TrimSpace(s), "-") {
		return 0, 0, fmt.Errorf("--window %q: the start is negative or missing: %s", s, want)
	}
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return 0, 0, fmt.Errorf("--window %q: %s", s, want)
	}
	parse := func(v string) (time.Duration, error) {
		if d, err := time.ParseDuration(v); err == nil {
			if d < 0 {
				return 0, errors.New("negative")
			}
			return d, nil
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f*float64(time.Second) > math.MaxInt64 {
			return 0, errors.New("bad time")
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if from, err = parse(a); err != nil {
		return 0, 0, fmt.Errorf("--window %q: start %q is not a duration or a number of seconds ≥ 0: %s", s, a, want)
	}
	if b == "" {
		return from, 0, nil
	}
	if to, err = parse(b); err != nil {
		return 0, 0, fmt.Errorf("--window %q: end %q is not a duration or a number of seconds ≥ 0: %s", s, b, want)
	}
	if to <= from {
		return 0, 0, fmt.Errorf("--window %q: empty: the end %v must come after the start %v", s, to, from)
	}
	return from, to, nil
}
