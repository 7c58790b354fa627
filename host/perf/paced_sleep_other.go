//go:build !linux

package perf

import "time"

// pacedSleep falls back to time.Sleep off Linux.
func pacedSleep(d time.Duration) { time.Sleep(d) }
