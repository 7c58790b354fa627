// Package k8s writes the Kubernetes manifests that run a genload matrix as an Indexed Job:
// one pod per shard (JOB_COMPLETION_INDEX is the shard, genload run --shard
// JOB_COMPLETION_INDEX/N), results on a shared volume, then a merge Job that joins the shards
// with genload merge, and a pod from which genload streams the results out (kubectl exec …
// genload k8s cat FILE > FILE): the pods need an image with genload and /bin/sh only — no
// tar, mkdir or sleep.
//
// The manifests are written as YAML from the fields genload sets, with no Kubernetes library:
// a test in the separate module tools/k8s decodes them strictly into the k8s.io/api types.
package k8s

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/genload/genload/host/exitcode"
)

// Paths inside the pods.
const (
	ResultsMount = "/results"                  // the results volume
	ConfigMount  = "/etc/genload"              // the ConfigMap holding bench.toml
	ConfigFile   = ConfigMount + "/bench.toml" // the run's configuration in the pods
)

// Job is what the manifests are made from.
type Job struct {
	// Name names the Job, its pods' results directory and run id: a DNS label (lowercase
	// letters, digits, -; at most 52 characters, leaving room for "-merge" and the pods'
	// suffixes).
	Name string
	// Namespace of every object; "" leaves it to kubectl's context.
	Namespace string
	// Image is a container image with genload on its PATH and /bin/sh (the Dockerfile's); the
	// pods run no other program.
	Image string
	// Shards is the number of pods (completions), ≥ 1; Parallelism how many run at once
	// (0 = Shards in Build; ChooseParallelism sets it first when the shards share a server).
	// Every shard measures its own part of the matrix against the same target, bench.toml and
	// run flags: a server serves one shard at a time only if Parallelism is 1.
	Shards, Parallelism int
	// RetriesPerShard is backoffLimitPerIndex: how often a failed shard's pod is started
	// again (it continues the shard's results file); the other shards go on whatever one
	// does, and a shard out of retries fails the Job once the others end, named in the Job's
	// status.failedIndexes. genload k8s job's --retries defaults to DefaultRetries. A pod
	// that exits with a code a retry cannot change (Usage, InvalidConfig, PluginRejected:
	// see NoRetryCodes) fails its shard at once.
	RetriesPerShard int
	// Bench is the bench.toml text to run ("" = genload's defaults).
	Bench string
	// RunArgs are more genload run flags, e.g. --target http://vllm:8000 --model m.
	RunArgs []string
	// PVC is the PersistentVolumeClaim holding the results; it must be ReadWriteMany when
	// pods may land on several nodes. PVCSize (e.g. "1Gi") makes the manifests create it,
	// with StorageClass ("" = the cluster's default).
	PVC, PVCSize, StorageClass string
	// CPU and Memory are each pod's requests and limits ("" = none), e.g. "2", "4Gi".
	CPU, Memory string
}

// UID is the user and group the pods run as, the Dockerfile's user (not root): the results
// volume is made writable by it through the pods' fsGroup.
const UID = 10001

// DefaultRetries is genload k8s job's default --retries: each shard's pod is started up to
// 3 times (a target that fails a cell, a node lost), each retry continuing the shard's file.
const DefaultRetries = 2

// NoRetryCodes are the exit codes that fail a shard without a retry (podFailurePolicy
// FailIndex): bad flags (2), an invalid bench.toml, corpus or tokenizer (3) and a rejected
// plugin (4) give the same answer every time.
var NoRetryCodes = []int{int(exitcode.Usage), int(exitcode.InvalidConfig), int(exitcode.PluginRejected)}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Check reports every problem of j at once, naming the flag.
func (j Job) Check() error {
	var errs []error
	if len(j.Name) > 52 || !dnsLabel.MatchString(j.Name) {
		errs = append(errs, fmt.Errorf("--name %q: want a DNS label (lowercase letters, digits and -, at most 52 characters)", j.Name))
	}
	if j.Image == "" {
		errs = append(errs, errors.New("--image: want the container image holding genload"))
	}
	if j.Shards < 1 {
		errs = append(errs, fmt.Errorf("--shards %d: want ≥ 1", j.Shards))
	}
	if j.Parallelism < 0 || j.Parallelism > j.Shards {
		errs = append(errs, fmt.Errorf("--parallelism %d: want 1 … --shards (%d)", j.Parallelism, j.Shards))
	}
	if j.RetriesPerShard < 0 {
		errs = append(errs, fmt.Errorf("--retries %d: want ≥ 0", j.RetriesPerShard))
	}
	if j.PVC == "" || (len(j.PVC) > 63 || !dnsLabel.MatchString(j.PVC)) {
		errs = append(errs, fmt.Errorf("--pvc %q: want the name of a PersistentVolumeClaim (a DNS label)", j.PVC))
	}
	for _, a := range j.RunArgs {
		flag, _, _ := strings.Cut(a, "=") // --out=/x and -out name the flag too
		name := strings.TrimLeft(flag, "-")
		if !strings.HasPrefix(a, "-") || a == "--" {
			continue
		}
		switch name {
		case "shard", "run-id", "out", "resume", "c", "config":
			errs = append(errs, fmt.Errorf("run flag %s: the Job sets it itself (each pod's shard, run id, results directory and bench.toml; a retried pod resumes its shard)", flag))
		}
	}
	return errors.Join(errs...)
}

