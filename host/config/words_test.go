package config

import "testing"

// Type errors are said in TOML's words with file:line and the key — what the key must hold
// and what the file gives — not in Go's ("destination has type slice"); an unknown key gets
// the known key it was probably meant to be.
func TestMistakesInTOMLsWords(t *testing.T) {
	cases := []struct{ toml, want string }{
		{"max_tokens = [1]\n", "bench.toml:1: [max_tokens] must be an integer, not an array ([1])"},
		{"max_tokens = \"8\"\n", `bench.toml:1: [max_tokens] must be an integer, not a string ("8")`},
		{"max_tokens = 1.5\n", "bench.toml:1: [max_tokens] must be an integer, not a float (1.5)"},
		{"seed = 1e3\n", "bench.toml:1: [seed] must be a non-negative integer, not a float (1000)"},
		{"temperature = \"hot\"\n", `bench.toml:1: [temperature] must be a number, not a string ("hot")`},
		{"continuous_usage = \"yes\"\n", `bench.toml:1: [continuous_usage] must be a boolean (true or false), not a string ("yes")`},
		{"[matrix]\nseq_lens = 300\n", "bench.toml:2: [matrix.seq_lens] must be an array of integers, not an integer (300); write [300]"},
		{"[matrix]\nseq_lens = [1, \"a\"]\n", `bench.toml:2: [matrix.seq_lens] must be an array of integers; element 2 is a string ("a")`},
		{"[matrix]\npairs = [1]\n", "bench.toml:2: [matrix.pairs] must be an array of arrays of integers; element 1 is an integer (1)"},
		{"matrix = 3\n", "bench.toml:1: [matrix] must be a table, not an integer (3)"},
		{"[[workers]]\nname = \"a\"\nurl = \"http://x\"\n[[workers]]\nname = 3\n", "bench.toml:5: [workers.name] must be a string, not an integer (3)"},
		{"max_tokns = 5\n", "bench.toml:1: unknown key [max_tokns]; did you mean [max_tokens]?"},
		{"seq_lens = [1]\n", "bench.toml:1: unknown key [seq_lens]; did you mean [matrix.seq_lens]?"},
		{"[matrix]\nbatch = [1]\n", "bench.toml:2: unknown key [matrix.batch]; did you mean [matrix.batch_sizes]?"},
		{"[lengths]\nplugn = \"gamma\"\n", "bench.toml:2: unknown key [lengths.plugn]; did you mean [lengths.plugin]?"},
		{"[timeouts]\nfrist_token = \"1s\"\n", "bench.toml:2: unknown key [timeouts.frist_token]; did you mean [timeouts.first_token]?"},
		{"zzz = 1\n", "bench.toml:1: unknown key [zzz]"},
		{"max_tokens = 20\nmax_tokens = 30\n", "bench.toml:2: key [max_tokens] is given twice (first on line 1): give each key once; a table's keys go under one [table] header"},
		{"seed = 1\n[matrix]\nseq_lens = [100]\nseq_lens = [200]\n", "bench.toml:4: key [matrix.seq_lens] is given twice (first on line 3): give each key once; a table's keys go under one [table] header"},
		{"[matrix]\nseq_lens = [100]\n\n[matrix]\nbatch_sizes = [1]\n", "bench.toml:4: table [matrix] is given twice (first on line 1): give each key once; a table's keys go under one [table] header"},
		{"x = {a = 1, a = 2}\n", "bench.toml:1: key [x.a] is given twice: give each key once; a table's keys go under one [table] header"},
	}
	for _, c := range cases {
		_, err := Parse("bench.toml", []byte(c.toml))
		if err == nil || err.Error() != c.want {
			t.Errorf("%q:\n got %v\nwant %s", c.toml, err, c.want)
		}
	}
}

func TestWhereIsTheSameEveryTime(t *testing.T) {
	c := Default()
	c.Override("matrix.seq_lens", "--seq-lens")
	c.Override("matrix.batch_sizes", "--batch-sizes")
	for range 20 {
		if got := c.Where("matrix"); got != "flag --batch-sizes" {
			t.Fatalf("Where(matrix) = %q, want the first flag inside it, sorted", got)
		}
		if got := c.Where("matrix.seq_lens"); got != "flag --seq-lens" {
			t.Fatalf("Where(matrix.seq_lens) = %q", got)
		}
	}
}
