// Package cliflag holds the flag handling every genload sub-command shares: a flag set whose
// --help prints a synopsis, description, flags and examples; parsing with flags and
// positional arguments in any order; errors that name the flag (--name) with a did-you-mean
// for an unknown one; and the list flags (strict comma-separated integers, repeated --set).
package cliflag

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agnivade/levenshtein"

	"github.com/genload/genload/host/exitcode"
)

// ErrHelp is returned by Parse when --help was asked for and shown: the command ends with
// exit 0.
var ErrHelp = errors.New("help shown")

// NewFlagSet returns a flag set whose usage (--help) prints to stdout the synopsis,
// description, flags and examples (comment + command pairs).
func NewFlagSet(name, synopsis, description string, examples [][2]string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		w := stdout
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

// Parse parses args with flags and positional arguments in any order (flag.Parse alone stops
// at the first positional, so "genload plugin check x.wasm --set k=1" would lose --set); "--"
// ends the flags. Afterwards fs.Args() holds the positional arguments in order. --help prints
// the usage and returns ErrHelp; a bad flag is a Usage error of one line that names the flag
// (flagError), without the usage after it.
func Parse(fs *flag.FlagSet, args []string) error {
	usage := fs.Usage
	fs.Usage = func() {} // the flag package calls it on every error, not only for --help
	defer func() { fs.Usage = usage }()
	defer meant.Delete(fs) // the hints are for this parse
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				usage()
				return ErrHelp
			}
			return exitcode.Errorf(exitcode.Usage, "%s (see 'genload %s --help')", flagError(fs, err), fs.Name())
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

// meant holds, per flag set, what an unknown flag name most likely meant (Meant).
var meant sync.Map // *flag.FlagSet → map[string]string

// Meant tells the next Parse of fs, in its error for the unknown flag --name, what it most
// likely meant, in place of the nearest-name suggestion: a flag other commands take (run's --out) that is
// another one here (lengths fit's -o), whose nearest name (--output) is something else.
func Meant(fs *flag.FlagSet, name, hint string) {
	m, _ := meant.LoadOrStore(fs, map[string]string{})
	m.(map[string]string)[name] = hint
}

var (
	badValueRe = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-([^:]+): (.*)$`)
	unknownRe  = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	noValueRe  = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
)

// flagError rewords the flag package's errors, naming the flag as genload writes it (--name):
// `--batch-sizes "8abc": "8abc" is not a positive integer: …`, `--seed "x": not a valid
// value`, `unknown flag --max-token (did you mean --max-tokens?)`, `--seed: wants a value`.
func flagError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if m := badValueRe.FindStringSubmatch(msg); m != nil {
		why := m[3]
		if why == "parse error" || strings.HasPrefix(why, "strconv.") {
			why = "not a valid value"
			if f := fs.Lookup(m[2]); f != nil {
				why = "not a valid " + valueKind(f)
			}
		}
		return fmt.Sprintf("--%s %q: %s", m[2], m[1], why)
	}
	if m := unknownRe.FindStringSubmatch(msg); m != nil {
		name, _, _ := strings.Cut(m[1], "=")
		if hs, ok := meant.Load(fs); ok {
			if h, ok := hs.(map[string]string)[name]; ok {
				return "unknown flag --" + name + ": " + h
			}
		}
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		return "unknown flag --" + name + DidYouMean(Suggest(name, names, false), "--")
	}
	if m := noValueRe.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("--%s: wants a value", m[1])
	}
	return msg
}

// Suggest returns the names an unknown one was probably meant to be, from names: the nearest
// within 2 edits and fewer than half its characters (--max-token → --max-tokens); for a
// command (short: true) fewer edits than its characters (rn → run); else the names it begins,
// when it has 3 characters or more and begins at most 3 (--batch → --batch-sizes,
// --mean-incr → --mean-increase, --max → --max-cv, --max-repeats, --max-tokens). nil when none.
func Suggest(name string, names []string, short bool) []string {
	best, bestD := "", 3
	for _, n := range names {
		d := levenshtein.ComputeDistance(name, n)
		if d < bestD && (2*d < len([]rune(name)) || short && d < len([]rune(name))) {
			best, bestD = n, d
		}
	}
	if best != "" {
		return []string{best}
	}
	var longer []string
	for _, n := range names {
		if len([]rune(name)) >= 3 && strings.HasPrefix(n, name) {
			longer = append(longer, n)
		}
	}
	if len(longer) > 3 {
		return nil
	}
	slices.Sort(longer)
	return longer
}

// DidYouMean words suggestions, each with prefix: " (did you mean --a?)", " (did you mean one
// of --a, --b?)"; "" for none.
func DidYouMean(names []string, prefix string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return " (did you mean " + prefix + names[0] + "?)"
	}
	return " (did you mean one of " + prefix + strings.Join(names, ", "+prefix) + "?)"
}

// valueKind names what a flag takes, from its default's type: "number", "whole number",
// "true or false", "duration".
func valueKind(f *flag.Flag) string {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return "value"
	}
	switch g.Get().(type) {
	case float64:
		return "number"
	case int, int64, uint, uint64:
		return "whole number"
	case bool:
		return "value: want true or false"
	case time.Duration:
		return "duration, such as 2s or 500ms"
	}
	return "value"
}

// IntList is a comma-separated list of positive integers flag (--seq-lens 1000,4000): each
// entry is a whole decimal number ≥ 1, with spaces around it allowed — "8abc", "2.5" and an
// empty entry are errors, not 8, 2 and a skipped one. The flag is given once, each value once:
// a second --seq-lens and a value given twice are errors, not the last list kept and a
// value dropped in silence.
type IntList []int

func (l *IntList) String() string { return fmt.Sprint([]int(*l)) }

func (l *IntList) Set(s string) error {
	if len(*l) > 0 {
		prev := make([]string, len(*l))
		for i, n := range *l {
			prev[i] = strconv.Itoa(n)
		}
		all := slices.Clone(prev)
		for _, f := range strings.Split(s, ",") {
			if f = strings.TrimSpace(f); f != "" && !slices.Contains(all, f) {
				all = append(all, f)
			}
		}
		return fmt.Errorf("given a second time, after %s: give one comma-separated list, such as %s", strings.Join(prev, ","), strings.Join(all, ","))
	}
	var out []int
	for i, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		switch {
		case f == "":
			return fmt.Errorf("entry %d is empty: want positive integers separated by commas, such as 1,8,64", i+1)
		case err != nil || n < 1:
			return fmt.Errorf("%q is not a positive integer: want positive integers separated by commas, such as 1,8,64", f)
		case slices.Contains(out, n):
			return fmt.Errorf("%d is given twice: give each value once", n)
		}
		out = append(out, n)
	}
	*l = out
	return nil
}

// SetFlags collects repeated --set key=value flags (parsed by plugin.ParseSet).
type SetFlags []string

func (s *SetFlags) String() string { return strings.Join(*s, " ") }

func (s *SetFlags) Set(v string) error { *s = append(*s, v); return nil }