// Manifests are the YAML files: Job (ConfigMap, PVC if created, Indexed Job), Merge (the
// merge Job, applied once the Job is complete) and Fetch (a pod the results are streamed out
// of with kubectl exec … genload k8s cat).
type Manifests struct {
	Job, Merge, Fetch string
}

// FetchHold is how long the fetch pod waits to be exec'd into before it exits (genload k8s
// idle); kubectl delete ends it at once.
const FetchHold = "1h"

// ChooseParallelism sets Parallelism when it is 0 and says why on one line for stderr, or
// warns when shards given to run at once share a server; "" when there is nothing to say.
// shared names the server(s) every shard's pod measures (the run's --target or [target], its
// workers): "" for the built-in engine, which each pod starts for itself. Every pod runs the
// same bench.toml and flags, so with a server, shards that run at once load it together — each
// shard's cells then measure the others' load too (other-load, a slower fwd) — and the default
// is 1 instead of Shards. More at once is right only when the target spreads concurrent runs
// over servers of their own.
func (j *Job) ChooseParallelism(shared string) string {
	if shared == "" || j.Shards <= 1 {
		return ""
	}
	how := "give --parallelism N only when the target spreads N concurrent runs over servers of their own (N servers measure N shards at once)"
	switch {
	case j.Parallelism == 0:
		j.Parallelism = 1
		return fmt.Sprintf("--parallelism 1 (default): every shard measures %s, and shards running at once would load it together, each measuring the others' load; %s", shared, how)
	case j.Parallelism > 1:
		return fmt.Sprintf("warning: --parallelism %d runs %d shards at once against %s: each shard's cells measure the others' load too (other-load, a slower fwd); --parallelism 1 measures one shard at a time — %s", j.Parallelism, j.Parallelism, shared, how)
	}
	return ""
}

// Dir is the shards' results directory on the volume, and the merged run's.
func (j Job) Dir() string { return ResultsMount + "/" + j.Name }

// ShardFile is shard i's results file (as genload run --shard writes it).
func (j Job) ShardFile(i int) string {
	return fmt.Sprintf("%s/%s-shard-%d-of-%d.jsonl", j.Dir(), j.Name, i, j.Shards)
}

