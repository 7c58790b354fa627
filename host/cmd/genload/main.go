// Command genload measures the latency of one decode forward pass of an LLM serving engine per
// (mean sequence length, batch size) cell, with ragged prompt lengths and distinct prompts.
//
// main only wires the process (args, stdio, environment, signals) to doMain, which tests call
// in-process.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/term"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/cliflag"
)

// version is set by the Makefile (-ldflags "-X main.version=…").
var version = "dev"

func main() {
	ctx, stop := context.WithCancel(context.Background())
	// SIGHUP (the terminal closed) stops a run or sweep like Ctrl-C: what was measured is
	// written and a sweep's server is stopped, rather than left running. SIGPIPE is taken so
	// that a closed stdout (genload sweep … | head) fails writes instead of killing genload
	// before it stops its servers.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	exitcode.Go(func() {
		<-sigs
		fmt.Fprintln(os.Stderr, "\ngenload: interrupted; stopping (press Ctrl-C again to exit at once)")
		stop()
		<-sigs
		os.Exit(int(exitcode.Interrupted))
	})
	code := doMain(ctx, os.Args[1:], &env{
		stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv,
		tty: term.IsTerminal(int(os.Stderr.Fd())),
	})
	stop()
	os.Exit(int(code))
}

// env is the process around a command: tests pass buffers and a fake environment.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	tty            bool // stderr is a terminal: show a progress bar
}

// command is one sub-command.
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, e *env) error
}

func commands() []command {
	return []command{
		{"run", "run a benchmark matrix (bench.toml) and write results", cmdRun},
		{"serve", "start the built-in serving engine (OpenAI-compatible) on a loopback port", cmdServe},
		{"lengths", "print the prompt lengths a length plugin gives for one cell; 'lengths fit' fits request logs", cmdLengths},
		{"replay", "replay a request log open loop at its timestamps; per-request records and a summary", cmdReplay},
		{"consistency", "per-cell CV of per-forward latency across repeated runs of a matrix", cmdConsistency},
		{"ab", "paired A/B of two configs on identical prompts, AB/BA per cell, a verdict per cell (exit 6)", cmdAB},
		{"diff", "per-cell change in % of per-forward latency and TTFT from one run to another", cmdDiff},
		{"merge", "join the results files of a sharded run (genload run --shard I/N) into one run", cmdMerge},
		{"sweep", "run the matrix against a series of servers (a sweep file of serve commands and points)", cmdSweep},
		{"k8s", "write the Kubernetes manifests of a sharded run (an Indexed Job) and its merge", cmdK8s},
		{"steplog", "per-cell batch attainment and forward time from the server's step log of a run", cmdSteplog},
		{"gpu-time", "wall and GPU time of runs: per cell, warmups, measured requests", cmdGPUTime},
		{"plot", "PNG and SVG of per-forward latency vs batch size (one run, or before/after)", cmdPlot},
		{"report", "one self-contained HTML report of runs (tables, warnings, plots, consistency, A/B)", cmdReport},
		{"fit", "fit a latency model (per-forward latency vs mean length and batch size) to runs", cmdFit},
		{"predict", "per-forward latency from a fitted model at a length and batch size, or a grid", cmdPredict},
		{"gap", "a replay's forward passes (server step log) against a fitted matrix model, per batch occupancy", cmdGap},
		{"gate", "latency regression check of a run against a baseline model or run (exit 6)", cmdGate},
		{"plugin", "check a WebAssembly plugin: genload plugin check FILE.wasm", cmdPlugin},
		{"version", "print genload's version", cmdVersion},
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "genload %s — decode forward-pass latency under realistic batches\n\nUsage:\n  genload <command> [flags]\n\nCommands:\n", version)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'genload <command> --help' for a command's flags, 'genload --version' for the version.\n")
}

// doMain runs one command line and returns the exit code. Errors are printed once, here; a panic
// of the command's goroutine is reported with its stack and gives exitcode.Panic (goroutines the
// command starts use exitcode.Go, which exits with the same code).
func doMain(ctx context.Context, args []string, e *env) (code exitcode.Code) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprint(e.stderr, exitcode.PanicMessage(r, debug.Stack()))
			code = exitcode.Panic
		}
	}()
	if args = slices.Clone(args); len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		args[0] = "version"
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(e.stdout)
		if len(args) == 0 {
			return exitcode.Usage
		}
		return exitcode.OK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			err := c.run(ctx, args[1:], e)
			if err != nil && err != cliflag.ErrHelp {
				// Library errors often start with their package's name ("plot: …"), which is
				// the command's name too: say it once.
				fmt.Fprintf(e.stderr, "genload %s: %s\n", c.name, strings.TrimPrefix(err.Error(), c.name+": "))
			}
			if err == cliflag.ErrHelp {
				return exitcode.OK
			}
			return exitcode.Of(err)
		}
	}
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	fmt.Fprintf(e.stderr, "genload: unknown command %q%s ('genload --help' lists the commands)\n", args[0], cliflag.DidYouMean(cliflag.Suggest(args[0], names, true), "genload "))
	return exitcode.Usage
}
