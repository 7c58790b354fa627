package sweep

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/run"
	"github.com/genload/genload/host/shard"
	"github.com/genload/genload/host/stats"
)

// Point status values in the summary.
const (
	StatusOK          = "ok"          // the server started and the run finished
	StatusRunFailed   = "run-failed"  // the server was ready; the run failed (its results file keeps the cells measured)
	StatusServer      = "server"      // the server did not start, was not ready in time, or died during the run
	StatusInvalid     = "invalid"     // the point is wrong: unknown placeholder, bad override; nothing was started
	StatusInterrupted = "interrupted" // the sweep was stopped during the point
)

// Options are the sweep's process-level settings.
type Options struct {
	// Stdout receives each point's table and the sweep summary; Stderr progress and the
	// servers' troubles.
	Stdout, Stderr io.Writer
	// Progress selects progress bars in the runs (terminals).
	Progress bool
	// Version is genload's version, written into results.
	Version string
	// Executable is the {genload} placeholder: the path of the running genload binary.
	Executable string
	// Getenv reads environment variables (the runs' API key). Default os.Getenv.
	Getenv func(string) string
	// Environ is the serve commands' environment. Default os.Environ().
	Environ []string
	// Resume continues the sweep whose summary is in the results directory: points with
	// status ok are kept, the others run again (a point's run that has a results file is
	// continued in it: on the earlier port when it is free, else on another).
	Resume bool
	// Shard runs the points i with i mod Count = Index only (genload sweep --shard I/N).
	Shard shard.Spec
	// Legends is the legend of the points' tables, printed once for the sweep (under the
	// first point's table; report.Legends); nil prints it under every point's.
	Legends *report.Legends
}

// Summary is the sweep's record, <out>/sweep.json (sweep-shard-I-of-N.json for a shard),
// rewritten after every point.
type Summary struct {
	Sweep    string         `json:"sweep"`
	File     string         `json:"file"`
	Bench    string         `json:"bench,omitempty"`
	Started  time.Time      `json:"started"`
	Finished time.Time      `json:"finished,omitzero"`
	Shard    *results.Shard `json:"shard,omitempty"` // MatrixCells: the sweep's number of points
	Points   []PointResult  `json:"points"`
}

// PointResult is one point of the summary.
type PointResult struct {
	Index   int            `json:"index"`
	Name    string         `json:"name"`
	Vars    map[string]any `json:"vars,omitempty"`
	Labels  map[string]any `json:"labels,omitempty"`
	Command string         `json:"command,omitempty"`
	Target  string         `json:"target,omitempty"`
	Port    int            `json:"port,omitempty"`
	Status  string         `json:"status"`
	Error   string         `json:"error,omitempty"`
	// Stop says how stopping the server went when it needed SIGKILL ("" otherwise).
	Stop string `json:"stop,omitempty"`
	// ReadyAfter is from the serve command's start to the first 200 of the readiness path.
	ReadyAfter results.Millis `json:"ready_after_ms"`
	Started    time.Time      `json:"started"`
	Elapsed    results.Millis `json:"elapsed_ms"`
	// Results is the point's .jsonl results file (JSON the .json, "" if the run did not
	// finish writing), ServerLog the serve command's output.
	Results   string `json:"results,omitempty"`
	JSON      string `json:"json,omitempty"`
	ServerLog string `json:"server_log,omitempty"`
	// Cells is the matrix's cells for this point, Measured those with figures.
	Cells    int `json:"cells"`
	Measured int `json:"measured"`
	// PerForward is the smallest, median and largest mean per-forward latency over the
	// measured cells, TTFT the median of their TTFT p50s (ms; absent when no cell has one).
	PerForward *Spread         `json:"per_forward_ms,omitempty"`
	TTFT       *results.Millis `json:"ttft_p50_median_ms,omitempty"`
}

// Spread is the smallest, median (stats.MedianDuration: the mean of the two middle values for
// an even count) and largest of a set of durations.
type Spread struct {
	Min    results.Millis `json:"min"`
	Median results.Millis `json:"median"`
	Max    results.Millis `json:"max"`
}

// SummaryName is the summary file's name for shard s.
func SummaryName(s shard.Spec) string {
	if !s.Enabled() {
		return "sweep.json"
	}
	return fmt.Sprintf("sweep-shard-%d-of-%d.json", s.Index, s.Count)
}

