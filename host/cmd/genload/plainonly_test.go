package main

import "testing"

// plainOnlyReason is why a test skips under the race detector; one string, so that make
// test's summary counts these skips on one line.
const plainOnlyReason = "plain run only: under -race it would repeat, 3-10× slower, paths that lighter tests race (TestRunOnTheBuiltinEngine, the interrupt, kill and failure tests, and the packages below)"

// plainOnly skips t when the tests run under the race detector (make race). It is for tests
// whose code shares no memory between goroutines beyond what other tests already race: runs
// repeated for a verdict on their figures (gate, ab, until-cv, repeats), analysis of files
// (fit, predict, gate), a binary built without the detector. Each call says why in a comment.
// The plain run (make test) runs them in full.
func plainOnly(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip(plainOnlyReason)
	}
}
