package perf

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/genload/genload/host/internal/procstat"
)

// PacedCell is one cell of the paced-stream rows: N streams of one step server, sent as N
// routed requests of one prompt each or as one array request of N prompts.
type PacedCell struct {
	Mode string // "routed" or "array"
	Step time.Duration
	N    int
}

// Name is the cell's key part: "routed/step=1000us/N=64".
func (c PacedCell) Name() string {
	return fmt.Sprintf("%s/step=%dus/N=%d", c.Mode, c.Step.Microseconds(), c.N)
}

// PacedCells returns every (mode, step, N) cell, routed first, then by step and N.
func PacedCells(steps []time.Duration, ns []int) []PacedCell {
	var out []PacedCell
	for _, m := range []string{"routed", "array"} {
		for _, s := range steps {
			for _, n := range ns {
				out = append(out, PacedCell{m, s, n})
			}
		}
	}
	return out
}

// PacedClient is one client of the paced-stream rows and how to start it.
type PacedClient struct {
	// Name is "genload", "raw" or "asyncio".
	Name string
	// Argv returns the command line for cell c against base URL u with tokens per stream.
	Argv func(u string, c PacedCell, tokens int) []string
}

// PacedClients returns genload's client (genload-perf paced-client, self), the raw-socket Go
// client (the paced-raw binary at raw) and, when python is not "", the asyncio client
// (paced_client.py under root with that interpreter).
func PacedClients(self, raw, python, root string) []PacedClient {
	args := func(dash string) func(u string, c PacedCell, tokens int) []string {
		return func(u string, c PacedCell, tokens int) []string {
			return []string{dash + "url", u, dash + "mode", c.Mode, dash + "n", fmt.Sprint(c.N), dash + "tokens", fmt.Sprint(tokens)}
		}
	}
	out := []PacedClient{
		{"genload", func(u string, c PacedCell, t int) []string {
			return append([]string{self, "paced-client"}, args("-")(u, c, t)...)
		}},
		{"raw", func(u string, c PacedCell, t int) []string { return append([]string{raw}, args("-")(u, c, t)...) }},
	}
	if python != "" {
		script := filepath.Join(root, "host", "perf", "paced_client.py")
		out = append(out, PacedClient{"asyncio", func(u string, c PacedCell, t int) []string {
			return append([]string{python, script}, args("--")(u, c, t)...)
		}})
	}
	return out
}

// Proc is what one client process used: its user+system CPU and peak resident set (wait4's
// rusage), its wall time and its standard output.
type Proc struct {
	CPU    time.Duration
	MaxRSS float64 // MB
	Wall   time.Duration
	Stdout []byte
}

// RunProc runs argv (pinned to ClientCPU with taskset when set) with a timeout, adds its CPU
// to r.Own and the foreign load during it to r.Loads, and returns what it used. A failure
// returns the error with the process's standard error.
func (r *Runner) RunProc(ctx context.Context, timeout time.Duration, env []string, argv ...string) (Proc, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if r.ClientCPU != "" {
		argv = append([]string{"taskset", "-c", r.ClientCPU}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), r.Env...), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cpu0, _ := procstat.Read()
	srv0 := procCPU(r.ServerPID)
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	cpu1, _ := procstat.Read()
	srv := procCPU(r.ServerPID) - srv0
	p := Proc{Wall: wall, Stdout: out.Bytes()}
	if cmd.ProcessState != nil {
		p.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			p.MaxRSS = float64(ru.Maxrss) / 1024 // KiB on Linux
		}
		r.Own += p.CPU + srv
		if cpu1.Total > cpu0.Total && wall > 0 {
			busyCores, _ := cpu1.Since(cpu0, numCPU())
			r.Loads = append(r.Loads, max(0, busyCores-(p.CPU+srv).Seconds()/wall.Seconds()))
		}
	}
	if r.Log != nil {
		fmt.Fprintf(r.Log, "### %v\n%s%s\n", argv, out.Bytes(), errb.Bytes())
	}
	if err != nil {
		msg := bytes.TrimSpace(errb.Bytes())
		if len(msg) > 600 {
			msg = append(msg[:600:600], "…"...)
		}
		return p, fmt.Errorf("%s: %w: %s", filepath.Base(argv[0]), err, msg)
	}
	return p, nil
}

// FetchStepStats returns the step server's record at base URL u since the previous call.
func FetchStepStats(u string) (StepStats, error) {
	resp, err := http.Get(u + "/perf/stats")
	if err != nil {
		return StepStats{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return StepStats{}, err
	}
	var st StepStats
	if err := json.Unmarshal(b, &st); err != nil {
		return StepStats{}, fmt.Errorf("%s/perf/stats: %w", u, err)
	}
	return st, nil
}

// PacedKey is the samples key of client's figure unit in cell c.
func PacedKey(c PacedCell, client, unit string) string {
	return Key("Paced/"+c.Name()+"/"+client, unit)
}

// RunPaced runs every client once on cell c in round rnd, in an order rotated by rot (so that
// no client always runs first), against the step server at u, and records per client:
// cpu-ns/token (its own CPU while streaming), proc-cpu-s and maxrss-MB (the whole process),
// err-p50-µs, err-p99-µs, kept-up (1 when its p99 timestamp error is at most one step) and
// the server's own pacing during its run (server-kept-pace 1/0, server-late-p99-µs). A failed
// client is returned as an error; the others still run.
func (r *Runner) RunPaced(ctx context.Context, clients []PacedClient, c PacedCell, u string, tokens, rnd, rot int, s *Samples) []error {
	var errs []error
	_, _ = FetchStepStats(u) // start the server's record afresh
	for i := range clients {
		cl := clients[(i+rot)%len(clients)]
		p, err := r.RunProc(ctx, 5*time.Minute, nil, cl.Argv(u, c, tokens)...)
		st, serr := FetchStepStats(u)
		if err != nil {
			errs = append(errs, fmt.Errorf("paced %s %s: %w", c.Name(), cl.Name, err))
			continue
		}
		var rep ClientReport
		if err := json.Unmarshal(bytes.TrimSpace(p.Stdout), &rep); err != nil {
			errs = append(errs, fmt.Errorf("paced %s %s: report %q: %w", c.Name(), cl.Name, p.Stdout, err))
			continue
		}
		if rep.Tokens != c.N*tokens {
			errs = append(errs, fmt.Errorf("paced %s %s: %d token chunks, want %d", c.Name(), cl.Name, rep.Tokens, c.N*tokens))
			continue
		}
		add := func(unit string, v float64) { s.Add(PacedKey(c, cl.Name, unit), rnd, v) }
		add("cpu-ns/token", float64(rep.StreamCPUNS)/float64(rep.Tokens))
		add("proc-cpu-s", p.CPU.Seconds())
		add("maxrss-MB", p.MaxRSS)
		add("err-p50-µs", rep.ErrP50US)
		add("err-p99-µs", rep.ErrP99US)
		add("kept-up", b2f(rep.ErrP99US <= float64(c.Step.Microseconds())))
		if serr == nil {
			add("server-kept-pace", b2f(st.KeptPace()))
			add("server-late-p99-µs", st.LateP99US)
		}
		if r.Progress != nil {
			fmt.Fprintf(r.Progress, "round %d  paced %-26s %-8s %6.2f µs/token  err p50 %7.0f p99 %8.0f µs  rss %6.1f MB  %5.1f s\n",
				rnd+1, c.Name(), cl.Name, float64(rep.StreamCPUNS)/float64(rep.Tokens)/1e3, rep.ErrP50US, rep.ErrP99US, p.MaxRSS, p.Wall.Seconds())
		}
	}
	return errs
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
