package main

import (
	"context"
	"testing"

	"github.com/genload/genload/host/exitcode"
)

// A mistyped command or flag gets the nearest name: a command within fewer edits than its
// letters (rn), a flag within 2 edits and fewer than half its letters (--seq-len), or the
// names a cut-short one begins (--batch, --mean-incr; several when it begins up to three).
func TestDidYouMeanForCommandsAndFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"rn"}, `genload: unknown command "rn" (did you mean genload run?) ('genload --help' lists the commands)`},
		{[]string{"reprot", "x.json"}, `genload: unknown command "reprot" (did you mean genload report?) ('genload --help' lists the commands)`},
		{[]string{"xyz"}, `genload: unknown command "xyz" ('genload --help' lists the commands)`},
		{[]string{"run", "--batch", "2"}, "genload run: unknown flag --batch (did you mean --batch-sizes?) (see 'genload run --help')"},
		{[]string{"gate", "--mean-incr", "3", "a.json", "b.json"}, "genload gate: unknown flag --mean-incr (did you mean --mean-increase?) (see 'genload gate --help')"},
		{[]string{"run", "--seq-len", "3"}, "genload run: unknown flag --seq-len (did you mean --seq-lens?) (see 'genload run --help')"},
		{[]string{"run", "--max", "3"}, "genload run: unknown flag --max (did you mean one of --max-cv, --max-repeats, --max-tokens?) (see 'genload run --help')"},
		{[]string{"run", "--zzz", "3"}, "genload run: unknown flag --zzz (see 'genload run --help')"},
	} {
		code, stdout, stderr := cli(t, context.Background(), tc.args...)
		if code != exitcode.Usage || stderr != tc.want+"\n" || stdout != "" {
			t.Errorf("%q: exit %d\nstderr %q\nwant   %q\nstdout %q", tc.args, code, stderr, tc.want+"\n", stdout)
		}
	}
}
