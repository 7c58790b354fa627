package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/results"
)

// Two shards run through the CLI — one with its index from JOB_COMPLETION_INDEX, as in a pod
// of an Indexed Job — merge into one run of the matrix's four cells; one shard alone is
// refused with the missing one named.
func TestRunShardsAndMergeThroughTheCLI(t *testing.T) {
	plainOnly(t) // each shard is a run of part of the matrix, as TestRunOnTheBuiltinEngine's; merge reads files
	t.Parallel()
	out := t.TempDir()
	cfg := writeConfig(t, "max_tokens = 4\nmetrics = \"off\"\n[matrix]\nseq_lens = [300, 1000]\nbatch_sizes = [1, 2]\n[engine]\ntime_scale = 0.05\n")
	if code, _, errs := cli(t, context.Background(), "run", "-c", cfg, "--out", out, "--run-id", "n", "--shard", "0/2"); code != exitcode.OK {
		t.Fatalf("shard 0: exit %d\n%s", code, errs)
	}
	var errb bytes.Buffer
	pod := &env{stdout: &bytes.Buffer{}, stderr: &errb, getenv: func(k string) string {
		if k == "JOB_COMPLETION_INDEX" {
			return "1"
		}
		return ""
	}}
	if code := doMain(context.Background(), []string{"run", "-c", cfg, "--out", out, "--run-id", "n", "--shard", "JOB_COMPLETION_INDEX/2"}, pod); code != exitcode.OK {
		t.Fatalf("shard 1: exit %d\n%s", code, errb.String())
	}
	s0, s1 := filepath.Join(out, "n-shard-0-of-2.json"), filepath.Join(out, "n-shard-1-of-2.json")
	merged := filepath.Join(out, "n.json")
	code, table, errs := cli(t, context.Background(), "merge", s1, s0, "-o", merged)
	if code != exitcode.OK || !strings.Contains(errs, "merged 2 shards, 4 cells") || !strings.Contains(table, "| 1000 | 2 |") {
		t.Fatalf("merge: exit %d\n%s%s", code, table, errs)
	}
	r, err := results.ReadFile(merged)
	if err != nil || len(r.Cells) != 4 || r.Header.RunID != "n" || r.Footer.OK != 4 {
		t.Fatalf("merged: %v %+v", err, r)
	}
	if _, err := os.Stat(filepath.Join(out, "n.csv")); err != nil {
		t.Error(err)
	}
	code, _, errs = cli(t, context.Background(), "merge", s0, "-o", filepath.Join(out, "m.json"))
	if code != exitcode.InvalidConfig || !strings.Contains(errs, "shard 1/2 missing (given: shards 0 of 2)") {
		t.Fatalf("merge of one shard: exit %d\n%s", code, errs)
	}
	code, _, errs = cli(t, context.Background(), "run", "-c", cfg, "--shard", "2/2")
	if code != exitcode.Usage || !strings.Contains(errs, "0 ≤ I < N") {
		t.Fatalf("--shard 2/2: exit %d\n%s", code, errs)
	}
}

