package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/gputime"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/results"
)

func cmdGPUTime(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("gpu-time", "genload gpu-time [--gpus N] [--json] RUN.json [RUN.json…]",
		`Account for the GPU time one or more finished runs spent: per cell its measured wall time
and, where the results record them, the wall time of its warmup and of its measured requests;
then the sums over the runs — run wall time (the GPUs are held for all of it) and cell wall
time, warmups and measured requests — as GPU-hours: wall time × the GPU count. The count is
--gpus, else the runs' gpu_count label; without either, GPU-hours are per GPU.

Use it to compare protocols on the same matrix: five fixed repeats (genload run --repeat 5)
against an adaptive run (--until-cv), or runs measured apart.`,
		[][2]string{
			{"five fixed repeats against an adaptive run, on an 8-GPU server", "genload gpu-time --gpus 8 results/fixed5.json results/untilcv.json"},
			{"the per-cell figures as JSON", "genload gpu-time --json results/a.json"},
		}, e)
	gpus := fs.Int("gpus", 0, "GPUs the server holds (default: the runs' gpu_count label; none: per GPU)")
	asJSON := fs.Bool("json", false, "print the accounting as JSON")
	files, err := parseFiles(fs, args)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return exitcode.Errorf(exitcode.Usage, "want one or more results files (see 'genload gpu-time --help')")
	}
	if *gpus < 0 {
		return exitcode.Errorf(exitcode.Usage, "--gpus %d: must be ≥ 1", *gpus)
	}
	runs, err := results.ReadRuns(files)
	if err != nil {
		return exitcode.With(exitcode.InvalidConfig, err) // an unreadable or invalid input file
	}
	source := ""
	if *gpus > 0 {
		source = "flag"
	} else if n, ok := gputime.GPUCount(runs[0].Header.Labels); ok {
		*gpus, source = n, "labels gpu_count"
	}
	acc := gputime.Of(runs, *gpus, source)
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(acc)
	}
	sec := func(d time.Duration) string {
		if d == 0 {
			return "–"
		}
		return fmt.Sprintf("%.3f", d.Seconds())
	}
	head := []string{"cell", "status", "wall s", "warmup s", "measured s"}
	several := len(runs) > 1
	reps := slices.ContainsFunc(acc.Cells, func(c gputime.Cell) bool { return c.Repeat > 0 })
	rows := make([][]string, len(acc.Cells))
	for i, c := range acc.Cells {
		rows[i] = []string{c.Key, c.Status, sec(c.Wall), sec(c.Warmup), sec(c.Measured)}
		if reps {
			rows[i] = slices.Insert(rows[i], 1, strconv.Itoa(c.Repeat))
		}
		if several {
			rows[i] = slices.Insert(rows[i], 0, c.RunID)
		}
	}
	left := []int{0, 1}
	if reps {
		head = slices.Insert(head, 1, "repeat")
		left = []int{0, 2}
	}
	if several { // the rows of one cell in several runs told apart by their run
		head = slices.Insert(head, 0, "run")
		for i := range left {
			left[i]++
		}
		left = append([]int{0}, left...)
	}
	report.MarkdownTable(e.stdout, head, rows, left...)
	fmt.Fprintln(e.stdout)
	acc.WriteSummary(e.stdout)
	return nil
}
