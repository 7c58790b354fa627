package k8s_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/jsonpath"
)

// TestMain makes this test binary a stand-in for kubectl when it is run as "kubectl" (a
// symlink the command test puts first on PATH): see fakeKubectl.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "kubectl" {
		os.Exit(fakeKubectl(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeKubectl answers the commands genload k8s job prints, from files in $FAKE_KUBECTL:
// every call is appended to calls; "get job/NAME -o jsonpath=T" evaluates T with kubectl's own
// jsonpath package (client-go, missing keys allowed, as kubectl get does) on the next object of
// job-NAME.json (a JSON array of batch/v1 Jobs; the last one stays); "exec POD -- genload …"
// runs genload with /results/ mapped to $FAKE_RESULTS; anything else succeeds silently.
func fakeKubectl(args []string) int {
	dir := os.Getenv("FAKE_KUBECTL")
	f, err := os.OpenFile(filepath.Join(dir, "calls"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintln(f, strings.Join(args, " "))
	f.Close()
	if len(args) > 2 && args[0] == "-n" {
		args = args[2:]
	}
	switch {
	case len(args) == 4 && args[0] == "get" && strings.HasPrefix(args[1], "job/") && args[2] == "-o" && strings.HasPrefix(args[3], "jsonpath="):
		name := strings.TrimPrefix(args[1], "job/")
		b, err := os.ReadFile(filepath.Join(dir, "job-"+name+".json"))
		if err != nil {
			fmt.Fprintf(os.Stderr, "Error from server (NotFound): jobs.batch %q not found\n", name)
			return 1
		}
		var states []any
		if err := json.Unmarshal(b, &states); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		countFile := filepath.Join(dir, "count-"+name)
		n, _ := os.ReadFile(countFile)
		i, _ := strconv.Atoi(string(n))
		_ = os.WriteFile(countFile, []byte(strconv.Itoa(i+1)), 0o644)
		jp := jsonpath.New("out")
		jp.AllowMissingKeys(true)
		if err := jp.Parse(strings.TrimPrefix(args[3], "jsonpath=")); err != nil {
			fmt.Fprintf(os.Stderr, "error: error parsing jsonpath %s: %v\n", args[3], err)
			return 1
		}
		if err := jp.Execute(os.Stdout, states[min(i, len(states)-1)]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	case len(args) > 3 && args[0] == "exec" && args[2] == "--" && args[3] == "genload":
		cmdArgs := args[4:]
		for i, a := range cmdArgs {
			if rest, ok := strings.CutPrefix(a, "/results/"); ok {
				cmdArgs[i] = filepath.Join(os.Getenv("FAKE_RESULTS"), rest)
			}
		}
		cmd := exec.Command("genload", cmdArgs...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return 1
		}
	}
	return 0
}

// jobState is a Job's status as the API server writes it.
func jobState(completed, failed string, conds ...batchv1.JobConditionType) batchv1.Job {
	j := batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}}
	j.Status.CompletedIndexes = completed
	if failed != "" {
		j.Status.FailedIndexes = &failed
	}
	for _, c := range conds {
		j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: c, Status: corev1.ConditionTrue})
	}
	return j
}

// The kubectl commands genload k8s job prints, run as printed by /bin/sh against a kubectl that
// answers with Job objects of the real API types and kubectl's jsonpath: the wait ends when a
// shard fails (not after its 24 h) and the next line names the failed shard; when every shard
// completes, the merged results leave the fetch pod through genload k8s cat, byte for byte.
func TestPrintedCommandsRun(t *testing.T) {
	dir := t.TempDir()
	bin := buildGenload(t, dir)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fake, state, results := filepath.Join(dir, "fakebin"), filepath.Join(dir, "state"), filepath.Join(dir, "volume")
	for _, d := range []string{fake, state, filepath.Join(results, "nightly")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(self, filepath.Join(fake, "kubectl")); err != nil {
		t.Fatal(err)
	}
	// sleep, counted instead of slept; the 20th fails, so that a wait that never ends fails
	// the script (set -e) instead of spinning.
	if err := os.WriteFile(filepath.Join(fake, "sleep"), []byte("#!/bin/sh\necho \"$@\" >> \"$FAKE_KUBECTL/sleeps\"\n"+
		"[ \"$(grep -c . \"$FAKE_KUBECTL/sleeps\")\" -lt 20 ]\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	gen := exec.Command(filepath.Join(bin, "genload"), "k8s", "job", "--name", "nightly", "--namespace", "bench", "--image", "genload:test",
		"--shards", "3", "--pvc", "results")
	gen.Dir = work
	printed, err := gen.Output()
	if err != nil {
		t.Fatalf("genload k8s job: %v", err)
	}
	var cmds []string
	for _, l := range strings.Split(strings.TrimSpace(string(printed)), "\n") {
		if !strings.HasPrefix(l, "#") {
			cmds = append(cmds, l)
		}
	}
	if len(cmds) != 10 {
		t.Fatalf("%d commands printed, want 10:\n%s", len(cmds), printed)
	}
	sh := func(script string) (string, error) {
		cmd := exec.Command("/bin/sh", "-c", "set -e\n"+script)
		cmd.Dir = work
		cmd.Env = []string{"PATH=" + fake + string(os.PathListSeparator) + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
			"FAKE_KUBECTL=" + state, "FAKE_RESULTS=" + results}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	setJob := func(name string, states ...batchv1.Job) {
		b, err := json.Marshal(states)
		if err != nil {
			t.Fatal(err)
		}
		_ = os.Remove(filepath.Join(state, "count-"+name))
		if err := os.WriteFile(filepath.Join(state, "job-"+name+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Shard 1 runs out of retries: the Job fails once shards 0 and 2 are done.
	setJob("nightly", jobState("", ""), jobState("0", ""), jobState("0,2", "1", batchv1.JobFailureTarget, batchv1.JobFailed))
	out, err := sh(strings.Join(cmds[:3], "\n"))
	if err != nil || out != "FailureTarget Failed: shards completed 0,2; failed 1\n" {
		t.Fatalf("wait and status: %v\n%q", err, out)
	}
	if sleeps, _ := os.ReadFile(filepath.Join(state, "sleeps")); string(sleeps) != "10\n10\n" {
		t.Errorf("the wait slept %q, want twice 10 s (two polls before the Job failed)", sleeps)
	}

	// Every shard completes: the whole script, the merged run streamed out of the fetch pod.
	merged := []byte("{\"schema\": \"genload.run/v1\"}\n\x00 bytes as they are \r\n")
	if err := os.WriteFile(filepath.Join(results, "nightly", "nightly.json"), merged, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(results, "nightly", "nightly.csv"), []byte("L,B\n1000,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	setJob("nightly", jobState("0-2", "", batchv1.JobSuccessCriteriaMet, batchv1.JobComplete))
	setJob("nightly-merge", jobState("", "", batchv1.JobComplete))
	_ = os.Remove(filepath.Join(state, "calls"))
	out, err = sh(strings.Join(cmds, "\n"))
	if err != nil || out != "SuccessCriteriaMet Complete: shards completed 0-2; failed \n" {
		t.Fatalf("the whole script: %v\n%q", err, out)
	}
	if got, _ := os.ReadFile(filepath.Join(work, "results", "nightly.json")); !bytes.Equal(got, merged) {
		t.Errorf("results/nightly.json = %q, want the merged file's bytes %q", got, merged)
	}
	calls, _ := os.ReadFile(filepath.Join(state, "calls"))
	want := `-n bench apply -f k8s-nightly/job.yaml
-n bench get job/nightly -o jsonpath={.status.conditions[?(@.status=="True")].type}
-n bench get job/nightly -o jsonpath={.status.conditions[?(@.status=="True")].type}: shards completed {.status.completedIndexes}; failed {.status.failedIndexes}{"\n"}
-n bench apply -f k8s-nightly/merge.yaml
-n bench get job/nightly-merge -o jsonpath={.status.conditions[?(@.status=="True")].type}
-n bench logs job/nightly-merge
-n bench apply -f k8s-nightly/fetch.yaml
-n bench wait --for=condition=ready --timeout=10m pod/nightly-fetch
-n bench exec nightly-fetch -- genload k8s cat /results/nightly/nightly.json
-n bench exec nightly-fetch -- genload k8s cat /results/nightly/nightly.csv
-n bench delete pod nightly-fetch
`
	if string(calls) != want {
		t.Errorf("kubectl calls:\n%s\nwant\n%s", calls, want)
	}
}
