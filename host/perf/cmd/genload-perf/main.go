// Command genload-perf is `make perf`: it compiles the test binaries of host/dispatch,
// host/prompt, host/plugin and host/engine, runs their performance benchmarks in -rounds
// interleaved rounds (genload's code path and its baselines in the same process), and prints
// the machine, the load during the run and one Markdown table of ratios (issue 8). The raw
// benchmark output goes to <out>/bench.txt and the table to <out>/table.md.
//
//	go run ./host/perf/cmd/genload-perf [-rounds 5] [-chunk-benchtime 1s] [-out build/perf]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/genload/genload/host/perf"
)

func main() {
	rounds := flag.Int("rounds", 5, "rounds of every benchmark (medians and ranges are over rounds)")
	chunkBT := flag.String("chunk-benchtime", "1s", "-test.benchtime of the chunk-cost benchmark")
	out := flag.String("out", "build/perf", "directory for bench.txt (raw output), table.md and the test binaries")
	goCmd := flag.String("go", "go", "go command")
	flag.Parse()
	if err := run(*rounds, *chunkBT, *out, *goCmd); err != nil {
		fmt.Fprintln(os.Stderr, "genload-perf:", err)
		os.Exit(1)
	}
}

func run(rounds int, chunkBT, out, goCmd string) error {
	if rounds < 1 {
		return fmt.Errorf("-rounds must be >= 1, got %d", rounds)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	if !filepath.IsAbs(out) {
		out = filepath.Join(root, out)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("out dir: %w", err)
	}
	logf, err := os.Create(filepath.Join(out, "bench.txt"))
	if err != nil {
		return fmt.Errorf("raw log: %w", err)
	}
	defer logf.Close()
	var env []string
	if d := os.Getenv("GENLOAD_PLUGIN_DIR"); d != "" {
		env = append(env, "GENLOAD_PLUGIN_DIR="+d)
	}
	r := &perf.Runner{Root: root, BinDir: filepath.Join(out, "bin"), Go: goCmd, Env: env, Log: logf, Progress: os.Stderr}
	jobs := perf.Jobs(chunkBT)
	load0 := loadavg()
	start := time.Now()
	fmt.Fprintln(os.Stderr, "compiling test binaries…")
	if err := r.Compile(ctx, jobs); err != nil {
		return err
	}
	s := perf.NewSamples(rounds)
	var failures []string
	for rnd := range rounds {
		for _, j := range jobs {
			if j.Once && rnd > 0 {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := r.RunJob(ctx, j, rnd, s); err != nil {
				failures = append(failures, err.Error())
				fmt.Fprintln(os.Stderr, err)
			}
		}
	}
	elapsed := time.Since(start)
	load1 := loadavg()
	fl := perf.Summarize(r.Loads)

	var buf bytes.Buffer
	w := io.MultiWriter(os.Stdout, &buf)
	fmt.Fprintf(w, "\n## genload perf — %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "- command: `make perf` (go run ./host/perf/cmd/genload-perf -rounds %d -chunk-benchtime %s)\n", rounds, chunkBT)
	fmt.Fprintf(w, "- machine: %d CPUs, %s, %s, %s, Linux %s\n", runtime.NumCPU(), cpuModel(), goVersion(goCmd), runtime.GOARCH, kernel())
	fmt.Fprintf(w, "- run: %s wall, %d rounds; genload's own CPU %.0f s; load average %s before, %s after\n",
		elapsed.Round(time.Second), rounds, r.Own.Seconds(), load0, load1)
	fmt.Fprintf(w, "- foreign load (other processes, cores busy outside this run, per benchmark process): median %.2f [%.2f–%.2f] of %d cores\n",
		fl.Median, fl.Min, fl.Max, runtime.NumCPU())
	fmt.Fprintf(w, "- figures: median [min–max] over rounds; ratio = genload / baseline per round (same process, seconds apart), median [min–max]; verdicts on medians\n\n")
	perf.WriteTable(w, perf.Table(s))
	if len(failures) > 0 {
		fmt.Fprintf(w, "\n%d benchmark runs failed (their figures are missing from the medians):\n", len(failures))
		for _, f := range failures {
			first, _, _ := strings.Cut(f, "\n")
			fmt.Fprintf(w, "- %s\n", first)
		}
	}
	fmt.Fprintf(w, "\nraw output: %s\n", filepath.Join(out, "bench.txt"))
	return os.WriteFile(filepath.Join(out, "table.md"), buf.Bytes(), 0o644)
}

// moduleRoot walks up from the working directory to the directory holding go.mod.
func moduleRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		p := filepath.Dir(d)
		if p == d {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		d = p
	}
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "n/a"
	}
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func goVersion(goCmd string) string {
	o, err := exec.Command(goCmd, "env", "GOVERSION").Output()
	if err != nil {
		return runtime.Version()
	}
	return strings.TrimSpace(string(o))
}

func kernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}
