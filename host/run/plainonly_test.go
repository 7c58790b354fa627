package run

import "testing"

// plainOnlyReason is why a test skips under the race detector; one string, so that make
// test's summary counts these skips on one line.
const plainOnlyReason = "plain run only: under -race it would repeat, 3-10× slower, paths that lighter tests race (the routed, retry and failure tests of this package, host/dispatch, host/engine)"

// plainOnly skips t when the tests run under the race detector (make race). It is for tests
// whose goroutine-sharing paths other tests of the package already race and whose own
// assertion is a timing within a few % (which the detector's 5-10× slower client misses) or
// a byte-exact pin, or that fail before the first request. Each call says why in a comment.
// The plain run (make test) runs them in full.
func plainOnly(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip(plainOnlyReason)
	}
}
