package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/genload/genload/host/compare"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/results"
)

func cmdDiff(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("diff", "genload diff [--allow-mixed] BEFORE.json AFTER.json",
		`Compare two runs cell by cell (.json or .jsonl results files): for each cell measured in both
(matched by (L, B)), the mean per-forward latency and the TTFT median before and after, and
their change in % (after/before − 1; + means slower after). Then the median and the range of
the changes over the common cells; cells measured in only one run are left out and listed.

When both runs have repeats (genload run --repeat N or --until-cv), each cell's change is the
ratio of the repeats' geometric means − 1 with its 95 % interval (Welch t on the log ratio, the
statistic of genload ab on unpaired repeats), and a verdict: slower, faster, within noise
(the interval holds 0 and lies within ±5 %) or cannot tell (it holds 0 and a change beyond
±5 % too). Without repeats on both sides a change cannot be told from noise: the
output says so.

Runs that are not comparable (another served model, max_tokens, [labels] or built-in engine
time scale: what the gate refuses too) are refused with exit 3; --allow-mixed prints the
table anyway, under a line that says the changes are between runs not comparable. Another
engine profile, server or host is what a diff compares: it is stated, not refused.`,
		[][2]string{
			{"a server before and after an upgrade", "genload diff results/before.json results/after.json"},
			{"two runs of another time scale, knowingly", "genload diff --allow-mixed a.json b.json"},
		}, e)
	mixed := fs.Bool("allow-mixed", false, "print the table although the runs are not comparable (another model, max_tokens, labels or time scale), under a line that says so")
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
	// A server before and after an upgrade: another engine profile or server is what is compared.
	cmp := compare.RunsComparability(runs, files)
	report.Prose(e.stdout, "", "  ", cmp.Line(compare.AcrossDeployments...))
	bad := cmp.Refused(compare.AcrossDeployments...)
	if len(bad) > 0 && !*mixed {
		return exitcode.With(exitcode.InvalidConfig, fmt.Errorf("diff: runs not comparable: %s: their changes would not be the deployment's (--allow-mixed to print them anyway)", strings.Join(bad, "; ")))
	}
	d, err := compare.Compare(runs[0], runs[1])
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		report.Prose(e.stdout, "⚠ ", "  ", "compared although not comparable (--allow-mixed): "+strings.Join(bad, "; ")+": the changes below include that difference, not only the deployment's")
	}
	d.WriteMarkdown(e.stdout)
	return nil
}