// Run runs every point of f (of opt.Shard): start the server, wait until ready, run the
// matrix, stop the server, record the point. A point that fails is recorded and the sweep
// goes on. The error lists the points that are not ok (exitcode.TargetFailed), or is the
// interruption (exitcode.Interrupted); the summary is returned whenever one was written.
func Run(ctx context.Context, f *File, opt Options) (*Summary, error) {
	opt.setDefaults()
	specs, err := f.Expand()
	if err != nil {
		return nil, err
	}
	sumPath := filepath.Join(f.Out, SummaryName(opt.Shard))
	sum, prev, err := startSummary(f, opt, sumPath, len(specs))
	if err != nil {
		return nil, err
	}
	mine := opt.Shard.Items(len(specs))
	if err := templateError(f, specs, mine, opt.Executable); err != nil {
		return nil, exitcode.With(exitcode.InvalidConfig, err)
	}
	fmt.Fprintf(opt.Stderr, "sweep %s: %d of %s%s → %s\n", f.Name, len(mine), points(len(specs)), shardNote(opt.Shard), f.Out)
	interrupted, err := runPoints(ctx, f, opt, specs, mine, prev, sum, sumPath)
	if err != nil {
		return sum, err
	}
	return finishSweep(sum, prev, sumPath, interrupted, opt)
}

// setDefaults discards output nobody reads (nil Stdout, Stderr) and gives the serve
// commands this process's environment when Environ is nil.
func (opt *Options) setDefaults() {
	if opt.Stdout == nil {
		opt.Stdout = io.Discard
	}
	if opt.Stderr == nil {
		opt.Stderr = io.Discard
	}
	if opt.Environ == nil {
		opt.Environ = os.Environ()
	}
}

// startSummary creates f.Out and returns the sweep's summary to fill (matrixCells points
// in all; written to sumPath) and, with opt.Resume, the points of the summary already
// there, by name. A summary already there without --resume, or none with it, is an
// invalid-config error naming the file.
func startSummary(f *File, opt Options, sumPath string, matrixCells int) (*Summary, map[string]PointResult, error) {
	if err := os.MkdirAll(f.Out, 0o755); err != nil {
		return nil, nil, exitcode.With(exitcode.InvalidConfig, fmt.Errorf("sweep: %w", err))
	}
	sum := &Summary{Sweep: f.Name, File: f.path, Bench: f.Bench, Started: time.Now().UTC()}
	if opt.Shard.Enabled() {
		sum.Shard = &results.Shard{Index: opt.Shard.Index, Count: opt.Shard.Count, MatrixCells: matrixCells}
	}
	prev := map[string]PointResult{}
	switch old, err := readSummary(sumPath); {
	case err == nil && !opt.Resume:
		return nil, nil, exitcode.Errorf(exitcode.InvalidConfig, "sweep: %s exists: continue that sweep with --resume, or choose another [out]", sumPath)
	case err == nil:
		for _, p := range old.Points {
			prev[p.Name] = p
		}
		sum.Started = old.Started
	case !errors.Is(err, os.ErrNotExist):
		return nil, nil, exitcode.With(exitcode.InvalidConfig, err)
	case opt.Resume:
		return nil, nil, exitcode.Errorf(exitcode.InvalidConfig, "sweep: --resume: no summary %s to continue", sumPath)
	}
	return sum, prev, nil
}

// runPoints runs the points mine (indices into specs) in order, appending each result to
// sum and writing the summary to sumPath after each one; a point ok in the previous summary
// (prev) is kept, not rerun. After an interruption no further point runs; the returned
// interrupted error says during which point. err is a failure to write the summary.
func runPoints(ctx context.Context, f *File, opt Options, specs []Spec, mine []int, prev map[string]PointResult, sum *Summary, sumPath string) (interrupted, err error) {
	for _, i := range mine {
		sp := specs[i]
		if p, ok := prev[sp.Name]; ok && p.Status == StatusOK {
			fmt.Fprintf(opt.Stderr, "point %s: ok in the summary, skipped\n", sp.Name)
			sum.Points = append(sum.Points, p)
			continue
		}
		var before *PointResult
		if p, ok := prev[sp.Name]; ok {
			before = &p
		}
		if interrupted != nil {
			continue
		}
		fmt.Fprintf(opt.Stderr, "point %s (%d/%d)\n", sp.Name, i+1, len(specs))
		pr := runPoint(ctx, f, sp, before, opt)
		sum.Points = append(sum.Points, pr)
		if pr.Status != StatusOK {
			fmt.Fprintf(opt.Stderr, "point %s: %s: %s\n", sp.Name, pr.Status, pr.Error)
		}
		if err := writeSummary(sumPath, sum); err != nil {
			return interrupted, err
		}
		if pr.Status == StatusInterrupted {
			interrupted = exitcode.Errorf(exitcode.Interrupted, "sweep interrupted during point %s", sp.Name)
		}
	}
	return interrupted, nil
}

