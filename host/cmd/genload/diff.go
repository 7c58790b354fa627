package main

import (
	"context"

	"github.com/genload/genload/host/compare"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/results"
)

func cmdDiff(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("diff", "genload diff BEFORE.json AFTER.json",
		`Compare two runs cell by cell (.json or .jsonl results files): for each cell measured in both
(matched by (L, B)), the mean per-forward latency and the TTFT median before and after, and
their change in % (after/before − 1; + means slower after). Then the median and the range of
the changes over the common cells; cells measured in only one run are left out and listed.`,
		[][2]string{
			{"a server before and after an upgrade", "genload diff results/before.json results/after.json"},
		}, e)
	files, err := parseFiles(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 2 {
		return exitcode.Errorf(exitcode.Usage, "need two results files (BEFORE AFTER), got %d (see 'genload diff --help')", len(files))
	}
	runs, err := results.ReadRuns(files)
	if err != nil {
		return exitcode.With(exitcode.InvalidConfig, err) // an unreadable or invalid input file
	}
	d, err := compare.Compare(runs[0], runs[1])
	if err != nil {
		return err
	}
	// A server before and after an upgrade: another engine profile or server is what is compared.
	report.Prose(e.stdout, "", "  ", compare.RunsComparability(runs, files).Line(compare.AcrossDeployments...))
	d.WriteMarkdown(e.stdout)
	return nil
}
