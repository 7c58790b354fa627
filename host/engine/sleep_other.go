//go:build !linux

package engine

import "time"

// preciseSleep falls back to time.Sleep off Linux.
func preciseSleep(d time.Duration) { time.Sleep(d) }
