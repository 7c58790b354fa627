package scrape

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// fakeServer serves before until flip is set, then after; hits counts the requests.
func fakeServer(t *testing.T, flip *atomic.Bool, hits *atomic.Int64, before, after string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if flip.Load() {
			w.Write([]byte(after))
		} else {
			w.Write([]byte(before))
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

// Two servers, three workers (w0 and w2 on server A). A: 10 steps of 4 during the cell,
// ITL Δ 0.8 s over 40 tokens = 20 ms, truth Δ 0.2 s over 10 steps = 20 ms; B: 10 steps of
// 2, ITL 0.2 s over 20 tokens = 10 ms, truth 0.1 s / 10 = 10 ms. Combined: ITL
// (0.8 + 0.2)/(40 + 20) = 16.667 ms, truth 0.3 s / 20 steps = 15 ms; occupancy 4 + 2 = 6
// at every tick. Routing [0 1 2 0 1 2] puts 4 sequences on A and 2 on B.
func TestRoutedWatcher(t *testing.T) {
	var flip atomic.Bool
	var ha, hb atomic.Int64
	a := fakeServer(t, &flip, &ha, vllmText(10, 4, 0.2, 0.05), vllmText(20, 4, 1.0, 0.25))
	b := fakeServer(t, &flip, &hb, vllmText(0, 2, 0, 0), vllmText(10, 2, 0.2, 0.1))
	w, err := NewRoutedWatcher(context.Background(), []Worker{{"w0", a}, {"w1", b}, {"w2", a}}, "", time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if w.Servers() != 2 {
		t.Fatalf("%d servers, want 2", w.Servers())
	}
	if err := w.Begin(context.Background()); err != nil {
		t.Fatal(err)
	}
	for ha.Load() < 4 || hb.Load() < 4 { // NewRoutedWatcher, Begin, then two occupancy ticks
		time.Sleep(time.Millisecond)
	}
	flip.Store(true)
	m, err := w.EndRouted(context.Background(), 6, []int{0, 1, 2, 0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Servers) != 2 {
		t.Fatalf("servers %+v", m.Servers)
	}
	sa, sb := m.Servers[0], m.Servers[1]
	if sa.URL != a || sa.Sequences != 4 || len(sa.Workers) != 2 || sa.Steps.StepTime != 20*time.Millisecond || sa.Steps.TruthStepTime != 20*time.Millisecond {
		t.Errorf("server A %+v", sa)
	}
	if sb.URL != b || sb.Sequences != 2 || sb.Steps.StepTime != 10*time.Millisecond || sb.Steps.TruthStepTime != 10*time.Millisecond {
		t.Errorf("server B %+v", sb)
	}
	if sa.Occupancy.Samples == 0 || sa.Occupancy.Mode != 4 || sa.Occupancy.AtTarget != 1 || sb.Occupancy.Mode != 2 || sb.Occupancy.AtTarget != 1 {
		t.Errorf("per-server occupancy %+v, %+v", sa.Occupancy, sb.Occupancy)
	}
	if m.Occupancy.Mode != 6 || m.Occupancy.Target != 6 || m.Occupancy.AtTarget != 1 {
		t.Errorf("combined occupancy %+v", m.Occupancy)
	}
	want := time.Second / 60
	if d := m.Steps.StepTime - want; !m.Steps.HasStepTime || d < -1 || d > 1 || m.Steps.TruthStepTime != 15*time.Millisecond || m.Steps.TruthSteps != 20 {
		t.Errorf("combined steps %+v, want step %v, truth 15 ms over 20 steps", m.Steps, want)
	}
	// without the routing, shares are unknown: −1, and occupancy targets 0
	flip.Store(false)
	if err := w.Begin(context.Background()); err != nil {
		t.Fatal(err)
	}
	flip.Store(true)
	m, _ = w.End(context.Background(), 6)
	if m.Servers[0].Sequences != -1 || m.Servers[0].Occupancy.Target != 0 {
		t.Errorf("no routing: %+v", m.Servers[0])
	}
}

// Merge sums series over snapshots without touching them.
func TestMerge(t *testing.T) {
	x, y := snap(t, vllmText(10, 4, 0.2, 0.05)), snap(t, vllmText(20, 2, 1.0, 0.25))
	m := Merge(x, y)
	if v, _ := m.Value(VLLM.Running); v != 6 {
		t.Errorf("running %v, want 6", v)
	}
	if c, s, _ := m.Hist(TruthStepDuration); c != 30 || s != 0.3 {
		t.Errorf("truth hist %v/%v, want 30/0.3", c, s)
	}
	if v, _ := x.Value(VLLM.Running); v != 4 {
		t.Errorf("input modified: %v", v)
	}
}
