package dispatch

import (
	"context"
	"time"
)

// waitUntil blocks until at (monotonic clock) or until ctx ends. A Go timer wakes about 1 ms
// late on Linux (the netpoller waits in whole milliseconds), which would put a replay's sends
// a millisecond behind their schedule, so the last 2 ms are slept in nanosleep(2) (a
// high-resolution timer, tens of µs late; the runtime hands the goroutine's P to another
// thread meanwhile) and only a longer wait uses a timer.
func waitUntil(ctx context.Context, at time.Time) {
	for {
		d := time.Until(at)
		if d <= 0 || ctx.Err() != nil {
			return
		}
		if d > 3*time.Millisecond {
			t := time.NewTimer(d - 2*time.Millisecond)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		shortSleep(d)
	}
}
