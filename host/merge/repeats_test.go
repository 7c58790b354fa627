package merge_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/compare"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/merge"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/shard"
)

// repeatShards are the two shards of a run with repeats over four cells: cell i has i+2
// repeats (2, 3, 4, 5), repeat k of it a per-forward mean of (10·i + k) ms; with cut, the
// last repeat of the last cell of shard 1 is interrupted.
func repeatShards(cut bool) []merge.Input {
	all := []matrix.Cell{{Index: 0, SeqLen: 100, Batch: 1}, {Index: 1, SeqLen: 100, Batch: 2}, {Index: 2, SeqLen: 200, Batch: 1}, {Index: 3, SeqLen: 200, Batch: 2}}
	rule := &results.StoppingRule{TargetCV: 0.02, MinRepeats: 2, MaxRepeats: 5, Confidence: 0.9}
	var in []merge.Input
	for i := range 2 {
		cells := shard.Spec{Index: i, Count: 2}.Cells(all)
		r := &results.Run{Header: results.Header{Schema: results.Schema, RunID: fmt.Sprintf("ucv-shard-%d-of-2", i), UntilCV: rule, Cells: cells,
			Shard: &results.Shard{Index: i, Count: 2, MatrixCells: 4}}, Footer: &results.Footer{Status: results.StatusOK, Finished: time.Unix(100, 0)}}
		for _, c := range cells {
			for k := 1; k <= c.Index+2; k++ {
				rec := results.Cell{Cell: c, Status: results.StatusOK, Repeat: k,
					Figures: &measure.Figures{PerForward: measure.Summary{N: c.Batch, Mean: time.Duration(10*c.Index+k) * time.Millisecond}}}
				if cut && i == 1 && c == cells[len(cells)-1] && k == c.Index+2 {
					rec.Status, rec.Error, rec.Figures = results.StatusInterrupted, "interrupted", nil
					r.Footer.Status = results.StatusInterrupted
				}
				r.Cells = append(r.Cells, rec)
			}
		}
		in = append(in, merge.Input{File: fmt.Sprintf("ucv-shard-%d-of-2.json", i), Run: r})
	}
	return in
}

// Merging shards of a run with repeats keeps every repeat record (2 + 3 + 4 + 5 = 14), in
// cell then repeat order, the header's stopping rule with them; a shard whose last repeat was
// interrupted is incomplete, named with the repeat and without the --resume advice (refused
// for a run with repeats).
func TestMergeKeepsRepeats(t *testing.T) {
	res, err := merge.Join(repeatShards(false), merge.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Run
	var got []string
	for _, c := range r.Cells {
		got = append(got, fmt.Sprintf("%d#%d=%v", c.Cell.Index, c.Repeat, c.Figures.PerForward.Mean))
	}
	want := "0#1=1ms 0#2=2ms 1#1=11ms 1#2=12ms 1#3=13ms 2#1=21ms 2#2=22ms 2#3=23ms 2#4=24ms 3#1=31ms 3#2=32ms 3#3=33ms 3#4=34ms 3#5=35ms"
	if strings.Join(got, " ") != want || r.Footer.OK != 14 || r.Header.UntilCV == nil || r.Header.RunID != "ucv" {
		t.Fatalf("merged records %v (footer %+v, rule %v)\nwant %s", got, r.Footer, r.Header.UntilCV, want)
	}
	// the merged run's consistency is each cell's over all its repeats: cell 3 has 31…35 ms
	c, err := compare.ConsistentRepeats(r)
	if err != nil {
		t.Fatal(err)
	}
	if last := c.Cells[len(c.Cells)-1]; len(last.Runs) != 5 || last.Mean != 33*time.Millisecond {
		t.Fatalf("cell L=200,B=2 over %d repeats, mean %v", len(last.Runs), last.Mean)
	}
	_, err = merge.Join(repeatShards(true), merge.Options{})
	if err == nil || !strings.Contains(err.Error(), "shard 1/2 (ucv-shard-1-of-2.json) is incomplete: cells without figures: L=200,B=1 repeat 4 interrupted: interrupted") ||
		strings.Contains(err.Error(), "--resume") {
		t.Fatalf("cut shard: err %v", err)
	}
}
