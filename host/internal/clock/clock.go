// Package clock sleeps until an instant on the monotonic clock, late by tens of microseconds
// rather than the millisecond a Go timer may be: the built-in engine's forward passes, the
// paced server of the performance rows and dispatch's scheduled sends all wait for instants a
// fraction of a millisecond apart.
//
// Go timers wake about 1 ms late on Linux (the netpoller waits in whole milliseconds), which
// would turn sub-millisecond steps into bursts; so a wait sleeps on a channel-aware timer until
// 2 ms before the instant, then the last ≤ 3 ms in nanosleep(2) (about 60–100 µs late; the Go
// runtime hands the goroutine's P to another thread meanwhile). Off Linux the last part is a
// time.Sleep.
//
// A wait that ends in nanosleep(2) still needs a P when the thread wakes, and waits for one
// when every P is busy; HoldUntil, for a replay's send instants, keeps its P for the last
// millisecond instead (see there).
package clock

import (
	"context"
	"time"
)

// SleepUntil sleeps until deadline; it reports false when stop closes first (a nil stop never
// does). A deadline in the past returns true at once.
func SleepUntil(deadline time.Time, stop <-chan struct{}) bool {
	for {
		d := time.Until(deadline)
		if d <= 0 {
			return true
		}
		if d > 3*time.Millisecond {
			t := time.NewTimer(d - 2*time.Millisecond)
			select {
			case <-t.C:
			case <-stop:
				t.Stop()
				return false
			}
			continue
		}
		Sleep(d)
	}
}

// SleepUntilSpin is SleepUntil that spins for the last spin before deadline instead of
// sleeping: the calling goroutine keeps its P and its thread stays on its CPU, so a thread
// woken late (by a busy host's scheduler, 0.1 ms to a few ms) is late only against
// deadline − spin and the wait still ends on time. It costs up to spin of CPU per call. A
// closed stop ends the sleeping part (false), not the spin; spin ≤ 0 is SleepUntil.
func SleepUntilSpin(deadline time.Time, spin time.Duration, stop <-chan struct{}) bool {
	if spin <= 0 {
		return SleepUntil(deadline, stop)
	}
	if !SleepUntil(deadline.Add(-spin), stop) {
		return false
	}
	for time.Now().Before(deadline) {
	}
	return true
}

// SleepUntilContext is SleepUntil with ctx's cancellation for stop: false when ctx is done
// before deadline, or already done.
func SleepUntilContext(ctx context.Context, deadline time.Time) bool {
	if ctx.Err() != nil {
		return false
	}
	return SleepUntil(deadline, ctx.Done()) && ctx.Err() == nil
}
