// Package k8s_test holds genload's Kubernetes manifests to the real API types: every document
// genload k8s job writes decodes strictly (no unknown or misspelt field, no wrong type) into
// k8s.io/api's ConfigMap, PersistentVolumeClaim, Job and Pod, with the fields an Indexed Job
// of genload shards needs; and the Job's own shell commands, run as N local processes with
// JOB_COMPLETION_INDEX set against N built-in engines, merge into the cells of one process.
package k8s_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/genload/genload/host/k8s"
	"github.com/genload/genload/host/results"
)

// decoded are the objects of a manifest file, by kind.
type decoded struct {
	configMaps []corev1.ConfigMap
	claims     []corev1.PersistentVolumeClaim
	jobs       []batchv1.Job
	pods       []corev1.Pod
}

// otherProgram finds a command of a pod script that is neither a /bin/sh builtin nor genload
// (the programs a shell script most often runs).
var otherProgram = regexp.MustCompile(`(^|[\s;&|(])(mkdir|sleep|tar|cat|cp|mv|rm|ls|tee|touch|env|test)(\s|$)`)

// docSep is the YAML document separator, a line "---".
var docSep = regexp.MustCompile(`(?m)^---\n`)

// decode splits text into YAML documents and decodes each strictly into the type its kind
// names.
func decode(t *testing.T, text string) decoded {
	t.Helper()
	var d decoded
	for i, doc := range docSep.Split(text, -1) {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("document %d: %v\n%s", i, err, doc)
		}
		var obj any
		switch head.APIVersion + " " + head.Kind {
		case "v1 ConfigMap":
			d.configMaps = append(d.configMaps, corev1.ConfigMap{})
			obj = &d.configMaps[len(d.configMaps)-1]
		case "v1 PersistentVolumeClaim":
			d.claims = append(d.claims, corev1.PersistentVolumeClaim{})
			obj = &d.claims[len(d.claims)-1]
		case "batch/v1 Job":
			d.jobs = append(d.jobs, batchv1.Job{})
			obj = &d.jobs[len(d.jobs)-1]
		case "v1 Pod":
			d.pods = append(d.pods, corev1.Pod{})
			obj = &d.pods[len(d.pods)-1]
		default:
			t.Fatalf("document %d: unexpected %s %s", i, head.APIVersion, head.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatalf("document %d (%s): strict decoding: %v\n%s", i, head.Kind, err, doc)
		}
	}
	return d
}

// A bench.toml that exercises the YAML writer: quotes, a tab, non-ASCII, an indented line,
// blank lines inside and two at the end (a literal block with |+).
const trickyBench = "# bench \"nightly\" — Ü\nmax_tokens = 8\n\n[matrix]\n  seq_lens = [300]\t# indented\nbatch_sizes = [1, 2]\n\n\n"

