package compare

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/internal/resultstest"
	"github.com/genload/genload/host/results"
)

// A run with repeats keeps one record per (cell, repeat) through the Writer and ReadFile (a
// re-measured repeat supersedes its failed record), and its consistency is each cell's over its
// own repeats (a record of the same repeat supersedes: interrupted, then failed): cell 0 has 10, 11, 12 ms (mean 11, SD 1, CV 1/11), cell 1 has 20, 20 ms (CV 0)
// after a failed repeat, cell 2 one measured repeat only (left out).
func TestRepeatsInOneFile(t *testing.T) {
	dir := t.TempDir()
	w, err := results.Create(dir, results.Header{RunID: "rep", Config: config.Default()})
	if err != nil {
		t.Fatal(err)
	}
	rec := func(i, l int, rep int, fwd time.Duration) results.Cell {
		c := resultstest.Cell(i, l, 2, fwd)
		c.Repeat = rep
		return c
	}
	failed := rec(1, 200, 2, 0)
	failed.Status, failed.Figures = results.StatusError, nil
	interrupted := failed
	interrupted.Status = results.StatusInterrupted
	for _, c := range []results.Cell{
		rec(0, 100, 1, 10*time.Millisecond), rec(1, 200, 1, 20*time.Millisecond), rec(2, 300, 1, 30*time.Millisecond),
		interrupted, failed, rec(0, 100, 2, 11*time.Millisecond),
		rec(0, 100, 3, 12*time.Millisecond), rec(1, 200, 3, 20*time.Millisecond),
	} {
		if err := w.Cell(c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Finish(results.StatusOK, nil); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{w.Path(), strings.TrimSuffix(w.Path(), "l")} {
		r, err := results.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range r.Cells {
			got = append(got, c.Cell.Key()+"#"+string(rune('0'+c.Repeat))+" "+c.Status)
		}
		want := "L=100,B=2#1 ok L=100,B=2#2 ok L=100,B=2#3 ok L=200,B=2#1 ok L=200,B=2#2 error L=200,B=2#3 ok L=300,B=2#1 ok"
		if strings.Join(got, " ") != want || !r.HasRepeats() || r.Footer.OK != 6 || r.Footer.Failed != 1 {
			t.Fatalf("%s: records %v, footer %+v", path, got, r.Footer)
		}
		c, err := ConsistentRepeats(r)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Cells) != 2 || len(c.LeftOut) != 1 || c.LeftOut[0].SeqLen != 300 || !strings.Contains(c.LeftOut[0].Reason, "1 measured repeat") {
			t.Fatalf("cells %+v, left out %+v", c.Cells, c.LeftOut)
		}
		a, b := c.Cells[0], c.Cells[1]
		if len(a.Runs) != 3 || a.Mean != 11*time.Millisecond || a.SD != time.Millisecond || math.Abs(a.CV-1.0/11) > 1e-12 ||
			len(b.Runs) != 2 || b.CV != 0 || c.MaxCV != a.CV || c.MaxCell.SeqLen != 100 {
			t.Fatalf("cell CVs %+v, %+v; max %v at %v", a, b, c.MaxCV, c.MaxCell)
		}
		// no whole-run figures: the k-th repeats of the cells are not a run
		if len(c.RunMean) != 0 || len(c.RunMedian) != 0 {
			t.Fatalf("run means %v, medians %v", c.RunMean, c.RunMedian)
		}
		var md strings.Builder
		c.WriteMarkdown(&md)
		if !strings.Contains(md.String(), "repeats of each cell (2 to 3)") || !strings.Contains(md.String(), "| 100 | 2 |       3 |") ||
			strings.Contains(md.String(), "whole-run") {
			t.Fatalf("markdown:\n%s", md.String())
		}
	}
	if _, err := ConsistentRepeats(&results.Run{Cells: []results.Cell{resultstest.Cell(0, 100, 2, time.Millisecond)}}); err == nil {
		t.Fatal("a run without repeats has a repeat consistency")
	}
}
