package gcphase

import (
	"runtime/debug"
	"testing"
)

func TestThePhaseTargetUnlessTheProcessIsOffOrBeyondIt(t *testing.T) {
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })
	for _, tc := range []struct {
		name             string
		phase            func(int) func()
		percent, process int
		during           int
	}{
		{"lower from the default", Lower, 50, 100, 50},
		{"lower from a higher", Lower, 50, 400, 50},
		{"lower, the process lower", Lower, 50, 25, 25},
		{"lower, the process off", Lower, 50, -1, -1},
		{"raise from the default", Raise, 400, 100, 400},
		{"raise from a lower", Raise, 400, 50, 400},
		{"raise, the process higher", Raise, 400, 800, 800},
		{"raise, the process off", Raise, 400, -1, -1},
	} {
		debug.SetGCPercent(tc.process)
		restore := tc.phase(tc.percent)
		during := debug.SetGCPercent(12345)
		debug.SetGCPercent(during)
		restore()
		if after := debug.SetGCPercent(tc.process); during != tc.during || after != tc.process {
			t.Errorf("%s: GOGC %d during the phase, %d after; want %d, %d", tc.name, during, after, tc.during, tc.process)
		}
	}
}