// finishSweep completes sum — the previous summary's points this run did not visit stay
// recorded, all sorted by index, the finish time set — writes it to sumPath and its table
// to opt.Stdout, and returns the sweep's error: the interruption, or the points not ok
// (exitcode.TargetFailed).
func finishSweep(sum *Summary, prev map[string]PointResult, sumPath string, interrupted error, opt Options) (*Summary, error) {
	for name, p := range prev {
		if !slices.ContainsFunc(sum.Points, func(q PointResult) bool { return q.Name == name }) {
			sum.Points = append(sum.Points, p)
		}
	}
	slices.SortFunc(sum.Points, func(a, b PointResult) int { return a.Index - b.Index })
	sum.Finished = time.Now().UTC()
	if err := writeSummary(sumPath, sum); err != nil {
		return sum, err
	}
	Table(opt.Stdout, sum)
	fmt.Fprintf(opt.Stderr, "sweep summary: %s\n", sumPath)
	if interrupted != nil {
		return sum, interrupted
	}
	var bad []string
	for _, p := range sum.Points {
		if p.Status != StatusOK {
			bad = append(bad, fmt.Sprintf("%s (%s)", p.Name, p.Status))
		}
	}
	if len(bad) > 0 {
		return sum, exitcode.Errorf(exitcode.TargetFailed, "%d of %d points not measured: %s (see %s; continue with --resume)",
			len(bad), len(sum.Points), strings.Join(bad, ", "), sumPath)
	}
	return sum, nil
}

func shardNote(s shard.Spec) string {
	if !s.Enabled() {
		return ""
	}
	return " (shard " + s.String() + ")"
}

// runPoint runs one point and returns its record; it never returns with the server running.
func runPoint(ctx context.Context, f *File, sp Spec, before *PointResult, opt Options) (pr PointResult) {
	t0 := time.Now()
	pr = PointResult{Index: sp.Index, Name: sp.Name, Vars: sp.Vars, Labels: sp.Labels, Started: t0.UTC(), Status: StatusInvalid}
	done := func(status string, err error) PointResult {
		pr.Status = status
		if pr.Results == "" && before != nil && before.Results != "" {
			// This attempt ended before its run wrote anything (the server did not start,
			// the port was in use): the earlier attempt's results stay the point's, to be
			// continued by the next --resume rather than measured again.
			pr.Results, pr.JSON, pr.Cells, pr.Measured = before.Results, before.JSON, before.Cells, before.Measured
			pr.PerForward, pr.TTFT = before.PerForward, before.TTFT
		}
		if err != nil {
			pr.Error = err.Error()
		}
		pr.Elapsed = results.Millis(time.Since(t0))
		return pr
	}
	resume, moved, err := pr.choosePort(before, sp.Name, opt.Stderr)
	if err != nil {
		return done(StatusServer, err)
	}
	ready, cfg, err := pr.expand(f, sp, opt.Executable, opt.Stderr)
	if err != nil {
		return done(StatusInvalid, err)
	}
	runID := sp.Name
	if resume == "" && before != nil && before.Results != "" {
		runID = fmt.Sprintf("%s-%d", sp.Name, time.Now().Unix()) // the earlier attempt's files stay
	}
	if host, busy := inUse(pr.Target); busy {
		return done(StatusServer, fmt.Errorf("port in use: something answers at %s before the point's server is started; it would be measured instead (stop it, or use {port} in [server] target and command)", host))
	}
	pr.ServerLog = filepath.Join(f.Out, sp.Name+".server.log")
	srv, err := start(pr.Command, pr.ServerLog, opt.Environ)
	if err != nil {
		return done(StatusServer, err)
	}
	defer func() {
		if note := srv.stop(sp.Server.StopTimeout.Duration); note != "" {
			pr.Stop = note
		}
	}()
	after, err := srv.waitReady(ctx, pr.Target, ready, sp.Server.ReadyTimeout.Duration)
	if err != nil {
		if ctx.Err() != nil {
			return done(StatusInterrupted, errors.New("interrupted while waiting for the server"))
		}
		return done(StatusServer, err)
	}
	pr.ReadyAfter = results.Millis(after)
	fmt.Fprintf(opt.Stderr, "point %s: %s ready after %.1f s\n", sp.Name, pr.Target, after.Seconds())
	res, rerr := run.Run(ctx, cfg, run.Options{Stdout: opt.Stdout, Stderr: opt.Stderr, Progress: opt.Progress, Version: opt.Version,
		RunID: runID, Getenv: opt.Getenv, Resume: resume, ResumeMoved: moved, Legends: opt.Legends})
	if res != nil {
		pr.Results, pr.JSON = res.JSONL, res.JSON
		pr.Cells, pr.Measured = len(res.Run.Header.Cells), res.Measured
		pr.PerForward, pr.TTFT = spreads(res.Run)
	}
	return done(outcome(ctx, srv, pr.ServerLog, rerr))
}

