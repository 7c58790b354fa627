package shard

import (
	"slices"
	"strings"
	"testing"

	"github.com/genload/genload/host/matrix"
)

func TestParse(t *testing.T) {
	env := func(k string) string {
		if k == IndexEnv {
			return "2"
		}
		return ""
	}
	cases := []struct {
		in   string
		want Spec
		err  string
	}{
		{"0/4", Spec{0, 4}, ""},
		{"3/4", Spec{3, 4}, ""},
		{"0/1", Spec{0, 1}, ""},
		{"JOB_COMPLETION_INDEX/4", Spec{2, 4}, ""}, // read from the environment
		{"4/4", Spec{}, "0 ≤ I < N"},               // 0-based: the last of 4 is 3
		{"-1/4", Spec{}, "0 ≤ I < N"},
		{"1/0", Spec{}, "N ≥ 1"},
		{"2", Spec{}, "want I/N"},
		{"a/b", Spec{}, "want I/N"},
	}
	for _, c := range cases {
		got, err := Parse(c.in, env)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Parse(%q) err = %v, want one containing %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	if _, err := Parse("JOB_COMPLETION_INDEX/4", func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "not set") {
		t.Errorf("unset %s: err = %v", IndexEnv, err)
	}
}

// Weights 8, 5, 4, 3, 1 over 2 shards by the longest-processing-time rule: 8 → s0 (0+8), 5 →
// s1 (5), 4 → s1 (9), 3 → s0 (11), 1 → s1 (10). Loads 11 and 10.
func TestAssignIsLongestProcessingTimeFirst(t *testing.T) {
	got := Assign([]int{4, 8, 1, 5, 3}, 2)
	if want := []int{1, 0, 1, 1, 0}; !slices.Equal(got, want) {
		t.Fatalf("Assign = %v, want %v", got, want)
	}
	// Equal weights: round robin.
	if got := Assign([]int{1, 1, 1, 1, 1}, 3); !slices.Equal(got, []int{0, 1, 2, 0, 1}) {
		t.Fatalf("equal weights: %v", got)
	}
}

// The shards of a matrix are disjoint, cover it, keep the matrix's run order and cells
// unchanged, and are the same on every call.
func TestCellsPartitionTheMatrix(t *testing.T) {
	cells, _, err := matrix.Build(matrix.Spec{SeqLens: []int{500, 1000, 2000, 4000}, BatchSizes: []int{1, 2, 4, 8, 16},
		MaxTokens: 16, Context: 40960, CorpusRows: 64, Pairs: [][]int{{3000, 3}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2, 3, 7, 21, 30} {
		seen := map[int]int{}
		loads := make([]int, n)
		for i := range n {
			part := Spec{i, n}.Cells(cells)
			if again := (Spec{i, n}).Cells(cells); !slices.Equal(part, again) {
				t.Fatalf("%d/%d differs between calls", i, n)
			}
			for j, c := range part {
				if j > 0 && part[j-1].Index >= c.Index {
					t.Fatalf("%d/%d out of run order: %v", i, n, part)
				}
				if c != cells[c.Index] {
					t.Fatalf("%d/%d changed cell %+v (was %+v)", i, n, c, cells[c.Index])
				}
				seen[c.Index]++
				loads[i] += CellWeight(c)
			}
		}
		if len(seen) != len(cells) {
			t.Fatalf("N=%d covers %d of %d cells", n, len(seen), len(cells))
		}
		for idx, k := range seen {
			if k != 1 {
				t.Fatalf("N=%d: cell %d in %d shards", n, idx, k)
			}
		}
		// LPT keeps the heaviest shard within one item of the mean load (Graham's bound
		// is 4/3 of the optimum; the largest cell, 4000·16 = 64000, is the slack here).
		mean := 0
		for _, l := range loads {
			mean += l
		}
		mean /= n
		if n <= len(cells) && slices.Max(loads) > mean+64000 {
			t.Errorf("N=%d: loads %v, mean %d", n, loads, mean)
		}
	}
	if got := (Spec{}).Cells(cells); !slices.Equal(got, cells) {
		t.Fatal("the zero Spec must select every cell")
	}
}

func TestItemsRoundRobin(t *testing.T) {
	if got := (Spec{1, 3}).Items(8); !slices.Equal(got, []int{1, 4, 7}) {
		t.Fatalf("1/3 of 8 = %v", got)
	}
	if got := (Spec{}).Items(3); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("unsharded = %v", got)
	}
}
