//go:build linux

package dispatch

import (
	"syscall"
	"time"
)

// shortSleep sleeps d in nanosleep(2); an interrupted sleep returns early (waitUntil loops).
func shortSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil)
}
