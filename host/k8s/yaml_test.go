package k8s

import (
	"strings"
	"testing"
)

func TestYAMLScalarsAndBlocks(t *testing.T) {
	cases := []struct {
		name string
		v    []kv
		want string
	}{
		{"quoted string and int", m("a", "x: y", "n", 3), "a: \"x: y\"\nn: 3\n"},
		// One trailing newline: "|"; none: "|-"; two: "|+".
		{"literal clip", m("s", "a\nb\n"), "s: |\n  a\n  b\n"},
		{"literal strip", m("s", "a\nb"), "s: |-\n  a\n  b\n"},
		{"literal keep", m("s", "a\n\nb\n\n"), "s: |+\n  a\n\n  b\n\n"},
		// A first line that starts with a space would set the block's indentation: quoted.
		{"leading space", m("s", " a\nb\n"), "s: \" a\\nb\\n\"\n"},
		{"list of maps", m("l", []any{m("k", "v", "j", true), "s"}), "l:\n  - k: \"v\"\n    j: true\n  - \"s\"\n"},
		{"empty", m("e", []any{}, "f", m()), "e: []\nf: {}\n"},
	}
	for _, c := range cases {
		var b strings.Builder
		emit(&b, c.v, 0)
		if b.String() != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, b.String(), c.want)
		}
	}
}

func TestShardFileIsWhatRunWrites(t *testing.T) {
	// genload run --shard 2/4 --run-id nightly writes nightly-shard-2-of-4.jsonl.
	j := Job{Name: "nightly", Shards: 4}
	if got := j.ShardFile(2); got != "/results/nightly/nightly-shard-2-of-4.jsonl" {
		t.Fatal(got)
	}
}

// The run flags a Job refuses, each with its true reason, in any of the flag package's
// spellings; the repeat flags are taken: a shard's repeats stay in its one results file,
// whose every record the merge Job keeps.
func TestRefusedRunFlagsSayWhy(t *testing.T) {
	base := Job{Name: "nightly", Image: "i", Shards: 4, PVC: "p"}
	sets := "the Job sets it itself (each pod's shard, run id, results directory and bench.toml; a retried pod resumes its shard)"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--shard", "1/2"}, "run flag --shard: " + sets},
		{[]string{"--out=/tmp"}, "run flag --out: " + sets},
		{[]string{"-c", "b.toml"}, "run flag -c: " + sets},
	} {
		j := base
		j.RunArgs = tc.args
		if err := j.Check(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: %v\nwant %q", tc.args, err, tc.want)
		}
	}
	for _, args := range [][]string{{"--target", "http://vllm:8000", "--model", "repeat", "--until-cv", "3"}, {"--repeat", "3"}, {"--repeat=3"}, {"-repeat", "3"}} {
		j := base
		j.RunArgs = args
		if err := j.Check(); err != nil {
			t.Errorf("%q refused: %v", j.RunArgs, err)
		}
	}
}
