package clock

import (
	"context"
	"testing"
	"time"
)

// The wait ends at or after its deadline, and a closed stop or a done context ends it first.
func TestSleepUntil(t *testing.T) {
	for _, d := range []time.Duration{0, 300 * time.Microsecond, 2 * time.Millisecond, 8 * time.Millisecond} {
		deadline := time.Now().Add(d)
		if !SleepUntil(deadline, nil) {
			t.Fatalf("%v: stopped without a stop channel", d)
		}
		if now := time.Now(); now.Before(deadline) {
			t.Errorf("%v: woke %v before the deadline", d, deadline.Sub(now))
		}
	}
	stop := make(chan struct{})
	close(stop)
	t0 := time.Now()
	if SleepUntil(t0.Add(time.Hour), stop) {
		t.Error("a closed stop: want false")
	}
	if !SleepUntil(t0.Add(-time.Second), stop) {
		t.Error("a deadline in the past: want true even with stop closed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if SleepUntilContext(ctx, time.Now().Add(time.Hour)) || SleepUntilContext(ctx, time.Now().Add(-time.Second)) {
		t.Error("a done context: want false")
	}
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if SleepUntilContext(ctx, time.Now().Add(time.Hour)) {
		t.Error("a context that ends first: want false")
	}
	if !SleepUntilContext(context.Background(), time.Now().Add(time.Millisecond)) {
		t.Error("a live context: want true")
	}
}

// A spinning wait ends at or after its deadline, also when the deadline is nearer than the
// spin, and a closed stop ends its sleeping part.
func TestSleepUntilSpin(t *testing.T) {
	for _, spin := range []time.Duration{0, 100 * time.Microsecond, 2 * time.Millisecond} {
		for _, d := range []time.Duration{0, 50 * time.Microsecond, 300 * time.Microsecond, 4 * time.Millisecond} {
			deadline := time.Now().Add(d)
			if !SleepUntilSpin(deadline, spin, nil) {
				t.Fatalf("spin %v, %v: stopped without a stop channel", spin, d)
			}
			if now := time.Now(); now.Before(deadline) {
				t.Errorf("spin %v, %v: returned %v before the deadline", spin, d, deadline.Sub(now))
			}
		}
	}
	stop := make(chan struct{})
	close(stop)
	if SleepUntilSpin(time.Now().Add(time.Hour), time.Millisecond, stop) {
		t.Error("a closed stop: want false")
	}
	if !SleepUntilSpin(time.Now().Add(-time.Second), time.Millisecond, stop) {
		t.Error("a deadline in the past: want true even with stop closed")
	}
}
