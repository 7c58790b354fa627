package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/cliflag"
	"github.com/genload/genload/host/k8s"
)

func cmdK8s(ctx context.Context, args []string, e *env) error {
	if len(args) > 0 {
		switch args[0] {
		case "cat":
			return cmdK8sCat(args[1:], e)
		case "idle":
			return cmdK8sIdle(ctx, args[1:], e)
		}
	}
	fs := newFlagSet("k8s", "genload k8s job --name NAME --image IMAGE --shards N --pvc CLAIM [-c bench.toml] [-o DIR] [-- run flags]",
		`Write the Kubernetes manifests that run a matrix as an Indexed Job, one pod per shard: pod i
runs genload run --shard i/N (its index is JOB_COMPLETION_INDEX) with the bench.toml from a
ConfigMap and writes its results file to the volume. A failed shard's pod is started again up
to --retries times (backoffLimitPerIndex; Kubernetes ≥ 1.29), continuing the shard's file; a
pod that exits 2, 3 or 4 (bad flags, config or plugin: a retry gives the same) fails its shard
at once, and the other shards run to their end. Then a merge Job joins the shards with genload
merge, and a pod mounts the volume so that genload streams the results out (genload k8s cat).
The image needs genload on its PATH and /bin/sh, nothing else (see the Dockerfile). Flags
after -- are passed to genload run (checked against its flags here).

Written to DIR: job.yaml (ConfigMap, the claim if --pvc-size, the Indexed Job), merge.yaml
and fetch.yaml; the kubectl commands to run them are printed (POSIX sh).

In the pods: genload k8s cat FILE… writes the files to stdout (kubectl exec POD -- genload k8s
cat /results/NAME/NAME.json > NAME.json), and genload k8s idle DURATION waits (the fetch pod's
command) until the duration ends or the pod is deleted.`,
		[][2]string{
			{"four shards against a vLLM service, results on an existing ReadWriteMany claim",
				"genload k8s job --name nightly --image ghcr.io/acme/genload:1.4 --shards 4 --pvc genload-results -c bench.toml -- --target http://vllm:8000"},
			{"eight shards two at a time, the claim created, no retries",
				"genload k8s job --name sweep-a --image genload:dev --shards 8 --parallelism 2 --pvc sweep-a --pvc-size 1Gi --retries 0"},
		}, e)
	j := k8s.Job{}
	fs.StringVar(&j.Name, "name", "", "the Job's name, run id and results directory (a DNS label)")
	fs.StringVar(&j.Namespace, "namespace", "", "namespace of every object (default: kubectl's)")
	fs.StringVar(&j.Image, "image", "", "container image with genload on its PATH and /bin/sh (the Dockerfile builds one)")
	fs.IntVar(&j.Shards, "shards", 0, "number of shards: the Indexed Job's completions")
	fs.IntVar(&j.Parallelism, "parallelism", 0, "pods running at once (default 1 against a server, which every shard shares; --shards with the built-in engine, one per pod)")
	fs.IntVar(&j.RetriesPerShard, "retries", k8s.DefaultRetries, "times a failed shard's pod is started again, continuing the shard (backoffLimitPerIndex)")
	fs.StringVar(&j.PVC, "pvc", "", "PersistentVolumeClaim for the results (ReadWriteMany when pods may run on several nodes)")
	fs.StringVar(&j.PVCSize, "pvc-size", "", "create the claim with this size, e.g. 1Gi (default: it exists)")
	fs.StringVar(&j.StorageClass, "storage-class", "", "storage class of the claim created (default: the cluster's)")
	fs.StringVar(&j.CPU, "cpu", "", "each pod's CPU request and limit, e.g. 2")
	fs.StringVar(&j.Memory, "memory", "", "each pod's memory request and limit, e.g. 4Gi")
	cfgPath := fs.String("c", "", "bench.toml the shards run (default: genload's defaults)")
	out := fs.String("o", "", "directory for the manifests (default k8s-<name>)")
	if err := cliflag.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 || fs.Arg(0) != "job" {
		return exitcode.Errorf(exitcode.Usage, "want 'genload k8s job …', 'genload k8s cat FILE…' or 'genload k8s idle DURATION' (see 'genload k8s --help')")
	}
	j.RunArgs = fs.Args()[1:]
	if err := checkRunArgs(j.RunArgs); err != nil {
		return err
	}
	cfg, bench, err := jobBench(*cfgPath)
	if err != nil {
		return err
	}
	j.Bench = bench
	if note := j.ChooseParallelism(k8s.SharedTarget(runTarget(j.RunArgs), cfg)); note != "" {
		fmt.Fprintln(e.stderr, "genload k8s job: "+note)
	}
	ms, err := k8s.Build(j)
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	dir := *out
	if dir == "" {
		dir = "k8s-" + j.Name
	}
	if err := writeManifests(dir, ms); err != nil {
		return err
	}
	fmt.Fprint(e.stdout, j.Commands(filepath.Clean(dir)))
	return nil
}

