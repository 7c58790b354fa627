package scraped

import "testing"

func TestOccupy(t *testing.T) {
	cases := []struct {
		name    string
		samples []int
		b       int
		want    Occupancy
	}{
		// leading/trailing zeros dropped → [2 4 4 4 3]: mode 4, 3/5 at target, max 4, mean 17/5
		{"ramp", []int{0, 0, 2, 4, 4, 4, 3, 0}, 4, Occupancy{Samples: 5, Target: 4, Mode: 4, AtTarget: 0.6, Max: 4, Mean: 3.4}},
		// tie 1×2 vs 3×2 → larger mode 3
		{"tie", []int{1, 3, 1, 3}, 3, Occupancy{Samples: 4, Target: 3, Mode: 3, AtTarget: 0.5, Max: 3, Mean: 2}},
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
		{URL: "a", Sequences: 4, Steps: Steps{HasStepTime: true}, Occupancy: Occupancy{Samples: 5, Mode: 2, AtTarget: 0.2, Max: 4}},
		{URL: "b", Sequences: 2, Steps: Steps{StepTimeReason: "y had no observation during the cell"}, Occupancy: Occupancy{Samples: 5, Mode: 2, Max: 3}},
		{URL: "c", Sequences: 2, Error: "scrape: GET c: status 500"},
		{URL: "d", Sequences: 2, Steps: Steps{HasStepTime: true}, Occupancy: Occupancy{Samples: 2, Mode: 1, Max: 1}}, // too few samples
	}}
	want := []string{
		"metrics fwd absent: x is not exposed",
		"batch attainment: server a mostly ran 2 sequences at once, not the 4 routed to it (20 % of samples at 4)",
		"server b: metrics fwd absent: y had no observation during the cell",
		"server b ran up to 3 requests at once, more than the 2 routed to it: other load shares it",
		"server c: scrape: GET c: status 500",
	}
	got := m.Notes()
	if len(got) != len(want) {
		t.Fatalf("notes:\n%q\nwant\n%q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("note %d: %q, want %q", i, got[i], want[i])
		}
	}
}
