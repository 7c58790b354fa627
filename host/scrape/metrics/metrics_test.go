package metrics

import (
	"testing"

	"github.com/genload/genload/host/warning"
)

func TestOccupy(t *testing.T) {
	cases := []struct {
		name    string
		samples []int
		b       int
		want    Occupancy
	}{
		// leading/trailing zeros dropped → [2 4 4 4 3]: mode 4, 3/5 at target, max 4, mean 17/5
		{"ramp", []int{0, 0, 2, 4, 4, 4, 3, 0}, 4, Occupancy{Samples: 5, Target: 4, Mode: 4, AtTarget: 0.6, Max: 4, Mean: 3.4, P10: 2, P50: 4, P90: 4}},
		// tie 1×2 vs 3×2 → larger mode 3
		{"tie", []int{1, 3, 1, 3}, 3, Occupancy{Samples: 4, Target: 3, Mode: 3, AtTarget: 0.5, Max: 3, Mean: 2, P10: 1, P50: 1, P90: 3}},
		{"idle", []int{0, 0}, 4, Occupancy{Target: 4}},
	}
	for _, tc := range cases {
		if got := Occupy(tc.samples, tc.b); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestNotes(t *testing.T) {
	m := CellMetrics{Steps: Steps{StepTimeReason: "x is not exposed"}, Servers: []ServerMetrics{
		{URL: "a", Sequences: 4, Steps: Steps{HasStepTime: true}, Occupancy: Occupy([]int{2, 2, 3, 4, 2}, 4)},
		{URL: "b", Sequences: 2, Steps: Steps{StepTimeReason: "y had no observation during the cell"}, Occupancy: Occupy([]int{2, 3, 2, 2, 2}, 2)},
		{URL: "c", Sequences: 2, Error: "scrape: GET c: status 500"},
		{URL: "d", Sequences: 2, Steps: Steps{HasStepTime: true}, Occupancy: Occupy([]int{1, 1}, 2)}, // too few samples
		{URL: "e", Sequences: 4, Steps: Steps{HasStepTime: true}, Occupancy: Occupy([]int{1, 2, 3, 3, 3, 2}, 4)},
		// routed no sequence of the cell: its idle /metrics is nothing to say
		{URL: "f", Sequences: 0, Steps: Steps{StepTimeReason: "y had no observation during the cell"}},
	}}
	want := []string{
		"metrics fwd absent: x is not exposed",
		"batch reached briefly: server a ran the 4 routed to it in 20 % of the samples only (gauge: median 2, mean 2.6, p10–p90 2–4, max 4 over 5 samples, 20 % at 4)",
		"server b: metrics fwd absent: y had no observation during the cell",
		"server b ran up to 3 requests at once, more than the 2 routed to it: other load shares it (gauge: median 2, mean 2.2, p10–p90 2–3, max 3 over 5 samples, 80 % at 2)",
		"server c: scrape: GET c: status 500",
		"batch not reached: server e ran at most 3 sequences at once, not the 4 routed to it (gauge: median 2, mean 2.3, p10–p90 1–3, max 3 over 6 samples, 0 % at 4); the figures are kept, for a batch of at most 3",
	}
	got := texts(m.Notes())
	if len(got) != len(want) {
		t.Fatalf("notes:\n%q\nwant\n%q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("note %d: %q, want %q", i, got[i], want[i])
		}
	}
	if !m.NotReached() {
		t.Error("server e never ran its 4: NotReached is false")
	}
	m.Servers = append(m.Servers[:4], m.Servers[5])
	if m.NotReached() {
		t.Error("every server ran its share: NotReached is true")
	}
}

// A stressed server asked for B = 1,024: it ramps up to 1,020 running and down again, and
// its long tail spends most samples at 1. The mode (1) said "mostly ran 1 sequence"; the
// verdict reads the distribution: never at B, at most 1,020, mean 373
// (20,520 sequence-samples over 55).
func TestJudgeReadsTheDistributionNotTheMode(t *testing.T) {
	var samples []int
	for v := 20; v <= 1020; v += 50 { // the ramp up: 21 samples
		samples = append(samples, v)
	}
	for range 4 { // the peak
		samples = append(samples, 1020)
	}
	for v := 1000; v >= 100; v -= 100 { // the ramp down: 10 samples
		samples = append(samples, v)
	}
	for range 20 { // the tail: one straggler
		samples = append(samples, 1)
	}
	o := Occupy(samples, 1024)
	if o.Mode != 1 {
		t.Fatalf("mode %d, want 1 (the case: the mode misleads)", o.Mode)
	}
	w, ok := o.Judge("the server", "B = 1024")
	want := "batch not reached: the server ran at most 1,020 sequences at once, not B = 1024 (gauge: median 270, mean 373, p10–p90 1–1,000, max 1,020 over 55 samples, 0 % at 1,024); the figures are kept, for a batch of at most 1,020"
	if !ok || w.Name != warning.BatchNotReached || w.Text != want {
		t.Errorf("verdict %v %s %q,\nwant %q", ok, w.Name, w.Text, want)
	}
	// Reached for the whole cell: nothing to say.
	if w, ok := Occupy([]int{8, 8, 8, 8}, 8).Judge("the server", "B = 8"); ok {
		t.Errorf("a batch at B throughout: %q", w.Text)
	}
}

func texts(ws []warning.Warning) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Text
	}
	return out
}
