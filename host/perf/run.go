package perf

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/genload/genload/host/internal/procstat"
)

// Job is one invocation of a package's compiled test binary per round.
type Job struct {
	// Pkg is the package path relative to the module root, e.g. "host/dispatch".
	Pkg string
	// Bench is the -test.bench pattern.
	Bench string
	// Benchtime is the -test.benchtime value ("1x", "1s", …).
	Benchtime string
	// RSS records the process's peak resident set (getrusage ru_maxrss of the child, MB) as
	// metric "maxrss-MB" of benchmark RSSName, so that one client per process can be compared.
	RSS bool
	// RSSName names the RSS figure (required when RSS is set).
	RSSName string
	// Once runs the job in the first round only (deterministic figures, e.g. simulated time).
	Once bool
	// Empty allows a run that matches no benchmark (the idle process of an RSS baseline).
	Empty bool
	// Split runs the job against the servers of another process: Runner.SplitEnv is added to
	// its environment and it is pinned to Runner.ClientCPU. A split job is skipped (not an
	// error) when the runner has no SplitEnv.
	Split bool
}

// Runner compiles and runs Jobs.
type Runner struct {
	// Root is the module root (the directory holding go.mod).
	Root string
	// BinDir receives the compiled test binaries.
	BinDir string
	// Go is the go command (default "go").
	Go string
	// Env is added to every test process's environment (e.g. GENLOAD_PLUGIN_DIR).
	Env []string
	// Log receives the raw benchmark output of every run and progress lines; may be nil.
	Log io.Writer
	// Progress receives one line per run; may be nil.
	Progress io.Writer
	// SplitEnv holds the GENLOAD_PERF_* addresses of the server process for Split jobs.
	SplitEnv []string
	// ServerPID, if not 0, is the split server process; its CPU counts as the run's own.
	ServerPID int
	// ClientCPU, if set, pins Split jobs with taskset -c ClientCPU (e.g. "1").
	ClientCPU string

	// Own is the CPU time (user+system) used by every run so far, to separate genload's load
	// from foreign load on the machine.
	Own time.Duration
	// Loads holds, per run, the foreign load in cores during that run: busy CPU of the whole
	// machine (/proc/stat) minus the run's own CPU, divided by its wall time.
	Loads []float64
}

func (r *Runner) bin(pkg string) string {
	return filepath.Join(r.BinDir, strings.ReplaceAll(pkg, "/", "_")+".test")
}

// Compile builds the test binary of every distinct package of jobs (go test -c), in order.
// It returns the first failure with the compiler's output.
func (r *Runner) Compile(ctx context.Context, jobs []Job) error {
	if err := os.MkdirAll(r.BinDir, 0o755); err != nil {
		return fmt.Errorf("perf: bin dir: %w", err)
	}
	done := map[string]bool{}
	goCmd := r.Go
	if goCmd == "" {
		goCmd = "go"
	}
	for _, j := range jobs {
		if done[j.Pkg] {
			continue
		}
		done[j.Pkg] = true
		cmd := exec.CommandContext(ctx, goCmd, "test", "-c", "-o", r.bin(j.Pkg), "./"+j.Pkg)
		cmd.Dir = r.Root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("perf: go test -c ./%s: %w\n%s", j.Pkg, err, out)
		}
	}
	return nil
}

// RunJob runs j once for round rnd and records its metrics into s. A failed run is reported as
// an error (its metrics of that round stay NaN).
func (r *Runner) RunJob(ctx context.Context, j Job, rnd int, s *Samples) error {
	args := []string{"-test.run", "^$", "-test.bench", j.Bench, "-test.benchtime", j.Benchtime,
		"-test.count", "1", "-test.benchmem"}
	if j.Split && len(r.SplitEnv) == 0 {
		return nil
	}
	cmd := exec.CommandContext(ctx, r.bin(j.Pkg), args...)
	if j.Split && r.ClientCPU != "" {
		cmd = exec.CommandContext(ctx, "taskset", append([]string{"-c", r.ClientCPU, r.bin(j.Pkg)}, args...)...)
	}
	cmd.Dir = filepath.Join(r.Root, j.Pkg)
	cmd.Env = append(os.Environ(), r.Env...)
	if j.Split {
		cmd.Env = append(cmd.Env, r.SplitEnv...)
	}
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	cpu0, _ := procstat.Read()
	srv0 := procCPU(r.ServerPID)
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	cpu1, _ := procstat.Read()
	srv := procCPU(r.ServerPID) - srv0
	if r.Log != nil {
		fmt.Fprintf(r.Log, "### round %d: %s -test.bench %q -test.benchtime %s\n%s\n", rnd+1, j.Pkg, j.Bench, j.Benchtime, out.Bytes())
	}
	var own time.Duration
	if cmd.ProcessState != nil {
		own = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime() + srv
		r.Own += own
		if cpu1.Total > cpu0.Total && wall > 0 {
			busyCores, _ := cpu1.Since(cpu0, numCPU())
			r.Loads = append(r.Loads, max(0, busyCores-own.Seconds()/wall.Seconds()))
		}
	}
	if r.Progress != nil {
		fmt.Fprintf(r.Progress, "round %d  %-14s %-60s %6.1f s\n", rnd+1, j.Pkg, j.Bench, wall.Seconds())
	}
	if err != nil {
		return fmt.Errorf("perf: %s -test.bench %q: %w\n%s", j.Pkg, j.Bench, err, out.Bytes())
	}
	rs, perr := ParseBench(&out)
	if perr != nil {
		return fmt.Errorf("perf: %s: %w", j.Pkg, perr)
	}
	if len(rs) == 0 && !j.Empty {
		return fmt.Errorf("perf: %s -test.bench %q matched no benchmark", j.Pkg, j.Bench)
	}
	s.AddResults(rnd, rs)
	if j.RSS {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			s.Add(Key(j.RSSName, "maxrss-MB"), rnd, float64(ru.Maxrss)/1024) // ru_maxrss is KiB on Linux
		}
	}
	return nil
}

func numCPU() int { return runtime.NumCPU() }

// procCPU returns the user+system CPU time of process pid from /proc/<pid>/stat (fields 14
// and 15, in clock ticks of 1/100 s, USER_HZ on Linux), or 0 if pid is 0 or unreadable.
func procCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; fields after its closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64) // field 14 utime
	s, _ := strconv.ParseInt(f[12], 10, 64) // field 15 stime
	return time.Duration(u+s) * 10 * time.Millisecond
}
