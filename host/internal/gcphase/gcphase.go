// Package gcphase sets the Go collector's target (GOGC) for one phase of a run and restores
// the process's own after it: a phase that allocates much and keeps little (planning) runs at
// a lower target, one whose cycles would fall among timed work (a replay's sends) at a higher.
// The process's own target stands when it is off (GOGC=off is the user's choice) or already
// beyond the phase's in the phase's direction.
package gcphase

import "runtime/debug"

// Lower sets GOGC to percent unless the process's target is off or lower, and returns what
// restores the process's target.
func Lower(percent int) (restore func()) {
	return set(percent, func(prev int) bool { return prev < 0 || prev < percent })
}

// Raise sets GOGC to percent unless the process's target is off or higher, and returns what
// restores the process's target.
func Raise(percent int) (restore func()) {
	return set(percent, func(prev int) bool { return prev < 0 || prev > percent })
}

// set sets GOGC to percent, puts the previous target back at once when keep says it stands,
// and returns what restores it.
func set(percent int, keep func(prev int) bool) func() {
	prev := debug.SetGCPercent(percent)
	if keep(prev) {
		debug.SetGCPercent(prev)
	}
	return func() { debug.SetGCPercent(prev) }
}
