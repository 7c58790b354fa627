package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/plugin"
)

func cmdPlugin(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("plugin", "genload plugin check FILE.wasm [--set key=value]…",
		`Check a WebAssembly plugin against ABI v1 (sdk/ABI.md): that it is a wasm module built for
wasip1 as a reactor, has the version marker and the exports of its kind with the right
signatures, returns valid info, accepts its config, and answers a trial call (lengths for
L = 1000 and B = 8, or a route of 8 prompts over 3 workers).`,
		[][2]string{{"check a plugin you built", "genload plugin check build/plugins/gamma.wasm"}}, e)
	sets := kvList{}
	fs.Var(&sets, "set", "plugin config key=value for the trial (JSON values); repeatable")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 || fs.Arg(0) != "check" {
		return exitcode.Errorf(exitcode.Usage, "want 'genload plugin check FILE.wasm' (see 'genload plugin --help')")
	}
	path := fs.Arg(1)
	host, err := plugin.NewHost(ctx, plugin.Options{})
	if err != nil {
		return exitcode.With(exitcode.PluginRejected, err)
	}
	defer host.Close(context.Background())
	// Try the lengths kind first; a router is reported by the host as the wrong kind.
	lp, lerr := host.LoadLengths(ctx, path, sets)
	if lerr == nil {
		ls, err := lp.Lengths(ctx, 8, 1000, 1, 1<<31-1)
		if err != nil {
			return exitcode.With(exitcode.PluginRejected, err)
		}
		printInfo(e, lp.Info())
		fmt.Fprintf(e.stdout, "trial lengths(B=8, L=1000): %s\nok\n", joinInts(ls))
		return nil
	}
	rp, rerr := host.LoadRouter(ctx, path, sets)
	if rerr == nil {
		ws, err := rp.Route(ctx, []int{100, 200, 300, 400, 500, 600, 700, 800}, 3)
		if err != nil {
			return exitcode.With(exitcode.PluginRejected, err)
		}
		printInfo(e, rp.Info())
		fmt.Fprintf(e.stdout, "trial route(8 prompts, 3 workers): %s\nok\n", joinInts(ws))
		return nil
	}
	// Report the error of the kind the plugin claims to be (the other says "wrong kind").
	if strings.Contains(lerr.Error(), "kind") && !strings.Contains(rerr.Error(), "kind") {
		return exitcode.With(exitcode.PluginRejected, rerr)
	}
	return exitcode.With(exitcode.PluginRejected, lerr)
}

func printInfo(e *env, i plugin.Info) {
	fmt.Fprintf(e.stdout, "plugin %s %s: kind %s, ABI v1.%d, capabilities [%s]\nfile %s\nsha256 %s\n",
		i.Name, i.Version, i.Kind, i.ABIMinor, strings.Join(i.Caps, ", "), i.Path, i.SHA256)
}
