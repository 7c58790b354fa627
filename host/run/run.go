// Package run drives one benchmark run. Its setup reads the corpus and tokenizer, starts the
// built-in engine when the target is "builtin", asks the server for its model and context,
// probes what it accepts, builds the matrix and loads the plugins; then every cell goes through
// the same stages, each taking the previous one's value:
//
//	plan (host/plan: lengths, prompts, route) → warmup → dispatch → measure → warnings → write
//
// Every finished cell is appended and fsynced to results/<run-id>.jsonl before the next cell
// starts; on a failure or interruption the cells already measured stay on disk and are printed.
//
// Files: run.go (Run: setup, the loop, the end), setup.go (the setup's stages), cell.go (a
// cell's stages), prompts.go, textmode.go, probe.go, tokencounts.go, target.go (the server,
// its model and context), plugins.go, warnings.go, results.go (the results file and resume),
// watch.go and progress.go.
package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/gputime"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/records"
	"github.com/genload/genload/host/repeat"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/shard"
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
	// ResumeMoved, with Resume, lets the run continue against another target URL than the
	// one it was started against: the same server restarted at another address (a sweep
	// point whose earlier port is taken). [target] is then not compared with the run's; the
	// results header keeps the address the run was started against.
	ResumeMoved bool
	// Shard selects the part of the matrix this process measures (genload run --shard I/N;
	// see package shard); the zero value measures every cell. The results header records it.
	Shard shard.Spec
	// Wide prints the result table with every column and one line per warning
	// (report.TableOptions).
	Wide bool
	// Legends is the command's legend of the table's columns, shared by its runs so that it
	// is printed once (report.TableOptions.Legends); nil prints it under every table.
	Legends *report.Legends
	// Repeats, when set, measures every cell repeatedly in interleaved rounds: a fixed count
	// of times (genload run --repeat N), or until its CV is within the rule's target or it
	// reaches the rule's maximum (--until-cv); see runRepeats and package repeat. One results
	// file with a record per (cell, repeat). Not with Resume. A built-in engine draws each
	// round's noise from its own seed, derived from the configured one and "repeat k".
	Repeats *repeat.Rule
	// Records, when not "", is a per-request records file to create (host/records: every
	// warmup and measured sequence's send time, chunk times and token counts; genload run
	// --records FILE.jsonl). It must not exist.
	Records string
	// EngineStart names what distinguishes this run's start of the built-in engine from the
	// other starts of the same configuration in one invocation ("ab side B"): the [engine]
	// noise seed used is derived from the configured one and it (engine.Noise.ForStart), so
	// that the starts draw independent noise, and the results header's engine info records
	// the seed used. "" uses the configured seed; a run with Repeats starts the engine as
	// "repeat 1" and reseeds it before every round k with "repeat k"'s seed.
	EngineStart string
}

// Result is what a run produced.
type Result struct {
	Run      *results.Run
	JSONL    string // results/<run-id>.jsonl
	JSON     string // results/<run-id>.json ("" if the run could not finish writing)
	CSV      string // results/<run-id>.csv
	Measured int    // cells with a measured record (status ok or partial)
	// Repeats is, with Options.Repeats, how each cell's repeats ended (matrix order).
	Repeats []CellRepeats
}

