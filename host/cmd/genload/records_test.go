package main

import (
	"context"
	"fmt"
	"math"
	"os"
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

// A records path that exists or has no directory is refused before anything starts: exit 3
// naming the flag, no results file left behind (so the same --run-id runs once the path is
// fixed), and nothing on stderr of an engine or a results file.
func TestRunChecksTheRecordsPathFirst(t *testing.T) {
	plainOnly(t) // refused before anything starts; the records of a run are raced by TestRunWritesPerRequestRecords
	dir := t.TempDir()
	cfg := writeConfig(t, fmt.Sprintf("mode = \"routed\"\nmax_tokens = 2\nout = %q\n[engine]\ntime_scale = 0.005\n[matrix]\nseq_lens = [300]\nbatch_sizes = [1]\n", dir))
	taken := filepath.Join(dir, "taken.jsonl")
	os.WriteFile(taken, []byte("x\n"), 0o644)
	missing := filepath.Join(dir, "nonexist", "x.jsonl")
	for path, want := range map[string]string{
		taken:   "genload run: --records " + taken + ": the file exists: a records file is never overwritten (choose another path, or remove it)\n",
		missing: "genload run: --records " + missing + ": no directory " + filepath.Join(dir, "nonexist") + " to write it in\n",
		dir:     "genload run: --records " + dir + ": a directory: give the path of a file to create in it (" + filepath.Join(dir, "<run-id>.records.jsonl") + ")\n",
	} {
		code, _, errs := cli(t, context.Background(), "run", "-c", cfg, "--run-id", "rec", "--records", path)
		if code != exitcode.InvalidConfig || errs != want {
			t.Errorf("--records %s: exit %d, stderr %q\nwant %q", path, code, errs, want)
		}
		if _, err := os.Stat(filepath.Join(dir, "rec.jsonl")); err == nil {
			t.Fatalf("--records %s: a results file was left behind", path)
		}
	}
	if b, _ := os.ReadFile(taken); string(b) != "x\n" {
		t.Errorf("the existing file was changed: %q", b)
	}
	code, _, errs := cli(t, context.Background(), "run", "-c", cfg, "--run-id", "rec", "--records", filepath.Join(dir, "rec.records.jsonl"))
	if code != exitcode.OK {
		t.Errorf("the same run id with a new path: exit %d, %s", code, errs)
	}
	// A run refused for its results file leaves no records file either.
	again := filepath.Join(dir, "again.records.jsonl")
	if code, _, errs = cli(t, context.Background(), "run", "-c", cfg, "--run-id", "rec", "--records", again); code != exitcode.InvalidConfig {
		t.Errorf("the run id again: exit %d, %s", code, errs)
	}
	if _, err := os.Stat(again); err == nil {
		t.Errorf("%s left behind by a run that did not start", again)
	}
}
