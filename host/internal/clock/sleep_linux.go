//go:build linux

package clock

import (
	"syscall"
	"time"
)

// Sleep blocks the calling thread in nanosleep(2) for d (high-resolution timer). An
// interrupted sleep returns early; SleepUntil loops.
func Sleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil)
}
