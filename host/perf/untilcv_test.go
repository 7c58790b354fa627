package perf

import (
	"strings"
	"testing"
)

// Row 7 from two sub-benchmarks' metrics: the GPU-time ratio is until-cv's over the fixed
// repeats' (21.24/20.28 = 1.047 → miss against ≤ 0.5×), the CV ratios likewise.
func TestUntilCVRows(t *testing.T) {
	in := "BenchmarkPerfUntilCV/step2burst3-2 1 44830737477 ns/op 20.28 fixed5-gpu-s 18.32 fixed5-max-cv-% 3.360 fixed5-median-cv-% 21.24 untilcv-gpu-s 8.033 untilcv-max-cv-% 3.479 untilcv-median-cv-% 6.444 untilcv-repeats/cell\n" +
		"BenchmarkPerfUntilCV/step2burst0.5-2 1 35816214377 ns/op 20.22 fixed5-gpu-s 5.630 fixed5-max-cv-% 1.045 fixed5-median-cv-% 8.00 untilcv-gpu-s 0.9 untilcv-max-cv-% 0.5584 untilcv-median-cv-% 2.1 untilcv-repeats/cell\n"
	rs, err := ParseBench(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	s := NewSamples(1)
	s.AddResults(0, rs)
	var got []string
	for _, r := range Table(s) {
		if r.Issue == "7" {
			got = append(got, r.Measured+" | "+r.Baseline+" | "+r.Ratio+" | "+r.Verdict)
		}
	}
	want := []string{
		"21.24 s (6.44 repeats per cell) | 20.28 s | 1.05× | miss", "3.48% | 3.36% | 1.04× | miss", "8.03% | 18.32% | 0.44× | pass",
		"8.00 s (2.10 repeats per cell) | 20.22 s | 0.40× | pass", "0.56% | 1.04% | 0.53× | pass", "0.90% | 5.63% | 0.16× | pass",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
