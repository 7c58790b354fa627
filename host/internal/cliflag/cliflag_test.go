package cliflag

import (
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/exitcode"
)

// Flags and positionals go in any order, "--" ends the flags, and each error names the flag
// as genload writes it.
func TestParse(t *testing.T) {
	newFS := func() (*flag.FlagSet, *IntList, *SetFlags, *time.Duration, *strings.Builder) {
		var help strings.Builder
		fs := NewFlagSet("cmd", "genload cmd [flags] FILE…", "Does a thing.", [][2]string{{"one file", "genload cmd a.json"}}, &help)
		var l IntList
		var s SetFlags
		fs.Var(&l, "batch-sizes", "batch sizes")
		fs.Var(&s, "set", "key=value; repeatable")
		d := fs.Duration("timeout", time.Second, "deadline")
		fs.Int("max-tokens", 8, "tokens")
		fs.Int("max-cv", 0, "CV")
		return fs, &l, &s, d, &help
	}
	fs, l, s, d, _ := newFS()
	if err := Parse(fs, []string{"a.json", "--batch-sizes", " 1, 8 ,64", "b.json", "--set", "k=1", "--set=x=2", "--", "--timeout", "c"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fs.Args(), []string{"a.json", "b.json", "--timeout", "c"}) || !slices.Equal(*l, IntList{1, 8, 64}) ||
		!slices.Equal(*s, SetFlags{"k=1", "x=2"}) || *d != time.Second {
		t.Errorf("args %q, batch sizes %v, sets %v, timeout %v", fs.Args(), *l, *s, *d)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--batch-sizes", "8abc"}, `--batch-sizes "8abc": "8abc" is not a positive integer: want positive integers separated by commas, such as 1,8,64`},
		{[]string{"--batch-sizes", "2.5"}, `"2.5" is not a positive integer`},
		{[]string{"--batch-sizes", "1,,2"}, "entry 2 is empty"},
		{[]string{"--batch-sizes", "4,4"}, "4 is given twice: give each value once"},
		{[]string{"--batch-sizes", "1,2", "--batch-sizes", "3,1"}, "given a second time, after 1,2: give one comma-separated list, such as 1,2,3"},
		{[]string{"--timeout", "soon"}, `--timeout "soon": not a valid duration, such as 2s or 500ms`},
		{[]string{"--max-tokens", "x"}, `--max-tokens "x": not a valid whole number`},
		{[]string{"--max-token", "3"}, "unknown flag --max-token (did you mean --max-tokens?)"},
		{[]string{"--max=3"}, "unknown flag --max (did you mean one of --max-cv, --max-tokens?)"},
		{[]string{"--timeout"}, "--timeout: wants a value"},
	} {
		fs, _, _, _, _ := newFS()
		err := Parse(fs, tc.args)
		if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), tc.want) || !strings.HasSuffix(err.Error(), "(see 'genload cmd --help')") {
			t.Errorf("%q: %v (exit %d), want a usage error with %q", tc.args, err, exitcode.Of(err), tc.want)
		}
	}
	fs, _, _, _, help := newFS()
	if err := Parse(fs, []string{"x", "--help"}); !errors.Is(err, ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	if h := help.String(); !strings.HasPrefix(h, "Usage: genload cmd [flags] FILE…\n\nDoes a thing.\n\nFlags:\n") ||
		!strings.Contains(h, "-max-tokens int") || !strings.HasSuffix(h, "Examples:\n  # one file\n  genload cmd a.json\n\n") {
		t.Errorf("usage:\n%s", h)
	}
}

// A command one or two edits away is suggested when the edits are few for its length; else
// the names it begins (at most three).
func TestSuggest(t *testing.T) {
	names := []string{"run", "report", "replay", "fit", "gate", "batch-sizes", "mean-increase"}
	for _, tc := range []struct {
		name  string
		short bool
		want  []string
	}{
		{"rn", true, []string{"run"}},    // 1 edit < 2 characters
		{"rn", false, nil},               // 2·1 edits is not under 2 characters
		{"gaet", false, nil},             // 2 edits (a swap) are not under half of 4 characters
		{"gaet", true, []string{"gate"}}, // but under 4
		{"batch", false, []string{"batch-sizes"}},
		{"re", false, nil}, // under 3 characters: no prefix match
		{"rep", false, []string{"replay", "report"}},
	} {
		got := Suggest(tc.name, names, tc.short)
		if !slices.Equal(got, tc.want) {
			t.Errorf("Suggest(%q, short %v) = %q, want %q", tc.name, tc.short, got, tc.want)
		}
	}
	if got := DidYouMean([]string{"a", "b"}, "--"); got != " (did you mean one of --a, --b?)" {
		t.Errorf("DidYouMean: %q", got)
	}
}

// A flag set told what an unknown name meant says that instead of the nearest name, for its
// next parse only.
func TestMeant(t *testing.T) {
	fs := NewFlagSet("cmd", "genload cmd", "", nil, &strings.Builder{})
	fs.String("output", "", "a field")
	fs.String("o", "", "a file")
	Meant(fs, "out", "the file is -o FILE")
	err := Parse(fs, []string{"--out", "x"})
	if err == nil || !strings.HasPrefix(err.Error(), "unknown flag --out: the file is -o FILE") {
		t.Errorf("with the hint: %v", err)
	}
	if err := Parse(fs, []string{"--out", "x"}); err == nil || !strings.Contains(err.Error(), "did you mean --output?") {
		t.Errorf("the next parse, without it: %v", err)
	}
}
