// Package cellcheck checks each cell of a finished run against the server's own step log
// (genload steplog): the log is read (files or a command's output, package steplog), its
// records are aligned to the cells by time — a record belongs to the cell whose [start, end)
// span holds it — and summarised per cell by steplog.Attain; malformed records are noted in
// the cells whose spans their time brackets lie in or overlap, and when no record falls in any
// cell the log's span is set against the run's, to choose a zone or a clock offset.
//
// Files: check.go (Check, the rows, the summary on stderr), table.go (the markdown table).
package cellcheck

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/steplog"
)

// Options say where the log is and how to read it.
type Options struct {
	// Format is the log's format (a preset or a regular expression).
	Format steplog.Format
	// Location is the zone of timestamps without one; TZ its name as given (--tz), for the
	// hint printed when no record falls in any cell. Nil Location is UTC.
	Location *time.Location
	TZ       string
	// Offset is the server clock's lead over genload's (--clock-offset): it is subtracted
	// from every log time (records and lost records' brackets) before the alignment.
	Offset time.Duration
	// Files are the log files, read in this order (a rotated log's older part first), or
	// Command the command whose standard output and error are the log (sh -c); one of them.
	Files   []string
	Command string
}

// Row is one cell record's row: its key, repeat (a run with repeats has a record per
// (cell, repeat); 0 otherwise), status, step-log figures and the format's notes on them.
type Row struct {
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
	at        int             // index in the run's Cells
}

// Result is the check of a run against a log.
type Result struct {
	// Rows are the run's cell records that have a start time, in run order.
	Rows []Row
	// Records are the log's records (sorted by time, Offset applied).
	Records []steplog.Record
	run     *results.Run
	p       *steplog.Parser
	opt     Options
}

// Check reads the log of opt and aligns it to run's cells. A log file that cannot be read is
// the error, with no result (steplog.Parser.ReadFile). Otherwise the result holds what was
// read, and the error, when not nil, is for after the table: the command's failure or the
// interrupt (steplog.Parser.ReadCommand), else, when no record of the log matched the format,
// that (exitcode.InvalidConfig: the log is not one of the format).
func Check(ctx context.Context, run *results.Run, opt Options) (*Result, error) {
	if opt.Location == nil {
		opt.Location = time.UTC
	}
	p := steplog.NewParser(opt.Format, steplog.Options{Location: opt.Location, Reference: run.Header.Started})
	var after error // the command's failure or the interrupt: reported after the table
	if opt.Command != "" {
		after = p.ReadCommand(ctx, opt.Command)
		if exitcode.Of(after) == exitcode.Usage {
			return nil, after
		}
	} else {
		for _, name := range opt.Files {
			if err := p.ReadFile(name); err != nil {
				return nil, err
			}
		}
	}
	recs := p.Records()
	for i := range recs {
		recs[i].Time = recs[i].Time.Add(-opt.Offset)
	}
	lost := p.Lost()
	for i := range lost {
		for _, t := range []*time.Time{&lost[i].From, &lost[i].To} {
			if !t.IsZero() {
				*t = t.Add(-opt.Offset)
			}
		}
	}
	res := &Result{Rows: rows(run, recs, opt.Format), Records: recs, run: run, p: p, opt: opt}
	markLost(res.Rows, lost)
	if after == nil && p.Stats().Records == 0 {
		// not a step log of the format: an invalid input file (exit 3), after its table
		after = exitcode.Errorf(exitcode.InvalidConfig, "no record in the step log matched the %s format (%d lines read)", opt.Format.Name, p.Stats().Lines)
	}
	return res, after
}

// rows aligns recs to every cell of run that has a start time, in run order; rows with a
// forward time carry f's notes on it. A cell's span is its start to its end, or, for a cell
// whose measured requests were sent again (results.Cell.Remeasured), the end of the last
// discarded attempt to its end: the steps of the attempt its figures are from.
func rows(run *results.Run, recs []steplog.Record, f steplog.Format) []Row {
	hasFwd := f.HasFwd()
	var rows []Row
	for i, c := range run.Cells {
		if c.Started.IsZero() {
			continue
		}
		s := steplog.Span{Start: c.Started, End: c.Started.Add(time.Duration(c.Elapsed)), Batch: c.Cell.Batch}
		if n := len(c.Remeasured); n > 0 && !c.Remeasured[n-1].Ended.IsZero() {
			s.Start = c.Remeasured[n-1].Ended // the attempts sent again are not the figures'
		}
		r := Row{Key: c.Cell.Key(), SeqLen: c.Cell.SeqLen, Batch: c.Cell.Batch, Repeat: c.Repeat, Status: c.Status,
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
func markLost(rows []Row, lost []steplog.Lost) {
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

// Attached returns the run with each checked cell's figures attached (Cell.StepLog): the
// run given to Check, changed in place, for a copy to be written.
func (r *Result) Attached() *results.Run {
	for _, row := range r.Rows {
		fig := row.Figures
		r.run.Cells[row.at].StepLog = &fig
	}
	return r.run
}

// WriteSummary writes what was read, for stderr: the counts of lines, records, malformed
// records and other lines (with truncations, replacements and duplicate records when there
// were), the hint on the log's and the run's spans when records were read but none fell in a
// cell, and the first 20 malformed records with their file:line.
func (r *Result) WriteSummary(w io.Writer) {
	p := r.p
	st := p.Stats()
	fmt.Fprintf(w, "step log: %d lines, %d records, %d malformed, %d other lines", st.Lines, st.Records, st.Malformed, st.Other)
	if st.Truncations+st.Replacements > 0 {
		fmt.Fprintf(w, ", %d truncations, %d replacements (%d lines cut)", st.Truncations, st.Replacements, st.CutLines)
	}
	if st.DuplicateLines > 0 {
		fmt.Fprintf(w, "; %d duplicate records counted once (%d lines repeat, byte for byte, lines read before: the same log given twice, or rotated parts that overlap): %s",
			st.Duplicates, st.DuplicateLines, strings.Join(p.Duplicates(), ", "))
		if st.DuplicateLines > len(p.Duplicates()) {
			fmt.Fprint(w, ", …")
		}
	}
	fmt.Fprintln(w)
	if st.Records > 0 && !r.anyAligned() {
		fmt.Fprintln(w, r.spanHint())
	}
	errs := p.Errors()
	for i, err := range errs {
		if i == 20 {
			fmt.Fprintf(w, "  … and %d more malformed records\n", len(errs)-i)
			break
		}
		fmt.Fprintf(w, "  %v\n", err)
	}
}

// anyAligned reports whether some row has a record of the log.
func (r *Result) anyAligned() bool {
	for _, row := range r.Rows {
		if row.Figures.Records > 0 {
			return true
		}
	}
	return false
}

// spanHint says, when no record of the log fell in any cell, where the log's records lie
// against the run's cells, and what could be wrong: another server's or run's log, a zone
// (--tz), a clock offset (--clock-offset).
func (r *Result) spanHint() string {
	var start, end time.Time
	for _, c := range r.run.Cells {
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
	recs := r.Records
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
		f(first), f(last), f(start), f(end), gap, r.opt.TZ, r.opt.Offset)
}
