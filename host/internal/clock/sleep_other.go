//go:build !linux

package clock

import "time"

// Sleep is time.Sleep off Linux.
func Sleep(d time.Duration) { time.Sleep(d) }