func TestManifestsDecodeStrictlyIntoTheAPITypes(t *testing.T) {
	j := k8s.Job{Name: "nightly", Namespace: "bench", Image: "ghcr.io/acme/genload:1.4", Shards: 4, Parallelism: 2,
		RetriesPerShard: 1, Bench: trickyBench, RunArgs: []string{"--target", "http://vllm:8000", "--model", "it's"},
		PVC: "genload-results", PVCSize: "2Gi", StorageClass: "nfs", CPU: "2", Memory: "4Gi"}
	ms, err := k8s.Build(j)
	if err != nil {
		t.Fatal(err)
	}
	d := decode(t, ms.Job)
	if len(d.configMaps) != 1 || len(d.claims) != 1 || len(d.jobs) != 1 {
		t.Fatalf("job.yaml: %d ConfigMaps, %d claims, %d Jobs; want 1 of each", len(d.configMaps), len(d.claims), len(d.jobs))
	}
	cm, pvc, job := d.configMaps[0], d.claims[0], d.jobs[0]
	if cm.Name != "nightly-config" || cm.Namespace != "bench" || cm.Data["bench.toml"] != trickyBench {
		t.Errorf("ConfigMap %s/%s data %q, want bench.toml = %q", cm.Namespace, cm.Name, cm.Data["bench.toml"], trickyBench)
	}
	if pvc.Name != "genload-results" || !slices.Equal(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}) ||
		pvc.Spec.Resources.Requests.Storage().String() != "2Gi" || pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "nfs" {
		t.Errorf("claim %+v", pvc.Spec)
	}
	s := job.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || *s.Completions != 4 || *s.Parallelism != 2 ||
		s.BackoffLimitPerIndex == nil || *s.BackoffLimitPerIndex != 1 || s.BackoffLimit != nil {
		t.Fatalf("Job spec: mode %v completions %v parallelism %v backoffLimitPerIndex %v backoffLimit %v", s.CompletionMode, s.Completions, s.Parallelism, s.BackoffLimitPerIndex, s.BackoffLimit)
	}
	// Exit codes 2, 3 and 4 fail the shard at once; an evicted pod does not use a retry.
	if p := s.PodFailurePolicy; p == nil || len(p.Rules) != 2 ||
		p.Rules[0].Action != batchv1.PodFailurePolicyActionFailIndex || p.Rules[0].OnExitCodes == nil ||
		*p.Rules[0].OnExitCodes.ContainerName != "genload" || p.Rules[0].OnExitCodes.Operator != batchv1.PodFailurePolicyOnExitCodesOpIn ||
		!slices.Equal(p.Rules[0].OnExitCodes.Values, []int32{2, 3, 4}) ||
		p.Rules[1].Action != batchv1.PodFailurePolicyActionIgnore || len(p.Rules[1].OnPodConditions) != 1 ||
		p.Rules[1].OnPodConditions[0].Type != corev1.DisruptionTarget || p.Rules[1].OnPodConditions[0].Status != corev1.ConditionTrue {
		t.Fatalf("podFailurePolicy %+v", p)
	}
	ps := s.Template.Spec
	if ps.RestartPolicy != corev1.RestartPolicyNever || len(ps.Containers) != 1 {
		t.Fatalf("pod template: restart %s, %d containers", ps.RestartPolicy, len(ps.Containers))
	}
	c := ps.Containers[0]
	if c.Image != j.Image || !slices.Equal(c.Command, []string{"/bin/sh", "-c"}) || len(c.Args) != 1 ||
		!strings.Contains(c.Args[0], `--shard "JOB_COMPLETION_INDEX/4"`) || !strings.Contains(c.Args[0], `'--model' 'it'\''s'`) {
		t.Fatalf("container: image %s command %v args %q", c.Image, c.Command, c.Args)
	}
	if c.Resources.Limits.Cpu().String() != "2" || c.Resources.Requests.Memory().String() != "4Gi" {
		t.Errorf("resources %+v", c.Resources)
	}
	mounts := map[string]string{}
	for _, vm := range c.VolumeMounts {
		mounts[vm.Name] = vm.MountPath
	}
	vols := map[string]corev1.Volume{}
	for _, v := range ps.Volumes {
		vols[v.Name] = v
	}
	if mounts["results"] != k8s.ResultsMount || vols["results"].PersistentVolumeClaim == nil || vols["results"].PersistentVolumeClaim.ClaimName != "genload-results" {
		t.Errorf("results volume: mount %q, volume %+v", mounts["results"], vols["results"])
	}
	if mounts["config"] != k8s.ConfigMount || vols["config"].ConfigMap == nil || vols["config"].ConfigMap.Name != cm.Name {
		t.Errorf("config volume: mount %q, volume %+v", mounts["config"], vols["config"])
	}

	md := decode(t, ms.Merge)
	if len(md.jobs) != 1 || md.jobs[0].Name != "nightly-merge" || md.jobs[0].Spec.CompletionMode != nil ||
		!strings.Contains(md.jobs[0].Spec.Template.Spec.Containers[0].Args[0], "genload merge") {
		t.Fatalf("merge.yaml: %+v", md.jobs)
	}
	fd := decode(t, ms.Fetch)
	if len(fd.pods) != 1 || fd.pods[0].Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "genload-results" ||
		!slices.Equal(fd.pods[0].Spec.Containers[0].Command, []string{"genload", "k8s", "idle", "1h"}) {
		t.Fatalf("fetch.yaml: %+v", fd.pods)
	}
	// Every command is genload, or /bin/sh running only builtins and genload.
	for _, script := range []string{c.Args[0], md.jobs[0].Spec.Template.Spec.Containers[0].Args[0]} {
		if m := otherProgram.FindString(script); m != "" {
			t.Errorf("pod script runs %q, which the image has not:\n%s", strings.TrimSpace(m), script)
		}
	}

	// Without retries a failed shard fails at once (backoffLimitPerIndex 0: the other shards
	// go on), and no claim is created.
	j.RetriesPerShard, j.PVCSize = 0, ""
	ms, err = k8s.Build(j)
	if err != nil {
		t.Fatal(err)
	}
	d = decode(t, ms.Job)
	if len(d.claims) != 0 || d.jobs[0].Spec.BackoffLimit != nil || d.jobs[0].Spec.BackoffLimitPerIndex == nil || *d.jobs[0].Spec.BackoffLimitPerIndex != 0 {
		t.Fatalf("no retries: %d claims, backoffLimit %v, per index %v", len(d.claims), d.jobs[0].Spec.BackoffLimit, d.jobs[0].Spec.BackoffLimitPerIndex)
	}
}

