package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/host/plugin"
)

// A run holds the length plugin to the ABI's contract as `genload plugin check` does: a plugin
// declaring "pure" whose lengths fall outside [min_len, context − max_tokens], whose count is
// not B, or whose answer changes between two identical calls fails the run before its first
// cell is measured (exit 4, no cell recorded), with the error plugin check gives for the same
// fault. Before, the first of these ran "ok ⚠" with every length clamped to the context, and
// the others were not seen at all (the host cached the first answer and sent the first B).
func TestRunEnforcesThePluginContract(t *testing.T) {
	plainOnly(t) // the run fails before its first request
	unclamped := testplugins.Build(t, "./host/internal/testplugins/testdata/unclamped", testplugins.Options{})
	liar := testplugins.Wat(t, "liar")
	host, err := plugin.NewHost(context.Background(), plugin.Options{Interpreter: true, CacheDir: testplugins.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close(context.Background())
	cases := []struct {
		name, path, config string
		cell               string // the first cell at fault
		run, check         string // the fault as the run and plugin check word it
	}{
		// The range asked for is [min_len, context − max_tokens] = [64, 131072 − 4]: 131,072 is
		// the built-in engine's context.
		{"out of range", unclamped, "scale = 500", "L=1000,B=2",
			"length 500000 at index 0 is outside [64, 131068] (n=2, mean=1000); the plugin must clamp every length to [min, max]; this is a bug in the plugin",
			"length 500000 at index 0 is outside [1, 32768] (n=64, mean=1000); the plugin must clamp every length to [min, max]; this is a bug in the plugin"},
		// Only the second cell is at fault: every cell is asked before the first is measured.
		{"out of range at the second cell", unclamped, "scale = 500\nmin_n = 4", "L=1000,B=4",
			"length 500000 at index 0 is outside [64, 131068] (n=4, mean=1000); the plugin must clamp every length to [min, max]; this is a bug in the plugin",
			"length 500000 at index 0 is outside [1, 32768] (n=64, mean=1000); the plugin must clamp every length to [min, max]; this is a bug in the plugin"},
		{"wrong count", unclamped, "extra = 1", "L=1000,B=2",
			"returned 3 lengths, want 2; this is a bug in the plugin",
			"returned 65 lengths, want 64; this is a bug in the plugin"},
		// liar adds the number of its earlier calls to every length: the run's first call
		// gives 1000 (cached), the two calls past the cache 1001 and 1002.
		{"not pure", liar, "", "L=1000,B=2",
			`declares capability "pure" but genload_lengths(n=2, mean=1000, min=64, max=131068) changed between calls: on a second call length 0 is 1002, on the first call 1001 (first call [1001 1001], this call [1002 1002]); ` + pureHint,
			`declares capability "pure" but genload_lengths(n=64, mean=1000, min=1, max=32768) changed between calls: on the first instance, after the edge calls length 0 is 1003, on the first call 1000 (first call [1000 1000 1000 1000 1000 1000 1000 1000 … 64 values], this call [1003 1003 1003 1003 1003 1003 1003 1003 … 64 values]); ` + pureHint},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := probeCfg(t, fmt.Sprintf("max_tokens = 4\nmetrics = \"off\"\nout = %q\n[engine]\ntime_scale = 0.05\n[matrix]\nseq_lens = [1000]\nbatch_sizes = [2, 4]\n"+
				"[lengths]\nplugin = %q\nmin_len = 64\n[lengths.config]\n%s\n", t.TempDir(), c.path, c.config))
			var stderr bytes.Buffer
			res, err := Run(context.Background(), cfg, Options{Stderr: &stderr, RunID: "contract"})
			if exitcode.Of(err) != exitcode.PluginRejected || res != nil {
				t.Fatalf("err %v (exit %d), result %v\n%s", err, exitcode.Of(err), res, stderr.String())
			}
			var pe *plugin.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err %v is not the plugin's", err)
			}
			prefix := fmt.Sprintf("plugin %s (%s) [genload_lengths]: ", pe.Plugin, c.path)
			if got, want := err.Error(), "cell "+c.cell+": "+prefix+c.run; got != want {
				t.Errorf("run:\n got %s\nwant %s", got, want)
			}
			_, cerr := host.Check(context.Background(), c.path, cfg.Lengths.Config)
			if cerr == nil || cerr.Error() != prefix+c.check {
				t.Errorf("plugin check:\n got %v\nwant %s", cerr, prefix+c.check)
			}
		})
	}
}

// pureHint is the hint of an impure plugin's error.
const pureHint = `drop capability "pure" or make the lengths depend only on the call's parameters (sdk/ABI.md §4.7): the host caches a pure plugin's answer per cell`
