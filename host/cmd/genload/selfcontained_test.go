package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/host/results"
)

// A genload built as a user builds it, copied alone into an empty directory and run from
// there with nothing in its environment but PATH=/usr/bin:/bin (no GENLOAD_PLUGIN_DIR, no
// HOME, no build/ or plugins/ beside it), measures a cell against the built-in engine with the
// gamma plugin built into it: the results record it as builtin:gamma.wasm with the SHA-256
// that make recorded when it embedded it.
func TestCopiedBinaryRunsFromAnEmptyDirectory(t *testing.T) {
	plainOnly(t) // the binary it builds and runs has no race detector in it
	root, err := testplugins.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile(filepath.Join(root, "host", "plugin", "bundled", "wasm", "SHA256SUMS"))
	if err != nil {
		t.Fatalf("the plugins are not in place to be built into genload (run `make plugins`): %v", err)
	}
	built := filepath.Join(t.TempDir(), "genload")
	cmd := exec.Command("go", "build", "-o", built, "./host/cmd/genload")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	empty := t.TempDir()
	bin := filepath.Join(empty, "genload")
	b, err := os.ReadFile(built)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	run := exec.Command(bin, "run", "--seq-lens", "300", "--batch-sizes", "2", "--max-tokens", "4", "--time-scale", "0.05", "--run-id", "copied")
	run.Dir, run.Env = empty, []string{"PATH=/usr/bin:/bin"}
	var stderr bytes.Buffer
	run.Stderr = &stderr
	if err := run.Run(); err != nil {
		t.Fatalf("the copied genload: %v\n%s", err, stderr.String())
	}
	res, err := results.ReadFile(filepath.Join(empty, "results", "copied.json"))
	if err != nil {
		t.Fatal(err)
	}
	var gammaSum string
	sc := bufio.NewScanner(bytes.NewReader(sums))
	for sc.Scan() {
		if sum, file, _ := strings.Cut(sc.Text(), "  "); file == "gamma.wasm" {
			gammaSum = sum
		}
	}
	p := res.Header.Plugins["lengths"]
	if len(res.Cells) != 1 || res.Cells[0].Status != results.StatusOK || p.Path != "builtin:gamma.wasm" || p.SHA256 != gammaSum || gammaSum == "" {
		t.Fatalf("cells %+v, lengths plugin %+v; want one ok cell with builtin:gamma.wasm, sha256 %s", res.Cells, p, gammaSum)
	}
	ents, _ := os.ReadDir(empty)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "genload results" {
		t.Errorf("the directory holds %v, want the binary and the results it wrote", names)
	}
}
