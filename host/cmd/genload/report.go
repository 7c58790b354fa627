package main

import (
	"context"
	"fmt"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/htmlreport"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/run"
)

func cmdReport(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("report", "genload report [-o report.html] [--wide] RUN.json…",
		`Write one self-contained HTML file from results files (.json or .jsonl): for each run its
result table (the default columns, every column at a click), its warnings grouped by kind, the
per-forward latency and the full-batch figure against batch size (one line per sequence length
L), and a histogram of the realised prompt lengths of every cell. Two or more runs of one
matrix add their consistency (per-cell CV of the mean per-forward latency); exactly two add the
A/B change of the second against the first. CSS, plots (SVG) and script are inline: the file
opens with no network.

Without -o, the result table of each run is printed as markdown instead (the default columns;
--wide for every column and one line per warning), as 'genload run' prints it; for a run of
genload run --until-cv, followed by how each cell's repeats ended under its stopping rule.`,
		[][2]string{
			{"one run, to share", "genload report -o report.html results/20261130-101500.json"},
			{"five repeats: tables, consistency", "genload report -o repeats.html results/r-r1.json results/r-r2.json results/r-r3.json results/r-r4.json results/r-r5.json"},
			{"before and after an upgrade: A/B", "genload report -o upgrade.html results/before.json results/after.json"},
			{"every column of a run's table, as markdown", "genload report --wide results/20261130-101500.json"},
		}, e)
	out := fs.String("o", "", "HTML file to write (default: print the markdown table instead)")
	title := fs.String("title", "", "the HTML page's title (default: genload report and the run ids)")
	wide := wideFlag(fs)
	files, err := parseFiles(fs, args)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return exitcode.Errorf(exitcode.Usage, "need at least one results file (see 'genload report --help')")
	}
	runs, err := report.ReadRuns(files)
	if err != nil {
		return err
	}
	if *out == "" {
		for i, r := range runs {
			report.WriteTable(e.stdout, r, report.TableOptions{Wide: *wide})
			if r.Header.UntilCV != nil { // how the stopping rule ended each cell, as the run printed it
				cells, rule, err := run.RepeatsOf(r)
				if err != nil {
					return exitcode.With(exitcode.InvalidConfig, fmt.Errorf("%s: %w", files[i], err))
				}
				run.WriteRepeats(e.stdout, cells, rule)
			}
		}
		return nil
	}
	if err := htmlreport.WriteFile(*out, runs, htmlreport.Options{Title: *title}); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "report: %s (%d %s)\n", *out, len(runs), map[bool]string{true: "run", false: "runs"}[len(runs) == 1])
	return nil
}
