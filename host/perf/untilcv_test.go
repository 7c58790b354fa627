package perf

import (
	"strings"
	"testing"
)

// Row 7 from the two sub-benchmarks' metrics (a measured run): each ratio is the adaptive
// protocol's over the fixed repeats' — for --until-cv 10 --cv-confidence 0.8, GPU
// 65.74/158.8 = 0.414 → pass against ≤ 0.5×, median CV 0.5476/0.9391 = 0.58 and max CV
// 15.13/18.94 = 0.80 → pass against ≤ 1×; the busy time, the errors against the noise-free
// engine, the other protocols and the uniform noise are reported without a goal.
func TestUntilCVRows(t *testing.T) {
	in := "BenchmarkPerfUntilCV/field-2 1 453007905009 ns/op 157.4 fixed5-busy-s 158.8 fixed5-gpu-s 18.94 fixed5-max-cv-% 9.004 fixed5-max-err-% 0.9391 fixed5-median-cv-% 0.7773 fixed5-median-err-% 5.000 fixed5-repeats/cell 93.75 untilcv10-busy-s 94.43 untilcv10-gpu-s 9.255 untilcv10-max-cv-% 2.291 untilcv10-max-err-% 0.5041 untilcv10-median-cv-% 0.6414 untilcv10-median-err-% 2.521 untilcv10-repeats/cell 65.20 untilcv10c80-busy-s 65.74 untilcv10c80-gpu-s 15.13 untilcv10c80-max-cv-% 4.600 untilcv10c80-max-err-% 0.5476 untilcv10c80-median-cv-% 0.5490 untilcv10c80-median-err-% 2.146 untilcv10c80-repeats/cell 96.65 untilcv5-busy-s 97.41 untilcv5-gpu-s 9.776 untilcv5-max-cv-% 3.163 untilcv5-max-err-% 0.6098 untilcv5-median-cv-% 0.8477 untilcv5-median-err-% 2.833 untilcv5-repeats/cell\n" +
		"BenchmarkPerfUntilCV/uniform3-2 1 83445954942 ns/op 45.84 fixed5-busy-s 46.08 fixed5-gpu-s 4.326 fixed5-max-cv-% 4.179 fixed5-max-err-% 2.525 fixed5-median-cv-% 1.084 fixed5-median-err-% 5.000 fixed5-repeats/cell 25.65 untilcv10-busy-s 25.90 untilcv10-gpu-s 4.764 untilcv10-max-cv-% 3.857 untilcv10-max-err-% 2.036 untilcv10-median-cv-% 1.636 untilcv10-median-err-% 2.812 untilcv10-repeats/cell\n"
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
		"65.74 s (2.15 repeats per cell) | 158.80 s | 0.41× | pass", "65.20 s | 157.40 s | 0.41× | info",
		"0.55% | 0.94% | 0.58× | pass", "15.13% | 18.94% | 0.80× | pass", "0.55% | 0.78% | 0.71× | info", "4.60% | 9.00% | 0.51× | info",
		"94.43 s (2.52 repeats per cell) | 158.80 s | 0.59× | info", "93.75 s | 157.40 s | 0.60× | info",
		"0.50% | 0.94% | 0.54× | info", "9.26% | 18.94% | 0.49× | info", "0.64% | 0.78% | 0.83× | info", "2.29% | 9.00% | 0.25× | info",
		"97.41 s (2.83 repeats per cell) | 158.80 s | 0.61× | info", "96.65 s | 157.40 s | 0.61× | info",
		"0.61% | 0.94% | 0.65× | info", "9.78% | 18.94% | 0.52× | info", "0.85% | 0.78% | 1.09× | info", "3.16% | 9.00% | 0.35× | info",
		"25.90 s (2.81 repeats per cell) | 46.08 s | 0.56× | info", "25.65 s | 45.84 s | 0.56× | info",
		"2.04% | 2.52% | 0.81× | info", "4.76% | 4.33% | 1.10× | info", "1.64% | 1.08% | 1.51× | info", "3.86% | 4.18% | 0.92× | info",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
