//go:build linux

package engine

import (
	"syscall"
	"time"
)

// preciseSleep blocks the calling thread in nanosleep(2) (high-resolution timer; the Go
// runtime hands the goroutine's P to another thread meanwhile). An interrupted sleep returns
// early; sleepUntil loops.
func preciseSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil)
}
