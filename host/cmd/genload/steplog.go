package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/steplog"
)

func cmdSteplog(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("steplog", "genload steplog [--preset NAME | --regex RE [--marker S]] [--cmd 'COMMAND'] [--tz ZONE] [--clock-offset D] [--json] [--out FILE] RUN.json [LOG…]",
		`Check a finished run against the server's own step log: whether each cell's batch was really
reached and how long the server's forward passes took. Each record of the log (a line, or
several lines written into one) is aligned to the cell whose [start, end) span holds its time,
and per cell the table gives: the forward passes in the span (prefill-only steps left out when
the log says which steps decode), the modal active occupancy and its share, the share at B,
whether the occupancy ever went above B, and the mean and CV of the forward-pass time over
the steps at exactly B.

The log comes from files (read in the order given: a rotated log's older part first), or from
a command's standard output and error (--cmd, run with sh -c), e.g. 'docker logs vllm'. The
format is a preset (--preset, default genload: the built-in engine's 'genload serve --step-log
FILE') or a regular expression with named groups time and active, and optionally fwd_ms and
decode (--regex); --marker is a literal every record holds, so that a line holding it that
does not parse is reported instead of skipped. Every such line is listed with file:line; the
counts of lines, records, malformed records and other lines are printed, so nothing is lost
silently.

Presets: genload (time=… active=… decode=… wall_ms=…), active-fwd (an ISO time then
active=N … fwd=Xms), sglang ("Decode batch. #running-req: N", every --decode-log-interval
decode steps, no forward time), vllm (the periodic "Running: N reqs" stats line: samples,
not forward passes, no forward time). Timestamps without a zone are read in --tz (default
UTC); vLLM's have no year and take the run's. --clock-offset is added to every log time
(the server clock's lead over genload's: a negative value when the server runs behind).`,
		[][2]string{
			{"the built-in engine's step log of a run", "genload serve --step-log steps.log &  genload run --target http://127.0.0.1:8000 …;  genload steplog results/run.json steps.log"},
			{"a vLLM container's stats lines, logged in local time", "genload steplog --preset vllm --tz Local --cmd 'docker logs vllm' results/run.json"},
			{"a custom per-step line, rotated once", `genload steplog --regex '^(?P<time>\S+) bs=(?P<active>\d+) t=(?P<fwd_ms>[\d.]+)' --marker ' bs=' results/run.json step.log.1 step.log`},
			{"attach the figures to each cell, in a copy of the run", "genload steplog --out results/run-steplog.json results/run.json steps.log"},
		}, e)
	preset := fs.String("preset", "", "log format: "+strings.Join(steplog.PresetNames(), ", ")+" (default genload)")
	regex := fs.String("regex", "", "log format as a regular expression with named groups time, active[, fwd_ms, decode]")
	marker := fs.String("marker", "", "with --regex: a literal every record holds (lines holding it that do not parse are errors)")
	command := fs.String("cmd", "", "read the log from this command's output (sh -c) instead of files")
	tz := fs.String("tz", "UTC", "zone of log timestamps without one: UTC, Local or an IANA name")
	offset := fs.Duration("clock-offset", 0, "added to every log time (server clock minus genload's)")
	asJSON := fs.Bool("json", false, "print the per-cell figures as JSON instead of a table")
	out := fs.String("out", "", "write a copy of the run with each cell's figures attached (\"step_log\") to this .json file")
	if err := parse(fs, args); err != nil {
		return err
	}
	pos := fs.Args()
	if len(pos) < 1 || (len(pos) < 2 && *command == "") || (len(pos) > 1 && *command != "") {
		return exitcode.Errorf(exitcode.Usage, "want RUN.json and one or more log files, or RUN.json and --cmd (see 'genload steplog --help')")
	}
	if *preset != "" && *regex != "" {
		return exitcode.Errorf(exitcode.Usage, "--preset and --regex: give one (see 'genload steplog --help')")
	}
	if *marker != "" && *regex == "" {
		return exitcode.Errorf(exitcode.Usage, "--marker needs --regex (a preset has its own)")
	}
	var f steplog.Format
	var err error
	if *regex != "" {
		f, err = steplog.NewFormat(*regex, *marker)
	} else {
		f, err = steplog.Preset(orDefault(*preset, "genload"))
	}
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	loc, err := time.LoadLocation(*tz)
	if err != nil {
		return exitcode.Errorf(exitcode.Usage, "--tz %q: %v", *tz, err)
	}
	run, err := report.ReadFile(pos[0])
	if err != nil {
		return err
	}
	p := steplog.NewParser(f, steplog.Options{Location: loc, Reference: run.Header.Started})
	if *command != "" {
		if err := readCommand(ctx, p, *command); err != nil {
			return err
		}
	} else {
		for _, name := range pos[1:] {
			fl, err := os.Open(name)
			if err != nil {
				return exitcode.With(exitcode.InvalidConfig, fmt.Errorf("step log: %w", err)) // a missing input, like a missing corpus
			}
			err = p.Read(fl, name)
			fl.Close()
			if err != nil {
				return fmt.Errorf("step log: %w", err)
			}
		}
	}
	recs := p.Records()
	for i := range recs {
		recs[i].Time = recs[i].Time.Add(-*offset)
	}
	rows := steplogRows(run, recs, f.HasFwd())
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rows); err != nil {
			return err
		}
	} else {
		writeSteplogTable(e.stdout, rows, f)
	}
	st := p.Stats()
	fmt.Fprintf(e.stderr, "step log: %d lines, %d records, %d malformed, %d other lines", st.Lines, st.Records, st.Malformed, st.Other)
	if st.Truncations+st.Replacements > 0 {
		fmt.Fprintf(e.stderr, ", %d truncations, %d replacements (%d lines cut)", st.Truncations, st.Replacements, st.CutLines)
	}
	fmt.Fprintln(e.stderr)
	errs := p.Errors()
	for i, err := range errs {
		if i == 20 {
			fmt.Fprintf(e.stderr, "  … and %d more malformed records\n", len(errs)-i)
			break
		}
		fmt.Fprintf(e.stderr, "  %v\n", err)
	}
	if *out != "" {
		for _, r := range rows {
			if r.at >= 0 {
				fig := r.Figures
				run.Cells[r.at].StepLog = &fig
			}
		}
		if err := report.WriteJSON(*out, run); err != nil {
			return err
		}
	}
	if st.Records == 0 {
		return fmt.Errorf("no record in the step log matched the %s format (%d lines read)", f.Name, st.Lines)
	}
	return nil
}