// Build returns the manifests of j (checked).
func Build(j Job) (*Manifests, error) {
	if err := j.Check(); err != nil {
		return nil, err
	}
	if j.Parallelism == 0 {
		j.Parallelism = j.Shards
	}
	labels := m("app.kubernetes.io/name", "genload", "genload.dev/run", j.Name)
	meta := func(name string) []kv {
		md := m("name", name)
		if j.Namespace != "" {
			md = append(md, kv{"namespace", j.Namespace})
		}
		return append(md, kv{"labels", labels})
	}
	results := m("name", "results", "persistentVolumeClaim", m("claimName", j.PVC))
	var docs []string
	cm := m("apiVersion", "v1", "kind", "ConfigMap", "metadata", meta(j.Name+"-config"),
		"data", m("bench.toml", orDefault(j.Bench)))
	docs = append(docs, doc(cm))
	if j.PVCSize != "" {
		spec := m("accessModes", []any{"ReadWriteMany"}, "resources", m("requests", m("storage", j.PVCSize)))
		if j.StorageClass != "" {
			spec = append(spec, kv{"storageClassName", j.StorageClass})
		}
		docs = append(docs, doc(m("apiVersion", "v1", "kind", "PersistentVolumeClaim", "metadata", meta(j.PVC), "spec", spec)))
	}
	var resources any
	if j.CPU != "" || j.Memory != "" {
		r := m()
		if j.CPU != "" {
			r = append(r, kv{"cpu", j.CPU})
		}
		if j.Memory != "" {
			r = append(r, kv{"memory", j.Memory})
		}
		resources = m("requests", r, "limits", r)
	}
	env := []any{
		m("name", "GENLOAD_RESULTS", "value", j.Dir()),
		m("name", "GENLOAD_CONFIG", "value", ConfigFile),
	}
	container := m("name", "genload", "image", j.Image, "command", []any{"/bin/sh", "-c"}, "args", []any{j.shardScript()},
		"env", env, "resources", resources,
		"volumeMounts", []any{m("name", "results", "mountPath", ResultsMount), m("name", "config", "mountPath", ConfigMount, "readOnly", true)})
	codes := make([]any, len(NoRetryCodes))
	for i, c := range NoRetryCodes {
		codes[i] = c
	}
	jobSpec := m("completionMode", "Indexed", "completions", j.Shards, "parallelism", j.Parallelism,
		"backoffLimitPerIndex", j.RetriesPerShard,
		"podFailurePolicy", m("rules", []any{
			// A retry cannot change these: the shard fails at once (the others go on).
			m("action", "FailIndex", "onExitCodes", m("containerName", "genload", "operator", "In", "values", codes)),
			// A pod evicted or preempted (a node drained) is started again without using a retry.
			m("action", "Ignore", "onPodConditions", []any{m("type", "DisruptionTarget", "status", "True")}),
		}))
	// Each pod runs as the image's user, not root, with the results volume's files in its group.
	security := m("runAsNonRoot", true, "runAsUser", UID, "runAsGroup", UID, "fsGroup", UID)
	jobSpec = append(jobSpec, kv{"template", m(
		"metadata", m("labels", labels),
		"spec", m("restartPolicy", "Never", "securityContext", security, "containers", []any{container},
			"volumes", []any{results, m("name", "config", "configMap", m("name", j.Name+"-config"))}))})
	docs = append(docs, doc(m("apiVersion", "batch/v1", "kind", "Job", "metadata", meta(j.Name), "spec", jobSpec)))

	merge := m("name", "merge", "image", j.Image, "command", []any{"/bin/sh", "-c"}, "args", []any{j.mergeScript()},
		"env", env[:1], "volumeMounts", []any{m("name", "results", "mountPath", ResultsMount)})
	mergeJob := m("apiVersion", "batch/v1", "kind", "Job", "metadata", meta(j.Name+"-merge"), "spec", m(
		"backoffLimit", 0,
		"template", m("metadata", m("labels", labels), "spec", m("restartPolicy", "Never", "securityContext", security, "containers", []any{merge}, "volumes", []any{results}))))
	fetch := m("apiVersion", "v1", "kind", "Pod", "metadata", meta(j.Name+"-fetch"), "spec", m(
		"restartPolicy", "Never", "securityContext", security,
		"containers", []any{m("name", "fetch", "image", j.Image, "command", []any{"genload", "k8s", "idle", FetchHold},
			"volumeMounts", []any{m("name", "results", "mountPath", ResultsMount, "readOnly", true)})},
		"volumes", []any{results}))
	return &Manifests{Job: strings.Join(docs, "---\n"), Merge: doc(mergeJob), Fetch: doc(fetch)}, nil
}

func orDefault(bench string) string {
	if bench == "" {
		return "# genload's defaults\n"
	}
	return bench
}

func doc(v []kv) string {
	var b strings.Builder
	emit(&b, v, 0)
	return b.String()
}

// shardScript is each pod's command: the shard's run, or, when the pod is a retry and the
// shard's results file exists, its continuation. It uses /bin/sh's builtins and genload
// only (genload run creates the results directory).
func (j Job) shardScript() string {
	n := strconv.Itoa(j.Shards)
	args := shellArgs(j.RunArgs)
	return strings.Join([]string{
		"set -eu",
		`: "${JOB_COMPLETION_INDEX:?this pod is not part of an Indexed Job}"`,
		`f="$GENLOAD_RESULTS/` + j.Name + `-shard-${JOB_COMPLETION_INDEX}-of-` + n + `.jsonl"`,
		`if [ -f "$f" ]; then`,
		`exec genload run --resume "$f" --shard "JOB_COMPLETION_INDEX/` + n + `"` + args,
		`fi`,
		`exec genload run -c "$GENLOAD_CONFIG" --shard "JOB_COMPLETION_INDEX/` + n + `" --run-id ` + j.Name + ` --out "$GENLOAD_RESULTS"` + args,
		"",
	}, "\n")
}

