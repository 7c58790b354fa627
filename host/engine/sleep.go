package engine

import "time"

// sleepUntil sleeps until deadline on the monotonic clock; it reports false when stop closes
// first. Go timers wake about 1 ms late on Linux (the netpoller waits in whole milliseconds),
// which would turn sub-millisecond steps into bursts, so the last ≤ 3 ms are slept with
// preciseSleep (nanosleep(2): ~60–100 µs late) and only longer waits use a channel-aware timer.
func sleepUntil(deadline time.Time, stop <-chan struct{}) bool {
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
		preciseSleep(d)
	}
}