// outcome is a point's status and error after its run returned rerr: the server's exit
// (with the last lines of its log) before the run's own error, then an interruption, then the
// run's failure.
func outcome(ctx context.Context, srv *server, log string, rerr error) (string, error) {
	switch {
	case srv.hasExited():
		msg := fmt.Sprintf("the server exited during the run (%s); last lines of %s:%s", srv.status(), log, srv.tail(5))
		if rerr != nil {
			msg += "\n  the run: " + rerr.Error()
		}
		return StatusServer, errors.New(msg)
	case exitcode.Of(rerr) == exitcode.Interrupted || ctx.Err() != nil:
		return StatusInterrupted, rerr
	case rerr != nil:
		return StatusRunFailed, rerr
	}
	return StatusOK, nil
}

// choosePort sets pr.Port: the one of the earlier attempt when its run is continued and it is
// free, else a free one. The earlier run (resume, its results file) is continued either way:
// the point's server is its command and variables, not the port it listens on, and a new run
// would measure again every cell the earlier one had measured; moved says its port changed.
func (pr *PointResult) choosePort(before *PointResult, name string, stderr io.Writer) (resume string, moved bool, err error) {
	if before != nil && before.Results != "" && fileExists(before.Results) {
		resume = before.Results
		if before.Port == 0 || portFree(before.Port) {
			pr.Port = before.Port
		} else {
			moved = true
			fmt.Fprintf(stderr, "point %s: port %d of the earlier attempt is taken: its server starts on another port, and its run continues in %s\n", name, before.Port, before.Results)
		}
	}
	if pr.Port == 0 {
		p, err := freePort()
		if err != nil {
			return "", false, fmt.Errorf("no free port: %w", err)
		}
		pr.Port = p
	}
	return resume, moved, nil
}

// expand fills the point's server command and target from [server] with its placeholders
// ({genload}, {port}, {point}, {out} and the point's variables) and returns the ready check
// and the point's configuration (its relabelled keys said on stderr).
func (pr *PointResult) expand(f *File, sp Spec, executable string, stderr io.Writer) (string, *config.Config, error) {
	vals := map[string]string{PlaceGenload: executable, PlacePort: strconv.Itoa(pr.Port), PlacePoint: sp.Name, PlaceOut: f.Out}
	for k, v := range sp.Vars {
		vals[k] = fmt.Sprint(v)
	}
	var err error
	if pr.Command, err = expand(sp.Server.Command, "[server] command", vals); err != nil {
		return "", nil, err
	}
	if pr.Target, err = expand(sp.Server.Target, "[server] target", vals); err != nil {
		return "", nil, err
	}
	ready, err := expand(sp.Server.Ready, "[server] ready", vals)
	if err != nil {
		return "", nil, err
	}
	cfg, relabelled, err := pointConfig(f, sp, pr.Target, vals)
	if err != nil {
		return "", nil, err
	}
	for _, l := range relabelled {
		fmt.Fprintf(stderr, "point %s: %s\n", sp.Name, l)
	}
	return ready, cfg, nil
}

