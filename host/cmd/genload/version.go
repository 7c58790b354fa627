package main

import (
	"context"
	"fmt"
	"runtime"
)

func cmdVersion(_ context.Context, args []string, e *env) error {
	fs := newFlagSet("version", "genload version", "Print genload's version and the Go toolchain it was built with.", nil, e)
	if err := parse(fs, args); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "genload %s (%s, %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
