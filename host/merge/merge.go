// Package merge joins the results files of a sharded run (genload run --shard I/N, one file
// per shard) into the one run a single process would have written.
//
// The shards must be one run: the same results schema, genload version, configuration (its
// target, results directory and file path aside: each shard may measure its own server and
// write its own directory), model, context, tokenizer, corpus, plugins and engine; every
// shard 0 … N−1 exactly once; and every cell of each shard recorded with figures. Join says
// which file or shard breaks a rule, naming the key that differs. Shards of a run with repeats
// (genload run --until-cv: a record per cell and repeat, the stopping rule in the header, the
// same in every shard) keep every repeat record; a cell is then recorded with figures when its
// last repeat is.
package merge

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/shard"
)

// Input is one shard's results as read from File.
type Input struct {
	File string
	Run  *results.Run
}

// Options change what Join accepts.
type Options struct {
	// Partial joins what there is when shards are missing or incomplete: the merged run
	// lists the missing cells as absent, its footer has status "error" and the reasons, and
	// Join returns them as Result.Problems instead of failing. Mixed runs are refused still.
	Partial bool
	// RunID is the merged run's id. Default: the shards' common prefix before "-shard-",
	// else shard 0's run id + "-merged".
	RunID string
}

// Result is a merged run and, with Options.Partial, what was missing from it.
type Result struct {
	Run      *results.Run
	Problems []string
}

// Read reads each file (.json or .jsonl, as written by genload run) as an Input.
func Read(files []string) ([]Input, error) {
	var in []Input
	var errs []error
	for _, f := range files {
		r, err := results.ReadFile(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		in = append(in, Input{File: f, Run: r})
	}
	return in, errors.Join(errs...)
}

// Join merges the shards of one run. Errors (mixed runs; missing, duplicated or incomplete
// shards) name the files and shards concerned; see [Options.Partial]. The stages: the files
// are shards, each once ([index]), of one run ([shards.sameRun]); the shards' cells are the
// matrix as --shard splits it ([shards.matrixCells]) and every one is recorded with figures
// ([shards.records]); then the merged header and footer.
func Join(in []Input, opt Options) (*Result, error) {
	sh, err := index(in)
	if err != nil {
		return nil, err
	}
	if err := sh.sameRun(); err != nil {
		return nil, err
	}
	var problems []string
	missing := sh.missing()
	if len(missing) > 0 {
		given := make([]string, len(sh.idx))
		for k, i := range sh.idx {
			given[k] = fmt.Sprint(i)
		}
		problems = append(problems, fmt.Sprintf("shard %s missing (given: shards %s of %d)", strings.Join(missing, ", "), strings.Join(given, ", "), sh.n))
	}
	all, err := sh.matrixCells(len(missing) == 0)
	if err != nil {
		return nil, err
	}
	var cells []results.Cell
	for _, i := range sh.idx {
		recs, problem := records(sh.by[i], i, sh.n)
		cells = append(cells, recs...)
		if problem != "" {
			problems = append(problems, problem)
		}
	}
	if len(problems) > 0 && !opt.Partial {
		return nil, fmt.Errorf("merge: %s", strings.Join(problems, "\n  "))
	}
	slices.SortFunc(cells, func(a, b results.Cell) int {
		if a.Cell.Index != b.Cell.Index {
			return a.Cell.Index - b.Cell.Index
		}
		return a.Repeat - b.Repeat
	})
	h := sh.header(all, opt.RunID)
	return &Result{Run: &results.Run{Header: h, Cells: cells, Footer: sh.footer(h.Started, cells, problems)}, Problems: problems}, nil
}

// shards are the inputs by shard index: n shards in all, idx the indexes given (ascending),
// ref the lowest one's input (whose header the merged run keeps).
type shards struct {
	by  map[int]Input
	idx []int
	n   int
	ref Input
}

// index checks that every input is a shard of the same schema and shard count, each index
// given once, and returns them by index.
func index(in []Input) (*shards, error) {
	if len(in) == 0 {
		return nil, errors.New("merge: no results files")
	}
	for _, x := range in {
		h := x.Run.Header
		if h.Schema != results.Schema {
			return nil, fmt.Errorf("merge: %s: results schema %q, want %q", x.File, h.Schema, results.Schema)
		}
		if h.Merged != nil {
			return nil, fmt.Errorf("merge: %s is a merged run already (of %d shards), not a shard", x.File, len(h.Merged))
		}
		if h.Shard == nil {
			return nil, fmt.Errorf("merge: %s is not a shard: its header has no shard (it was written by genload run without --shard)", x.File)
		}
	}
	first := in[0].Run.Header.Shard
	sh := &shards{by: map[int]Input{}, n: first.Count}
	for _, x := range in {
		s := x.Run.Header.Shard
		if s.Count != sh.n || s.MatrixCells != first.MatrixCells {
			return nil, fmt.Errorf("merge: shards of different runs: %s is shard %d/%d of %d cells, %s is shard %d/%d of %d cells",
				in[0].File, first.Index, sh.n, first.MatrixCells, x.File, s.Index, s.Count, s.MatrixCells)
		}
		if s.Index < 0 || s.Index >= sh.n {
			return nil, fmt.Errorf("merge: %s: shard index %d out of 0 … %d", x.File, s.Index, sh.n-1)
		}
		if prev, dup := sh.by[s.Index]; dup {
			return nil, fmt.Errorf("merge: shard %d/%d given twice: %s and %s", s.Index, sh.n, prev.File, x.File)
		}
		sh.by[s.Index] = x
	}
	for i := range sh.by {
		sh.idx = append(sh.idx, i)
	}
	sort.Ints(sh.idx)
	sh.ref = sh.by[sh.idx[0]]
	return sh, nil
}

// sameRun checks every header key that must agree against the lowest shard's.
func (sh *shards) sameRun() error {
	refKeys, err := comparable(sh.ref.Run.Header)
	if err != nil {
		return fmt.Errorf("merge: %s: %w", sh.ref.File, err)
	}
	for _, i := range sh.idx[1:] {
		x := sh.by[i]
		if len(x.Run.Header.Cells) == 0 {
			// An empty shard holds nothing to merge, and asked no server (genload run starts
			// none for it): its shard count and matrix size, checked by index, are what it says.
			continue
		}
		keys, err := comparable(x.Run.Header)
		if err != nil {
			return fmt.Errorf("merge: %s: %w", x.File, err)
		}
		if d := differences(refKeys, keys); len(d) > 0 {
			return fmt.Errorf("merge: %s and %s are not shards of one run (%s → %s):\n  %s", sh.ref.File, x.File, sh.ref.File, x.File, strings.Join(d, "\n  "))
		}
	}
	return nil
}

// missing lists the shards not given, "I/N".
func (sh *shards) missing() []string {
	var missing []string
	for i := range sh.n {
		if _, ok := sh.by[i]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", i, sh.n))
		}
	}
	return missing
}

