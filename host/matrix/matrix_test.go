package matrix

import (
	"strings"
	"testing"
)

func TestDefaultGridOrderAndRows(t *testing.T) {
	s := Spec{SeqLens: []int{2000, 1000}, BatchSizes: []int{4, 1, 64}, MaxTokens: 100, CorpusRows: 256}
	cells, dropped, err := Build(s)
	if err != nil || len(dropped) != 0 {
		t.Fatal(err, dropped)
	}
	want := []string{"L=1000,B=1", "L=1000,B=4", "L=1000,B=64", "L=2000,B=1", "L=2000,B=4", "L=2000,B=64"}
	// rows advance by B: 0, 1, 5, 69, 70, 74
	rows := []int{0, 1, 5, 69, 70, 74}
	for i, c := range cells {
		if c.Key() != want[i] || c.Index != i || c.FirstRow != rows[i] {
			t.Errorf("cell %d = %s index %d row %d, want %s row %d", i, c.Key(), c.Index, c.FirstRow, want[i], rows[i])
		}
	}
}

func TestRowsWrapAroundTheCorpus(t *testing.T) {
	cells, _, err := Build(Spec{SeqLens: []int{1}, BatchSizes: []int{3}, Pairs: [][]int{{2, 3}, {3, 3}}, CorpusRows: 4})
	if err != nil {
		t.Fatal(err)
	}
	// rows 0, 3, (3+3) mod 4 = 2
	for i, r := range []int{0, 3, 2} {
		if cells[i].FirstRow != r {
			t.Errorf("cell %d first row %d, want %d", i, cells[i].FirstRow, r)
		}
	}
}

func TestPairsAppendWithoutDuplicates(t *testing.T) {
	cells, _, _ := Build(Spec{SeqLens: []int{1000}, BatchSizes: []int{1}, Pairs: [][]int{{1000, 1}, {500, 2}}, CorpusRows: 256})
	if len(cells) != 2 || cells[1].Key() != "L=500,B=2" {
		t.Fatalf("cells = %v", cells)
	}
}

func TestKVCapDropsCells(t *testing.T) {
	// (1000+100)·8 = 8800 ≤ 9000 kept; (1000+100)·16 = 17600 dropped; (2000+100)·8 = 16800 dropped.
	cells, dropped, err := Build(Spec{SeqLens: []int{1000, 2000}, BatchSizes: []int{8, 16}, MaxTokens: 100, MaxKVCacheEntries: 9000, CorpusRows: 256})
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 1 || cells[0].Key() != "L=1000,B=8" || len(dropped) != 3 {
		t.Fatalf("cells %v dropped %v", cells, dropped)
	}
	if !strings.Contains(dropped[0].Reason, "17600 > max_kv_cache_entries 9000") {
		t.Errorf("reason = %q", dropped[0].Reason)
	}
	if _, _, err := Build(Spec{SeqLens: []int{1000}, BatchSizes: []int{8}, MaxTokens: 100, MaxKVCacheEntries: 10, CorpusRows: 256}); err == nil {
		t.Error("a matrix with every cell dropped was accepted")
	}
}

func TestAutoSeqLensDoubleUpToContext(t *testing.T) {
	// 1000, 2000, 4000, 8000; 16000 + 100 > 10000 stops.
	cells, _, err := Build(Spec{AutoSeqLens: true, MinSeqLen: 1000, Context: 10000, MaxTokens: 100, BatchSizes: []int{1}, CorpusRows: 256})
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, c := range cells {
		got = append(got, c.SeqLen)
	}
	if len(got) != 4 || got[3] != 8000 {
		t.Errorf("auto lens = %v, want [1000 2000 4000 8000]", got)
	}
	if _, _, err := Build(Spec{AutoSeqLens: true, MinSeqLen: 1000, BatchSizes: []int{1}, CorpusRows: 256}); err == nil {
		t.Error("auto seq lens without a context accepted")
	}
}

// A batch above the corpus rows is a cell like any other (its prompts beyond the rows are
// rotations of them, host/prompt); the next cell's first row still advances by B mod rows.
func TestBatchAboveCorpusRowsIsACell(t *testing.T) {
	cells, _, err := Build(Spec{SeqLens: []int{1000, 2000}, BatchSizes: []int{300}, CorpusRows: 256})
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 2 || cells[0].Batch != 300 || cells[1].FirstRow != 300%256 {
		t.Fatalf("cells %+v", cells)
	}
}

func TestCellsBeyondTheContextAreDropped(t *testing.T) {
	// 131072 − 100 = 130972: L = 64000 fits, L = 200000 does not.
	cells, dropped, err := Build(Spec{SeqLens: []int{64000, 200000}, BatchSizes: []int{1}, MaxTokens: 100, Context: 131072, CorpusRows: 256})
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 1 || len(dropped) != 1 || dropped[0].Reason != "L + max_tokens = 200100 exceeds the model context 131072" {
		t.Fatalf("cells %v dropped %v", cells, dropped)
	}
}
