package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"time"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/cliflag"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/steplog"
	"github.com/genload/genload/host/steplog/cellcheck"
)

// steplogHelp is genload steplog's description in its --help.
const steplogHelp = `Check a finished run against the server's own step log: whether each cell's batch was really
reached and how long the server's forward passes took. Each record of the log (a line, or
several lines written into one) is aligned to the cell whose [start, end) span holds its time,
and per cell the table gives: the forward passes in the span (prefill-only steps left out when
the log says which steps decode), the modal active occupancy and its share, the share at B,
whether the occupancy ever went above B, and the mean and CV of the forward-pass time over
the steps at exactly B.

The log comes from files (read in the order given: a rotated log's older part first; a
line read before, byte for byte — the same file given twice, rotated parts that overlap — is
counted once and reported; gzip-compressed files are refused: give --cmd 'zcat FILE'), or
from a command's standard output and error (--cmd, run with sh -c), e.g. 'docker logs vllm'.
A command that exits non-zero keeps what it wrote: the table is printed, then its exit
status and the last lines of its stderr that held no record, and the exit code is 1. A
command that does not end by itself (tail -f) is read until Ctrl-C, which stops it: the
table of what was read is printed, exit 130; give 'tail -n +1 FILE' (no -f) to end. The
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
(the server clock's lead over genload's: a negative value when the server runs behind).
When no record falls in any cell, the log's time span and the run's are printed with the
gap between them, to choose --tz or --clock-offset.

Notes under the table say what a format's forward time measures when it is not the server's
forward pass alone: the genload preset's is each step's wall time on the engine's host (its
CV is that host's sleep jitter on top of the injected noise); a format without a decode group
(active-fwd) counts the steps at B that also prefill in fwd at B. A cell with one step at B
has no fwd CV, with that reason.`

func cmdSteplog(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("steplog", "genload steplog [--preset NAME | --regex RE [--marker S]] [--cmd 'COMMAND'] [--tz ZONE] [--clock-offset D] [--json] [--out FILE] RUN.json [LOG…]",
		steplogHelp, [][2]string{
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
	out := fs.String("out", "", "write a copy of the run with each cell's figures attached (\"step_log\") to this .json file (not the run's own file)")
	if err := cliflag.Parse(fs, args); err != nil {
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
	if *out != "" {
		if !strings.HasSuffix(*out, ".json") {
			return exitcode.Errorf(exitcode.Usage, "--out %s: want a .json file (the copy is one JSON document, not JSON Lines)", *out)
		}
		if same, _ := sameFile(*out, pos[0]); same {
			return exitcode.Errorf(exitcode.Usage, "--out %s is the run's own file: give another name for the copy", *out)
		}
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
	run, err := results.ReadFile(pos[0])
	if err != nil {
		return exitcode.With(exitcode.InvalidConfig, err) // an unreadable or invalid input file
	}
	res, err := cellcheck.Check(ctx, run, cellcheck.Options{Format: f, Location: loc, TZ: *tz, Offset: *offset, Files: pos[1:], Command: *command})
	if res == nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res.Rows); err != nil {
			return err
		}
	} else {
		res.WriteTable(e.stdout)
	}
	res.WriteSummary(e.stderr)
	if *out != "" {
		if err := results.WriteJSON(*out, res.Attached()); err != nil {
			return err
		}
	}
	return err
}

// sameFile reports whether a and b name the same existing file.
func sameFile(a, b string) (bool, error) {
	sa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	sb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(sa, sb), nil
}

// orDefault returns a, or b when a is "".
func orDefault(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
