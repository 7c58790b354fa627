package main

import (
	"context"
	"io"

	"github.com/genload/genload/host/perf"
)

// binaryGroup runs the rows of the genload binary itself.
func binaryGroup(ctx context.Context, r *perf.Runner, o options, w io.Writer) ([]string, error) {
	return nil, nil
}