// Run executes cfg (already validated). The error carries an exit code ([exitcode.Of]);
// Result is non-nil whenever a results file was created, even on error. Its steps, in order:
// the options checked before anything starts ([checkOptions]), the setup (engine, probes,
// plugins, cells: setup.run), the results and records files opened, the run announced, the
// cells measured (once each, or in rounds of repeats) and the results finished and summed up
// ([finishRun]).
func Run(ctx context.Context, cfg *config.Config, opt Options) (*Result, error) {
	start := time.Now()
	opt, autoID, err := checkOptions(cfg, opt, start)
	if err != nil {
		return nil, err
	}
	s := &setup{cfg: cfg, opt: opt, start: start}
	defer s.close()
	cr, err := s.run(ctx)
	if err != nil {
		return nil, err
	}
	if cr.records, err = createRecords(opt.Records, records.Header{ID: opt.RunID, Genload: opt.Version, Target: s.target, Model: s.model}); err != nil {
		return nil, err
	}
	w, done, err := openResults(s.cfg, s.header, opt, autoID, len(s.cells))
	if err != nil {
		cr.records.discard()
		return nil, err
	}
	if cr.records != nil {
		defer func() {
			if err := cr.records.w.Close(); err != nil {
				fmt.Fprintf(opt.Stderr, "genload: %v\n", err)
			}
		}()
	}
	res := &Result{JSONL: w.Path(), Run: w.Run()}
	if s.empty {
		return emptyShard(s, w, res)
	}
	s.announce(ctx, cr, w.Path())
	keepGoing := s.cfg.Run.OnError == config.OnErrorContinue
	var runErr error
	if opt.Repeats != nil {
		res.Repeats, runErr = runRepeats(ctx, cr, s.cells, *opt.Repeats, s.cfg.Seed, w, s.roundStarter(), keepGoing)
	} else {
		prog := newProgress(opt.Stderr, opt.Progress, s.cells, s.cfg.MaxTokens)
		runErr = runCells(ctx, cr, s.cells, done, w, prog, keepGoing)
		prog.finish()
	}
	return res, finishRun(s, w, res, runErr)
}

// checkOptions fills opt's defaults (discarded output, os.Getenv, a run id from the start
// time: autoID) and refuses, before anything starts, what would fail later with a less clear
// message: a resume of a run with repeats, repeats settings out of range, a results path that
// is a file, a records file that exists. The errors carry exitcode.Usage or InvalidConfig.
func checkOptions(cfg *config.Config, opt Options, start time.Time) (_ Options, autoID bool, _ error) {
	if opt.Stdout == nil {
		opt.Stdout = io.Discard
	}
	if opt.Stderr == nil {
		opt.Stderr = io.Discard
	}
	if opt.Getenv == nil {
		opt.Getenv = os.Getenv
	}
	if opt.Repeats != nil {
		if opt.Resume != "" {
			return opt, false, exitcode.Errorf(exitcode.Usage, "--resume of a run with repeats (--repeat, --until-cv): its rounds would start over; start a new run")
		}
		if err := opt.Repeats.Validate(); err != nil {
			return opt, false, exitcode.With(exitcode.Usage, err)
		}
		if opt.EngineStart == "" {
			opt.EngineStart = roundStart(1)
		}
	}
	if opt.Resume != "" {
		if err := resumable(opt.Resume); err != nil {
			return opt, false, err
		}
	}
	autoID = opt.RunID == ""
	if autoID {
		opt.RunID = start.UTC().Format("20060102-150405")
	}
	if opt.Resume == "" {
		// Before the setup starts anything: a results path that is a file would fail only
		// once the engine is up and the server probed, and with an unclear message.
		if fi, err := os.Stat(cfg.Out); err == nil && !fi.IsDir() {
			return opt, autoID, exitcode.Errorf(exitcode.InvalidConfig, "%s: [out] %s is a file, not a directory: results are written into a directory (<run-id>.jsonl, .json, .csv)",
				cfg.Where("out"), cfg.Out)
		}
	}
	if opt.Records != "" {
		// Likewise a records file that exists or has no directory: before the engine starts
		// and before the results file is created, which it would leave holding a header only.
		if err := checkRecordsPath(opt.Records); err != nil {
			return opt, autoID, err
		}
	}
	return opt, autoID, nil
}

