package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/tokenizer"
)

// --keep-going against an engine that answers every second completion request with 503 (the
// four cells send one request each: no warmup, no retry, no token-count probe): every cell is
// measured, the second and fourth recorded as failed, and the exit code is the target's
// failure. --keep-going=false wins over the file's on_error = "continue".
func TestKeepGoing(t *testing.T) {
	plainOnly(t) // failed cells and going on; host/run races TestOnErrorAgainstTheEngine
	t.Parallel()
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flag  string
		cells int
	}{{"--keep-going", 4}, {"--keep-going=false", 2}} {
		t.Run(tc.flag, func(t *testing.T) {
			ecfg := engine.DefaultConfig()
			ecfg.TimeScale = 0.05
			ecfg.Faults.Status, ecfg.Faults.Every = 503, 2
			url := serveEngine(t, ecfg, tok)
			out := t.TempDir()
			cfg := writeConfig(t, fmt.Sprintf("max_tokens = 6\nmetrics = \"off\"\ntoken_counts = \"usage\"\nout = %q\n[run]\non_error = \"continue\"\n"+
				"[warmup]\ndisabled = true\nretries = 0\n[matrix]\nseq_lens = [300, 600]\nbatch_sizes = [1, 2]\n", out))
			code, _, stderr := cli(t, context.Background(), "run", "-c", cfg, "--target", url, "--run-id", "kg", tc.flag)
			if code != exitcode.TargetFailed {
				t.Fatalf("exit %d, want %d\n%s", code, exitcode.TargetFailed, stderr)
			}
			r, err := results.ReadFile(filepath.Join(out, "kg.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			failed := 0
			for _, c := range r.Cells {
				if c.Status == results.StatusError {
					failed++
				}
			}
			if len(r.Cells) != tc.cells || failed != tc.cells/2 || (tc.cells == 4) != strings.Contains(stderr, "2 of 4 cells failed") {
				t.Fatalf("%d cells, %d failed; stderr:\n%s", len(r.Cells), failed, stderr)
			}
		})
	}
}
