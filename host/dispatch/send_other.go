//go:build !linux

package dispatch

import "time"

// shortSleep sleeps d (with the runtime's timer resolution on this system).
func shortSleep(d time.Duration) { time.Sleep(d) }
