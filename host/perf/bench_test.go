package perf

import (
	"math"
	"strings"
	"testing"
)

func TestParseBench(t *testing.T) {
	out := `goos: linux
pkg: github.com/genload/genload/host/dispatch
BenchmarkChunkCost/genload/C=1/N=1000-2   	    2498	    511893 ns/op	        17.99 B/chunk	         0.02321 allocs/chunk
BenchmarkBody64x64k/genload-2         	       1	  11369483 ns/op	2258.40 MB/s	      24 B/op	       1 allocs/op
BenchmarkX log line without a count
PASS
`
	rs, err := ParseBench(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("got %d results, want 2 (the log line is not a result)", len(rs))
	}
	// The -2 GOMAXPROCS suffix is dropped; "C=1/N=1000" keeps its digits.
	if rs[0].Name != "BenchmarkChunkCost/genload/C=1/N=1000" || rs[0].Iters != 2498 {
		t.Errorf("first = %q ×%d", rs[0].Name, rs[0].Iters)
	}
	if got := rs[0].Metrics["allocs/chunk"]; got != 0.02321 {
		t.Errorf("allocs/chunk = %v, want 0.02321", got)
	}
	if got := rs[1].Metrics["MB/s"]; got != 2258.40 {
		t.Errorf("MB/s = %v, want 2258.40", got)
	}
	if _, err := ParseBench(strings.NewReader("BenchmarkY-2 10 5 ns/op 7\n")); err == nil {
		t.Error("odd value/unit list: no error")
	}
	if _, err := ParseBench(strings.NewReader("BenchmarkY-2 10 five ns/op\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("bad value: error %v, want one naming line 1", err)
	}
}

func TestSummarizeAndRatios(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		xs            []float64
		med, min, max float64
		n             int
	}{
		{[]float64{5, 1, 3}, 3, 1, 5, 3},      // odd count: the middle value
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4, 4}, // even count: mean of 2 and 3
		{[]float64{nan, 7, nan}, 7, 7, 7, 1},  // NaN rounds are skipped
	}
	for _, c := range cases {
		st := Summarize(c.xs)
		if st.Median != c.med || st.Min != c.min || st.Max != c.max || st.N != c.n {
			t.Errorf("Summarize(%v) = %+v, want %v [%v–%v] n=%d", c.xs, st, c.med, c.min, c.max, c.n)
		}
	}
	if st := Summarize([]float64{nan}); st.N != 0 || !math.IsNaN(st.Median) {
		t.Errorf("all NaN: %+v", st)
	}
	// Per-round pairing: 1/2, 6/3, missing, division by zero.
	r := Ratios([]float64{1, 6, nan, 4}, []float64{2, 3, 5, 0})
	if r[0] != 0.5 || r[1] != 2 || !math.IsNaN(r[2]) || !math.IsNaN(r[3]) {
		t.Errorf("Ratios = %v", r)
	}
}

func TestSamplesAndTable(t *testing.T) {
	s := NewSamples(2)
	for rnd, v := range []struct{ g, h float64 }{{500, 2000}, {600, 2000}} {
		s.AddResults(rnd, []Result{
			{Name: "BenchmarkPerfSplitChunkCost/genload/C=1/N=1000", Metrics: map[string]float64{"cpu-ns/chunk": v.g}},
			{Name: "BenchmarkPerfSplitChunkCost/nethttp/C=1/N=1000", Metrics: map[string]float64{"cpu-ns/chunk": v.h}},
		})
	}
	s.Add("x|y", 5, 1) // out of range: ignored
	if s.Get("x|y") != nil {
		t.Error("out-of-range round recorded")
	}
	rows := Table(s)
	// Ratios 0.25 and 0.30 per round: median 0.275 → "0.28 [0.25–0.30]×", ≤ 0.35 passes.
	r := rows[0]
	if r.Ratio != "0.28 [0.25–0.30]×" || r.Measured != "0.55 [0.50–0.60] µs" || r.Baseline != "2.00 µs" || r.Verdict != "pass" {
		t.Errorf("row 1 = %+v", r)
	}
	// No raw-TCP figures: the next row has no data.
	if rows[1].Verdict != "n/a" || rows[1].Ratio != "n/a" {
		t.Errorf("row without data = %+v", rows[1])
	}
}
