package compare

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/internal/resultstest"
	"github.com/genload/genload/host/results"
)

// repeatRun is a run of repeats (genload run --repeat N) of cells L=1000 with B=1 and B=16:
// fwd[b] are each repeat's mean per-forward latency in ms.
func repeatRun(id string, fwd map[int][]float64) *results.Run {
	r := &results.Run{Header: results.Header{RunID: id, Model: "m", Config: config.Default(), Schema: results.Schema, Repeats: 4}}
	for i, b := range []int{1, 16} {
		for rep, ms := range fwd[b] {
			c := resultstest.Cell(i, 1000, b, time.Duration(ms*1e6))
			c.Repeat = rep + 1
			r.Cells = append(r.Cells, c)
		}
	}
	return r
}

// A new user's runs of the built-in engine with step noise (per-forward means of each repeat,
// ms): base4 and base3b are the same configuration, slow3 a profile 10–16 % slower. Without
// intervals, base4 → base3b's +12.9 % at B=16 read like the regression's +11.9 %; with them,
// the first cannot be told from noise ([−13.8, +47.9] holds 0 and +47.9 %) and the regression's B=1 is slower
// ([+1.9, +22.9]). The change is the ratio of the repeats' geometric means − 1.
func TestDiffIntervalsFromRepeats(t *testing.T) {
	base4 := repeatRun("base4", map[int][]float64{1: {7.726473, 6.876733, 6.876586, 6.822702}, 16: {8.412752, 7.945651, 7.957552, 8.211734}})
	base3b := repeatRun("base3b", map[int][]float64{1: {6.770812, 6.876466, 7.266641}, 16: {10.441397, 8.849964, 8.376894}})
	slow3 := repeatRun("slow3", map[int][]float64{1: {7.838145, 7.956977, 7.929914}, 16: {10.238826, 9.541397, 8.820443}})
	for _, c := range []struct {
		after *results.Run
		want  [2][4]float64 // per cell: change, lo, hi (fractions), and 0
		verd  [2]string
		line  string
	}{
		{base3b, [2][4]float64{{-0.013856606528565685, -0.1031, 0.0843}, {0.12942456227703714, -0.1377, 0.4793}}, [2]string{DiffCannotTell, DiffCannotTell},
			"0 of 2 cells with an interval changed beyond noise, 0 within noise (±5 %), 2 cannot tell"},
		{slow3, [2][4]float64{{0.11918901973771567, 0.0191, 0.2291}, {0.17052409966522863, -0.0085, 0.3819}}, [2]string{DiffSlower, DiffCannotTell},
			"1 of 2 cells with an interval changed beyond noise, 0 within noise (±5 %), 1 cannot tell"},
	} {
		d, err := Compare(base4, c.after)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Intervals || len(d.Cells) != 2 {
			t.Fatalf("%s: intervals %v, %d cells", c.after.Header.RunID, d.Intervals, len(d.Cells))
		}
		for i, cd := range d.Cells {
			w := c.want[i]
			if !near(cd.Change, w[0], 1e-9) || !near(cd.Lo, w[1], 5e-5) || !near(cd.Hi, w[2], 5e-5) || cd.Verdict != c.verd[i] || cd.RepBefore != 4 || cd.RepAfter != 3 {
				t.Errorf("%s %v: %+.5f [%+.5f, %+.5f] %q (%d/%d); want %+.5f [%+.4f, %+.4f] %q (4/3)",
					c.after.Header.RunID, cd.CellKey, cd.Change, cd.Lo, cd.Hi, cd.Verdict, cd.RepBefore, cd.RepAfter, w[0], w[1], w[2], c.verd[i])
			}
		}
		var b bytes.Buffer
		d.WriteMarkdown(&b)
		if !strings.Contains(b.String(), c.line) || !strings.Contains(b.String(), " 4 / 3 | [") {
			t.Errorf("%s: markdown lacks %q:\n%s", c.after.Header.RunID, c.line, b.String())
		}
	}
	// Tight repeats on both sides: an interval within ±5 % that holds 0 is within noise.
	tightA := repeatRun("tightA", map[int][]float64{1: {7.00, 7.02, 6.98, 7.01}, 16: {8.00, 8.02, 8.01, 7.99}})
	tightB := repeatRun("tightB", map[int][]float64{1: {7.03, 7.01, 7.05, 7.02}, 16: {8.01, 7.98, 8.03}})
	if d, err := Compare(tightA, tightB); err != nil || len(d.Cells) != 2 || d.Cells[0].Verdict != DiffWithinNoise || d.Cells[1].Verdict != DiffWithinNoise || d.Cells[0].Hi > DiffMaterial {
		t.Errorf("tight repeats: %+v, %v: want both within noise", d, err)
	}
	// One side without repeats: no intervals, and the output says why.
	once := mkRun("once", 100, resultstest.Cell(0, 1000, 1, 7*time.Millisecond), resultstest.Cell(1, 1000, 16, 8*time.Millisecond))
	d, err := Compare(base4, once)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	d.WriteMarkdown(&b)
	if d.Intervals || d.Cells[0].Verdict != "" || !strings.Contains(b.String(), "no intervals: only one of the runs has repeats") || strings.Contains(b.String(), "within noise") {
		t.Errorf("one side without repeats:\n%s", b.String())
	}
}

// The A/B verdicts name the material change they hold an interval to: ABNoDifference says
// DiffMaterial's ±5 %.
func TestABVerdictNamesItsMaterialChange(t *testing.T) {
	if want := fmt.Sprintf("no difference beyond ±%.0f %%", 100*DiffMaterial); ABNoDifference != want {
		t.Errorf("ABNoDifference %q, want %q", ABNoDifference, want)
	}
	for _, c := range []struct {
		lo, hi float64
		want   string
		sig    bool
	}{{0.01, 0.2, "B slower", true}, {-0.2, -0.01, "B faster", true}, {-0.04, 0.049, ABNoDifference, false}, {-0.226, 0.725, ABCannotTell, false}, {-0.01, 0.06, ABCannotTell, false}} {
		if v, sig := ABVerdict(c.lo, c.hi); v != c.want || sig != c.sig {
			t.Errorf("[%+.3f, %+.3f]: %q %v, want %q %v", c.lo, c.hi, v, sig, c.want, c.sig)
		}
	}
}
