//go:build !linux

package clock

import "time"

// Sleep is time.Sleep off Linux.
func Sleep(d time.Duration) { time.Sleep(d) }

// holdSleep returns at once off Linux: HoldUntil spins the whole held part.
func holdSleep(time.Duration) {}