// emptyShard finishes the results of a shard with no cell: a header and a footer, nothing
// measured, and the line that says so.
func emptyShard(s *setup, w *results.Writer, res *Result) (*Result, error) {
	fmt.Fprintf(s.opt.Stderr, "genload %s: shard %s of a %d-cell matrix is empty: nothing to measure, no engine started\n  results → %s\n",
		s.opt.Version, s.opt.Shard, s.matrixCells, w.Path())
	jsonPath, csvPath, err := report.Finish(w, results.StatusOK, nil)
	res.JSON, res.CSV = jsonPath, csvPath
	if err == nil {
		fmt.Fprintf(s.opt.Stderr, "0/0 cells measured; results: %s, %s, %s\n", res.JSONL, jsonPath, csvPath)
	}
	return res, err
}

// announce prints what the run measures against what (cells, target, model, context, the
// results path, cells dropped from the matrix), starts the /metrics watcher and the KV
// capacity check, and names the records file.
func (s *setup) announce(ctx context.Context, cr *cellRunner, path string) {
	context := "unknown"
	if s.modelCtx > 0 {
		context = fmt.Sprintf("%d from %s", s.modelCtx, s.contextSrc)
	}
	// Three lines, each within the width the tables keep (report.NarrowWidth) for a usual
	// target URL, context source and results path; on one line they took ~170 columns.
	fmt.Fprintf(s.opt.Stderr, "genload %s: %s against %s\n  model %s, context %s\n  results → %s\n",
		s.opt.Version, plural(len(s.cells), "cell"), s.target, s.model, context, path)
	for _, d := range s.dropped {
		fmt.Fprintf(s.opt.Stderr, "dropped L=%d B=%d: %s\n", d.SeqLen, d.Batch, d.Reason)
	}
	cr.watcher = s.watcher(ctx)
	cr.capacity = capacities(s.cfg, s.eng, s.target, s.workers, cr.watcher)
	cr.announceCapacity(s.opt.Stderr, s.cells)
	if cr.records != nil {
		fmt.Fprintf(s.opt.Stderr, "  per-request records → %s\n", s.opt.Records)
	}
}

// finishRun writes the footer and the .json and .csv files (status from runErr), counts the
// cells measured (a cell with repeats once), prints the table on stdout and, on stderr, the
// GPU time and the closing line. It returns runErr joined with a write error.
func finishRun(s *setup, w *results.Writer, res *Result, runErr error) error {
	opt := s.opt
	status := results.StatusOK
	switch {
	case exitcode.Of(runErr) == exitcode.Interrupted:
		status = results.StatusInterrupted
	case runErr != nil:
		status = results.StatusError
	}
	jsonPath, csvPath, ferr := report.Finish(w, status, runErr)
	res.JSON, res.CSV = jsonPath, csvPath
	measured := map[int]bool{} // a cell with repeats counts once
	for _, c := range res.Run.Cells {
		if results.Measured(c.Status) && !measured[c.Cell.Index] {
			measured[c.Cell.Index] = true
			res.Measured++
		}
	}
	report.WriteTable(opt.Stdout, res.Run, report.TableOptions{Wide: opt.Wide, Legends: opt.Legends})
	gpus, src := 0, "" // unknown: the summary is per GPU
	if n, ok := gputime.GPUCount(res.Run.Header.Labels); ok {
		gpus, src = n, "labels gpu_count"
	}
	gputime.Of([]*results.Run{res.Run}, gpus, src).WriteSummary(opt.Stderr)
	fmt.Fprintf(opt.Stderr, "%d/%d cells measured", res.Measured, len(s.cells))
	open := map[string]int{}
	for _, c := range res.Repeats {
		if c.Stopped != "" {
			open[c.Stopped]++
		}
	}
	for _, why := range []string{"interrupted", "stopped"} {
		if open[why] > 0 {
			fmt.Fprintf(opt.Stderr, " (%d %s before their repeats ended)", open[why], why)
		}
	}
	fmt.Fprintf(opt.Stderr, " in %s since genload started (the engine's start and the probes included; the run's wall time above is the results' own); results: %s", time.Since(s.start).Round(time.Millisecond), res.JSONL)
	if jsonPath != "" {
		fmt.Fprintf(opt.Stderr, ", %s, %s", sibling(res.JSONL, jsonPath), sibling(res.JSONL, csvPath))
	}
	fmt.Fprintln(opt.Stderr)
	return errors.Join(runErr, ferr)
}

