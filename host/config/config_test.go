package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/exitcode"
)

func TestDefaultsAreValidAndMatchTheSeedMethod(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	// 7 sequence lengths × 13 batch sizes = 91 cells; max_tokens 100; gamma k = 0.9.
	if n := len(c.Matrix.SeqLens) * len(c.Matrix.BatchSizes); n != 91 {
		t.Errorf("default grid has %d cells, want 91", n)
	}
	if c.MaxTokens != 100 || c.Lengths.Plugin != "gamma" || c.Lengths.Config["k"] != 0.9 || c.Mode != ModeArray {
		t.Errorf("defaults = max_tokens %d, lengths %q %v, mode %q", c.MaxTokens, c.Lengths.Plugin, c.Lengths.Config, c.Mode)
	}
}

func TestParseOverridesAndKeepsDefaults(t *testing.T) {
	src := `
seed = 7
max_tokens = 64
[matrix]
seq_lens = [512]
batch_sizes = [1, 4]
pairs = [[2048, 3]]
[lengths]
plugin = "uniform"
[warmup]
retry_delay = "250ms"
`
	c, err := Parse("bench.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if c.Seed != 7 || c.MaxTokens != 64 || c.Lengths.Plugin != "uniform" || len(c.Lengths.Config) != 0 {
		t.Errorf("got seed %d max_tokens %d lengths %q %v", c.Seed, c.MaxTokens, c.Lengths.Plugin, c.Lengths.Config)
	}
	if c.Warmup.RetryDelay.Duration != 250*time.Millisecond || c.Warmup.Retries != 3 {
		t.Errorf("warmup = %+v, want 250ms delay and the default 3 retries", c.Warmup)
	}
	if c.Target != Builtin || c.Prompt.Suffix == "" {
		t.Errorf("defaults lost: target %q suffix %q", c.Target, c.Prompt.Suffix)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestErrorsNameFileLineAndKey(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string
	}{
		{"unknown key", "seed = 1\n[matrix]\nseq_lenz = [1]\n", []string{"bench.toml:3", "[matrix.seq_lenz]", "unknown key"}},
		{"wrong type", "seed = 1\nmax_tokens = \"many\"\n", []string{"bench.toml:2", "max_tokens"}},
		{"syntax", "seed = 1\n[matrix\n", []string{"bench.toml:2"}},
		{"bad duration", "[timeouts]\ntotal = \"soon\"\n", []string{"bench.toml:2", "not a duration"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("bench.toml", []byte(tc.src))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if exitcode.Of(err) != exitcode.InvalidConfig {
				t.Errorf("exit code %d, want InvalidConfig", exitcode.Of(err))
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	src := "max_tokens = 0\nmode = \"fast\"\ntarget = \"ftp://x\"\n[matrix]\nbatch_sizes = [0]\n[prompt]\nformat = \"pdf\"\n"
	c, err := Parse("b.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	for _, w := range []string{"b.toml:1: [max_tokens]", "b.toml:2: [mode]", "b.toml:3: [target]", "b.toml:5: [matrix.batch_sizes]", "b.toml:7: [prompt.format]"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v lacks %q", err, w)
		}
	}
	var ec *exitcode.Error
	if !errors.As(err, &ec) || ec.Code != exitcode.InvalidConfig {
		t.Errorf("want InvalidConfig, got %v", err)
	}
}

func TestDuplicateWorkersAndRoutingNeedsRoutedMode(t *testing.T) {
	src := "[[workers]]\nurl = \"http://127.0.0.1:1\"\n[[workers]]\nurl = \"http://127.0.0.1:1\"\n"
	c, err := Parse("b.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	if err == nil || !strings.Contains(err.Error(), "worker 1 duplicates worker 0") || !strings.Contains(err.Error(), "mode = \"routed\"") {
		t.Fatalf("err = %v", err)
	}
}

func TestGridIsServerFirst(t *testing.T) {
	c := Default()
	c.Mode = ModeRouted
	c.Grid = WorkerGrid{Servers: 2, Generators: 3, ServerHeader: "x-service-index", GeneratorHeader: "x-local-index"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	ws := c.ResolvedWorkers("http://127.0.0.1:9")
	// worker w → server w mod 2, generator w div 2
	want := []string{"s0-g0", "s1-g0", "s0-g1", "s1-g1", "s0-g2", "s1-g2"}
	if len(ws) != len(want) {
		t.Fatalf("%d workers, want %d", len(ws), len(want))
	}
	for i, w := range ws {
		if w.Name != want[i] || w.URL != "http://127.0.0.1:9" {
			t.Errorf("worker %d = %s %s, want %s", i, w.Name, w.URL, want[i])
		}
	}
	if ws[3].Headers["x-service-index"] != "1" || ws[3].Headers["x-local-index"] != "1" {
		t.Errorf("worker 3 headers = %v", ws[3].Headers)
	}
}

func TestShippedBenchTomlIsTheDefaults(t *testing.T) {
	c, err := Load("../../bench.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	d := Default()
	d.File, d.lines, c.lines = c.File, nil, nil
	d.Out = filepath.Join(filepath.Dir(c.File), d.Out) // bench.toml sets out, relative to its folder
	if fmt.Sprintf("%+v", *c) != fmt.Sprintf("%+v", *d) {
		t.Errorf("bench.toml differs from Default():\n file: %+v\n default: %+v", *c, *d)
	}
}

func TestValidateErrorOrderIsDeterministic(t *testing.T) {
	// Every negative duration is reported, one line each, in the order of the file's sections
	// (warmup, timeouts, plugins), and the same on every call: a message users diff or grep, and
	// tests compare whole, must not depend on map iteration order.
	src := []byte("[warmup]\nretry_delay = \"-1s\"\n[timeouts]\nconnect = \"-2s\"\nfirst_token = \"-3s\"\ntotal = \"-4s\"\n[plugins]\ncall_timeout = \"-5s\"\n")
	c, err := Parse("bench.toml", src)
	if err != nil {
		t.Fatal(err)
	}
	want := "bench.toml:2: [warmup.retry_delay] must be ≥ 0, got -1s\n" +
		"bench.toml:4: [timeouts.connect] must be ≥ 0, got -2s\n" +
		"bench.toml:5: [timeouts.first_token] must be ≥ 0, got -3s\n" +
		"bench.toml:6: [timeouts.total] must be ≥ 0, got -4s\n" +
		"bench.toml:8: [plugins.call_timeout] must be ≥ 0, got -5s"
	for i := range 20 {
		err := c.Validate()
		if err == nil || err.Error() != want {
			t.Fatalf("call %d:\n%v\nwant\n%s", i, err, want)
		}
	}
}

// The stall keys and "auto": defaults, file values over them, and their validation with
// file:line.
// A server that never sends its first token fails the request after the default first-token
// timeout instead of holding the run for ever; 0 still turns the bound off.
func TestFirstTokenTimeoutByDefault(t *testing.T) {
	if got := Default().Timeouts.FirstToken.Duration; got != 10*time.Minute {
		t.Fatalf("default timeouts.first_token = %v, want 10m", got)
	}
	c, err := Parse("b.toml", []byte("[timeouts]\nfirst_token = \"0s\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Timeouts.FirstToken.Duration != 0 {
		t.Fatalf("first_token = \"0s\" parsed as %v, want 0 (no bound)", c.Timeouts.FirstToken)
	}
}

func TestStallKeysAndAuto(t *testing.T) {
	d := Default()
	if d.Timeouts.StallSteps != 20 || d.Timeouts.StallMin.Duration != 10*time.Second || d.Timeouts.Stall.Duration != 0 {
		t.Fatalf("stall defaults = %d steps, min %v, fixed %v; want 20, 10s, 0", d.Timeouts.StallSteps, d.Timeouts.StallMin, d.Timeouts.Stall)
	}
	c, err := Parse("b.toml", []byte("mode = \"auto\"\n[prompt]\nformat = \"auto\"\n[timeouts]\nstall_steps = 50\nstall = \"3s\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != ModeAuto || c.Prompt.Format != FormatAuto || c.Timeouts.StallSteps != 50 || c.Timeouts.Stall.Duration != 3*time.Second ||
		c.Timeouts.StallMin.Duration != 10*time.Second {
		t.Fatalf("got mode %q format %q stall %d %v min %v", c.Mode, c.Prompt.Format, c.Timeouts.StallSteps, c.Timeouts.Stall, c.Timeouts.StallMin)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c, _ = Parse("b.toml", []byte("[timeouts]\nstall_steps = -1\nstall_min = \"-2s\"\n"))
	err = c.Validate()
	for _, w := range []string{"b.toml:2: [timeouts.stall_steps] must be ≥ 0 steps", "b.toml:3: [timeouts.stall_min] must be ≥ 0"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v lacks %q", err, w)
		}
	}
	// several workers: auto may route
	c, _ = Parse("b.toml", []byte("mode = \"auto\"\n[[workers]]\nurl = \"http://127.0.0.1:1\"\n[[workers]]\nurl = \"http://127.0.0.1:2\"\n"))
	if err := c.Validate(); err != nil {
		t.Fatalf("auto with two workers: %v", err)
	}
}

// A results file given as the bench.toml is named as one, with where the run's configuration is.
func TestParseSaysAResultsFileIsNotABenchToml(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"results.json", "{\n  \"header\": {\n    \"type\": \"header\",\n    \"schema\": \"genload.run/v1\",\n", "results.json: a genload results file (JSON), not a bench.toml (TOML): give the bench.toml to run with -c; a run's own configuration is in its results header, which genload run --resume FILE.jsonl reads"},
		{"r.jsonl", `{"type":"header","schema":"genload.run/v1","run_id":"a"}` + "\n", "r.jsonl: a genload results file (JSON), not a bench.toml"},
		{"other.json", `{"a": 1}`, "other.json: a JSON file, not a bench.toml (TOML)"},
	} {
		_, err := Parse(tc.name, []byte(tc.src))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || exitcode.Of(err) != exitcode.InvalidConfig {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := Parse("bench.toml", []byte("target = {")); err == nil || strings.Contains(err.Error(), "JSON") {
		t.Errorf("a TOML error: %v", err)
	}
}