// pointConfig is the point's bench.toml: the file's, the overrides over it (placeholders
// expanded), its labels over the [labels] those give, target and out set to the point's.
// relabelled has a line for each label the point's labels (the sweep's [labels], the
// point's variables and labels) give another value than bench.toml or [override] did,
// naming both values and where the replaced one was set, in key order.
func pointConfig(f *File, sp Spec, target string, vals map[string]string) (cfg *config.Config, relabelled []string, err error) {
	cfg = config.Default()
	if f.Bench != "" {
		if cfg, err = config.Load(f.Bench); err != nil {
			return nil, nil, err
		}
	}
	ov, err := expandValue(sp.Override, "[override]", sp.Vars, vals)
	if err != nil {
		return nil, nil, err
	}
	om, _ := ov.(map[string]any)
	// The labels before the point's, and where each was set.
	type label struct {
		v     any
		where string
	}
	before := map[string]label{}
	for k, v := range cfg.Labels {
		before[k] = label{v, cfg.Where("labels." + k)}
	}
	if ol, ok := om["labels"].(map[string]any); ok {
		for k, v := range ol {
			before[k] = label{v, "the sweep's [override]"}
		}
	}
	for _, k := range slices.Sorted(mapKeys(sp.Labels)) {
		if b, ok := before[k]; ok && fmt.Sprint(b.v) != fmt.Sprint(sp.Labels[k]) {
			relabelled = append(relabelled, fmt.Sprintf("label [labels.%s] = %v (the point's) overrides %v (%s)", k, sp.Labels[k], b.v, b.where))
		}
	}
	if len(sp.Labels) > 0 { // into the run's [labels], and so its results header
		om = deepMerge(om, map[string]any{"labels": sp.Labels})
	}
	if len(om) > 0 {
		var buf bytes.Buffer
		if err := toml.NewEncoder(&buf).Encode(om); err != nil {
			return nil, nil, fmt.Errorf("[override]: %w", err)
		}
		md, err := toml.NewDecoder(&buf).Decode(cfg)
		if err != nil {
			return nil, nil, fmt.Errorf("[override]: %w", err)
		}
		var unknown []string
		for _, k := range md.Undecoded() {
			if key := k.String(); !strings.HasPrefix(key, "lengths.config.") && !strings.HasPrefix(key, "router.config.") {
				unknown = append(unknown, "["+key+"]")
			}
		}
		if len(unknown) > 0 {
			return nil, nil, fmt.Errorf("[override]: unknown bench.toml key %s", strings.Join(unknown, ", "))
		}
		for _, k := range md.Keys() {
			cfg.Override(k.String(), "the sweep's [override]")
		}
	}
	cfg.Target, cfg.Out = target, f.Out
	cfg.Override("target", "the sweep's [server] target")
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	return cfg, relabelled, nil
}

// spreads returns the spread of the measured cells' mean per-forward latency and the median
// of their TTFT p50s (nil when no cell has the figure).
func spreads(r *results.Run) (*Spread, *results.Millis) {
	var fwd, ttft []time.Duration
	for _, c := range r.Cells {
		if !results.Measured(c.Status) || c.Figures == nil {
			continue
		}
		if c.Figures.PerForward.N > 0 {
			fwd = append(fwd, c.Figures.PerForward.Mean)
		}
		if c.Figures.TTFT.N > 0 {
			ttft = append(ttft, c.Figures.TTFT.P50)
		}
	}
	var s *Spread
	if len(fwd) > 0 {
		s = &Spread{Min: results.Millis(slices.Min(fwd)), Median: results.Millis(stats.MedianDuration(fwd)), Max: results.Millis(slices.Max(fwd))}
	}
	var t *results.Millis
	if len(ttft) > 0 {
		m := results.Millis(stats.MedianDuration(ttft))
		t = &m
	}
	return s, t
}

// Table prints the sweep summary within report.NarrowWidth columns (for point names and
// values of a usual length): a markdown table with a row per point — its name (or its index,
// when the names would make the table too wide: the names are then listed under it), the
// labels that differ between points (as columns while the table fits, else a line per point
// under it), status, cells measured, the smallest, median and largest mean per-forward
// latency over its cells, the median TTFT p50 and how long its server took to be ready —
// then the labels every point shares, where the results are, and a line per point that is
// not ok with its error.
func Table(w io.Writer, s *Summary) {
	ok := 0
	for _, p := range s.Points {
		if p.Status == StatusOK {
			ok++
		}
	}
	fmt.Fprintf(w, "\n## sweep %s — %s, %d ok\n\n", s.Sweep, points(len(s.Points)), ok)
	shared, varying := splitLabels(s.Points)
	t := layoutTable(s.Points, varying)
	report.MarkdownTable(w, t.head, t.rows, t.left...)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "  fwd ms: the mean per-forward latency of each measured cell, smallest / median / largest over the point's cells")
	if !t.named || (!t.labelCols && len(varying) > 0) {
		writePointLegend(w, s.Points, varying, t)
	}
	writeTableNotes(w, s.Points, shared)
}

