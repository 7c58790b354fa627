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
