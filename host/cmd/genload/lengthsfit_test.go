package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/genload/genload/host/exitcode"
)

// lengths fit on a CSV log with two deployments: one section per group with its own k, the
// bench.toml settings, and a quantile table per group beside -o's file; bad logs exit 3 with
// the file and line.
func TestLengthsFitCommand(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("deployment,prompt_tokens,completion_tokens\n")
	src := rand.New(rand.NewPCG(1, 2))
	for _, g := range []struct {
		name string
		k    float64
	}{{"h100", 0.6}, {"a100", 4}} {
		d := distuv.Gamma{Alpha: g.k, Beta: g.k / 3000, Src: src}
		for range 3000 {
			fmt.Fprintf(&b, "%s,%d,%d\n", g.name, int(d.Rand())+1, 1+src.IntN(500))
		}
	}
	log := filepath.Join(dir, "requests.csv")
	if err := os.WriteFile(log, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	table := filepath.Join(dir, "lengths.toml")
	code, out, errs := cli(t, context.Background(), "lengths", "fit", "--input", "prompt_tokens", "--output", "completion_tokens",
		"--group", "deployment", "-o", table, log)
	if code != exitcode.OK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"## all 6000 requests", `## group "a100" (3000 requests)`, `## group "h100" (3000 requests)`,
		"prompt lengths (prompt_tokens): n 3000", "output lengths (completion_tokens)", "| gamma | k = ", `plugin = "gamma"`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The group k are near their own: a100's section then h100's, each with its gamma row.
	a := out[strings.Index(out, `group "a100"`):strings.Index(out, `group "h100"`)]
	h := out[strings.Index(out, `group "h100"`):]
	if !strings.Contains(a, "| gamma | k = 3.9") && !strings.Contains(a, "| gamma | k = 4.0") && !strings.Contains(a, "| gamma | k = 4.1") {
		t.Errorf("a100 (k = 4) section:\n%s", a)
	}
	if !strings.Contains(h, "| gamma | k = 0.5") && !strings.Contains(h, "| gamma | k = 0.6") {
		t.Errorf("h100 (k = 0.6) section:\n%s", h)
	}
	for _, p := range []string{table, filepath.Join(dir, "lengths.a100.toml"), filepath.Join(dir, "lengths.h100.toml")} {
		body, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(body), "edges = [") || !strings.Contains(string(body), `plugin = "empirical"`) {
			t.Errorf("%s: %v\n%s", p, err, body)
		}
	}

	for _, c := range []struct{ name, body, want string }{
		{"empty.jsonl", "", "no requests"},
		{"words.csv", "input_length\n12\nmany\n", `words.csv:3: column "input_length": want an integer number of tokens, got "many"`},
		{"neg.jsonl", `{"input_length": 5}` + "\n" + `{"input_length": -5}`, `neg.jsonl:2: field "input_length": negative length -5 tokens`},
		{"same.jsonl", strings.Repeat(`{"input_length": 64}`+"\n", 5), "every length is the same: all 5 are 64 tokens"},
	} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errs := cli(t, context.Background(), "lengths", "fit", p)
		if code != exitcode.InvalidConfig || !strings.Contains(errs, c.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("%s: exit %d, stderr %q; want 3 and one line with %q", c.name, code, errs, c.want)
		}
	}
}
