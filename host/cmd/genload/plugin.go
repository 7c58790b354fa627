package main

import (
	"context"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/cliflag"
	"github.com/genload/genload/host/plugin"
)

func cmdPlugin(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("plugin", "genload plugin check FILE.wasm|NAME [--set key=value]…",
		`Check a WebAssembly plugin against ABI v1 (sdk/ABI.md) the way a run loads it, step by step:
a wasm module built for wasip1 as a reactor; imports, version marker, exports of its kind with
their exact signatures, memory; info and init with the config; a trial call (lengths for
L = 1000 and B = 64, or a route of 8 prompts over 4 workers); edge cases; for a router that
declares "completions", a batch of finished requests and a second route; determinism across two
instances; and that an unknown config key is rejected.`,
		[][2]string{
			{"check a plugin you built", "genload plugin check build/plugins/gamma.wasm"},
			{"check it with a config", "genload plugin check ./empirical.wasm --set 'edges=[0,1000,4000]' --set 'counts=[3,1]'"},
		}, e)
	var sets cliflag.SetFlags
	fs.Var(&sets, "set", "plugin config key=value (a TOML value, else a string); repeatable")
	timeout := fs.Duration("call-timeout", plugin.DefaultCallTimeout, "deadline of each plugin call")
	if err := cliflag.Parse(fs, args); err != nil {
		return err
	}
	if *timeout <= 0 {
		return exitcode.Errorf(exitcode.Usage, "--call-timeout %v: want a positive duration", *timeout)
	}
	if fs.NArg() != 2 || fs.Arg(0) != "check" {
		return exitcode.Errorf(exitcode.Usage, "want 'genload plugin check FILE.wasm' (see 'genload plugin --help')")
	}
	cfg, err := plugin.ParseSet(sets)
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	host, err := plugin.NewHost(ctx, plugin.Options{CallTimeout: *timeout})
	if err != nil {
		return exitcode.With(exitcode.PluginRejected, err)
	}
	defer host.Close(context.Background())
	rep, err := host.Check(ctx, fs.Arg(1), cfg)
	if rep != nil {
		_ = rep.WriteText(e.stdout)
	}
	return exitcode.With(exitcode.PluginRejected, err)
}
