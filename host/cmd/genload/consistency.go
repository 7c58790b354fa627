package main

import (
	"context"
	"flag"

	"github.com/genload/genload/host/compare"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/cliflag"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/results"
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
listed. A run with repeats (genload run --repeat N or --until-cv: a record per cell and
repeat) counts as one run whose cells are the means of their measured repeats (said on a
"pooled" line). One file of such a run gives its own consistency instead: each cell's CV over
its repeats, and how each cell's repeats ended, by the run's fixed count or stopping rule (the
summary the run printed). The N files of a --repeat N run of an earlier genload (<id>-r1 …
<id>-rN, one run each) are read as N runs.

With --max-cv PCT the statistic chosen by --cv-stat (default: the max per-cell CV) is held to
PCT percent with its uncertainty, as run --until-cv stops by: each cell's CV from n runs gets
its 90 % one-sided bounds (chi-square: from 2 runs the upper bound is 7.96 × the CV, from 5
1.94 ×), and the statistic is taken of the CVs and of each bound. Its upper bound within PCT:
ok (exit 0); its lower bound beyond: fail (exit 6); else cannot tell (exit 8, with how many
runs would decide if the CV stayed as measured) — for CI.`,
		[][2]string{
			{"the repeats of one run of genload run --repeat 3", "genload consistency results/a.json"},
			{"three runs of one matrix", "genload consistency results/a-r1.json results/a-r2.json results/a-r3.json"},
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
		return exitcode.Errorf(exitcode.Usage, "need at least two results files, or one of a run with repeats (genload run --repeat or --until-cv), got none (see 'genload consistency --help')")
	}
	runs, err := results.ReadRuns(files)
	if err != nil {
		return exitcode.With(exitcode.InvalidConfig, err) // an unreadable or invalid input file
	}
	c, err := run.WriteConsistency(e.stdout, runs, files)
	if err != nil {
		return err
	}
	return threshold(c, *maxCV, *cvStat, cvThresholdConfidence, e)
}

// cvFlags declares --max-cv and --cv-stat on fs (run and consistency share them).
func cvFlags(fs *flag.FlagSet) (*float64, *string) {
	maxCV := fs.Float64("max-cv", 0, "hold the --cv-stat per-cell CV of per-forward latency to PCT percent by its 90 % bounds: exit 6 when even the lower bound exceeds it, 8 when the bounds straddle it (0 = no threshold)")
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

// cvThresholdConfidence is the one-sided confidence of the CV bounds --max-cv judges by, the
// default of run --until-cv's --cv-confidence.
const cvThresholdConfidence = 0.9

// threshold holds c's --cv-stat statistic against maxCV percent (0 = no threshold) with its
// uncertainty ([compare.Consistency.JudgeCV] at confidence): ok when its upper bound is
// within, fail (exit 6) when its lower bound is beyond, else cannot tell (exit 8).
func threshold(c *compare.Consistency, maxCV float64, cvStat string, confidence float64, e *env) error {
	if maxCV <= 0 {
		return nil
	}
	j, err := c.JudgeCV(cvStat, maxCV/100, confidence)
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	switch j.Verdict {
	case compare.CVFail:
		return exitcode.Errorf(exitcode.ThresholdsFailed, "--max-cv: %s", j)
	case compare.CVCannotTell:
		return exitcode.Errorf(exitcode.Inconclusive, "--max-cv: %s", j)
	}
	report.Prose(e.stdout, "", "  ", "threshold: "+j.String())
	return nil
}

// parseFiles parses args (flags and files in any order, see parse) and returns the files.
func parseFiles(fs *flag.FlagSet, args []string) ([]string, error) {
	if err := cliflag.Parse(fs, args); err != nil {
		return nil, err
	}
	return fs.Args(), nil
}