// matrixCells returns the shards' cells in index order, none in two shards; when complete
// (every shard given) they must be the whole matrix, and each shard's the ones --shard I/N
// selects from it.
func (sh *shards) matrixCells(complete bool) ([]matrix.Cell, error) {
	var all []matrix.Cell
	for _, i := range sh.idx {
		all = append(all, sh.by[i].Run.Header.Cells...)
	}
	slices.SortFunc(all, func(a, b matrix.Cell) int { return a.Index - b.Index })
	for k := 1; k < len(all); k++ {
		if all[k].Index == all[k-1].Index {
			return nil, fmt.Errorf("merge: cell %d (%s) is in two shards: the files are not shards of one run", all[k].Index, all[k].Key())
		}
	}
	if !complete {
		return all, nil
	}
	if mc := sh.ref.Run.Header.Shard.MatrixCells; len(all) != mc {
		return nil, fmt.Errorf("merge: the shards hold %d cells, their headers say the matrix has %d", len(all), mc)
	}
	for _, i := range sh.idx {
		x := sh.by[i]
		want := shard.Spec{Index: i, Count: sh.n}.Cells(all)
		if !slices.Equal(want, x.Run.Header.Cells) {
			return nil, fmt.Errorf("merge: %s: shard %d/%d holds cells %s, but --shard %d/%d selects %s from the matrix (another genload's split?)",
				x.File, i, sh.n, keys(x.Run.Header.Cells), i, sh.n, keys(want))
		}
	}
	return all, nil
}

// records returns shard i/n's cell records — one per cell, or with repeats (genload run
// --until-cv) one per repeat, in repeat order (ReadFile has kept the last record of each
// repeat) — and, when the shard is incomplete (a cell not recorded, a cell whose last record
// has no figures, no footer), the problem, saying how to complete it.
func records(x Input, i, n int) ([]results.Cell, string) {
	got := map[int][]results.Cell{}
	for _, c := range x.Run.Cells {
		got[c.Cell.Index] = append(got[c.Cell.Index], c)
	}
	var cells []results.Cell
	var absent, failed []string
	for _, c := range x.Run.Header.Cells {
		recs, ok := got[c.Index]
		if !ok {
			absent = append(absent, c.Key())
			continue
		}
		slices.SortFunc(recs, func(a, b results.Cell) int { return a.Repeat - b.Repeat })
		if last := recs[len(recs)-1]; !results.Measured(last.Status) {
			what := c.Key()
			if last.Repeat > 0 {
				what += fmt.Sprintf(" repeat %d", last.Repeat)
			}
			failed = append(failed, fmt.Sprintf("%s %s: %s", what, last.Status, last.Error))
		}
		cells = append(cells, recs...)
	}
	if len(absent) == 0 && len(failed) == 0 && x.Run.Footer != nil {
		return cells, ""
	}
	var why []string
	if len(absent) > 0 {
		why = append(why, fmt.Sprintf("%d of %d cells not recorded (%s)", len(absent), len(x.Run.Header.Cells), strings.Join(absent, " ")))
	}
	if len(failed) > 0 {
		why = append(why, "cells without figures: "+strings.Join(failed, "; "))
	}
	if x.Run.Footer == nil {
		why = append(why, "no footer: the run was killed")
	}
	next := fmt.Sprintf("continue it with genload run --resume %s --shard %d/%d", x.File, i, n)
	if h := x.Run.Header; h.UntilCV != nil { // refused by --resume: its rounds cannot be continued
		next = fmt.Sprintf("measure it again with genload run --until-cv … --shard %d/%d (a run with repeats cannot be resumed)", i, n)
	} else if h.Repeats > 0 {
		next = fmt.Sprintf("measure it again with genload run --repeat %d --shard %d/%d (a run with repeats cannot be resumed)", h.Repeats, i, n)
	}
	return cells, fmt.Sprintf("shard %d/%d (%s) is incomplete: %s; %s", i, n, x.File, strings.Join(why, "; "), next)
}

