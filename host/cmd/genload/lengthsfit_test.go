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
	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/host/internal/textcheck"
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
	if wide := textcheck.Wider(out, 120); len(wide) > 0 {
		t.Errorf("lines over 120 columns:\n%s", strings.Join(wide, "\n"))
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
		if err != nil || !strings.Contains(string(body), "edges = [") || !strings.Contains(string(body), `plugin = "empirical.wasm"`) {
			t.Errorf("%s: %v\n%s", p, err, body)
		}
	}

	for _, c := range []struct{ name, body, want string }{
		{"empty.jsonl", "", "no requests"},
		{"words.csv", "input_length\n12\nmany\n", `words.csv:3: column "input_length": want an integer number of tokens, got "many"`},
		{"neg.jsonl", `{"input_length": 5}` + "\n" + `{"input_length": -5}`, `neg.jsonl:2: field "input_length": negative length -5 tokens`},
		{"same.jsonl", strings.Repeat(`{"input_length": 64}`+"\n", 5), "same.jsonl:1-5: prompt lengths (input_length): every length is the same: all 5 are 64 tokens"},
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

// A records file (what replay writes) is a log lengths fit reads by its header; a table file
// that exists is not replaced without --force (exit 3, naming it).
func TestLengthsFitReadsRecordsAndKeepsTables(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString(`{"type":"header","schema":"genload.records/v1","source":"replay","id":"r1","started":"2026-12-01T10:00:00Z","target":"http://x"}` + "\n")
	for i := range 40 {
		fmt.Fprintf(&b, `{"type":"request","index":%d,"scheduled_ms":%d,"sent_ms":%d,"prompt_tokens":%d,"max_tokens":%d,"status":200,"completion_tokens":%d,"chunks":[]}`+"\n",
			i, 10*i, 10*i, 300+(i*977)%4000, 5+i%9, 5+i%9)
	}
	recs := filepath.Join(dir, "r1.records.jsonl")
	os.WriteFile(recs, []byte(b.String()), 0o644)
	table := filepath.Join(dir, "t.toml")
	code, out, errs := cli(t, context.Background(), "lengths", "fit", "-o", table, recs)
	if code != exitcode.OK || !strings.Contains(out, "prompt lengths (prompt_tokens): n 40") || !strings.Contains(out, "output lengths (max_tokens): n 40") {
		t.Fatalf("records: exit %d, %s\n%s", code, errs, out)
	}
	code, _, errs = cli(t, context.Background(), "lengths", "fit", "-o", table, recs)
	if want := "genload lengths: -o " + table + ": " + table + " exists: remove it, choose another -o, or give --force to replace it (no table written)\n"; code != exitcode.InvalidConfig || errs != want {
		t.Errorf("again: exit %d, %q\nwant %q", code, errs, want)
	}
	if code, _, errs = cli(t, context.Background(), "lengths", "fit", "--force", "-o", table, recs); code != exitcode.OK {
		t.Errorf("--force: exit %d, %s", code, errs)
	}
	// --out, run's and replay's flag, is pointed to -o, not to --output (the output-length field)
	if code, _, errs = cli(t, context.Background(), "lengths", "fit", "--out", table, recs); code != exitcode.Usage || !strings.Contains(errs, "the quantile table is written with -o FILE") {
		t.Errorf("--out: exit %d, %q", code, errs)
	}
}

// The table lengths fit -o writes is previewed with genload lengths -c: its plugin, a path
// relative to the table's folder, is the empirical example built there, whatever the working
// directory and GENLOAD_PLUGIN_DIR; without the module the error names the table.
func TestLengthsPreviewsTheFittedTable(t *testing.T) {
	plainOnly(t) // lengths fit and lengths read files in one goroutine
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("input_length\n")
	for i := range 300 {
		fmt.Fprintf(&b, "%d\n", 100+(i*i*37)%6000)
	}
	log := filepath.Join(dir, "log.csv")
	os.WriteFile(log, []byte(b.String()), 0o644)
	table := filepath.Join(dir, "lengths.toml")
	if code, _, errs := cli(t, context.Background(), "lengths", "fit", "-o", table, log); code != exitcode.OK {
		t.Fatalf("fit: exit %d, %s", code, errs)
	}
	code, _, errs := cli(t, context.Background(), "lengths", "-c", table, "--mean", "2000", "--batch", "16")
	wasm := filepath.Join(dir, "empirical.wasm")
	if code != exitcode.PluginRejected || !strings.Contains(errs, wasm) || !strings.Contains(errs, "(the [lengths] plugin of "+table+": build it there, as the file's comment says)") {
		t.Errorf("no module: exit %d, %s", code, errs)
	}
	body, err := os.ReadFile(testplugins.Build(t, "./sdk/examples/empirical", testplugins.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(wasm, body, 0o644)
	t.Setenv("GENLOAD_PLUGIN_DIR", "")
	code, out, errs := cli(t, context.Background(), "lengths", "-c", table, "--mean", "2000", "--batch", "16")
	if code != exitcode.OK || !strings.HasPrefix(out, "plugin empirical ") || !strings.Contains(out, "("+wasm+"), L = 2000, B = 16") || !strings.Contains(out, "n=16 mean=2000") {
		t.Errorf("preview: exit %d, %s\n%s", code, errs, out)
	}
	// A bench.toml works the same; --plugin overrides the file's.
	bench := filepath.Join(dir, "bench.toml")
	os.WriteFile(bench, []byte("[lengths]\nplugin = \"uniform\"\n"), 0o644)
	code, out, errs = cli(t, context.Background(), "lengths", "-c", bench, "--plugin", wasm, "--set", "mode=\"quantiles\"", "--set", "edges=[1,10,100]", "--set", "counts=[1,1]", "--mean", "50", "--batch", "4")
	if code != exitcode.OK || !strings.HasPrefix(out, "plugin empirical ") {
		t.Errorf("--plugin over -c: exit %d, %s\n%s", code, errs, out)
	}
}