// orDefault returns a, or b when a is "".
func orDefault(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// readCommand runs command with sh -c and parses its standard output and error, each line as
// it comes (the two streams interleave by line; the parser sorts records by time).
func readCommand(ctx context.Context, p *steplog.Parser, command string) error {
	c := exec.CommandContext(ctx, "sh", "-c", command)
	var stderr bytes.Buffer
	stdout, err := c.StdoutPipe()
	if err != nil {
		return err
	}
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		return fmt.Errorf("step log --cmd %q: %w", command, err)
	}
	rerr := p.Read(stdout, "cmd stdout")
	werr := c.Wait()
	if err := p.Read(&stderr, "cmd stderr"); err != nil {
		return err
	}
	if rerr != nil {
		return fmt.Errorf("step log --cmd %q: %w", command, rerr)
	}
	if werr != nil {
		return fmt.Errorf("step log --cmd %q: %w", command, werr)
	}
	return nil
}

// steplogRow is one cell's row: its key, status and step-log figures.
type steplogRow struct {
	Key     string          `json:"cell"`
	SeqLen  int             `json:"seq_len"`
	Batch   int             `json:"batch"`
	Status  string          `json:"status"`
	Figures steplog.Figures `json:"step_log"`
	Start   time.Time       `json:"start"`
	End     time.Time       `json:"end"`
	at      int             // index in run.Cells, -1 for none
}

// steplogRows aligns recs to every cell of run that has a start time, in run order.
func steplogRows(run *report.Run, recs []steplog.Record, hasFwd bool) []steplogRow {
	var rows []steplogRow
	for i, c := range run.Cells {
		if c.Started.IsZero() {
			continue
		}
		s := steplog.Span{Start: c.Started, End: c.Started.Add(time.Duration(c.Elapsed)), Batch: c.Cell.Batch}
		rows = append(rows, steplogRow{Key: c.Cell.Key(), SeqLen: c.Cell.SeqLen, Batch: c.Cell.Batch, Status: c.Status,
			Figures: steplog.Attain(recs, s, hasFwd), Start: s.Start, End: s.End, at: i})
	}
	return rows
}

// writeSteplogTable prints the per-cell markdown table and the run summary.
func writeSteplogTable(w io.Writer, rows []steplogRow, f steplog.Format) {
	unit := "forwards"
	if f.Sample {
		unit = "samples"
	}
	fmt.Fprintf(w, "| L | B | status | %s | modal active | at B | never above B | fwd at B ms | fwd CV %% | note |\n", unit)
	fmt.Fprintln(w, "|---:|---:|---|---:|---:|---:|---|---:|---:|---|")
	var modalOK, neverAbove, measured int
	var shares, cvs []float64
	for _, r := range rows {
		g := r.Figures
		if g.Forwards == 0 {
			fmt.Fprintf(w, "| %d | %d | %s | 0 | – | – | – | – | – | %s |\n", r.SeqLen, r.Batch, r.Status, g.Reason)
			continue
		}
		measured++
		if g.ModalAtTarget {
			modalOK++
		}
		if g.NeverAbove {
			neverAbove++
		}
		shares = append(shares, g.AtTargetShare)
		fwd, cv := "–", "–"
		if g.FwdN > 0 {
			fwd, cv = fmt.Sprintf("%.3f", g.FwdMeanMs), fmt.Sprintf("%.2f", 100*g.FwdCV)
			cvs = append(cvs, g.FwdCV)
		}
		note := g.Reason
		if g.FwdN == 0 && g.FwdReason != "" && note == "" {
			note = g.FwdReason
		}
		above := "yes"
		if !g.NeverAbove {
			above = fmt.Sprintf("no (%d, max %d)", g.Above, g.MaxActive)
		}
		fmt.Fprintf(w, "| %d | %d | %s | %d | %d (%.1f %%) | %.2f %% | %s | %s | %s | %s |\n",
			r.SeqLen, r.Batch, r.Status, g.Forwards, g.Modal, 100*g.ModalShare, 100*g.AtTargetShare, above, fwd, cv, note)
	}
	fmt.Fprintf(w, "\n%d of %d cells have step-log records: B is the modal occupancy in %d, never exceeded in %d", measured, len(rows), modalOK, neverAbove)
	if len(shares) > 0 {
		fmt.Fprintf(w, "; share of %s at B: median %.2f %%", unit, 100*medianOf(shares))
	}
	if len(cvs) > 0 {
		fmt.Fprintf(w, "; fwd CV at B: median %.2f %%, max %.2f %%", 100*medianOf(cvs), 100*slices.Max(cvs))
	}
	fmt.Fprintln(w, ".")
}

// medianOf returns the median of xs (the mean of the middle two for an even count).
func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
