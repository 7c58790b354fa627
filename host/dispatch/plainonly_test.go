package dispatch

import "testing"

// plainOnly skips t when the tests run under the race detector (make race): for a test whose
// assertion is a share of a request's time, which the detector's 5-10× slower client moves,
// while other tests of the package race the same goroutines. The call says which. The plain
// run (make test) runs it in full.
func plainOnly(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("plain run only: a timing share the race detector's slower client moves; the same goroutines are raced by other tests")
	}
}
