package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/genload/genload/host/perf"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/scrape/metrics"
)

// busyBench runs `genload run` on a config (bench.toml: the default matrix against the built-in
// engine) while -busy other processes spin on the CPUs, then checks that fwd rose with B at
// every L and that the engine's steps kept to their plan in every cell (perf.CheckBench). It
// exits non-zero when the check fails.
func busyBench(args []string) error {
	fs := flag.NewFlagSet("busy-bench", flag.ContinueOnError)
	busy := fs.Int("busy", 1, "other processes spinning during the run")
	cfg := fs.String("c", "bench.toml", "genload config to run")
	gl := fs.String("genload", "build/genload", "genload binary")
	out := fs.String("out", "build/busy-bench", "results directory")
	scales := fs.String("time-scales", "0", "built-in engine time scales to run, comma-separated, one run each (0 = the config's, else the engine's default)")
	spin := fs.Duration("spin-wait", 0, "the built-in engine's spin before each step's planned end (genload run --spin-wait; 0 = the config's)")
	share := fs.Float64("share", metrics.OverrunShareLimit, "largest engine overrun share a cell may have")
	check := fs.String("check", "", "only check this results file (.json) instead of running")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *check != "" {
		return checkRun(*check, *share)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var spinners []*exec.Cmd
	defer func() {
		for _, s := range spinners {
			_ = s.Process.Kill() // our own children, by pid
			_ = s.Wait()
		}
	}()
	for range *busy {
		s := exec.Command(self, "spin")
		s.Env = append(os.Environ(), "GOMAXPROCS=1")
		if err := s.Start(); err != nil {
			return fmt.Errorf("start a busy process: %w", err)
		}
		spinners = append(spinners, s)
	}
	var failed []string
	for _, f := range strings.Split(*scales, ",") {
		scale, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || scale < 0 {
			return fmt.Errorf("-time-scales %q: %q is not a time scale", *scales, f)
		}
		runID := "busy-" + time.Now().UTC().Format("20060102-150405")
		argv := []string{"run", "-c", *cfg, "--out", *out, "--run-id", runID}
		label := "the default time scale"
		if scale > 0 {
			argv = append(argv, "--time-scale", fmt.Sprint(scale))
			label = fmt.Sprintf("time scale %g", scale)
		}
		if *spin > 0 {
			argv = append(argv, "--spin-wait", spin.String())
			label += fmt.Sprintf(", spin %v", *spin)
		}
		fmt.Fprintf(os.Stderr, "busy-bench: %s, %d busy process(es); %s\nbusy-bench: %s %s\n", label, *busy, uptime(), *gl, strings.Join(argv, " "))
		cmd := exec.CommandContext(ctx, *gl, argv...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		t0 := time.Now()
		err = cmd.Run()
		fmt.Printf("\n%s, %d busy process(es): run took %s; uptime after: %s\n", label, *busy, time.Since(t0).Round(time.Second), uptime())
		if err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				return err
			}
			fmt.Printf("genload run exited %d; checking what it measured\n", ee.ExitCode())
		}
		if err := checkRun(filepath.Join(*out, runID+".json"), *share); err != nil {
			failed = append(failed, label)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("the busy-host check failed at %s", strings.Join(failed, ", "))
	}
	return nil
}

// checkRun checks the results file path (perf.CheckBench) and prints the verdict.
func checkRun(path string, share float64) error {
	run, err := results.ReadFile(path)
	if err != nil {
		return err
	}
	c := perf.CheckBench(run, share)
	fmt.Printf("results: %s (%d CPUs)\n", path, runtime.NumCPU())
	perf.WriteBenchCheck(os.Stdout, c)
	if !c.OK() {
		return errors.New("the busy-host check failed")
	}
	return nil
}

// spin is a busy process: it runs a loop until killed.
func spin([]string) error {
	x := uint64(1)
	for {
		x = x*6364136223846793005 + 1442695040888963407
		if x == 0 {
			fmt.Println(x) // never: keeps the loop from being optimised away
		}
	}
}
