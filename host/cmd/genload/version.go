package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/genload/genload/host/internal/cliflag"
	"github.com/genload/genload/host/plugin"
)

func cmdVersion(_ context.Context, args []string, e *env) error {
	fs := newFlagSet("version", "genload version (or genload --version)",
		"Print genload's version, the Go toolchain it was built with, and the plugins built into it with the first 8 bytes of their SHA-256.", nil, e)
	if err := cliflag.Parse(fs, args); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "genload %s (%s, %s/%s)\n%s\n", fullVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH, builtinLine())
	return nil
}

// fullVersion is the version the Makefile sets, or, for a go build or go install (version
// "dev"), "dev" with the commit Go recorded from the checkout: "dev+048383a9c1d2" (and
// "-dirty" for uncommitted changes).
func fullVersion() string {
	if version != "dev" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return version
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "-dirty"
		}
	}
	if rev == "" {
		return version
	}
	return fmt.Sprintf("dev+%.12s%s", rev, dirty)
}

// builtinLine says which plugins are built into this binary: "plugins built in: gamma
// 7916af9b7fba1047, …", or that there are none and how to build them in.
func builtinLine() string {
	bs := plugin.Builtins()
	if len(bs) == 0 {
		return "plugins built in: none (compiled without `make plugins`: build with `make build`, or name .wasm files)"
	}
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = fmt.Sprintf("%s %.16s", b.Name, b.SHA256)
	}
	return "plugins built in: " + strings.Join(parts, ", ")
}
