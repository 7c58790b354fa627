package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genload/genload/host/exitcode"
)

// Every sub-command that reads a file exits with one code for a file it cannot read or use:
// 3 (README: invalid config or input), with one line naming the file; report, consistency,
// diff, plot, gpu-time and steplog exited 1 for a missing results file while fit, gate, gap,
// lengths fit and merge exited 3. A plugin's .wasm file is the exception README gives: 4,
// plugin rejected, as for any plugin that cannot be loaded.
func TestUnreadableInputFilesExitAlike(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("garbage{\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := writeRun(t, dir, "good", map[[2]int][2]float64{{1000, 1}: {5, 20}, {1000, 8}: {6, 30}})
	out := filepath.Join(dir, "out")
	// Each command line reads FILE (replaced by a missing and by an invalid file); a line
	// whose files are all given names only the missing case (any content is a valid input).
	cases := []struct {
		name    string
		args    []string
		anyText bool // the file's content cannot be invalid: only a missing file is tried
		code    exitcode.Code
	}{
		{"report", []string{"report", "FILE"}, false, exitcode.InvalidConfig},
		{"report -o", []string{"report", "FILE", "-o", out + ".html"}, false, exitcode.InvalidConfig},
		{"report --ab", []string{"report", good, "--ab", "FILE", "-o", out + ".html"}, false, exitcode.InvalidConfig},
		{"consistency", []string{"consistency", "FILE", good}, false, exitcode.InvalidConfig},
		{"consistency, second file", []string{"consistency", good, "FILE"}, false, exitcode.InvalidConfig},
		{"diff", []string{"diff", "FILE", good}, false, exitcode.InvalidConfig},
		{"diff, second file", []string{"diff", good, "FILE"}, false, exitcode.InvalidConfig},
		{"plot", []string{"plot", "FILE", "-o", out}, false, exitcode.InvalidConfig},
		{"gpu-time", []string{"gpu-time", "FILE"}, false, exitcode.InvalidConfig},
		{"steplog", []string{"steplog", "FILE", good}, false, exitcode.InvalidConfig},
		{"steplog, log", []string{"steplog", good, "FILE"}, true, exitcode.InvalidConfig},
		{"fit", []string{"fit", "FILE"}, false, exitcode.InvalidConfig},
		{"predict", []string{"predict", "FILE", "--seq-len", "1000", "--batch", "1"}, false, exitcode.InvalidConfig},
		{"gate", []string{"gate", "FILE", good}, false, exitcode.InvalidConfig},
		{"gap", []string{"gap", "FILE", good}, false, exitcode.InvalidConfig},
		{"lengths fit", []string{"lengths", "fit", "FILE"}, false, exitcode.InvalidConfig},
		{"merge", []string{"merge", "FILE", "-o", out + ".json"}, false, exitcode.InvalidConfig},
		{"replay", []string{"replay", "FILE"}, false, exitcode.InvalidConfig},
		{"run -c", []string{"run", "-c", "FILE"}, false, exitcode.InvalidConfig},
		{"run --resume", []string{"run", "--resume", "FILE"}, false, exitcode.InvalidConfig},
		{"sweep", []string{"sweep", "FILE"}, false, exitcode.InvalidConfig},
		{"ab", []string{"ab", "-a", "FILE", "-b", "FILE"}, false, exitcode.InvalidConfig},
		{"k8s job -c", []string{"k8s", "job", "--name", "x", "--image", "i", "--pvc", "p", "-o", out, "-c", "FILE"}, false, exitcode.InvalidConfig},
		{"k8s cat", []string{"k8s", "cat", "FILE"}, true, exitcode.InvalidConfig},
		{"plugin check", []string{"plugin", "check", "FILE"}, false, exitcode.PluginRejected},
		{"lengths --plugin", []string{"lengths", "--plugin", "FILE", "--mean", "100", "--batch", "2"}, false, exitcode.PluginRejected},
	}
	for _, tc := range cases {
		for _, file := range []string{missing, bad} {
			if file == bad && tc.anyText {
				continue
			}
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.ReplaceAll(a, "FILE", file)
			}
			code, _, stderr := cli(t, context.Background(), args...)
			if code != tc.code || !strings.Contains(stderr, filepath.Base(file)) || strings.Contains(strings.TrimSpace(stderr), "\n") {
				t.Errorf("%s with %s file: exit %d, want %d; stderr:\n%s", tc.name, filepath.Base(file), code, tc.code, stderr)
			}
		}
	}
}