func TestBadJobsAreRefused(t *testing.T) {
	_, err := k8s.Build(k8s.Job{Name: "Nightly_1", Shards: 0, PVC: "", RunArgs: []string{"--shard", "1/2"}})
	for _, want := range []string{`--name "Nightly_1"`, "--image", "--shards 0", `--pvc ""`, "run flag --shard"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v; want it to name %s", err, want)
		}
	}
}

// moduleRoot is genload's module, two directories up.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// buildGenload builds genload into dir/bin/genload, alone in its directory, and checks that
// the plugins are built into it (make test runs make plugins first, which puts them where
// go:embed takes them).
func buildGenload(t *testing.T, dir string) (bin string) {
	t.Helper()
	root := moduleRoot(t)
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	bin = filepath.Join(dir, "bin")
	cmd := exec.Command(goBin, "build", "-o", filepath.Join(bin, "genload"), "./host/cmd/genload")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(bin, "genload"), "version").Output()
	if err != nil || !strings.Contains(string(out), "plugins built in: gamma") {
		t.Fatalf("genload version: %v\n%s\nthe plugins are not built into genload: run `make plugins` first", err, out)
	}
	return bin
}

const simBench = `max_tokens = 6
metrics = "off"
[matrix]
seq_lens = [300, 1000, 2000]
batch_sizes = [1, 2]
[engine]
time_scale = 0.05
`

