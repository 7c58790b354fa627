package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/cliflag"
	"github.com/genload/genload/host/plugin"
	"github.com/genload/genload/sdk/abi"
)

func cmdLengths(ctx context.Context, args []string, e *env) error {
	if len(args) > 0 && args[0] == "fit" {
		return cmdLengthsFit(ctx, args[1:], e)
	}
	fs := newFlagSet("lengths", "genload lengths [-c FILE.toml] [--plugin NAME|FILE.wasm] --mean L --batch B [--set key=value]…",
		`Print the prompt lengths (tokens) a length plugin gives for one cell of target mean L and batch
size B, their mean, p50, p90 and max, and a small text histogram, so a plugin author sees the
shape before a run. Lengths are bounded by [--min, --max] as a run bounds them. -c reads the
plugin and its config from the [lengths] table of a bench.toml, or of the table file
'genload lengths fit -o' writes (a plugin path is relative to that file's folder; [plugins]
dir and call_timeout are read too); --plugin, --set, --min and --call-timeout override it.
'genload lengths fit TRACE…' fits distributions to the prompt lengths of request logs.`,
		[][2]string{
			{"the default gamma (k = 0.9) for L = 4000, B = 64", "genload lengths --plugin gamma --mean 4000 --batch 64"},
			{"a flatter gamma", "genload lengths --plugin gamma --mean 4000 --batch 64 --set k=4"},
			{"the table lengths fit -o wrote (empirical.wasm built beside it)", "genload lengths -c lengths.toml --mean 4000 --batch 64"},
			{"your own plugin", "genload lengths --plugin ./empirical.wasm --mean 2000 --batch 32 --set 'edges=[0,1000,4000]' --set 'counts=[3,1]'"},
		}, e)
	cfgPath := fs.String("c", "", "read [lengths] (plugin, config, min_len) and [plugins] from this bench.toml or lengths-fit table")
	name := fs.String("plugin", "gamma", "length plugin name or .wasm path")
	mean := fs.Int("mean", 4000, "target mean length L in tokens")
	batch := fs.Int("batch", 64, "batch size B (number of lengths)")
	lo := fs.Int("min", 1, "smallest length in tokens")
	hi := fs.Int("max", math.MaxInt32, "largest length in tokens")
	seed := fs.Uint64("seed", 42, "run seed")
	timeout := fs.Duration("call-timeout", plugin.DefaultCallTimeout, "deadline of each plugin call")
	var sets cliflag.SetFlags
	fs.Var(&sets, "set", "plugin config key=value (a TOML value, else a string); repeatable")
	if err := cliflag.Parse(fs, args); err != nil {
		return err
	}
	switch {
	case *mean < 1 || *mean > math.MaxInt32:
		return exitcode.Errorf(exitcode.Usage, "--mean %d: want a mean length of 1 … %d tokens", *mean, math.MaxInt32)
	case *batch < 0 || *batch > abi.MaxBatch:
		return exitcode.Errorf(exitcode.Usage, "--batch %d: want a batch size of 0 … %d", *batch, abi.MaxBatch)
	case *lo < 1 || *hi > math.MaxInt32 || *lo > *hi:
		return exitcode.Errorf(exitcode.Usage, "--min %d --max %d: want 1 ≤ min ≤ max ≤ %d tokens", *lo, *hi, math.MaxInt32)
	case *timeout <= 0:
		return exitcode.Errorf(exitcode.Usage, "--call-timeout %v: want a positive duration", *timeout)
	}
	cfg, err := plugin.ParseSet(sets)
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	lp := lengthsPlugin{name: *name, config: cfg, min: *lo, timeout: *timeout}
	if *cfgPath != "" {
		if err := lp.fromFile(fs, *cfgPath); err != nil {
			return err
		}
	}
	if len(lp.config) == 0 && lp.name == "gamma" {
		lp.config = map[string]any{"k": 0.9}
	}
	host, err := plugin.NewHost(ctx, plugin.Options{Seed: *seed, CallTimeout: lp.timeout, Dir: lp.dir})
	if err != nil {
		return exitcode.With(exitcode.PluginRejected, err)
	}
	defer host.Close(context.Background())
	p, err := host.LoadLengths(ctx, lp.name, lp.config)
	if ce, ok := plugin.AsConfigError(err, "lengths.config", lp.config); ok {
		return exitcode.With(exitcode.PluginRejected, fmt.Errorf("flag --set: %w", ce))
	}
	if err != nil {
		if _, serr := os.Stat(lp.name); *cfgPath != "" && strings.HasSuffix(lp.name, ".wasm") && serr != nil {
			err = fmt.Errorf("%w (the [lengths] plugin of %s: build it there, as the file's comment says)", err, *cfgPath)
		}
		return exitcode.With(exitcode.PluginRejected, err)
	}
	ls, err := p.Lengths(ctx, *batch, *mean, lp.min, *hi)
	if err != nil {
		return exitcode.With(exitcode.PluginRejected, err)
	}
	info := p.Info()
	fmt.Fprintf(e.stdout, "plugin %s %s (%s), L = %d, B = %d\n", info.Name, info.Version, info.Path, *mean, *batch)
	return plugin.WriteLengths(e.stdout, ls, 10)
}

// lengthsPlugin is the length plugin genload lengths calls: its name or path, its config,
// the smallest length (tokens), the deadline of each call and the plugins' folder.
type lengthsPlugin struct {
	name    string
	config  map[string]any
	min     int
	timeout time.Duration
	dir     string
}

// fromFile reads [lengths] and [plugins] of the bench.toml or lengths-fit table at path over
// what the flags of fs did not set (--plugin, --set, --min, --call-timeout win). Errors are
// config.Load's (InvalidConfig, naming file:line).
func (lp *lengthsPlugin) fromFile(fs *flag.FlagSet, path string) error {
	file, err := config.Load(path)
	if err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !given["plugin"] {
		lp.name = file.Lengths.Plugin
	}
	if !given["set"] {
		lp.config = file.Lengths.Config
	}
	if !given["min"] && file.Lengths.MinLen > 0 {
		lp.min = file.Lengths.MinLen
	}
	if !given["call-timeout"] && file.Plugins.CallTimeout.Duration > 0 {
		lp.timeout = file.Plugins.CallTimeout.Duration
	}
	lp.dir = file.Plugins.Dir
	return nil
}