// sweepTable is the summary table as Table prints it: its header and rows, the columns
// aligned left (left), whether points are named in the first column (else numbered by
// index), and whether the varying labels are columns (else lines under the table).
type sweepTable struct {
	head             []string
	rows             [][]string
	left             []int
	named, labelCols bool
}

// pointRows returns the table's header and one row per point: name, status, cells
// measured/all, the smallest, median and largest mean per-forward latency (ms, 3 decimals),
// the median TTFT p50 (ms, 1 decimal) and the time to ready (s, 1 decimal); "–" for a figure
// that is absent.
func pointRows(ps []PointResult) ([]string, [][]string) {
	rows := make([][]string, len(ps))
	for i, p := range ps {
		fwdMin, fwdMed, fwdMax, ttft, ready := "–", "–", "–", "–", "–"
		if p.PerForward != nil {
			fwdMin, fwdMed, fwdMax = fmt.Sprintf("%.3f", ms(p.PerForward.Min)), fmt.Sprintf("%.3f", ms(p.PerForward.Median)), fmt.Sprintf("%.3f", ms(p.PerForward.Max))
		}
		if p.TTFT != nil {
			ttft = fmt.Sprintf("%.1f", ms(*p.TTFT))
		}
		if p.ReadyAfter > 0 {
			ready = fmt.Sprintf("%.1f", time.Duration(p.ReadyAfter).Seconds())
		}
		rows[i] = []string{p.Name, p.Status, fmt.Sprintf("%d/%d", p.Measured, p.Cells), fwdMin, fwdMed, fwdMax, ttft, ready}
	}
	return []string{"point", "status", "cells", "fwd ms min", "median", "max", "TTFT p50 ms", "ready s"}, rows
}

// layoutTable picks the first layout of ps's table that fits report.NarrowWidth: named
// rows with the varying labels as columns; numbered rows with them; named rows without;
// else numbered rows without.
func layoutTable(ps []PointResult, varying []string) sweepTable {
	head, rows := pointRows(ps)
	t := sweepTable{head: head, rows: rows, left: []int{0, 1}, named: true}
	if lh, lr := withLabelColumns(ps, varying, head, rows); len(varying) > 0 && report.MarkdownWidth(lh, lr) <= report.NarrowWidth {
		t.head, t.rows, t.labelCols = lh, lr, true
	} else if lh, lr := withLabelColumns(ps, varying, slices.Concat([]string{"#"}, head[1:]), byIndex(ps, rows)); len(varying) > 0 && report.MarkdownWidth(lh, lr) <= report.NarrowWidth {
		t.head, t.rows, t.labelCols, t.named = lh, lr, true, false
	} else if report.MarkdownWidth(head, rows) > report.NarrowWidth {
		t.head, t.rows, t.named = slices.Concat([]string{"#"}, head[1:]), byIndex(ps, rows), false
	}
	if t.labelCols {
		for j := range varying {
			t.left = append(t.left, 1+j)
		}
		t.left = append(t.left, 1+len(varying))
	}
	if !t.named {
		t.left = t.left[1:] // the index is a number
	}
	return t
}

// withLabelColumns returns head and rows with the varying labels' columns after the first.
func withLabelColumns(ps []PointResult, varying, head []string, rows [][]string) ([]string, [][]string) {
	h := slices.Concat(head[:1], varying, head[1:])
	out := make([][]string, len(rows))
	for i, r := range rows {
		vals := make([]string, len(varying))
		for j, k := range varying {
			vals[j] = labelValue(ps[i].Labels, k)
		}
		out[i] = slices.Concat(r[:1], vals, r[1:])
	}
	return h, out
}

// byIndex returns rows with each point's index in place of its name.
func byIndex(ps []PointResult, rows [][]string) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = slices.Concat([]string{strconv.Itoa(ps[i].Index)}, r[1:])
	}
	return out
}

