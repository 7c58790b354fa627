package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/genload/genload/host/perf"
)

// pacedGroup runs the paced-stream rows: a step server in its own process (CPU 0) and each
// client in its own process (CPU 1), every cell once per round with the clients' order
// rotated, and writes their table.
func pacedGroup(ctx context.Context, r *perf.Runner, o options, w io.Writer) ([]string, error) {
	steps, err := durations(o.pacedSteps)
	if err != nil {
		return nil, fmt.Errorf("-paced-steps: %w", err)
	}
	ns, err := ints(o.pacedN)
	if err != nil {
		return nil, fmt.Errorf("-paced-n: %w", err)
	}
	raw, err := buildTool(ctx, r, "paced-raw", "./host/perf/cmd/paced-raw")
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	python, note := asyncioPython(o.python)
	env, cpu, pid, stop, err := startServer(ctx, "paced-serve", "-steps", o.pacedSteps)
	if err != nil {
		return nil, err
	}
	defer stop()
	r.ClientCPU, r.ServerPID = cpu, pid
	addr := map[string]string{}
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		addr[k] = "http://" + v
	}
	clients := perf.PacedClients(self, raw, python, r.Root)
	var names []string
	for _, c := range clients {
		names = append(names, c.Name)
	}
	cells := perf.PacedCells(steps, ns)
	s := perf.NewSamples(o.rounds)
	var failures []string
	for rnd := range o.rounds {
		for ci, c := range cells {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			for _, e := range r.RunPaced(ctx, clients, c, addr[perf.StepEnv(c.Step)], o.pacedTokens, rnd, rnd+ci, s) {
				failures = append(failures, e.Error())
				fmt.Fprintln(os.Stderr, e)
			}
		}
	}
	fmt.Fprintf(w, "\n### Paced streams (row 8)\n\n")
	fmt.Fprintf(w, "%d tokens per stream; step server (genload-perf paced-serve) on CPU %s, each client in its own process on CPU %s; clients: %s", o.pacedTokens, "0", cpu, strings.Join(names, ", "))
	if note != "" {
		fmt.Fprintf(w, " (%s)", note)
	}
	fmt.Fprintf(w, "\n\n")
	sum := perf.WritePacedTable(w, s, cells, names)
	perf.WritePacedSummary(w, sum, s, cells)
	return failures, nil
}

// asyncioPython returns the interpreter for the asyncio client when it imports aiohttp, else
// "" and why not.
func asyncioPython(python string) (string, string) {
	if python == "" {
		return "", "asyncio client skipped (-python \"\")"
	}
	if out, err := exec.Command(python, "-c", "import aiohttp; print(aiohttp.__version__)").CombinedOutput(); err != nil {
		return "", fmt.Sprintf("asyncio client skipped: %s cannot import aiohttp (%s); apt-get install python3-aiohttp", python, strings.TrimSpace(string(out)))
	} else {
		return python, "aiohttp " + strings.TrimSpace(string(out))
	}
}

// buildTool compiles the command at pkg into r.BinDir and returns its path.
func buildTool(ctx context.Context, r *perf.Runner, name, pkg string, ldflags ...string) (string, error) {
	if err := os.MkdirAll(r.BinDir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(r.BinDir, name)
	args := []string{"build", "-o", out}
	if len(ldflags) > 0 {
		args = append(args, "-ldflags", strings.Join(ldflags, " "))
	}
	goCmd := r.Go
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.CommandContext(ctx, goCmd, append(args, pkg)...)
	cmd.Dir = r.Root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return out, nil
}

func durations(list string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(list, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%q is not a positive duration", f)
		}
		out = append(out, d)
	}
	return out, nil
}

func ints(list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}
