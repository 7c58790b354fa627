package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/cliflag"
	"github.com/genload/genload/host/merge"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/run"
	"github.com/genload/genload/host/shard"
)

func cmdMerge(_ context.Context, args []string, e *env) error {
	fs := newFlagSet("merge", "genload merge SHARD.json… [-o merged.json] [--partial]",
		`Join the results files of a sharded run (genload run --shard I/N, one file per shard) into the
one run a single process would have written: the whole matrix's cells in run order, in a .json
document and a .csv beside it, and the table on stdout.

The files must be the shards of one run: the same results schema, genload version and
configuration (target, results directory and config path aside), every shard 0 … N−1 exactly
once, and every cell recorded. Merge refuses anything else and says which file or shard is
wrong; a shard that was killed is named with the command that continues it.`,
		[][2]string{
			{"join four shards", "genload merge results/nightly-shard-*-of-4.json -o results/nightly.json"},
			{"join what there is while a shard is re-run (exit 1, the missing cells listed)", "genload merge --partial results/nightly-shard-*.jsonl -o results/nightly-partial.json"},
		}, e)
	out := fs.String("o", "", "merged results file, .json (default: <run id>.json in the first shard's directory)")
	partial := fs.Bool("partial", false, "write the merged run even when shards are missing or incomplete (exit 1, the footer lists what is missing)")
	runID := fs.String("run-id", "", "the merged run's id (default: the shards' run id before -shard-)")
	if err := cliflag.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return exitcode.Errorf(exitcode.Usage, "want the shards' results files, .json or .jsonl (see 'genload merge --help')")
	}
	in, err := merge.Read(fs.Args())
	if err != nil {
		return exitcode.With(exitcode.InvalidConfig, err)
	}
	res, err := merge.Join(in, merge.Options{Partial: *partial, RunID: *runID})
	if err != nil {
		return exitcode.With(exitcode.InvalidConfig, err)
	}
	path := *out
	if path == "" {
		path = filepath.Join(filepath.Dir(in[0].File), res.Run.Header.RunID+".json")
	}
	if filepath.Ext(path) != ".json" {
		return exitcode.Errorf(exitcode.Usage, "-o %s: want a .json file", path)
	}
	if err := results.WriteJSON(path, res.Run); err != nil {
		return err
	}
	csv := strings.TrimSuffix(path, ".json") + ".csv"
	if err := report.WriteCSV(csv, res.Run); err != nil {
		return err
	}
	report.Table(e.stdout, res.Run)
	fmt.Fprintf(e.stderr, "merged %d shards, %d cells → %s, %s\n", len(res.Run.Header.Merged), len(res.Run.Cells), path, csv)
	if len(res.Problems) > 0 {
		return fmt.Errorf("the merged run is incomplete:\n  %s", strings.Join(res.Problems, "\n  "))
	}
	return nil
}

// shardOptions applies genload run's --shard I/N to opt: the shard, and a run id of
// <id>-shard-I-of-N (id: --run-id, else the UTC start time), so that shards writing to one
// results volume never collide and genload merge finds their common id.
func shardOptions(spec string, e *env, opt *run.Options) error {
	if spec == "" {
		return nil
	}
	s, err := shard.Parse(spec, e.getenv)
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	opt.Shard = s
	id := opt.RunID
	if id == "" {
		id = time.Now().UTC().Format("20060102-150405")
	}
	opt.RunID = fmt.Sprintf("%s-shard-%d-of-%d", id, s.Index, s.Count)
	return nil
}
