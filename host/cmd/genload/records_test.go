package main

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/records"
)

// run --records writes one record per sequence of every warmup and measured request: for two
// cells (B = 1 and 3, routed) and max_tokens 5, 4 warmup records of 1 token and 4 measured
// records of 5 chunks each, with send and chunk times in order and the prompt lengths the
// server counted.
func TestRunWritesPerRequestRecords(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, fmt.Sprintf("mode = \"routed\"\nmax_tokens = 5\nout = %q\n[engine]\ntime_scale = 0.005\n[matrix]\nseq_lens = [300]\nbatch_sizes = [1, 3]\n", dir))
	path := filepath.Join(dir, "req.jsonl")
	code, _, errs := cli(t, context.Background(), "run", "-c", cfg, "--records", path)
	if code != exitcode.OK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	f, err := records.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Header.Source != "run" || f.Header.Target == "" {
		t.Errorf("header %+v", f.Header)
	}
	count := map[string]int{}
	for _, r := range f.Records {
		count[r.Cell+" "+r.Phase]++
		want := 5
		if r.Phase == "warmup" {
			want = 1
		}
		if !r.OK() || r.MaxTokens != want || len(r.Chunks) != want || r.UsagePromptTokens == nil || *r.UsagePromptTokens != r.PromptTokens {
			t.Errorf("record %+v", r)
		}
		if len(r.Chunks) > 0 && (r.Chunks[0][0] < r.SentMs || r.TTFTMs == nil || math.Abs(*r.TTFTMs-(r.Chunks[0][0]-r.SentMs)) > 0.002) {
			t.Errorf("chunk before its send or TTFT off: %+v", r)
		}
	}
	for k, n := range map[string]int{"L=300,B=1 warmup": 1, "L=300,B=1 measured": 1, "L=300,B=3 warmup": 3, "L=300,B=3 measured": 3} {
		if count[k] != n {
			t.Errorf("%s: %d records, want %d (all: %v)", k, count[k], n, count)
		}
	}
	if code, _, errs := cli(t, context.Background(), "run", "-c", cfg, "--records", path); code != exitcode.InvalidConfig {
		t.Errorf("an existing records file: exit %d, %s", code, errs)
	}
}