func TestK8sJobWritesTheManifests(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, "max_tokens = 4\n")
	code, out, errs := cli(t, context.Background(), "k8s", "job", "--name", "nightly", "--image", "genload:1", "--shards", "3",
		"--pvc", "res", "-c", cfg, "-o", dir, "--", "--target", "http://vllm:8000")
	if code != exitcode.OK || !strings.Contains(out, "kubectl apply -f "+filepath.Join(dir, "job.yaml")) {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	job, err := os.ReadFile(filepath.Join(dir, "job.yaml"))
	if err != nil || !strings.Contains(string(job), "completionMode: \"Indexed\"") || !strings.Contains(string(job), "max_tokens = 4") ||
		!strings.Contains(string(job), "'--target' 'http://vllm:8000'") {
		t.Fatalf("job.yaml (%v):\n%s", err, job)
	}
	for _, f := range []string{"merge.yaml", "fetch.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	// A file beside bench.toml is not in the pod: a relative path is refused, an absolute one
	// (a file in the image) and a plugin name pass.
	rel := writeConfig(t, "[prompt]\ncorpus = \"mycorpus.jsonl\"\n[lengths]\nplugin = \"gamma\"\n[engine]\nprofile = \"/opt/prof.toml\"\n")
	code, _, errs = cli(t, context.Background(), "k8s", "job", "--name", "n", "--image", "x", "--shards", "2", "--pvc", "r", "-c", rel, "-o", t.TempDir())
	if code != exitcode.InvalidConfig || !strings.Contains(errs, `[prompt.corpus] "mycorpus.jsonl" is a relative path: the pods mount only bench.toml`) ||
		strings.Contains(errs, "engine.profile") || strings.Contains(errs, "lengths.plugin") {
		t.Fatalf("relative corpus: exit %d\n%s", code, errs)
	}
	code, _, errs = cli(t, context.Background(), "k8s", "job", "--name", "Bad_Name", "--image", "x", "--shards", "2", "--pvc", "r", "-o", dir)
	if code != exitcode.Usage || !strings.Contains(errs, `--name "Bad_Name"`) {
		t.Fatalf("bad name: exit %d\n%s", code, errs)
	}
	for _, cmd := range []string{"sweep", "merge", "k8s"} {
		code, out, _ := cli(t, context.Background(), cmd, "--help")
		if code != exitcode.OK || strings.Count(out, "Usage: genload "+cmd) != 1 {
			t.Errorf("%s --help: exit %d\n%s", cmd, code, out)
		}
	}
}

// A sweep file with an unknown key is refused before anything starts, naming the key.
func TestSweepRefusesABadFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.toml")
	if err := os.WriteFile(p, []byte("[server]\ncomand = \"x\"\n[grid]\nprofile = [\"a\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := cli(t, context.Background(), "sweep", p)
	if code != exitcode.InvalidConfig || !strings.Contains(errs, "unknown key [server.comand]") {
		t.Fatalf("exit %d\n%s", code, errs)
	}
}

// The flags after -- go to every pod's genload run: they are checked against genload run's
// flags when the manifests are made, so that a mistake fails here (exit 2, nothing written)
// instead of in every pod.
func TestK8sJobChecksTheRunFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--bogus"}, "genload run flags after --: unknown flag --bogus (see 'genload run --help')"},
		{"bad value", []string{"--target", "http://vllm:8000", "--max-tokens", "x"}, `genload run flags after --: --max-tokens "x": not a valid whole number (see 'genload run --help')`},
		{"stray argument", []string{"--target", "http://vllm:8000", "bench.toml"}, `genload run flags after --: unexpected argument "bench.toml"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "m")
			code, _, errs := cli(t, context.Background(), append([]string{"k8s", "job", "--name", "n", "--image", "x", "--shards", "2", "--pvc", "r", "-o", dir, "--"}, tc.args...)...)
			if code != exitcode.Usage || !strings.Contains(errs, tc.want) {
				t.Errorf("exit %d, want %d with %q:\n%s", code, exitcode.Usage, tc.want, errs)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("manifests written for flags the pods would refuse: %v", err)
			}
		})
	}
	// Flags genload run knows pass, values and all.
	code, _, errs := cli(t, context.Background(), "k8s", "job", "--name", "n", "--image", "x", "--shards", "2", "--pvc", "r", "-o", t.TempDir(),
		"--", "--target", "http://vllm:8000", "--keep-going", "--seq-lens", "1000,2000", "--set", "k=2")
	if code != exitcode.OK {
		t.Errorf("known run flags: exit %d\n%s", code, errs)
	}
}

// A shard with none of the matrix's cells (shard 2 of 3 of a 2-cell matrix) says so, starts
// no engine — its header records no target, engine or model — and writes its empty results,
// so that merge finds every shard and joins the other two (the merged target: the two
// engines the others measured).
func TestEmptyShardStartsNoEngineAndMerges(t *testing.T) {
	plainOnly(t) // its two runs are shards, as TestRunOnTheBuiltinEngine's; the empty shard starts nothing
	t.Parallel()
	out := t.TempDir()
	cfg := writeConfig(t, "max_tokens = 4\nmetrics = \"off\"\n[matrix]\nseq_lens = [300]\nbatch_sizes = [1, 2]\n[engine]\ntime_scale = 0.05\n")
	var errs [3]string
	for i := range 3 {
		code, _, e := cli(t, context.Background(), "run", "-c", cfg, "--out", out, "--run-id", "e", "--shard", fmt.Sprintf("%d/3", i))
		if code != exitcode.OK {
			t.Fatalf("shard %d/3: exit %d\n%s", i, code, e)
		}
		errs[i] = e
	}
	empty := filepath.Join(out, "e-shard-2-of-3")
	if want := "shard 2/3 of a 2-cell matrix is empty: nothing to measure, no engine started\n  results → " + empty + ".jsonl\n"; !strings.Contains(errs[2], want) {
		t.Errorf("shard 2/3 stderr lacks %q:\n%s", want, errs[2])
	}
	r, err := results.ReadFile(empty + ".json")
	if err != nil {
		t.Fatal(err)
	}
	if h := r.Header; len(h.Cells) != 0 || h.Shard == nil || h.Shard.MatrixCells != 2 || h.Target != "" || h.Engine != nil || h.Model != "" || r.Footer == nil || r.Footer.Status != results.StatusOK {
		t.Errorf("empty shard: cells %v, shard %+v, target %q, engine %v, model %q, footer %+v", h.Cells, h.Shard, h.Target, h.Engine, h.Model, r.Footer)
	}
	merged := filepath.Join(out, "e.json")
	code, _, e := cli(t, context.Background(), "merge", filepath.Join(out, "e-shard-0-of-3.json"), filepath.Join(out, "e-shard-1-of-3.json"), empty+".json", "-o", merged)
	if code != exitcode.OK || !strings.Contains(e, "merged 3 shards, 2 cells") {
		t.Fatalf("merge: exit %d\n%s", code, e)
	}
	m, err := results.ReadFile(merged)
	if err != nil || len(m.Cells) != 2 || m.Footer.OK != 2 || len(strings.Split(m.Header.Target, ", ")) != 2 || strings.HasSuffix(m.Header.Target, ", ") {
		t.Fatalf("merged (%v): %d cells, target %q, footer %+v", err, len(m.Cells), m.Header.Target, m.Footer)
	}
}

// Every shard of a Job measures the same server: without --parallelism the shards run one at a
// time and stderr says why; given several at once, it warns; with the built-in engine (one per
// pod) they all run at once, silently.
func TestK8sJobParallelismAgainstASharedServer(t *testing.T) {
	job := func(args ...string) (string, string) {
		t.Helper()
		dir := t.TempDir()
		all := append([]string{"k8s", "job", "--name", "nightly", "--image", "genload:1", "--shards", "4", "--pvc", "res", "-o", dir}, args...)
		code, out, errs := cli(t, context.Background(), all...)
		if code != exitcode.OK {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
		b, err := os.ReadFile(filepath.Join(dir, "job.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		_, after, _ := strings.Cut(string(b), "parallelism: ")
		par, _, _ := strings.Cut(after, "\n")
		return par, errs
	}
	par, errs := job("--", "--target", "http://vllm:8000")
	if par != "1" || !strings.Contains(errs, "genload k8s job: --parallelism 1 (default): every shard measures http://vllm:8000, and shards running at once would load it together") {
		t.Fatalf("default against a server: parallelism %q, stderr:\n%s", par, errs)
	}
	par, errs = job("--parallelism", "2", "--", "--target=http://vllm:8000")
	if par != "2" || !strings.Contains(errs, "warning: --parallelism 2 runs 2 shards at once against http://vllm:8000") {
		t.Fatalf("two at once against a server: parallelism %q, stderr:\n%s", par, errs)
	}
	cfg := writeConfig(t, "target = \"http://a:8000\"\n[[workers]]\nurl = \"http://b:8000\"\n[[workers]]\n")
	par, errs = job("-c", cfg)
	if par != "1" || !strings.Contains(errs, "every shard measures the same workers (http://b:8000, http://a:8000)") {
		t.Fatalf("workers: parallelism %q, stderr:\n%s", par, errs)
	}
	par, errs = job()
	if par != "4" || strings.Contains(errs, "parallelism") {
		t.Fatalf("built-in engine: parallelism %q, stderr:\n%s", par, errs)
	}
}