// header is the merged run's header: the lowest shard's, with the whole matrix all, the
// shards listed, the earliest start, the shards' targets and the run id (runID, else
// [defaultID]).
func (sh *shards) header(all []matrix.Cell, runID string) results.Header {
	h := sh.ref.Run.Header
	h.Shard = nil
	h.Cells = all
	var targets []string
	for _, i := range sh.idx {
		x := sh.by[i]
		xh := x.Run.Header
		st := "killed"
		if x.Run.Footer != nil {
			st = x.Run.Footer.Status
		}
		h.Merged = append(h.Merged, results.MergedShard{Index: i, File: x.File, RunID: xh.RunID, Target: xh.Target,
			Started: xh.Started, Status: st, Cells: len(xh.Cells)})
		if xh.Started.Before(h.Started) {
			h.Started = xh.Started
		}
		if xh.Target != "" && !slices.Contains(targets, xh.Target) {
			targets = append(targets, xh.Target)
		}
	}
	h.Target = strings.Join(targets, ", ")
	h.RunID = runID
	if h.RunID == "" {
		h.RunID = defaultID(sh.by, sh.idx)
	}
	return h
}

// footer is the merged run's footer: the latest shard's finish, elapsed from started, the
// cells counted by status, and status error with the problems when there are any.
func (sh *shards) footer(started time.Time, cells []results.Cell, problems []string) *results.Footer {
	ft := &results.Footer{Type: "footer", Status: results.StatusOK}
	for _, i := range sh.idx {
		if f := sh.by[i].Run.Footer; f != nil && f.Finished.After(ft.Finished) {
			ft.Finished = f.Finished
		}
	}
	if !ft.Finished.IsZero() {
		ft.Elapsed = results.Millis(ft.Finished.Sub(started))
	}
	for _, c := range cells {
		switch c.Status {
		case results.StatusOK:
			ft.OK++
		case results.StatusPartial:
			ft.Partial++
		default:
			ft.Failed++
		}
	}
	if len(problems) > 0 {
		ft.Status, ft.Error = results.StatusError, strings.Join(problems, "; ")
	}
	return ft
}

// defaultID is the shards' run id before "-shard-" when they share it, else the lowest
// shard's id + "-merged".
func defaultID(by map[int]Input, idx []int) string {
	first := by[idx[0]].Run.Header.RunID
	prefix, _, ok := strings.Cut(first, "-shard-")
	for _, i := range idx[1:] {
		p, _, ok2 := strings.Cut(by[i].Run.Header.RunID, "-shard-")
		ok = ok && ok2 && p == prefix
	}
	if ok {
		return prefix
	}
	return first + "-merged"
}

// perShard are the header keys that differ between the shards of one run by design: ids,
// start times, the server each measured, where it wrote, and the shard itself.
var perShard = []string{"type", "run_id", "started", "target", "cells", "workers", "shard.index", "merged",
	"config.file", "config.out", "config.target"}

// comparable flattens a header to dotted keys → JSON values, without the per-shard keys.
func comparable(h results.Header) (map[string]string, error) {
	b, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if slices.Contains(perShard, prefix) {
			return
		}
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			for k, e := range m {
				walk(strings.TrimPrefix(prefix+"."+k, "."), e)
			}
			return
		}
		j, _ := json.Marshal(v)
		out[prefix] = string(j)
	}
	walk("", v)
	return out, nil
}

// differences lists "key: a → b" for every key whose value differs, sorted.
func differences(a, b map[string]string) []string {
	var d []string
	for k, va := range a {
		if vb, ok := b[k]; !ok || va != vb {
			d = append(d, fmt.Sprintf("%s: %s → %s", k, va, orAbsent(vb, ok)))
		}
	}
	for k, vb := range b {
		if _, ok := a[k]; !ok {
			d = append(d, fmt.Sprintf("%s: (absent) → %s", k, vb))
		}
	}
	sort.Strings(d)
	return d
}

func orAbsent(v string, ok bool) string {
	if !ok {
		return "(absent)"
	}
	return v
}

func keys(cs []matrix.Cell) string {
	ks := make([]string, len(cs))
	for i, c := range cs {
		ks[i] = c.Key()
	}
	return "[" + strings.Join(ks, " ") + "]"
}
