package main

import (
	"flag"

	"github.com/genload/genload/host/internal/cliflag"
	"github.com/genload/genload/host/report"
)

// newFlagSet is [cliflag.NewFlagSet] with its usage printed to the command's stdout.
func newFlagSet(name, synopsis, description string, examples [][2]string, e *env) *flag.FlagSet {
	return cliflag.NewFlagSet(name, synopsis, description, examples, e.stdout)
}

// wideFlag adds --wide to fs: the result table with every column and one line per warning,
// instead of the default table (the columns a latency model needs, within 120 characters,
// warnings grouped by kind).
func wideFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("wide", false, "print every column of the result table and one line per warning (default: the figures a latency model needs, within 120 characters, warnings grouped by kind)")
}

// legendFlag adds --no-legend to fs and returns the command's one report.Legends: the
// legend of the table's columns is printed once per command (under its first table; a later
// table adds only a column whose meaning differs in its run), and not at all with the flag.
func legendFlag(fs *flag.FlagSet) *report.Legends {
	ls := &report.Legends{}
	fs.BoolVar(&ls.Off, "no-legend", false, "leave out the legend of the table's columns (printed once per command, under the first table)")
	return ls
}