// mergeScript joins the shards' .jsonl files (a killed shard's too: merge names it).
func (j Job) mergeScript() string {
	return strings.Join([]string{
		"set -eu",
		`exec genload merge "$GENLOAD_RESULTS"/` + j.Name + `-shard-*-of-` + strconv.Itoa(j.Shards) + `.jsonl -o "$GENLOAD_RESULTS/` + j.Name + `.json"`,
		"",
	}, "\n")
}

// shellArgs quotes args for /bin/sh, each with a leading space.
func shellArgs(args []string) string {
	var b strings.Builder
	for _, a := range args {
		b.WriteString(" '" + strings.ReplaceAll(a, "'", `'\''`) + "'")
	}
	return b.String()
}

// Terminal is the jsonpath of a Job's conditions that hold ("Complete", "Failed"; also
// "SuccessCriteriaMet" or "FailureTarget" just before them on Kubernetes ≥ 1.31), as the
// printed commands query it.
const Terminal = `{.status.conditions[?(@.status=="True")].type}`

// Commands returns the kubectl commands that run the manifests written to dir, for POSIX sh,
// one per line (lines starting with # are comments): apply the Job; wait until it is Complete
// or Failed — kubectl wait takes one condition, and --for=condition=complete alone waits out
// its timeout when a shard fails, so the wait polls the Job's conditions every 10 s — then
// print its condition with the shards completed and failed (status.completedIndexes and
// failedIndexes, e.g. "Failed: shards completed 0,2-3; failed 1"); the merge Job, waited for
// the same way, and its log; the fetch pod, the merged .json and .csv streamed out of it with
// genload k8s cat (no tar in the image) into ./results, and the pod deleted.
func (j Job) Commands(dir string) string {
	k := "kubectl"
	if j.Namespace != "" {
		k += " -n " + j.Namespace
	}
	wait := func(job string) string {
		return fmt.Sprintf("until %s get job/%s -o jsonpath='%s' | grep -qwE 'Complete|Failed'; do sleep 10; done", k, job, Terminal)
	}
	retries := fmt.Sprintf("%d retries", j.RetriesPerShard)
	if j.RetriesPerShard == 1 {
		retries = "1 retry"
	}
	merged := j.Dir() + "/" + j.Name
	lines := []string{
		fmt.Sprintf("# %d shards of %s, results in %s on the claim %s:", j.Shards, j.Name, j.Dir(), j.PVC),
		fmt.Sprintf("%s apply -f %s", k, shellWord(dir+"/job.yaml")),
		fmt.Sprintf("# wait until the Job is Complete, or Failed (a shard out of its %s; the other shards run to their end):", retries),
		wait(j.Name),
		fmt.Sprintf(`%s get job/%s -o jsonpath='%s: shards completed {.status.completedIndexes}; failed {.status.failedIndexes}{"\n"}'`, k, j.Name, Terminal),
		fmt.Sprintf("# the log of a failed shard I: %s logs -l job-name=%s,batch.kubernetes.io/job-completion-index=I --tail=20", k, j.Name),
		"# the merge (it names any shard that is missing or incomplete):",
		fmt.Sprintf("%s apply -f %s", k, shellWord(dir+"/merge.yaml")),
		wait(j.Name + "-merge"),
		fmt.Sprintf("%s logs job/%s-merge", k, j.Name),
		"# the results, streamed out of a pod that mounts the claim:",
		fmt.Sprintf("%s apply -f %s && %s wait --for=condition=ready --timeout=10m pod/%s-fetch", k, shellWord(dir+"/fetch.yaml"), k, j.Name),
		fmt.Sprintf("mkdir -p results && %s exec %s-fetch -- genload k8s cat %s.json > results/%s.json", k, j.Name, merged, j.Name),
		fmt.Sprintf("%s exec %s-fetch -- genload k8s cat %s.csv > results/%s.csv", k, j.Name, merged, j.Name),
		fmt.Sprintf("%s delete pod %s-fetch", k, j.Name),
	}
	return strings.Join(lines, "\n") + "\n"
}

// safeWord is a word /bin/sh reads as itself.
var safeWord = regexp.MustCompile(`^[A-Za-z0-9_./:=@%+,-]+$`)

// shellWord quotes s for /bin/sh unless it needs no quotes ("k8s-nightly/job.yaml" stays).
func shellWord(s string) string {
	if safeWord.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
