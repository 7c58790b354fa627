// Package shard splits a run's work — the cells of a matrix, the points of a sweep — into N
// deterministic, disjoint parts, so that N processes (or N pods of a Kubernetes Indexed Job)
// each measure one part and genload merge joins them into one run.
//
// The split is a pure function of the item list and N: every process computes the same
// assignment from the same configuration, with no coordinator. Shards are numbered from 0,
// like the JOB_COMPLETION_INDEX of an Indexed Job's pods.
package shard

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/genload/genload/host/matrix"
)

// IndexEnv is the environment variable Kubernetes sets to a pod's index in an Indexed Job
// (0 … completions−1); "--shard JOB_COMPLETION_INDEX/N" reads the shard's index from it.
const IndexEnv = "JOB_COMPLETION_INDEX"

// Spec selects shard Index (0-based) of Count. The zero value is "not sharded": the whole
// list.
type Spec struct {
	Index int // 0 ≤ Index < Count
	Count int // number of shards, ≥ 1; 0 = not sharded
}

// Enabled reports whether s selects a part (Count ≥ 1).
func (s Spec) Enabled() bool { return s.Count > 0 }

// String is "I/N" ("" when not sharded).
func (s Spec) String() string {
	if !s.Enabled() {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Parse reads "I/N": shard I (0-based) of N. I may be the name JOB_COMPLETION_INDEX, read
// with getenv (a pod of an Indexed Job). Errors name what was expected.
func Parse(s string, getenv func(string) string) (Spec, error) {
	is, ns, ok := strings.Cut(s, "/")
	if !ok {
		return Spec{}, fmt.Errorf("--shard %q: want I/N, shard I (0-based) of N, e.g. 0/4, or %s/4", s, IndexEnv)
	}
	if is == IndexEnv || is == "$"+IndexEnv {
		v := ""
		if getenv != nil {
			v = getenv(IndexEnv)
		}
		if v == "" {
			return Spec{}, fmt.Errorf("--shard %q: the environment variable %s is not set (it is set in the pods of a Kubernetes Indexed Job)", s, IndexEnv)
		}
		is = v
	}
	i, err1 := strconv.Atoi(strings.TrimSpace(is))
	n, err2 := strconv.Atoi(strings.TrimSpace(ns))
	if err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Spec{}, fmt.Errorf("--shard %q: want I/N with N ≥ 1 and 0 ≤ I < N (shards are numbered from 0, like %s)", s, IndexEnv)
	}
	return Spec{Index: i, Count: n}, nil
}

// Assign deals n items over count shards and returns each item's shard (0-based), given each
// item's weight (an estimate of its cost in any unit; ≤ 0 counts as 1).
//
// It is the longest-processing-time rule: items in decreasing weight (ties: lower index
// first) go one by one to the shard with the least weight so far (ties: lower shard). With
// equal weights this is round robin: item i to shard i mod count. The result depends only
// on the weights and count, so every process computes the same split.
func Assign(weights []int, count int) []int {
	if count < 1 {
		count = 1
	}
	order := make([]int, len(weights))
	for i := range order {
		order[i] = i
	}
	w := func(i int) int { return max(weights[i], 1) }
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(w(b), w(a)) })
	load := make([]int, count)
	out := make([]int, len(weights))
	for _, it := range order {
		best := 0
		for s := 1; s < count; s++ {
			if load[s] < load[best] {
				best = s
			}
		}
		out[it] = best
		load[best] += w(it)
	}
	return out
}

// CellWeight is a cell's cost estimate for [Assign]: B·L, the prompt tokens its warmup and
// measured request prefill and the KV entries its decode steps attend to (both scale with it).
func CellWeight(c matrix.Cell) int { return c.Batch * c.SeqLen }

// Cells returns the cells of shard s, in their order in cells (the matrix's run order), each
// unchanged (its Index and FirstRow are the whole matrix's, so its prompts are the ones an
// unsharded run builds). Not sharded: cells itself.
func (s Spec) Cells(cells []matrix.Cell) []matrix.Cell {
	if !s.Enabled() {
		return cells
	}
	weights := make([]int, len(cells))
	for i, c := range cells {
		weights[i] = CellWeight(c)
	}
	var out []matrix.Cell
	for i, sh := range Assign(weights, s.Count) {
		if sh == s.Index {
			out = append(out, cells[i])
		}
	}
	return out
}

// Items returns the indices (ascending) of the n equally weighted items — sweep points — of
// shard s: i with i mod Count = Index. Not sharded: all of them.
func (s Spec) Items(n int) []int {
	var out []int
	for i := range n {
		if !s.Enabled() || i%s.Count == s.Index {
			out = append(out, i)
		}
	}
	return out
}
