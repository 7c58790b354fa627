package main

import (
	"context"
	"os"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/cliflag"
	"github.com/genload/genload/host/shard"
	"github.com/genload/genload/host/sweep"
)

func cmdSweep(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("sweep", "genload sweep [-f] sweep.toml [--resume] [--shard I/N] [--out DIR]",
		`Run one benchmark matrix against a series of server configurations. For each point of the
sweep file (a grid of variables and explicit points) genload starts the serve command (a
template with {placeholders}) in a process group of its own, waits until the target answers
the readiness path, runs the matrix of the sweep's bench.toml with the point's overrides,
stops the server (SIGTERM, then SIGKILL after the stop timeout), and writes the point's
results files and a line of the summary <out>/sweep.json. A point whose server fails to start,
is not ready in time or dies is recorded with the reason and the sweep goes on; --resume runs
again the points that are not ok, continuing their runs where they stopped.

The default serve command is the built-in engine ({genload} serve --addr 127.0.0.1:{port}),
so a sweep runs on any machine. Placeholders: the point's variables, and genload (this
binary), port (a free loopback port), point (its name), out (the results directory).`,
		[][2]string{
			{"four built-in engines: two profiles × speculative decoding off and on", "genload sweep sweep.toml"},
			{"continue a sweep that was interrupted or had failed points", "genload sweep sweep.toml --resume"},
			{"points 0, 2, 4, … on this machine, 1, 3, 5, … on another", "genload sweep sweep.toml --shard 0/2"},
		}, e)
	file := fs.String("f", "", "the sweep file (or give it as the argument)")
	resume := fs.Bool("resume", false, "continue the sweep whose summary is in its results directory: points not ok run again")
	shardSpec := fs.String("shard", "", "run shard I/N of the points (I 0-based, or JOB_COMPLETION_INDEX/N): point i when i mod N = I")
	out := fs.String("out", "", "results directory (overrides the sweep file's out)")
	legends := legendFlag(fs)
	if err := cliflag.Parse(fs, args); err != nil {
		return err
	}
	switch {
	case *file == "" && fs.NArg() == 1:
		*file = fs.Arg(0)
	case *file == "" || fs.NArg() > 0:
		return exitcode.Errorf(exitcode.Usage, "want one sweep file (see 'genload sweep --help')")
	}
	f, err := sweep.Load(*file)
	if err != nil {
		return err
	}
	if *out != "" {
		f.Out = *out
	}
	var sh shard.Spec
	if *shardSpec != "" {
		if sh, err = shard.Parse(*shardSpec, e.getenv); err != nil {
			return exitcode.With(exitcode.Usage, err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	_, err = sweep.Run(ctx, f, sweep.Options{Stdout: e.stdout, Stderr: e.stderr, Progress: e.tty, Version: version,
		Executable: exe, Getenv: e.getenv, Resume: *resume, Shard: sh, Legends: legends})
	return err
}
