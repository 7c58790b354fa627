package exitcode

import (
	"errors"
	"fmt"
	"testing"
)

func TestTheInnermostCodeWins(t *testing.T) {
	base := errors.New("bench.toml:3: unknown key [x]")
	inner := With(InvalidConfig, base)
	outer := With(TargetFailed, fmt.Errorf("run: %w", inner))
	if Of(outer) != InvalidConfig || Of(nil) != OK || Of(base) != Failure {
		t.Errorf("Of = %d, %d, %d", Of(outer), Of(nil), Of(base))
	}
	if !errors.Is(outer, base) || outer.Error() != "run: bench.toml:3: unknown key [x]" {
		t.Errorf("outer = %v", outer)
	}
	if With(Usage, nil) != nil {
		t.Error("With(code, nil) is not nil")
	}
	if e := Errorf(PluginRejected, "plugin %s", "gamma"); Of(e) != PluginRejected || e.Error() != "plugin gamma" {
		t.Errorf("Errorf = %v (%d)", e, Of(e))
	}
}