// writePointLegend writes a line per point under a table that numbers its rows ("index =
// name") or leaves out the varying labels (then "name: label=value …").
func writePointLegend(w io.Writer, ps []PointResult, varying []string, t sweepTable) {
	for _, p := range ps {
		line := p.Name
		if !t.named {
			line = fmt.Sprintf("%d = %s", p.Index, p.Name)
		}
		if !t.labelCols && len(varying) > 0 {
			vals := make([]string, len(varying))
			for j, k := range varying {
				vals[j] = k + "=" + labelValue(p.Labels, k)
			}
			line += ": " + strings.Join(vals, " ")
		}
		prose(w, "  ", line)
	}
}

// writeTableNotes writes the lines after the table: the labels every point shares, where
// the results are (one directory, or each point's file), and each point that is not ok
// with the first 3 lines of its error.
func writeTableNotes(w io.Writer, ps []PointResult, shared []string) {
	if len(shared) > 0 {
		prose(w, "  ", "labels of every point: "+strings.Join(shared, " "))
	}
	if dir, ok := commonDir(ps); ok {
		prose(w, "  ", "results: "+dir+"<point>.json, .jsonl and .csv")
	} else {
		for _, p := range ps {
			if what := cmp.Or(p.JSON, p.Results); what != "" {
				prose(w, "  ", p.Name+" results: "+what)
			}
		}
	}
	for _, p := range ps {
		if p.Status != StatusOK {
			prose(w, "✗ ", fmt.Sprintf("%s: %s: %s", p.Name, p.Status, firstLines(p.Error, 3)))
		}
	}
}

// prose writes s wrapped within report.NarrowWidth columns, the first line after indent and
// the others under its text (two spaces further in when indent is blank, so that they read
// as the same item).
func prose(w io.Writer, indent, s string) {
	pad := strings.Repeat(" ", len([]rune(indent)))
	if strings.TrimSpace(indent) == "" {
		pad += "  "
	}
	report.Prose(w, indent, pad, s)
}

// splitLabels returns the labels every point has with one value ("k=v", sorted) and the keys
// of the others (sorted).
func splitLabels(ps []PointResult) (shared []string, varying []string) {
	keys := map[string]bool{}
	for _, p := range ps {
		for k := range p.Labels {
			keys[k] = true
		}
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		same := true
		for _, p := range ps {
			if _, ok := p.Labels[k]; !ok || labelValue(p.Labels, k) != labelValue(ps[0].Labels, k) {
				same = false
			}
		}
		if same {
			shared = append(shared, k+"="+labelValue(ps[0].Labels, k))
		} else {
			varying = append(varying, k)
		}
	}
	return shared, varying
}

// labelValue is the label's value as text, "–" when the point has none.
func labelValue(m map[string]any, k string) string {
	v, ok := m[k]
	if !ok {
		return "–"
	}
	return fmt.Sprint(v)
}

// commonDir is the directory (with its separator) of every point's results when each is
// <dir><point name>.json (or .jsonl, for a run that did not finish writing); ok is false
// otherwise (a point measured again under another run id, or none with results).
func commonDir(ps []PointResult) (string, bool) {
	dir := ""
	for _, p := range ps {
		what := cmp.Or(p.JSON, p.Results)
		if what == "" {
			continue
		}
		base := strings.TrimSuffix(what, filepath.Ext(what))
		if filepath.Base(base) != p.Name {
			return "", false
		}
		d := strings.TrimSuffix(base, p.Name)
		if dir != "" && d != dir {
			return "", false
		}
		dir = d
	}
	return dir, dir != ""
}

func ms(m results.Millis) float64 { return float64(m) / 1e6 }

// firstLines is s's first n lines joined by " / " (a server's last log lines after the
// error's first), "…" added when s has more.
func firstLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	for i := range ls {
		ls[i] = strings.TrimSpace(ls[i])
	}
	if len(ls) > n {
		return strings.Join(ls[:n], " / ") + " / …"
	}
	return strings.Join(ls, " / ")
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func readSummary(path string) (*Summary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("sweep: %s: %w", path, err)
	}
	return &s, nil
}

// writeSummary writes s to path through a temporary file and a rename, so that a sweep
// killed while writing keeps the previous summary.
func writeSummary(path string, s *Summary) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("sweep: encode summary: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	return nil
}

// points is "1 point", "4 points".
func points(n int) string {
	if n == 1 {
		return "1 point"
	}
	return fmt.Sprintf("%d points", n)
}
