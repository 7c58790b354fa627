package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/run"
)

// cvStats are the values of --cv-stat: the run-level statistic held against --max-cv.
var cvStats = []string{"max", "p90", "median"}

func cmdConsistency(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("consistency", "genload consistency [--max-cv PCT] [--cv-stat max|p90|median] RUN.json [RUN.json…]",
		`Compare repeated runs of the same matrix (.json or .jsonl results files, at least two): for
each cell measured in every run, the coefficient of variation (CV) of its mean per-forward
latency over the runs — CV = sample standard deviation / mean, in % — and, when the runs kept
HDR histograms, the per-forward percentiles of all runs' sequences merged. Then the run-level
summary: median, P90 and max per-cell CV; cells with CV ≤ 5 % and ≤ 10 %; each run's mean and
median per-forward latency over the common cells and their span across runs (max/min − 1).

Cells are matched by (L, B); cells missing from a run or not measured in it are left out and
listed. A run with repeats (genload run --until-cv: a record per cell and repeat) counts as one
run whose cells are the means of their measured repeats (said on a "pooled" line). One file of
such a run gives its own consistency instead: each cell's CV over its repeats, and how each
cell's repeats ended under the run's stopping rule (the summary the run printed).

With --max-cv the command exits with code 6 (thresholds failed) when the statistic chosen by
--cv-stat (default: the max per-cell CV) exceeds PCT percent — for CI.`,
		[][2]string{
			{"three repeats of one matrix", "genload consistency results/a-r1.json results/a-r2.json results/a-r3.json"},
			{"fail CI when any cell's CV exceeds 5 %", "genload consistency --max-cv 5 results/a-r*.json"},
			{"fail CI when the P90 per-cell CV exceeds 3 %", "genload consistency --max-cv 3 --cv-stat p90 results/a-r*.jsonl"},
			{"the repeats of one run of genload run --until-cv", "genload consistency results/ucv.json"},
		}, e)
	maxCV, cvStat := cvFlags(fs)
	files, err := parseFiles(fs, args)
	if err != nil {
		return err
	}
	if err := checkCVFlags(*maxCV, *cvStat, "consistency"); err != nil {
		return err
	}
	if len(files) == 0 {
		return exitcode.Errorf(exitcode.Usage, "need at least two results files, or one of a run with repeats (genload run --until-cv), got none (see 'genload consistency --help')")
	}
	runs, err := report.ReadRuns(files)
	if err != nil {
		return exitcode.With(exitcode.InvalidConfig, err) // an unreadable or invalid input file
	}
	if len(runs) == 1 {
		if !runs[0].HasRepeats() {
			return exitcode.Errorf(exitcode.Usage, "%s: one results file without repeats: need at least two results files, or one of a run with repeats (genload run --until-cv) (see 'genload consistency --help')", files[0])
		}
		return repeatsConsistency(runs[0], files[0], *maxCV, *cvStat, e)
	}
	return consistency(runs, *maxCV, *cvStat, e)
}

// repeatsConsistency prints the consistency of one run with repeats over each cell's own
// repeats ([report.ConsistentRepeats]) and, when its header has the stopping rule, how each
// cell's repeats ended, rebuilt from the file ([run.RepeatsOf]: the summary genload run
// --until-cv printed), then holds the --cv-stat statistic against maxCV.
func repeatsConsistency(r *report.Run, file string, maxCV float64, cvStat string, e *env) error {
	c, err := report.ConsistentRepeats(r)
	if err != nil {
		return exitcode.With(exitcode.InvalidConfig, fmt.Errorf("%s: %w", file, err))
	}
	report.Prose(e.stdout, "", "  ", report.RunsComparability([]*report.Run{r}, nil).Line())
	c.WriteMarkdown(e.stdout)
	if r.Header.UntilCV != nil {
		cells, rule, err := run.RepeatsOf(r)
		if err != nil {
			return exitcode.With(exitcode.InvalidConfig, fmt.Errorf("%s: %w", file, err))
		}
		run.WriteRepeats(e.stdout, cells, rule)
	}
	return threshold(c, maxCV, cvStat, e)
}

// cvFlags declares --max-cv and --cv-stat on fs (run and consistency share them).
func cvFlags(fs *flag.FlagSet) (*float64, *string) {
	maxCV := fs.Float64("max-cv", 0, "exit with code 6 when the --cv-stat per-cell CV of per-forward latency exceeds PCT percent (0 = no threshold)")
	cvStat := fs.String("cv-stat", "max", "the run-level CV statistic held against --max-cv: max, p90 or median (nearest-rank) of the per-cell CVs")
	return maxCV, cvStat
}

