package scrape

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// text writes fams in Prometheus text format, families sorted by name.
func text(t *testing.T, fams map[string]*dto.MetricFamily) (string, bool) {
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, n := range names {
		if _, err := expfmt.MetricFamilyToText(&b, fams[n]); err != nil {
			return "", false // a family the text format cannot hold (e.g. a bad label name)
		}
	}
	return b.String(), true
}

func same(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

// FuzzParse: what parses, written back and parsed again, reads the same: every family's
// Value and Hist (all series, and each label pair) are equal, and a second write gives the
// same text (the first write is a fixed point). Detect and Delta never panic on it.
func FuzzParse(f *testing.F) {
	f.Add(vllmText(3, 2, 0.1, 0.05))
	f.Add("# TYPE tgi_batch_decode_duration histogram\ntgi_batch_decode_duration_bucket{method=\"decode\",le=\"+Inf\"} 1\ntgi_batch_decode_duration_sum{method=\"decode\"} 1\ntgi_batch_decode_duration_count{method=\"decode\"} 1\ntgi_batch_current_size 2\n")
	f.Add("llamacpp:requests_processing 2\nllamacpp:n_decode_total NaN\nllamacpp:tokens_predicted_seconds_total +Inf\n")
	f.Add("# TYPE s summary\ns{quantile=\"0.5\"} 1\ns_sum 3\ns_count 2\nx{a=\"1\",b=\"2\"} 4\nx{a=\"2\"} 5\n")
	f.Add("x{a=\"1\" 2\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		if len(in) > 1<<12 {
			return // longer inputs add nothing but time
		}
		fams, err := Parse(strings.NewReader(in))
		if err != nil {
			return
		}
		s := Snapshot{Families: fams}
		n, _ := Detect(fams)
		for _, names := range []Names{VLLM, SGLang, LlamaCpp, TGI, n} {
			_ = Delta(names, s, s, 1)
		}
		t1, ok := text(t, fams)
		if !ok {
			return
		}
		back, err := Parse(strings.NewReader(t1))
		if err != nil {
			t.Fatalf("written text does not parse: %v\n%s", err, t1)
		}
		r := Snapshot{Families: back}
		if len(back) != len(fams) {
			t.Fatalf("%d families, %d after a round trip", len(fams), len(back))
		}
		for name, fam := range fams {
			v0, ok0 := s.Value(name)
			v1, ok1 := r.Value(name)
			if ok0 != ok1 || !same(v0, v1) {
				t.Fatalf("%s: value %v (%v), after a round trip %v (%v)", name, v0, ok0, v1, ok1)
			}
			matches := map[string]bool{"": true}
			for _, m := range fam.GetMetric() {
				for _, lp := range m.GetLabel() {
					matches[lp.GetName()+"="+lp.GetValue()] = true
				}
			}
			for kv := range matches {
				var mt []string
				if kv != "" {
					mt = []string{kv}
				}
				c0, s0, _ := s.Hist(name, mt...)
				c1, s1, _ := r.Hist(name, mt...)
				if !same(c0, c1) || !same(s0, s1) {
					t.Fatalf("%s%v: hist %v/%v, after a round trip %v/%v", name, mt, c0, s0, c1, s1)
				}
			}
		}
		if t2, _ := text(t, back); t2 != t1 {
			t.Fatalf("second write differs:\n%s\n---\n%s", t1, t2)
		}
	})
}

// FuzzDelta: a vLLM exposition written from generated counts reads back exactly: the step
// time is the ITL sum delta over the count delta, the truth likewise, the tokens per step
// the iteration-token delta over the steps, each to the nanosecond of rounding.
func FuzzDelta(f *testing.F) {
	f.Add(uint16(10), uint16(4), uint32(5000), uint16(10), uint32(20000))
	f.Add(uint16(0), uint16(1), uint32(0), uint16(1), uint32(1))
	f.Add(uint16(65535), uint16(512), uint32(1<<31), uint16(3), uint32(7))
	f.Fuzz(func(t *testing.T, steps0, b uint16, us0 uint32, dSteps uint16, dUs uint32) {
		if b == 0 || dSteps == 0 || dUs == 0 {
			return
		}
		// before: steps0 steps of batch b at us0 µs in total; after: dSteps more, dUs µs more
		sec0, sec1 := float64(us0)/1e6, float64(us0)/1e6+float64(dUs)/1e6
		tok0, tok1 := int(steps0)*int(b), (int(steps0)+int(dSteps))*int(b)
		// ITL summed per token: every token of a step waited the step's duration
		before := snap(t, vllmText(int(steps0), int(b), sec0*float64(b), sec0))
		after := snap(t, vllmText(int(steps0)+int(dSteps), int(b), sec1*float64(b), sec1))
		st := Delta(VLLM, before, after, int(b))
		step := float64(dUs) * 1e3 / float64(dSteps) // ns
		near := func(d time.Duration) bool { return math.Abs(float64(d)-step) <= 1+1e-9*step }
		if !st.HasStepTime || !near(st.StepTime) || !st.HasTruth || !near(st.TruthStepTime) {
			t.Fatalf("step %v ns: got %+v", step, st)
		}
		if st.TruthSteps != float64(dSteps) || st.TokensPerStep != float64(b) || st.GeneratedTokens != float64(tok1-tok0) {
			t.Fatalf("%d steps of %d: got %+v", dSteps, b, st)
		}
		if fmt.Sprint(st.StepTimeReason) != "" {
			t.Fatalf("reason %q with a figure", st.StepTimeReason)
		}
	})
}
