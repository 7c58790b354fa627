package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/k8s"
)

func cmdK8s(_ context.Context, args []string, e *env) error {
	fs := newFlagSet("k8s", "genload k8s job --name NAME --image IMAGE --shards N --pvc CLAIM [-c bench.toml] [-o DIR] [-- run flags]",
		`Write the Kubernetes manifests that run a matrix as an Indexed Job, one pod per shard: pod i
runs genload run --shard i/N (its index is JOB_COMPLETION_INDEX) with the bench.toml from a
ConfigMap and writes its results file to the volume; a pod started again after a failure
(--retries) continues its shard's file. Then a merge Job joins the shards with genload merge,
and a pod mounts the volume to copy the results out. Flags after -- are passed to genload run
(checked against its flags here).

Written to DIR: job.yaml (ConfigMap, the claim if --pvc-size, the Indexed Job), merge.yaml
and fetch.yaml; the kubectl commands to run them are printed.`,
		[][2]string{
			{"four shards against a vLLM service, results on an existing ReadWriteMany claim",
				"genload k8s job --name nightly --image ghcr.io/acme/genload:1.4 --shards 4 --pvc genload-results -c bench.toml -- --target http://vllm:8000"},
			{"eight shards two at a time, the claim created, each shard retried once",
				"genload k8s job --name sweep-a --image genload:dev --shards 8 --parallelism 2 --pvc sweep-a --pvc-size 1Gi --retries 1"},
		}, e)
	j := k8s.Job{}
	fs.StringVar(&j.Name, "name", "", "the Job's name, run id and results directory (a DNS label)")
	fs.StringVar(&j.Namespace, "namespace", "", "namespace of every object (default: kubectl's)")
	fs.StringVar(&j.Image, "image", "", "container image with genload on its PATH and /bin/sh")
	fs.IntVar(&j.Shards, "shards", 0, "number of shards: the Indexed Job's completions")
	fs.IntVar(&j.Parallelism, "parallelism", 0, "pods running at once (default --shards)")
	fs.IntVar(&j.RetriesPerShard, "retries", 0, "times a failed shard's pod is started again (backoffLimitPerIndex; it continues the shard)")
	fs.StringVar(&j.PVC, "pvc", "", "PersistentVolumeClaim for the results (ReadWriteMany when pods may run on several nodes)")
	fs.StringVar(&j.PVCSize, "pvc-size", "", "create the claim with this size, e.g. 1Gi (default: it exists)")
	fs.StringVar(&j.StorageClass, "storage-class", "", "storage class of the claim created (default: the cluster's)")
	fs.StringVar(&j.CPU, "cpu", "", "each pod's CPU request and limit, e.g. 2")
	fs.StringVar(&j.Memory, "memory", "", "each pod's memory request and limit, e.g. 4Gi")
	cfgPath := fs.String("c", "", "bench.toml the shards run (default: genload's defaults)")
	out := fs.String("o", "", "directory for the manifests (default k8s-<name>)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 || fs.Arg(0) != "job" {
		return exitcode.Errorf(exitcode.Usage, "want 'genload k8s job …' (see 'genload k8s --help')")
	}
	j.RunArgs = fs.Args()[1:]
	if err := checkRunArgs(j.RunArgs); err != nil {
		return err
	}
	if *cfgPath != "" {
		// Checked here, where the file is, rather than in every pod.
		cfg, err := loadConfig(*cfgPath)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(*cfgPath)
		if err != nil {
			return exitcode.With(exitcode.InvalidConfig, err)
		}
		if err := podPaths(cfg, b); err != nil {
			return exitcode.With(exitcode.InvalidConfig, err)
		}
		j.Bench = string(b)
	}
	ms, err := k8s.Build(j)
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	dir := *out
	if dir == "" {
		dir = "k8s-" + j.Name
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, text := range map[string]string{"job.yaml": ms.Job, "merge.yaml": ms.Merge, "fetch.yaml": ms.Fetch} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	ns := ""
	if j.Namespace != "" {
		ns = " -n " + j.Namespace
	}
	fmt.Fprintf(e.stdout, `# %d shards of %s, results in %s on the claim %s:
kubectl%s apply -f %s
kubectl%s wait --for=condition=complete --timeout=24h job/%s
# the merge (it names any shard that is missing or incomplete):
kubectl%s apply -f %s
kubectl%s wait --for=condition=complete --timeout=10m job/%s-merge && kubectl%s logs job/%s-merge
# the results, copied out:
kubectl%s apply -f %s && kubectl%s wait --for=condition=ready pod/%s-fetch
kubectl%s cp %s-fetch:%s ./results/%s && kubectl%s delete pod %s-fetch
`, j.Shards, j.Name, j.Dir(), j.PVC,
		ns, filepath.Join(dir, "job.yaml"), ns, j.Name,
		ns, filepath.Join(dir, "merge.yaml"), ns, j.Name, ns, j.Name,
		ns, filepath.Join(dir, "fetch.yaml"), ns, j.Name,
		ns, j.Name, j.Dir(), j.Name, ns, j.Name)
	return nil
}

// podPaths refuses a bench.toml that names a file by a relative path: the pods mount only
// bench.toml itself (at k8s.ConfigMount), so a corpus, tokenizer, plugin, API key file or
// engine profile beside it on this machine is not there; it must be in the image, named by its
// absolute path. Plugin names ("gamma") and absolute paths pass.
func podPaths(cfg *config.Config, src []byte) error {
	var raw struct {
		Lengths    struct{ Plugin string }  `toml:"lengths"`
		Router     struct{ Plugin string }  `toml:"router"`
		Prompt     struct{ Corpus string }  `toml:"prompt"`
		Tokenizer  struct{ Path string }    `toml:"tokenizer"`
		Plugins    struct{ Dir string }     `toml:"plugins"`
		APIKeyFile string                   `toml:"api_key_file"`
		Engine     struct{ Profile string } `toml:"engine"`
	}
	if _, err := toml.Decode(string(src), &raw); err != nil {
		return err // loadConfig read it: not reached
	}
	path := func(v, ext string) bool {
		return v != "" && !filepath.IsAbs(v) && (ext == "" || strings.HasSuffix(v, ext) || strings.ContainsRune(v, '/'))
	}
	var errs []error
	for _, k := range []struct{ key, v, ext string }{
		{"lengths.plugin", raw.Lengths.Plugin, ".wasm"}, {"router.plugin", raw.Router.Plugin, ".wasm"},
		{"prompt.corpus", raw.Prompt.Corpus, ""}, {"tokenizer.path", raw.Tokenizer.Path, ""},
		{"plugins.dir", raw.Plugins.Dir, ""}, {"api_key_file", raw.APIKeyFile, ""}, {"engine.profile", raw.Engine.Profile, ".toml"},
	} {
		if path(k.v, k.ext) {
			errs = append(errs, fmt.Errorf("%s: [%s] %q is a relative path: the pods mount only bench.toml (at %s), so the file must be in the image; give its absolute path there",
				cfg.Where(k.key), k.key, k.v, k8s.ConfigMount))
		}
	}
	return errors.Join(errs...)
}
