package clock

import (
	"context"
	"sync/atomic"
	"time"
)

// The last part of a HoldUntil wait, before its deadline.
const (
	// HoldLead is how long before the deadline HoldUntil keeps the goroutine's P: from there
	// the wait does not give the P back to the Go scheduler, so that no other goroutine can
	// be running in its place when the instant comes.
	HoldLead = 1 * time.Millisecond
	// SpinLead is how long before the deadline HoldUntil stops sleeping and spins on the
	// clock: a nanosleep(2) ends 50–100 µs late (the kernel's default timer slack is 50 µs).
	SpinLead = 150 * time.Microsecond
)

// holding is set while a goroutine is in the held part of a HoldUntil wait.
var holding atomic.Bool

// HoldUntil sleeps until deadline, like SleepUntil, for an instant that must not be missed
// (a replay's send time). A goroutine that wakes from a timer or a nanosleep(2) must get a P
// (a Go scheduler's slot, GOMAXPROCS of them) before it runs; when every P is busy — the
// built-in engine writing a token to each of 40 streams, say — it waits in the global run
// queue, in runtime traces of a replay at 200 requests/s up to a few milliseconds. So the
// last HoldLead of the wait keeps the P: the goroutine sleeps in nanosleep(2) without
// telling the Go runtime (a raw system call: the P stays with its thread, idle), until
// SpinLead before deadline, then reads the clock in a loop until deadline. It returns within
// a few µs of deadline unless the operating system does not run the thread.
//
// The cost is one P idle for up to HoldLead − SpinLead and a core busy for up to SpinLead
// per wait, and a stop-the-world (a garbage collection's) that waits for the held thread, up
// to HoldLead. One goroutine at a time holds a P this way: a wait that overlaps another's held
// part ends as SleepUntil would (so two waits cannot take both Ps of a 2-core machine).
// stop is only checked before the held part. It reports false when stop closed first (a nil
// stop never does); a deadline in the past returns true at once. Off Linux the held part is
// all spin.
func HoldUntil(deadline time.Time, stop <-chan struct{}) bool {
	if !SleepUntil(deadline.Add(-HoldLead), stop) {
		return false
	}
	if !holding.CompareAndSwap(false, true) {
		return SleepUntil(deadline, stop)
	}
	defer holding.Store(false)
	if time.Until(deadline) <= 0 {
		return true
	}
	select {
	case <-stop:
		return false
	default:
	}
	for {
		d := time.Until(deadline)
		if d <= SpinLead {
			break
		}
		holdSleep(d - SpinLead)
	}
	for time.Now().Before(deadline) {
	}
	return true
}

// HoldUntilContext is HoldUntil with ctx's cancellation for stop: false when ctx is done
// before the held part of the wait, or already done.
func HoldUntilContext(ctx context.Context, deadline time.Time) bool {
	if ctx.Err() != nil {
		return false
	}
	return HoldUntil(deadline, ctx.Done()) && ctx.Err() == nil
}
