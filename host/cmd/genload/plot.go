package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/genload/genload/host/compare"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/results"
)

func cmdPlot(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("plot", "genload plot [-o PREFIX] RUN.json [AFTER.json]",
		`Draw the mean per-forward latency (ms) against batch size, one line per sequence length L,
into PREFIX.png (1440 × 900) and PREFIX.svg. With two results files (.json or .jsonl) the first
is "before" (dashed lines) and the second "after" (solid lines), same colour per L. The batch
axis is log₂; the latency axis turns log₁₀ when the values span more than 20×.

PREFIX defaults to the (first) results file's path without its extension, so results/a.json
gives results/a.png and results/a.svg; two files give results/a-vs-<second run id>.*.`,
		[][2]string{
			{"one run", "genload plot results/20261130-101500.json"},
			{"before/after overlay into plots/upgrade.png and .svg", "genload plot -o plots/upgrade results/before.json results/after.json"},
		}, e)
	prefix := fs.String("o", "", "output path without extension (default: beside the first results file)")
	files, err := parseFiles(fs, args)
	if err != nil {
		return err
	}
	if len(files) < 1 || len(files) > 2 {
		return exitcode.Errorf(exitcode.Usage, "need one results file, or two (before, after); got %d (see 'genload plot --help')", len(files))
	}
	runs, err := results.ReadRuns(files)
	if err != nil {
		return exitcode.With(exitcode.InvalidConfig, err) // an unreadable or invalid input file
	}
	if *prefix == "" {
		first := files[0]
		*prefix = strings.TrimSuffix(first, filepath.Ext(first))
		if len(runs) == 2 {
			second := runs[1].Header.RunID
			if second == "" {
				second = strings.TrimSuffix(filepath.Base(files[1]), filepath.Ext(files[1]))
			}
			*prefix += "-vs-" + second
		}
	}
	p, err := compare.LatencyPlot(runs...)
	if err != nil {
		return err
	}
	png, svg, err := p.Save(*prefix)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "plot: %s, %s\n", png, svg)
	return nil
}