// sibling is path as the closing line names it beside first: its extension alone (".json")
// when it is first's file with another extension, so that the line keeps within 120 columns
// for a long results path; else path.
func sibling(first, path string) string {
	base := strings.TrimSuffix(first, filepath.Ext(first))
	if ext := filepath.Ext(path); base+ext == path {
		return ext
	}
	return path
}

// resumable refuses to resume a run with repeats (a header with until_cv, or records with a
// repeat): Resume skips every cell that has a measured record, so the cells still open when
// the run stopped would never get their remaining repeats, and the stopping rule's rounds
// (their interleaved order, each cell's plan measured again unchanged) cannot be continued
// from the file. Checked before the setup starts an engine; the error carries
// exitcode.InvalidConfig and names the file.
func resumable(path string) error {
	prev, err := results.ReadFile(path)
	if err != nil {
		return exitcode.With(exitcode.InvalidConfig, fmt.Errorf("cannot resume: %w", err))
	}
	why := ""
	switch u := prev.Header.UntilCV; {
	case u != nil:
		why = fmt.Sprintf("its header has until_cv (target CV %g %%, %d to %d repeats per cell)", 100*u.TargetCV, u.MinRepeats, u.MaxRepeats)
	case prev.Header.Repeats > 0:
		why = fmt.Sprintf("its header has repeats (%d per cell)", prev.Header.Repeats)
	case prev.HasRepeats():
		why = "its records are repeats of the cells"
	default:
		return nil
	}
	return exitcode.Errorf(exitcode.InvalidConfig, "cannot resume %s: %s: a run with repeats cannot be continued (resuming would skip every cell measured once and end the cells still open without their remaining repeats); start a new run with --repeat or --until-cv", path, why)
}

// cellWriter takes each cell's record as it is measured (host/report's *Writer).
type cellWriter interface {
	Cell(c results.Cell) error
}

// runCells measures the cells in order, writing each record before the next cell starts. Cells
// in done (measured by the run being resumed) are skipped, their routing call repeated. A
// failed cell is written with its error; then the run stops (keepGoing false: [run] on_error =
// "stop") or goes on to the next cell, and the error returned joins every failed cell's, the
// exit code the first one's. An interruption always stops, its cell recorded as interrupted.
func runCells(ctx context.Context, cr *cellRunner, cells []matrix.Cell, done map[int]bool, w cellWriter, prog *progress, keepGoing bool) error {
	var failed []error
	for _, c := range cells {
		if done[c.Index] {
			// A stateful router (round robin) must see the same calls in the same order as
			// in the first run, so that resumed cells are routed as they would have been.
			if err := cr.replay(ctx, c); err != nil {
				return exitcode.With(exitcode.PluginRejected, err)
			}
			prog.skip(c)
			continue
		}
		rec, err := cr.measure(ctx, c)
		if ctx.Err() != nil {
			rec.Status, rec.Error = results.StatusInterrupted, "interrupted"
		}
		if werr := w.Cell(rec); werr != nil {
			return werr
		}
		prog.done(rec)
		if err != nil {
			if ctx.Err() != nil {
				return exitcode.With(exitcode.Interrupted, fmt.Errorf("interrupted during cell %s", c.Key()))
			}
			err = fmt.Errorf("cell %s: %w", c.Key(), err)
			if !keepGoing {
				return err
			}
			failed = append(failed, err)
		}
	}
	switch len(failed) {
	case 0:
		return nil
	case 1:
		return failed[0]
	}
	return fmt.Errorf("%d of %d cells failed ([run] on_error = %q):\n%w", len(failed), len(cells), config.OnErrorContinue, errors.Join(failed...))
}

// plural returns "1 cell", "2 cells".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
