package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/report"
)

// errHelp reports that --help was shown (exit 0).
var errHelp = errors.New("help shown")

// newFlagSet returns a flag set whose usage prints the synopsis, description, flags and
// examples (comment + command pairs).
func newFlagSet(name, synopsis, description string, examples [][2]string, e *env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		w := e.stdout
		fmt.Fprintf(w, "Usage: %s\n\n%s\n", synopsis, description)
		var b strings.Builder
		fs.SetOutput(&b)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		if b.Len() > 0 {
			fmt.Fprintf(w, "\nFlags:\n%s", b.String())
		}
		if len(examples) > 0 {
			fmt.Fprintf(w, "\nExamples:\n")
			for _, ex := range examples {
				fmt.Fprintf(w, "  # %s\n  %s\n\n", ex[0], ex[1])
			}
		}
	}
	return fs
}

// parse parses args with flags and positional arguments in any order (flag.Parse alone stops
// at the first positional, so "genload plugin check x.wasm --set k=1" would lose --set); "--"
// ends the flags. Afterwards fs.Args() holds the positional arguments in order. --help prints
// the usage (the flag package does) and returns errHelp; a bad flag is a Usage error.
func parse(fs *flag.FlagSet, args []string) error {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return errHelp
			}
			return exitcode.Errorf(exitcode.Usage, "%v (see 'genload %s --help')", err, fs.Name())
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	// Leave the positionals in fs.Args(); flags already parsed keep their values.
	return fs.Parse(append([]string{"--"}, pos...))
}

// intList is a comma-separated list of positive integers flag.
type intList []int

func (l *intList) String() string { return fmt.Sprint([]int(*l)) }

func (l *intList) Set(s string) error {
	*l = (*l)[:0]
	for _, f := range strings.Split(s, ",") {
		var n int
		if _, err := fmt.Sscanf(strings.TrimSpace(f), "%d", &n); err != nil || n < 1 {
			return fmt.Errorf("%q is not a positive integer", f)
		}
		*l = append(*l, n)
	}
	return nil
}

// setFlags collects repeated --set key=value flags (parsed by plugin.ParseSet).
type setFlags []string

func (s *setFlags) String() string { return strings.Join(*s, " ") }

func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

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