// jobBench reads the bench.toml a Job's shards run (path "" : none, genload's defaults) and
// checks here, where the file is, rather than in every pod, that the pods can read what it
// names (k8s.PodPaths): the config and the file's text, or an InvalidConfig error.
func jobBench(path string) (*config.Config, string, error) {
	if path == "" {
		return nil, "", nil
	}
	cfg, err := loadConfig(path)
	if err != nil {
		return nil, "", err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", exitcode.With(exitcode.InvalidConfig, err)
	}
	if err := k8s.PodPaths(cfg, b); err != nil {
		return nil, "", exitcode.With(exitcode.InvalidConfig, err)
	}
	return cfg, string(b), nil
}

// writeManifests writes the Job's manifests into dir (created if need be) as job.yaml,
// merge.yaml and fetch.yaml.
func writeManifests(dir string, ms *k8s.Manifests) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, text := range map[string]string{"job.yaml": ms.Job, "merge.yaml": ms.Merge, "fetch.yaml": ms.Fetch} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// cmdK8sCat writes each file to stdout, byte for byte: the results leave a pod through
// kubectl exec without tar in the image.
func cmdK8sCat(args []string, e *env) error {
	fs := newFlagSet("k8s cat", "genload k8s cat FILE…",
		"Write the files to stdout, in order, byte for byte: in a pod without tar, kubectl exec POD -- genload k8s cat /results/NAME/NAME.json > NAME.json.", nil, e)
	if err := cliflag.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return exitcode.Errorf(exitcode.Usage, "cat: want the files to write (see 'genload k8s cat --help')")
	}
	for _, name := range fs.Args() {
		f, err := os.Open(name)
		if err != nil {
			return exitcode.With(exitcode.InvalidConfig, fmt.Errorf("cat: %w", err))
		}
		if st, err := f.Stat(); err == nil && st.IsDir() {
			f.Close()
			return exitcode.Errorf(exitcode.InvalidConfig, "cat: %s is a directory, want a file", name)
		}
		_, err = io.Copy(e.stdout, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("cat %s: %w", name, err)
		}
	}
	return nil
}

// cmdK8sIdle waits for the duration, or until interrupted (SIGTERM from a pod's deletion),
// and exits 0: the fetch pod's command, where /bin/sh may have no sleep.
func cmdK8sIdle(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("k8s idle", "genload k8s idle DURATION",
		"Wait for DURATION (such as 1h) or until the process is stopped (kubectl delete sends SIGTERM), then exit 0: the command of the pod the results are streamed out of.", nil, e)
	if err := cliflag.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return exitcode.Errorf(exitcode.Usage, "idle: want one duration, such as 1h (see 'genload k8s idle --help')")
	}
	d, err := time.ParseDuration(fs.Arg(0))
	if err != nil || d <= 0 {
		return exitcode.Errorf(exitcode.Usage, "idle %q: want a positive duration, such as 1h or 30m", fs.Arg(0))
	}
	// Said once the signal handlers are in place (main sets them before any command): a
	// SIGTERM after this line ends the wait with exit 0.
	fmt.Fprintf(e.stderr, "genload k8s idle: waiting %v, or until stopped\n", d)
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	return nil
}

// runTarget returns the --target of genload run's flags runArgs ("" when not given or not
// parsed: checkRunArgs has refused bad ones).
func runTarget(runArgs []string) string {
	fs, f := newRunFlags(&env{stdout: io.Discard, stderr: io.Discard})
	if cliflag.Parse(fs, runArgs) != nil {
		return ""
	}
	return *f.target
}