// The Indexed Job, simulated: its pod command run by /bin/sh as three processes with
// JOB_COMPLETION_INDEX = 0, 1, 2 and the pod's environment (each against its own built-in
// engine), then the merge Job's command. The merged run has exactly the cells of one
// process: same cells, statuses and prompt lengths. A pod started again after its shard was
// killed continues the shard's file; a shard that never ran is named by the merge.
func TestIndexedJobSimulatedLocally(t *testing.T) {
	dir := t.TempDir()
	bin := buildGenload(t, dir)
	const n = 3
	j := k8s.Job{Name: "sim", Image: "genload:test", Shards: n, PVC: "results", Bench: simBench}
	ms, err := k8s.Build(j)
	if err != nil {
		t.Fatal(err)
	}
	d := decode(t, ms.Job)
	script := d.jobs[0].Spec.Template.Spec.Containers[0].Args[0]
	mergeScript := decode(t, ms.Merge).jobs[0].Spec.Template.Spec.Containers[0].Args[0]
	// The pod's volumes, as local directories.
	resultsDir := filepath.Join(dir, "results", "sim")
	conf := filepath.Join(dir, "etc", "bench.toml")
	if err := os.MkdirAll(filepath.Dir(conf), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte(d.configMaps[0].Data["bench.toml"]), 0o644); err != nil {
		t.Fatal(err)
	}
	// The pod's environment and nothing else: PATH holds only the directory with the genload
	// binary (as an image with genload and /bin/sh alone), no HOME, no GENLOAD_PLUGIN_DIR.
	env := func(extra ...string) []string {
		return append([]string{"PATH=" + bin, "GENLOAD_RESULTS=" + resultsDir, "GENLOAD_CONFIG=" + conf}, extra...)
	}
	sh := func(script string, extra ...string) (string, error) {
		cmd := exec.Command("/bin/sh", "-c", script)
		cmd.Dir, cmd.Env = dir, env(extra...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	pod := func(i int) (string, error) { return sh(script, fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i)) }

	// The pods run at once, as parallelism = completions has them.
	var wg sync.WaitGroup
	outs, errs := make([]string, n), make([]error, n)
	for i := range n {
		wg.Go(func() { outs[i], errs[i] = pod(i) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("pod %d: %v\n%s", i, errs[i], outs[i])
		}
	}
	// Pod 1 is killed and started again: its file loses its last cell and footer, and the
	// retry continues it.
	f1 := j.ShardFile(1)
	f1 = filepath.Join(resultsDir, filepath.Base(f1))
	b, err := os.ReadFile(f1)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
	if err := os.WriteFile(f1, []byte(strings.Join(lines[:len(lines)-2], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := sh(mergeScript); err == nil || !strings.Contains(out, "shard 1/3") || !strings.Contains(out, "no footer: the run was killed") {
		t.Fatalf("merge of a killed shard: %v\n%s", err, out)
	}
	if out, err := pod(1); err != nil || !strings.Contains(out, "resuming") {
		t.Fatalf("retried pod 1: %v\n%s", err, out)
	}
	out, err := sh(mergeScript)
	if err != nil {
		t.Fatalf("merge: %v\n%s", err, out)
	}
	merged, err := results.ReadFile(filepath.Join(resultsDir, "sim.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The fetch pod: genload streams the merged file out byte for byte (kubectl exec … genload
	// k8s cat … > file), and its idle command ends at once on SIGTERM (kubectl delete).
	var cat bytes.Buffer
	catCmd := exec.Command("/bin/sh", "-c", "exec genload k8s cat "+filepath.Join(resultsDir, "sim.json"))
	catCmd.Dir, catCmd.Env, catCmd.Stdout = dir, env(), &cat
	if err := catCmd.Run(); err != nil {
		t.Fatalf("genload k8s cat: %v", err)
	}
	if want, _ := os.ReadFile(filepath.Join(resultsDir, "sim.json")); len(want) == 0 || !bytes.Equal(cat.Bytes(), want) {
		t.Fatalf("genload k8s cat gave %d bytes, the file has %d", cat.Len(), len(want))
	}
	fetch := decode(t, ms.Fetch).pods[0].Spec.Containers[0].Command
	idle := exec.Command(filepath.Join(bin, fetch[0]), fetch[1:]...)
	idle.Env = env()
	idleErr, err := idle.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := idle.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(idleErr).ReadString('\n'); err != nil || line != "genload k8s idle: waiting 1h0m0s, or until stopped\n" {
		t.Fatalf("%v said %q, %v", fetch, line, err)
	}
	if err := idle.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := idle.Wait(); err != nil {
		t.Fatalf("%v after SIGTERM: %v, want exit 0", fetch, err)
	}

	// One process, the same bench.toml.
	if out, err := sh(`genload run -c "$GENLOAD_CONFIG" --run-id single --out single`); err != nil {
		t.Fatalf("single run: %v\n%s", err, out)
	}
	single, err := results.ReadFile(filepath.Join(dir, "single", "single.json"))
	if err != nil {
		t.Fatal(err)
	}
	key := func(r *results.Run) []string {
		var ks []string
		for _, c := range r.Cells {
			ks = append(ks, fmt.Sprintf("%+v %s %v", c.Cell, c.Status, c.Lengths.Each))
		}
		return ks
	}
	if got, want := key(merged), key(single); len(want) != 6 || !slices.Equal(got, want) {
		t.Fatalf("merged cells\n%s\nsingle process\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(merged.Header.Merged) != n || merged.Footer.OK != 6 {
		t.Fatalf("merged from %d shards, footer %+v", len(merged.Header.Merged), merged.Footer)
	}

	// A shard whose pod never ran: the merge names it.
	if err := os.Remove(filepath.Join(resultsDir, filepath.Base(j.ShardFile(2)))); err != nil {
		t.Fatal(err)
	}
	if out, err := sh(mergeScript); err == nil || !strings.Contains(out, "shard 2/3 missing (given: shards 0, 1 of 3)") {
		t.Fatalf("merge without shard 2: %v\n%s", err, out)
	}
}

// The image runs as a user of its own, not root, with a home where genload's plugin cache
// ($HOME/.cache/genload/wazero) can be written and a working directory of its own; every pod
// of the manifests runs as that user, the results volume in its group (fsGroup), so that a
// shard can write its results there. The Dockerfile is read, not built (no daemon needed).
func TestImageAndPodsRunAsNonRoot(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(moduleRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	final := text[strings.LastIndex(text, "\nFROM "):] // the image's stage
	uid := fmt.Sprint(k8s.UID)
	user := regexp.MustCompile(`(?m)^USER (\S+)$`).FindStringSubmatch(final)
	home := regexp.MustCompile(`(?m)^ENV HOME=(\S+)$`).FindStringSubmatch(final)
	workdir := regexp.MustCompile(`(?m)^WORKDIR (\S+)$`).FindStringSubmatch(final)
	switch {
	case user == nil || user[1] != uid+":"+uid:
		t.Errorf("the image's USER is %v, want %s:%s (not root)", user, uid, uid)
	case home == nil || !strings.Contains(final, "adduser -D -u "+uid+" -G genload -h "+home[1]+" genload"):
		t.Errorf("HOME %v is not the home adduser makes for uid %s", home, uid)
	case workdir == nil || !strings.Contains(final, "chown genload:genload "+workdir[1]):
		t.Errorf("WORKDIR %v is not the user's", workdir)
	case !strings.Contains(text, "--add-host=host.docker.internal:host-gateway"):
		t.Error("the docker run example lacks --add-host=host.docker.internal:host-gateway (Linux)")
	}
	ms, err := k8s.Build(k8s.Job{Name: "nightly", Image: "i", Shards: 2, PVC: "results"})
	if err != nil {
		t.Fatal(err)
	}
	specs := map[string]corev1.PodSpec{}
	for name, text := range map[string]string{"job": ms.Job, "merge": ms.Merge} {
		for _, j := range decode(t, text).jobs {
			specs[name] = j.Spec.Template.Spec
		}
	}
	for _, p := range decode(t, ms.Fetch).pods {
		specs["fetch"] = p.Spec
	}
	if len(specs) != 3 {
		t.Fatalf("pod specs of %v, want job, merge and fetch", specs)
	}
	for name, ps := range specs {
		sc := ps.SecurityContext
		if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != k8s.UID ||
			sc.RunAsGroup == nil || *sc.RunAsGroup != k8s.UID || sc.FSGroup == nil || *sc.FSGroup != k8s.UID {
			t.Errorf("%s pod: securityContext %+v, want non-root uid, gid and fsGroup %d", name, sc, k8s.UID)
		}
	}
}
