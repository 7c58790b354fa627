package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
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
has no fwd CV, with that reason.`,
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
	out := fs.String("out", "", "write a copy of the run with each cell's figures attached (\"step_log\") to this .json file (not the run's own file)")
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
	run, err := report.ReadFile(pos[0])
	if err != nil {
		return exitcode.With(exitcode.InvalidConfig, err) // an unreadable or invalid input file
	}
	p := steplog.NewParser(f, steplog.Options{Location: loc, Reference: run.Header.Started})
	var cmdErr error // the command's failure or the interrupt: reported after the table
	if *command != "" {
		cmdErr = readCommand(ctx, p, *command, e.stderr)
		if exitcode.Of(cmdErr) == exitcode.Usage {
			return cmdErr
		}
	} else {
		for _, name := range pos[1:] {
			if err := readLogFile(p, name); err != nil {
				return err
			}
		}
	}
	recs := p.Records()
	for i := range recs {
		recs[i].Time = recs[i].Time.Add(-*offset)
	}
	lost := p.Lost()
	for i := range lost {
		for _, t := range []*time.Time{&lost[i].From, &lost[i].To} {
			if !t.IsZero() {
				*t = t.Add(-*offset)
			}
		}
	}
	rows := steplogRows(run, recs, f)
	markLost(rows, lost)
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
	if st.DuplicateLines > 0 {
		fmt.Fprintf(e.stderr, "; %d duplicate records counted once (%d lines repeat, byte for byte, lines read before: the same log given twice, or rotated parts that overlap): %s",
			st.Duplicates, st.DuplicateLines, strings.Join(p.Duplicates(), ", "))
		if st.DuplicateLines > len(p.Duplicates()) {
			fmt.Fprint(e.stderr, ", …")
		}
	}
	fmt.Fprintln(e.stderr)
	if st.Records > 0 && !anyAligned(rows) {
		fmt.Fprintln(e.stderr, spanHint(recs, run, *tz, *offset))
	}
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
	if cmdErr != nil {
		return cmdErr
	}
	if st.Records == 0 {
		return fmt.Errorf("no record in the step log matched the %s format (%d lines read)", f.Name, st.Lines)
	}
	return nil
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

// readLogFile parses the log file name into p; a gzip-compressed file (its first two bytes
// 1f 8b) is refused rather than read as bytes.
func readLogFile(p *steplog.Parser, name string) error {
	fl, err := os.Open(name)
	if err != nil {
		return exitcode.With(exitcode.InvalidConfig, fmt.Errorf("step log: %w", err)) // a missing input, like a missing corpus
	}
	defer fl.Close()
	br := bufio.NewReader(fl)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		return exitcode.Errorf(exitcode.InvalidConfig, "step log %s: gzip-compressed; decompress it, or read it with --cmd 'zcat %s'", name, name)
	}
	if err := p.Read(br, name); err != nil {
		return fmt.Errorf("step log: %w", err)
	}
	return nil
}

// anyAligned reports whether some row has a record of the log.
func anyAligned(rows []steplogRow) bool {
	for _, r := range rows {
		if r.Figures.Records > 0 {
			return true
		}
	}
	return false
}

// spanHint says, when no record of the log fell in any cell, where the log's records lie
// against the run's cells (recs sorted by time, offset already applied), and what could be
// wrong: another server's or run's log, a zone (--tz), a clock offset (--clock-offset).
func spanHint(recs []steplog.Record, run *report.Run, tz string, offset time.Duration) string {
	var start, end time.Time
	for _, c := range run.Cells {
		if c.Started.IsZero() {
			continue
		}
		if start.IsZero() || c.Started.Before(start) {
			start = c.Started
		}
		if e := c.Started.Add(time.Duration(c.Elapsed)); e.After(end) {
			end = e
		}
	}
	first, last := recs[0].Time, recs[len(recs)-1].Time
	f := func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000") }
	var gap string
	switch {
	case last.Before(start):
		gap = fmt.Sprintf("the log ends %v before the run's first cell", start.Sub(last).Round(time.Millisecond))
	case first.After(end):
		gap = fmt.Sprintf("the log starts %v after the run's last cell", first.Sub(end).Round(time.Millisecond))
	default:
		gap = "the spans overlap but no record falls inside a cell"
	}
	return fmt.Sprintf("step log: no record falls in any cell: the log's records span %s – %s UTC, the run's cells %s – %s UTC; %s.\n"+
		"  A log of another server or run? Timestamps without a zone were read in --tz %s; if the server logs another zone give it (--tz Local, --tz Europe/Berlin),"+
		" and if its clock differs give --clock-offset (now %v: the server clock's lead over genload's).",
		f(first), f(last), f(start), f(end), gap, tz, offset)
}

// orDefault returns a, or b when a is "".
func orDefault(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// readCommand runs command with sh -c and parses its standard output and standard error,
// each line as it comes (the two interleave by line; the parser sorts records by time):
// servers log to either (docker logs gives a container's stderr on its stderr). What was read
// is kept whatever happens. The error is the command's, returned for after the table: a
// non-zero exit with the last lines of its stderr that held no record (its own complaint),
// or, on an interrupt (a command that does not end, such as tail -f, stopped by Ctrl-C),
// Interrupted.
func readCommand(ctx context.Context, p *steplog.Parser, command string, stderr io.Writer) error {
	c := exec.CommandContext(ctx, "sh", "-c", command)
	c.WaitDelay = time.Second // a child left holding the pipes after sh is killed
	outPipe, err := c.StdoutPipe()
	if err != nil {
		return err
	}
	errPipe, err := c.StderrPipe()
	if err != nil {
		return err
	}
	if err := c.Start(); err != nil {
		return fmt.Errorf("step log --cmd %q: %w", command, err)
	}
	// One goroutine per stream, each handing whole lines to the parser under one lock; the
	// stderr lines that hold no record are kept (the last few) to show on failure.
	var mu sync.Mutex
	var tail []string
	read := func(r io.Reader, name string, keep bool) error {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		n := 0
		for sc.Scan() {
			n++
			mu.Lock()
			before := p.Stats()
			p.Line(fmt.Sprintf("%s:%d", name, n), strings.TrimRight(sc.Text(), "\r"))
			if keep && p.Stats().Other > before.Other {
				tail = append(tail, sc.Text())
				if len(tail) > 5 {
					tail = tail[1:]
				}
			}
			mu.Unlock()
		}
		if err := sc.Err(); err != nil {
			io.Copy(io.Discard, r) // keep the command from blocking on a full pipe
			return fmt.Errorf("%s line %d: %w", name, n+1, err)
		}
		return nil
	}
	errc := make(chan error, 1)
	exitcode.Go(func() { errc <- read(errPipe, "cmd stderr", true) })
	rerr := read(outPipe, "cmd stdout", false)
	eerr := <-errc
	werr := c.Wait()
	if ctx.Err() != nil {
		return &exitcode.Error{Code: exitcode.Interrupted, Err: fmt.Errorf("step log --cmd %q: interrupted; the table holds what it wrote until then", command)}
	}
	if werr != nil {
		msg := fmt.Sprintf("step log --cmd %q: %v; the table holds what it wrote before", command, werr)
		if len(tail) > 0 {
			msg += "; its stderr ended with:\n  " + strings.Join(tail, "\n  ")
		}
		return errors.New(msg)
	}
	if err := errors.Join(rerr, eerr); err != nil {
		return fmt.Errorf("step log --cmd %q: %w", command, err)
	}
	return nil
}

// steplogRow is one cell's row: its key, repeat (a run with repeats has a record per
// (cell, repeat); 0 otherwise), status, step-log figures and the format's notes on them.
type steplogRow struct {
	Key    string   `json:"cell"`
	SeqLen int      `json:"seq_len"`
	Batch  int      `json:"batch"`
	Repeat int      `json:"repeat,omitempty"`
	Status string   `json:"status"`
	Notes  []string `json:"fwd_notes,omitempty"`
	// Lost are the malformed lines ("file:line") whose record lay in the cell (the records
	// read before and after it both in the span), MaybeLost those whose bracket only
	// overlaps it: the figures may miss a forward pass.
	Lost      []string        `json:"lost_records,omitempty"`
	MaybeLost []string        `json:"maybe_lost_records,omitempty"`
	Figures   steplog.Figures `json:"step_log"`
	Start     time.Time       `json:"start"`
	End       time.Time       `json:"end"`
	at        int             // index in run.Cells, -1 for none
}

// steplogRows aligns recs to every cell of run that has a start time, in run order; rows
// with a forward time carry f's notes on it.
func steplogRows(run *report.Run, recs []steplog.Record, f steplog.Format) []steplogRow {
	hasFwd := f.HasFwd()
	var rows []steplogRow
	for i, c := range run.Cells {
		if c.Started.IsZero() {
			continue
		}
		s := steplog.Span{Start: c.Started, End: c.Started.Add(time.Duration(c.Elapsed)), Batch: c.Cell.Batch}
		r := steplogRow{Key: c.Cell.Key(), SeqLen: c.Cell.SeqLen, Batch: c.Cell.Batch, Repeat: c.Repeat, Status: c.Status,
			Figures: steplog.Attain(recs, s, hasFwd), Start: s.Start, End: s.End, at: i}
		if r.Figures.FwdN > 0 {
			r.Notes = f.Notes()
		}
		rows = append(rows, r)
	}
	return rows
}

// markLost records in each row the malformed records whose time bracket lies in (Lost) or
// overlaps (MaybeLost) its span; a record whose bracket is open on one side overlaps every
// span on that side of its known bound.
func markLost(rows []steplogRow, lost []steplog.Lost) {
	for i := range rows {
		r := &rows[i]
		for _, l := range lost {
			if l.From.IsZero() && l.To.IsZero() {
				continue // nothing known: counted in the summary's malformed records
			}
			inside := !l.From.IsZero() && !l.To.IsZero() && !l.From.Before(r.Start) && l.To.Before(r.End)
			overlaps := (l.From.IsZero() || l.From.Before(r.End)) && (l.To.IsZero() || !l.To.Before(r.Start))
			switch {
			case inside:
				r.Lost = append(r.Lost, l.Src)
			case overlaps:
				r.MaybeLost = append(r.MaybeLost, l.Src)
			}
		}
	}
}

// lostNote is a row's note on its lost records, "" when none.
func lostNote(r steplogRow) string {
	var n []string
	if len(r.Lost) > 0 {
		n = append(n, fmt.Sprintf("%d record(s) lost to malformed lines (%s)", len(r.Lost), strings.Join(r.Lost, ", ")))
	}
	if len(r.MaybeLost) > 0 {
		n = append(n, fmt.Sprintf("may have lost %d record(s) to malformed lines at its edges (%s)", len(r.MaybeLost), strings.Join(r.MaybeLost, ", ")))
	}
	return strings.Join(n, "; ")
}

// writeSteplogTable prints the per-cell markdown table (with a repeat column when the run
// has repeats; report.MarkdownTable, so every row has the header's cells), the run summary
// and the notes, numbered and referenced where they apply: first the format's notes on its
// forward time (from the fwd column's header), then each distinct note of a row (a reason,
// lost records; from its notes cell) — kept out of the table so that its lines stay within
// 120 columns. "above B" is how many forwards ran with more than B sequences, "never" for
// none.
func writeSteplogTable(w io.Writer, rows []steplogRow, f steplog.Format) {
	unit := "forwards"
	if f.Sample {
		unit = "samples"
	}
	reps := slices.ContainsFunc(rows, func(r steplogRow) bool { return r.Repeat > 0 })
	notes := f.Notes()
	number := map[string]int{}
	for i, n := range notes {
		number[n] = i + 1
	}
	fmtRefs := ""
	for i := range notes {
		fmtRefs += fmt.Sprintf("[%d]", i+1)
	}
	ref := func(text string) string {
		if _, ok := number[text]; !ok {
			notes = append(notes, text)
			number[text] = len(notes)
		}
		return fmt.Sprintf("[%d]", number[text])
	}
	fwdHead := "fwd ms at B"
	if fmtRefs != "" {
		fwdHead += " " + fmtRefs // the format's notes concern the whole column
	}
	head := []string{"L", "B", "status", unit, "modal active", "at B", "above B", fwdHead, "fwd CV %", "notes"}
	left := []int{2, 6, 9}
	if reps {
		head = slices.Insert(head, 2, "repeat")
		left = []int{3, 7, 10}
	}
	var table [][]string
	var modalOK, neverAbove, measured int
	var shares, cvs []float64
	for _, r := range rows {
		g := r.Figures
		var refs []string
		cells := []string{strconv.Itoa(r.SeqLen), strconv.Itoa(r.Batch)}
		if reps {
			cells = append(cells, strconv.Itoa(r.Repeat))
		}
		if g.Forwards == 0 {
			if g.Reason != "" {
				refs = append(refs, ref(g.Reason))
			}
			if ln := lostNote(r); ln != "" {
				refs = append(refs, ref(ln))
			}
			table = append(table, append(cells, r.Status, "0", "–", "–", "–", "–", "–", strings.Join(refs, " ")))
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
		if g.Reason != "" {
			refs = append(refs, ref(g.Reason))
		}
		if g.FwdN > 0 {
			fwd = fmt.Sprintf("%.3f", g.FwdMeanMs)
			if g.FwdCV != nil {
				cv = fmt.Sprintf("%.2f", 100**g.FwdCV)
				cvs = append(cvs, *g.FwdCV)
			} else {
				refs = append(refs, ref(g.FwdCVReason))
			}
		} else if g.FwdReason != "" && g.Reason == "" {
			refs = append(refs, ref(g.FwdReason))
		}
		if ln := lostNote(r); ln != "" {
			refs = append(refs, ref(ln))
		}
		above := "never"
		if !g.NeverAbove {
			above = fmt.Sprintf("%d× (max %d)", g.Above, g.MaxActive)
		}
		table = append(table, append(cells, r.Status, strconv.Itoa(g.Forwards), fmt.Sprintf("%d (%.1f %%)", g.Modal, 100*g.ModalShare),
			fmt.Sprintf("%.2f %%", 100*g.AtTargetShare), above, fwd, cv, strings.Join(refs, " ")))
	}
	report.MarkdownTable(w, head, table, left...)
	sum := fmt.Sprintf("%d of %d cells have step-log records: B is the modal occupancy in %d, never exceeded in %d", measured, len(rows), modalOK, neverAbove)
	if len(shares) > 0 {
		sum += fmt.Sprintf("; share of %s at B: median %.2f %%", unit, 100*medianOf(shares))
	}
	if len(cvs) > 0 {
		sum += fmt.Sprintf("; fwd CV at B: median %.2f %%, max %.2f %%", 100*medianOf(cvs), 100*slices.Max(cvs))
	}
	fmt.Fprintln(w)
	report.Prose(w, "", "", sum+".")
	for i, n := range notes {
		mark := fmt.Sprintf("[%d] ", i+1)
		report.Prose(w, mark, strings.Repeat(" ", len(mark)), n+".")
	}
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
