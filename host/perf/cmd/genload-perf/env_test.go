package main

import (
	"slices"
	"testing"
)

// -genload-env: pairs kept in order, blanks skipped, a pair without a key or '=' refused.
func TestParseEnv(t *testing.T) {
	got, err := parseEnv(" GOGC=50, ,GOMEMLIMIT=64MiB,X=")
	if want := []string{"GOGC=50", "GOMEMLIMIT=64MiB", "X="}; err != nil || !slices.Equal(got, want) {
		t.Errorf("parseEnv = %q, %v; want %q", got, err, want)
	}
	for _, bad := range []string{"GOGC", "=50", "A=1,B"} {
		if _, err := parseEnv(bad); err == nil {
			t.Errorf("parseEnv(%q) accepted", bad)
		}
	}
}