func checkCVFlags(maxCV float64, cvStat, cmd string) error {
	if maxCV < 0 {
		return exitcode.Errorf(exitcode.Usage, "--max-cv %g: must be ≥ 0 percent (see 'genload %s --help')", maxCV, cmd)
	}
	for _, s := range cvStats {
		if s == cvStat {
			return nil
		}
	}
	return exitcode.Errorf(exitcode.Usage, "--cv-stat %q: want max, p90 or median (see 'genload %s --help')", cvStat, cmd)
}

// consistency prints whether runs are comparable, then their consistency table
// and summary, and holds the --cv-stat
// statistic against maxCV percent (0 = no threshold): crossing it is a ThresholdsFailed error.
func consistency(runs []*report.Run, maxCV float64, cvStat string, e *env) error {
	c, err := report.Consistent(runs)
	if err != nil {
		return err
	}
	// Repeats of one matrix: every field must agree; the first line says whether they do.
	// Runs are called by their run ids: the same line whichever file of a run is read.
	report.Prose(e.stdout, "", "  ", report.RunsComparability(runs, nil).Line())
	c.WriteMarkdown(e.stdout)
	return threshold(c, maxCV, cvStat, e)
}

// threshold holds c's --cv-stat statistic against maxCV percent (0 = no threshold).
func threshold(c *report.Consistency, maxCV float64, cvStat string, e *env) error {
	if maxCV <= 0 {
		return nil
	}
	v, err := c.Stat(cvStat)
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	if 100*v > maxCV {
		where := ""
		if cvStat == "max" {
			where = " at " + c.MaxCell.String()
		}
		return exitcode.Errorf(exitcode.ThresholdsFailed, "%s per-cell CV %.2f %%%s exceeds --max-cv %g %%", cvStat, 100*v, where, maxCV)
	}
	fmt.Fprintf(e.stdout, "threshold: %s per-cell CV %.2f %% ≤ --max-cv %g %%: ok\n", cvStat, 100*v, maxCV)
	return nil
}

// runRepeats runs cfg n times (run ids <id>-r1 … <id>-rn, same config and seed), then prints
// the consistency of the n runs as read back from their .json files (exactly what
// 'genload consistency' prints for them) and applies the --max-cv threshold.
func runRepeats(ctx context.Context, cfg *config.Config, opt run.Options, n int, maxCV float64, cvStat string, e *env) error {
	base := opt.RunID
	if base == "" {
		base = time.Now().UTC().Format("20060102-150405")
	}
	runs := make([]*report.Run, 0, n)
	var paths []string
	for k := 1; k <= n; k++ {
		opt.RunID = base + "-r" + strconv.Itoa(k)
		opt.EngineStart = "repeat " + strconv.Itoa(k) // each repeat's built-in engine draws its own noise
		fmt.Fprintf(e.stderr, "repeat %d of %d: run %s\n", k, n, opt.RunID)
		res, err := run.Run(ctx, cfg, opt)
		if err != nil {
			return fmt.Errorf("repeat %d of %d (run %s): %w", k, n, opt.RunID, err)
		}
		r, err := report.ReadFile(res.JSON)
		if err != nil {
			return fmt.Errorf("repeat %d of %d: %w", k, n, err)
		}
		runs = append(runs, r)
		paths = append(paths, res.JSON)
	}
	fmt.Fprintf(e.stdout, "\nresults of the %d repeats:\n", n)
	for _, p := range paths {
		fmt.Fprintf(e.stdout, "  %s\n", p)
	}
	return consistency(runs, maxCV, cvStat, e)
}

// runUntilCV runs cfg with opt.UntilCV set (one results file, a record per repeat), then
// prints the repeats' consistency as read back from its results file (the table 'genload
// consistency' prints for it, with each cell's repeat count) and how each cell's repeats
// ended, and applies the --max-cv threshold. The GPU time of the run is printed once, by
// run.Run with its other closing lines (stderr). Flagged cells are listed, not an
// error. A run that failed or was interrupted prints the same from what its file holds (the
// consistency when a cell has two measured repeats), and returns the run's error.
func runUntilCV(ctx context.Context, cfg *config.Config, opt run.Options, maxCV float64, cvStat string, e *env) error {
	res, runErr := run.Run(ctx, cfg, opt)
	if res == nil {
		return runErr
	}
	path := res.JSON
	if path == "" {
		path = res.JSONL
	}
	r, err := report.ReadFile(path)
	if err != nil {
		return errors.Join(runErr, err)
	}
	c, cerr := report.ConsistentRepeats(r)
	if cerr == nil {
		c.WriteMarkdown(e.stdout)
	} else if runErr == nil {
		return cerr
	}
	run.WriteRepeats(e.stdout, res.Repeats, *opt.UntilCV)
	if runErr != nil {
		return runErr
	}
	return threshold(c, maxCV, cvStat, e)
}

// parseFiles parses args (flags and files in any order, see parse) and returns the files.
func parseFiles(fs *flag.FlagSet, args []string) ([]string, error) {
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	return fs.Args(), nil
}
