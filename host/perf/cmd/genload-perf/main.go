// Command genload-perf is `make perf`: it compiles the test binaries of host/dispatch,
// host/prompt, host/plugin and host/engine, runs their performance benchmarks in -rounds
// interleaved rounds (genload's code path and its baselines in the same process), and prints
// the machine, the load during the run and one Markdown table of ratios (PERF.md). The raw
// benchmark output goes to <out>/bench.txt and the table to <out>/table.md.
//
//	go run ./host/perf/cmd/genload-perf [-rounds 5] [-only bench,paced,binary] [-out build/perf]
package main

import (
	"bufio"
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
	if len(os.Args) > 1 {
		sub := map[string]func([]string) error{
			"serve":        func([]string) error { return serve() },
			"paced-serve":  pacedServe,
			"paced-client": pacedClient,
			"busy-bench":   busyBench,
			"spin":         spin,
		}
		if f, ok := sub[os.Args[1]]; ok {
			if err := f(os.Args[2:]); err != nil {
				fmt.Fprintf(os.Stderr, "genload-perf %s: %v\n", os.Args[1], err)
				os.Exit(1)
			}
			return
		}
	}
	o := options{}
	flag.IntVar(&o.rounds, "rounds", 5, "rounds of every benchmark (medians and ranges are over rounds)")
	flag.StringVar(&o.chunkBT, "chunk-benchtime", "1s", "-test.benchtime of the chunk-cost benchmark")
	flag.StringVar(&o.out, "out", "build/perf", "directory for bench.txt (raw output), table.md and the test binaries")
	flag.StringVar(&o.goCmd, "go", "go", "go command")
	flag.BoolVar(&o.split, "split", true, "also run rows 1 and 2 against a server in its own process (taskset: server on CPU 0, client on CPU 1)")
	flag.StringVar(&o.only, "only", "bench,paced,binary", "row groups to run, comma-separated: bench (the Go benchmarks, rows 1–7), paced (paced streams, three clients), binary (genload run: fixed cost, per-token cost, the largest cells)")
	flag.StringVar(&o.pacedSteps, "paced-steps", "1ms,2ms,10ms", "paced rows: server step lengths")
	flag.StringVar(&o.pacedN, "paced-n", "64,256,1024,4096", "paced rows: stream counts N")
	flag.IntVar(&o.pacedTokens, "paced-tokens", 200, "paced rows: tokens per stream")
	flag.StringVar(&o.python, "python", "/usr/bin/python3", "the Python with aiohttp for the asyncio client (\"\" skips it)")
	flag.StringVar(&o.genloadEnv, "genload-env", "", "binary rows: KEY=VALUE pairs, comma-separated, added to the environment of every genload run (e.g. GOGC=50), not of the servers or the other clients")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "genload-perf:", err)
		os.Exit(1)
	}
}

// options are genload-perf's flags.
type options struct {
	rounds                     int
	chunkBT, out, goCmd, only  string
	split                      bool
	pacedSteps, pacedN, python string
	pacedTokens                int
	genloadEnv                 string
}

// serve is the server process of the split benchmarks: it prints one NAME=host:port line per
// server, then "READY", and serves until its standard input closes.
func serve() error {
	env, closeAll, err := perf.ServeAll()
	if err != nil {
		return err
	}
	defer closeAll()
	for _, e := range env {
		fmt.Println(e)
	}
	fmt.Println("READY")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

// startServer runs this executable's server subcommand sub (serve or paced-serve) (pinned to CPU 0 with taskset when there
// are at least 2 CPUs) and returns its addresses, the client CPU to pin to ("" for none) and a
// stop function.
func startServer(ctx context.Context, sub string, args ...string) (env []string, clientCPU string, pid int, stop func(), err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, "", 0, nil, err
	}
	cmd := exec.CommandContext(ctx, self, append([]string{sub}, args...)...)
	if _, terr := exec.LookPath("taskset"); terr == nil && runtime.NumCPU() >= 2 {
		cmd = exec.CommandContext(ctx, "taskset", append([]string{"-c", "0", self, sub}, args...)...)
		clientCPU = "1"
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", 0, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", 0, nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, "", 0, nil, fmt.Errorf("start server process: %w", err)
	}
	stop = func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill() // our own child, by pid
			<-done
		}
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		if line == "READY" {
			return env, clientCPU, cmd.Process.Pid, stop, nil
		}
		env = append(env, line)
	}
	stop()
	return nil, "", 0, nil, fmt.Errorf("server process ended before READY")
}

