package run

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/genload/genload/host/compare"
	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/results"
)

// Repeated runs cfg with opt.Repeats set (genload run --repeat N or --until-cv: one results
// file, a record per cell and repeat), then writes to opt.Stdout, after the run's table, what
// genload consistency prints for its results file, as read back from it: whether the run is
// comparable with itself (compare.RunsComparability), the consistency of each cell's repeats
// ([compare.ConsistentRepeats]) and how each cell's repeats ended
// ([WriteRepeats]); the GPU time is printed once, by Run with its other closing lines
// (stderr). It returns the consistency for a threshold to be held against (nil when the run
// failed before any cell had two measured repeats), and the run's error: a run that failed or
// was interrupted writes the same from what its file holds (the consistency when a cell has
// two measured repeats). Flagged cells are listed, not an error.
func Repeated(ctx context.Context, cfg *config.Config, opt Options) (*compare.Consistency, error) {
	if opt.Repeats == nil {
		return nil, exitcode.Errorf(exitcode.Usage, "run.Repeated without Options.Repeats")
	}
	if opt.Stdout == nil {
		opt.Stdout = io.Discard
	}
	res, runErr := Run(ctx, cfg, opt)
	if res == nil {
		return nil, runErr
	}
	path := res.JSON
	if path == "" {
		path = res.JSONL
	}
	r, err := results.ReadFile(path)
	if err != nil {
		return nil, errors.Join(runErr, err)
	}
	c, cerr := compare.ConsistentRepeats(r)
	if cerr == nil {
		report.Prose(opt.Stdout, "", "  ", compare.RunsComparability([]*results.Run{r}, nil).Line(compare.AcrossInstances...))
		c.WriteMarkdown(opt.Stdout)
	} else if runErr == nil {
		return nil, cerr
	}
	WriteRepeats(opt.Stdout, res.Repeats, *opt.Repeats)
	return c, runErr
}

// WriteConsistency writes to w the consistency of the results files files, read as runs
// (genload consistency), after the line saying whether they are comparable
// ([compare.RunsComparability]): of two or more runs, each cell's CV across them ([compare.Consistent];
// a run with repeats counts as one run of its cells' pooled means; the N files of an earlier
// genload's --repeat N are N such runs); of one run with repeats, each cell's CV over its own
// repeats ([compare.ConsistentRepeats]) and, when its header records the protocol, how each
// cell's repeats ended ([RepeatsOf], [WriteRepeats]: the summary the run printed). One run
// without repeats is an exitcode.Usage error; a file that does not hold what its header
// says, exitcode.InvalidConfig, naming it.
func WriteConsistency(w io.Writer, runs []*results.Run, files []string) (*compare.Consistency, error) {
	if len(runs) != 1 {
		c, err := compare.Consistent(runs)
		if err != nil {
			return nil, err
		}
		// Repeats of one matrix: every field must agree but the instance of an external
		// deployment; the first line says whether they do. Runs are called by their files,
		// as diff and gate call them.
		report.Prose(w, "", "  ", compare.RunsComparability(runs, files).Line(compare.AcrossInstances...))
		c.WriteMarkdown(w)
		return c, nil
	}
	r := runs[0]
	if !r.HasRepeats() {
		return nil, exitcode.Errorf(exitcode.Usage, "%s: one results file without repeats: need at least two results files, or one of a run with repeats (genload run --repeat or --until-cv) (see 'genload consistency --help')", files[0])
	}
	c, err := compare.ConsistentRepeats(r)
	if err != nil {
		return nil, exitcode.With(exitcode.InvalidConfig, fmt.Errorf("%s: %w", files[0], err))
	}
	report.Prose(w, "", "  ", compare.RunsComparability([]*results.Run{r}, nil).Line(compare.AcrossInstances...))
	c.WriteMarkdown(w)
	if _, ok := RuleOf(r.Header); ok {
		cells, rule, err := RepeatsOf(r)
		if err != nil {
			return nil, exitcode.With(exitcode.InvalidConfig, fmt.Errorf("%s: %w", files[0], err))
		}
		WriteRepeats(w, cells, rule)
	}
	return c, nil
}
