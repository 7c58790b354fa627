package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/genload/genload/host/exitcode"
)

// Ctrl-C while the server is still loading its model (every /v1/models answered 503, retried)
// is an interrupt, exit 130, not a target failure (5): the cancel comes from the third answer,
// so the run is inside its retries, before its first cell, when it is interrupted.
func TestInterruptBeforeTheFirstCellExits130(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if asked.Add(1) == 3 {
			cancel()
		}
		http.Error(w, `{"error":"model loading"}`, http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	cfg := writeConfig(t, fmt.Sprintf("target = %q\nmax_tokens = 8\nout = %q\n[matrix]\nseq_lens = [256]\nbatch_sizes = [1]\n[warmup]\nretries = 100\nretry_delay = \"20ms\"\n",
		srv.URL, t.TempDir()))
	code, _, stderr := cli(t, ctx, "run", "-c", cfg)
	if code != exitcode.Interrupted || !strings.Contains(stderr, "interrupted before the first cell") {
		t.Fatalf("exit %d, want %d (interrupted)\n%s", code, exitcode.Interrupted, stderr)
	}
	if n := asked.Load(); n < 3 {
		t.Errorf("/v1/models asked %d times, want ≥ 3", n)
	}
}

// The stopping rule's flags without --until-cv, and a negative --until-cv, are usage errors
// naming the flag, not settings silently ignored by a run that measures each cell once.
func TestUntilCVSettingsWithoutUntilCV(t *testing.T) {
	cfg := writeConfig(t, "max_tokens = 8\n[matrix]\nseq_lens = [256]\nbatch_sizes = [1]\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--min-repeats", "3"}, "--min-repeats is a setting of --until-cv, which is not given"},
		{[]string{"--max-repeats", "4"}, "--max-repeats is a setting of --until-cv, which is not given"},
		{[]string{"--cv-confidence", "0.8"}, "--cv-confidence is a setting of --until-cv, which is not given"},
		{[]string{"--until-cv", "0", "--max-repeats", "4"}, "--max-repeats is a setting of --until-cv"},
		{[]string{"--until-cv", "-1"}, "--until-cv -1: want a CV target in percent > 0 (0 = off)"},
	} {
		code, _, stderr := cli(t, context.Background(), append([]string{"run", "-c", cfg}, c.args...)...)
		if code != exitcode.Usage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, exitcode.Usage, c.want)
		}
	}
}