// run is genload-perf: it runs the groups -only selects (rowGroups) with o.rounds rounds,
// logging raw benchmark output to <out>/bench.txt, and writes the table — the run's
// summary, each group's rows, the failed runs — to stdout and <out>/table.md. An error
// names the flag or file at fault.
func run(o options) error {
	if o.rounds < 1 {
		return fmt.Errorf("-rounds must be >= 1, got %d", o.rounds)
	}
	groups, err := parseGroups(o.only)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	out := o.out
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
	sum := runSummary{load0: loadavg(), up0: uptime()}
	start := time.Now()
	var body bytes.Buffer
	for _, g := range rowGroups {
		if !groups[g.name] {
			continue
		}
		r := &perf.Runner{Root: root, BinDir: filepath.Join(out, "bin"), Go: o.goCmd, Env: env, Log: logf, Progress: os.Stderr}
		f, err := g.run(ctx, r, o, &body)
		if err != nil {
			return err
		}
		sum.failures = append(sum.failures, f...)
		sum.own += r.Own
		sum.loads = append(sum.loads, r.Loads...)
	}
	sum.elapsed = time.Since(start)
	sum.load1, sum.up1 = loadavg(), uptime()
	var buf bytes.Buffer
	w := io.MultiWriter(os.Stdout, &buf)
	writeSummary(w, o, sum)
	_, _ = w.Write(body.Bytes())
	if len(sum.failures) > 0 {
		fmt.Fprintf(w, "\n%d runs failed (their figures are missing from the medians):\n", len(sum.failures))
		for _, f := range sum.failures {
			first, _, _ := strings.Cut(f, "\n")
			fmt.Fprintf(w, "- %s\n", first)
		}
	}
	fmt.Fprintf(w, "\nraw output: %s\n", filepath.Join(out, "bench.txt"))
	return os.WriteFile(filepath.Join(out, "table.md"), buf.Bytes(), 0o644)
}

// rowGroups are the groups of rows -only selects, in the order they run: each writes its
// table to w and returns its failed runs (their figures absent); an error stops the run.
var rowGroups = []struct {
	name string
	run  func(ctx context.Context, r *perf.Runner, o options, w io.Writer) ([]string, error)
}{
	{"bench", benchGroup},
	{"paced", pacedGroup},
	{"binary", binaryGroup},
}

// parseGroups returns the set of group names in -only's comma-separated list (spaces and
// empty items ignored); an unknown name is an error naming it.
func parseGroups(only string) (map[string]bool, error) {
	groups := map[string]bool{}
	for _, g := range strings.Split(only, ",") {
		g = strings.TrimSpace(g)
		switch g {
		case "bench", "paced", "binary":
			groups[g] = true
		case "":
		default:
			return nil, fmt.Errorf("-only %q: unknown group %q (want bench, paced or binary)", only, g)
		}
	}
	return groups, nil
}

// runSummary is what the table's header reports about the run: its wall time (elapsed),
// genload's own CPU (own), the foreign load of each process run (cores busy outside the
// run), the load average and uptime lines before and after, and the failed runs.
type runSummary struct {
	elapsed, own time.Duration
	loads        []float64
	load0, load1 string
	up0, up1     string
	failures     []string
}

// writeSummary writes the table's header: the command, the machine, the run's wall time,
// own CPU and load, and how the figures are summarised.
func writeSummary(w io.Writer, o options, sum runSummary) {
	fl := perf.Summarize(sum.loads)
	fmt.Fprintf(w, "\n## genload perf — %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "- command: go run ./host/perf/cmd/genload-perf -rounds %d -only %s\n", o.rounds, o.only)
	fmt.Fprintf(w, "- machine: %d CPUs, %s, %s, %s, Linux %s\n", runtime.NumCPU(), cpuModel(), goVersion(o.goCmd), runtime.GOARCH, kernel())
	fmt.Fprintf(w, "- run: %s wall, %d rounds; genload's own CPU %.0f s; load average %s before, %s after\n",
		sum.elapsed.Round(time.Second), o.rounds, sum.own.Seconds(), sum.load0, sum.load1)
	fmt.Fprintf(w, "- uptime before: %s\n- uptime after: %s\n", sum.up0, sum.up1)
	fmt.Fprintf(w, "- foreign load (other processes, cores busy outside this run, per process run): median %.2f [%.2f–%.2f] of %d cores\n",
		fl.Median, fl.Min, fl.Max, runtime.NumCPU())
	fmt.Fprintf(w, "- figures: median [min–max] over rounds; ratio = genload / baseline per round (same process or seconds apart), median [min–max]; verdicts on medians\n")
}

// benchGroup runs the Go benchmarks of rows 1–7 in interleaved rounds and writes their table.
func benchGroup(ctx context.Context, r *perf.Runner, o options, w io.Writer) ([]string, error) {
	jobs := perf.Jobs(o.chunkBT)
	if o.split {
		senv, cpu, pid, stopServer, err := startServer(ctx, "serve")
		if err != nil {
			return nil, err
		}
		defer stopServer()
		r.SplitEnv, r.ClientCPU, r.ServerPID = senv, cpu, pid
	}
	fmt.Fprintln(os.Stderr, "compiling test binaries…")
	if err := r.Compile(ctx, jobs); err != nil {
		return nil, err
	}
	s := perf.NewSamples(o.rounds)
	var failures []string
	for rnd := range o.rounds {
		for _, j := range jobs {
			if j.Once && rnd > 0 {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := r.RunJob(ctx, j, rnd, s); err != nil {
				failures = append(failures, err.Error())
				fmt.Fprintln(os.Stderr, err)
			}
		}
	}
	fmt.Fprintf(w, "\n### Go benchmarks (rows 1–7)\n\n")
	if o.split {
		fmt.Fprintf(w, "split rows: SSE server in its own process on CPU 0, client benchmark process pinned to CPU %s (taskset)\n\n", r.ClientCPU)
	}
	perf.WriteTable(w, perf.Table(s))
	return failures, nil
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

// uptime is the output of uptime(1), or the load average when it is missing.
func uptime() string {
	if b, err := exec.Command("uptime").Output(); err == nil {
		return strings.TrimSpace(string(b))
	}
	return "load average " + loadavg()
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
