package results

import (
	"errors"
	"fmt"
	"time"

	"github.com/genload/genload/host/exitcode"
)

// ErrNoRuns is returned by ReadRuns for an empty list of paths.
var ErrNoRuns = errors.New("no results file given")

// ErrSameRun is wrapped by [CheckDistinct]'s error: one run was given twice.
var ErrSameRun = errors.New("the same run given twice")

// ReadRuns reads each path with ReadFile (.json or .jsonl) and refuses a run given twice
// ([CheckDistinct], the paths naming the runs).
func ReadRuns(paths []string) ([]*Run, error) {
	if len(paths) == 0 {
		return nil, ErrNoRuns
	}
	runs := make([]*Run, len(paths))
	for i, p := range paths {
		r, err := ReadFile(p)
		if err != nil {
			return nil, err
		}
		runs[i] = r
	}
	if err := CheckDistinct(runs, paths); err != nil {
		return nil, err
	}
	return runs, nil
}

// runKey is what tells runs apart: a run is its run id, its start time and, for one shard of
// a sharded run, the shard's index. Two files with the same key hold the same run — the file
// given twice, a renamed copy, or the .json and the .jsonl of one run.
type runKey struct {
	id      string
	started time.Time
	shard   int
}

func runKeyOf(h Header) runKey {
	k := runKey{id: h.RunID, started: h.Started, shard: -1}
	if h.Shard != nil {
		k.shard = h.Shard.Index
	}
	return k
}

// CheckDistinct refuses runs of which two are the same run (same run id, start time and shard:
// see runKey), as genload merge refuses a shard given twice: runs read together are repeats
// or the sides of a comparison, and one run counted twice makes its own spread zero — a
// consistency of CV 0 %, a gate whose two "repeats" agree exactly. names[i] calls runs[i] (its
// file; "" or missing: "run N"). The error wraps ErrSameRun and carries
// exitcode.InvalidConfig, naming both files, the run id and its start.
func CheckDistinct(runs []*Run, names []string) error {
	name := func(i int) string {
		if i < len(names) && names[i] != "" {
			return names[i]
		}
		return fmt.Sprintf("run %d", i+1)
	}
	seen := map[runKey]int{}
	for i, r := range runs {
		k := runKeyOf(r.Header)
		if k.id == "" && k.started.IsZero() {
			continue // nothing to tell it by (not a file genload wrote)
		}
		if j, dup := seen[k]; dup {
			what := "run " + k.id
			if k.shard >= 0 {
				what += fmt.Sprintf(", shard %d", k.shard)
			}
			return exitcode.With(exitcode.InvalidConfig, fmt.Errorf("%w: %s and %s are one run (%s, started %s): give each run once (genload run --repeat N measures repeats)",
				ErrSameRun, name(j), name(i), what, k.started.UTC().Format(time.RFC3339)))
		}
		seen[k] = i
	}
	return nil
}
