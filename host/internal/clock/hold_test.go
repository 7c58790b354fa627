package clock

import (
	"context"
	"testing"
	"time"
)

// A held wait ends at or after its deadline, through each of its parts (timer, nanosleep,
// held sleep, spin) and from a deadline already in the held part; a closed stop or a done
// context ends it first, and one that ends while another wait holds its P still ends at its
// deadline (the ordinary path).
func TestHoldUntil(t *testing.T) {
	for _, d := range []time.Duration{0, SpinLead / 2, HoldLead / 2, HoldLead + SpinLead, 8 * time.Millisecond} {
		deadline := time.Now().Add(d)
		if !HoldUntil(deadline, nil) {
			t.Fatalf("%v: stopped without a stop channel", d)
		}
		if now := time.Now(); now.Before(deadline) {
			t.Errorf("%v: woke %v before the deadline", d, deadline.Sub(now))
		}
		if holding.Load() {
			t.Fatalf("%v: the hold is still taken after the wait", d)
		}
	}
	stop := make(chan struct{})
	close(stop)
	if HoldUntil(time.Now().Add(time.Hour), stop) {
		t.Error("a closed stop: want false")
	}
	if HoldUntil(time.Now().Add(HoldLead/2), stop) {
		t.Error("a closed stop, deadline within the held part: want false")
	}
	if !HoldUntil(time.Now().Add(-time.Second), stop) {
		t.Error("a deadline in the past: want true even with stop closed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if HoldUntilContext(ctx, time.Now().Add(time.Hour)) {
		t.Error("a done context: want false")
	}
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if HoldUntilContext(ctx, time.Now().Add(time.Hour)) {
		t.Error("a context that ends first: want false")
	}

	holding.Store(true) // another wait is in its held part
	deadline := time.Now().Add(HoldLead / 2)
	ok := HoldUntil(deadline, nil)
	holding.Store(false)
	if !ok {
		t.Fatal("a wait beside a held one: stopped without a stop channel")
	}
	if now := time.Now(); now.Before(deadline) {
		t.Errorf("a wait beside a held one woke %v before the deadline", deadline.Sub(now))
	}
}
