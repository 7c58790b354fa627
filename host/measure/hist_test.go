package measure

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// Merging the histograms of two halves equals the histogram of all samples; its
// percentiles agree with the exact nearest-rank ones within HDR's 0.1 % precision and
// never leave [min, max]; JSON round-trips exactly.
func TestHistogramMergeAndPrecision(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var all []time.Duration
	a, b, both := NewHistogram(), NewHistogram(), NewHistogram()
	for i := range 10000 {
		// log-uniform 50 µs .. 500 ms
		d := time.Duration(50e3 * math.Pow(10, 4*r.Float64()))
		all = append(all, d)
		both.Record(d)
		if i%2 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	a.Merge(b)
	sa, sb := a.Summary(), both.Summary()
	if sa != sb {
		t.Fatalf("merged %+v != direct %+v", sa, sb)
	}
	exact := Summarize(all)
	for _, p := range []struct {
		name      string
		got, want time.Duration
	}{{"p50", sa.P50, exact.P50}, {"p90", sa.P90, exact.P90}, {"p99", sa.P99, exact.P99}} {
		if rel := float64(p.got-p.want) / float64(p.want); rel < -0.001 || rel > 0.001 {
			t.Errorf("%s: hdr %v exact %v (%.4f%%)", p.name, p.got, p.want, 100*rel)
		}
	}
	if sa.Min != exact.Min || sa.Max != exact.Max || sa.N != 10000 || sa.Mean != exact.Mean {
		t.Fatalf("hdr %+v exact %+v", sa, exact)
	}
	// one sample: every percentile is that sample (clamped into [min, max])
	one := NewHistogram()
	one.Record(1234567)
	if s := one.Summary(); s.P50 != 1234567 || s.P99 != 1234567 {
		t.Fatalf("one sample %+v", s)
	}
	js, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	back := &Histogram{}
	if err := json.Unmarshal(js, back); err != nil {
		t.Fatal(err)
	}
	if back.Summary() != sa || back.Count() != 10000 {
		t.Fatalf("round trip %+v != %+v", back.Summary(), sa)
	}
}

func TestSummaryRefusesAnOverflowingFigure(t *testing.T) {
	var s Summary
	if err := json.Unmarshal([]byte(`{"n":1,"mean_ms":1e308,"p50_ms":1,"p90_ms":1,"p99_ms":1,"min_ms":1,"max_ms":1}`), &s); err == nil || !strings.Contains(err.Error(), "1e+308 ms is beyond what a duration holds") {
		t.Errorf("err %v for 1e308 ms (read as %v)", err, s.Mean)
	}
	if err := json.Unmarshal([]byte(`{"n":1,"mean_ms":2.5,"p50_ms":1,"p90_ms":1,"p99_ms":1,"min_ms":1,"max_ms":1}`), &s); err != nil || s.Mean != 2500*time.Microsecond {
		t.Errorf("2.5 ms read as %v (%v)", s.Mean, err)
	}
}
