package perf

import (
	"strings"
	"testing"
)

// Row 7 from the two sub-benchmarks' metrics (a measured run): each ratio is until-cv's over
// the fixed repeats' — GPU 47.53/102.0 = 0.466 → pass against ≤ 0.5×, median CV
// 0.7001/0.7770 = 0.90 and max CV 16.49/19.14 = 0.86 → pass against ≤ 1×; the errors against
// the noise-free engine, --until-cv 5 and the uniform noise are reported without a goal.
func TestUntilCVRows(t *testing.T) {
	in := "BenchmarkPerfUntilCV/field-2 1 232185238804 ns/op 102.0 fixed5-gpu-s 19.14 fixed5-max-cv-% 8.657 fixed5-max-err-% 0.7770 fixed5-median-cv-% 0.6115 fixed5-median-err-% 5.000 fixed5-repeats/cell 47.53 untilcv10-gpu-s 16.49 untilcv10-max-cv-% 5.334 untilcv10-max-err-% 0.7001 untilcv10-median-cv-% 0.7412 untilcv10-median-err-% 2.641 untilcv10-repeats/cell 49.22 untilcv5-gpu-s 15.40 untilcv5-max-cv-% 6.032 untilcv5-max-err-% 0.5993 untilcv5-median-cv-% 0.6015 untilcv5-median-err-% 2.719 untilcv5-repeats/cell\n" +
		"BenchmarkPerfUntilCV/uniform3-2 1 43885822679 ns/op 22.82 fixed5-gpu-s 4.667 fixed5-max-cv-% 6.432 fixed5-max-err-% 2.315 fixed5-median-cv-% 0.9615 fixed5-median-err-% 5.000 fixed5-repeats/cell 12.07 untilcv10-gpu-s 4.953 untilcv10-max-cv-% 6.356 untilcv10-max-err-% 2.168 untilcv10-median-cv-% 1.545 untilcv10-median-err-% 3.188 untilcv10-repeats/cell\n"
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
		"47.53 s (2.64 repeats per cell) | 102.00 s | 0.47× | pass", "0.70% | 0.78% | 0.90× | pass", "16.49% | 19.14% | 0.86× | pass",
		"0.74% | 0.61% | 1.21× | info", "5.33% | 8.66% | 0.62× | info",
		"49.22 s (2.72 repeats per cell) | 102.00 s | 0.48× | info", "0.60% | 0.78% | 0.77× | info", "15.40% | 19.14% | 0.80× | info",
		"0.60% | 0.61% | 0.98× | info", "6.03% | 8.66% | 0.70× | info",
		"12.07 s (3.19 repeats per cell) | 22.82 s | 0.53× | info", "2.17% | 2.31% | 0.94× | info", "4.95% | 4.67% | 1.06× | info",
		"1.54% | 0.96% | 1.61× | info", "6.36% | 6.43% | 0.99× | info",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
