package main

import (
	"context"
	"fmt"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/htmlreport"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/run"
)

func cmdReport(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("report", "genload report [-o report.html] [--ab AB.json] [--wide] [--no-legend] RUN.json…",
		`Write one self-contained HTML file to send from results files (.json or .jsonl). It opens with
a summary: per run what ran, where, when and how long, its cells by status, its GPU time
(every repeat counted) and its headline figures per sequence length L. Two runs (A, then B)
put their A/B next: per cell the change B/A − 1 of the mean per-forward latency, with its
95 % interval when both runs have repeats (genload run --until-cv); --ab gives the paired
intervals of a genload ab --json file instead (no run file needed). Then per run: its
per-forward latency and full-batch figure against batch size, one panel per L (log axes where
the values span more than 20×), its result table (the default columns, every column at a
click), its warnings grouped by kind, and a grid of histograms of the realised prompt lengths,
a row per L and a column per B. Last, runs of one configuration get their consistency (the
per-cell CV of the mean per-forward latency; one run with repeats: over its repeats); runs of
different configurations do not, and the summary says why. CSS, plots (gonum/plot SVG) and
script are inline: the file opens with no network.

Without -o, the result table of each run is printed as markdown instead (the default columns;
--wide for every column and one line per warning), as 'genload run' prints it, the legend of
the columns once (--no-legend: none); for a run of genload run --repeat or --until-cv,
followed by how each cell's repeats ended (its fixed count or stopping rule).`,
		[][2]string{
			{"one run, to share", "genload report -o report.html results/20261130-101500.json"},
			{"a run of five repeats (genload run --repeat 5): table, consistency", "genload report -o repeats.html results/r.json"},
			{"before and after an upgrade: A/B", "genload report -o upgrade.html results/before.json results/after.json"},
			{"the paired intervals of genload ab, with the runs", "genload report -o ab.html --ab ab.json results/before.json results/after.json"},
			{"every column of a run's table, as markdown", "genload report --wide results/20261130-101500.json"},
		}, e)
	out := fs.String("o", "", "HTML file to write (default: print the markdown table instead)")
	title := fs.String("title", "", "the HTML page's title (default: genload report and the run ids)")
	abPath := fs.String("ab", "", "a genload ab --json file: the A/B section shows its paired per-cell intervals (with -o)")
	wide := wideFlag(fs)
	legends := legendFlag(fs)
	files, err := parseFiles(fs, args)
	if err != nil {
		return err
	}
	if *abPath != "" && *out == "" {
		return exitcode.Errorf(exitcode.Usage, "--ab %s: needs -o FILE.html (genload ab prints its own table)", *abPath)
	}
	if len(files) == 0 && *abPath == "" {
		return exitcode.Errorf(exitcode.Usage, "need at least one results file, or --ab with -o (see 'genload report --help')")
	}
	var opt htmlreport.Options
	if *abPath != "" {
		if opt.AB, err = htmlreport.ReadAB(*abPath); err != nil {
			return exitcode.With(exitcode.InvalidConfig, err)
		}
	}
	var runs []*results.Run
	if len(files) > 0 {
		if runs, err = results.ReadRuns(files); err != nil {
			return exitcode.With(exitcode.InvalidConfig, err) // an unreadable or invalid input file
		}
	}
	if *out == "" {
		for i, r := range runs {
			report.WriteTable(e.stdout, r, report.TableOptions{Wide: *wide, Legends: legends})
			if _, ok := run.RuleOf(r.Header); ok { // how each cell's repeats ended, as the run printed it
				cells, rule, err := run.RepeatsOf(r)
				if err != nil {
					return exitcode.With(exitcode.InvalidConfig, fmt.Errorf("%s: %w", files[i], err))
				}
				run.WriteRepeats(e.stdout, cells, rule)
			}
		}
		return nil
	}
	opt.Title = *title
	if err := htmlreport.WriteFile(*out, runs, opt); err != nil {
		return err
	}
	what := fmt.Sprintf("%d %s", len(runs), map[bool]string{true: "run", false: "runs"}[len(runs) == 1])
	if opt.AB != nil {
		what += ", A/B of " + *abPath
	}
	fmt.Fprintf(e.stdout, "report: %s (%s)\n", *out, what)
	return nil
}
