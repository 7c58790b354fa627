//go:build linux

package perf

import (
	"syscall"
	"time"
)

// pacedSleep blocks the calling thread in nanosleep(2), about 60–100 µs late at most.
func pacedSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil)
}
