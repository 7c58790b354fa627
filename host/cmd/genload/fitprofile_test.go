package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/run"
)

// A run of the built-in engine with a profile file given relative to its bench.toml: fit,
// started from another directory, compares the fitted terms with the file the run read
// (recorded absolute, with its hash), and never with another file of the same name whose
// figures differ.
func TestFitComparesOnlyTheRunsProfile(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	src, err := os.ReadFile(filepath.Join("..", "..", "engine", "profiles", "dense-8b.toml"))
	if err != nil {
		t.Fatal(err)
	}
	benchDir := filepath.Join(dir, "bench")
	if err := os.MkdirAll(benchDir, 0o755); err != nil {
		t.Fatal(err)
	}
	profPath := filepath.Join(benchDir, "base.toml")
	if err := os.WriteFile(profPath, src, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := engine.LoadProfile(profPath)
	if err != nil {
		t.Fatal(err)
	}
	hash := run.ProfileHash(p)
	if got := run.ProfilePath(profPath); got != profPath {
		t.Errorf("ProfilePath(%q) = %q, want it unchanged (already absolute)", profPath, got)
	}
	base := costRun(t, dir, "base", 1, nil)
	withEngine := func(name string, eng map[string]any) string {
		return rewrite(t, base, dir, name+".json", func(r *results.Run) { r.Header.Engine = eng })
	}
	recorded := withEngine("recorded", map[string]any{"profile": "base.toml", "profile_path": profPath, "profile_hash": hash, "time_scale": 1.0})
	old := withEngine("old", map[string]any{"profile": "base.toml", "profile_hash": hash, "time_scale": 1.0})

	// Another directory holding another base.toml: fixed_ms 8.0 instead of 6.9.
	other := filepath.Join(dir, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(src), "fixed_ms = 6.9", "fixed_ms = 8.0", 1)
	if edited == string(src) {
		t.Fatal("dense-8b.toml has no line fixed_ms = 6.9 to edit")
	}
	if err := os.WriteFile(filepath.Join(other, "base.toml"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(other)

	code, stdout, stderr := cli(t, ctx, "fit", recorded)
	if code != exitcode.OK {
		t.Fatalf("fit: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// fixed 0.1 ms fitted against the profile's 6.9: ratio 0.1/6.9 = 0.014.
	for _, want := range []string{"built-in engine profile dense-8b at time scale 1", "| fixed | 0.1 ms | [", "| 6.9 | fixed_ms | 0.014 |"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("fit of a run recording profile_path lacks %q:\n%s", want, stdout)
		}
	}

	code, stdout, stderr = cli(t, ctx, "fit", old)
	if code != exitcode.OK {
		t.Fatalf("fit: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if strings.Contains(stdout, "| 8 | fixed_ms |") || strings.Contains(stdout, "built-in engine profile dense-8b at") {
		t.Errorf("fit compared with another directory's base.toml of other figures:\n%s", stdout)
	}
	want := "(engine profile not compared: base.toml holds other figures than the runs' profile (hash "
	if !strings.Contains(stdout, want) || !strings.Contains(stdout, "the runs recorded "+hash+")") {
		t.Errorf("fit output lacks %q … %s:\n%s", want, hash, stdout)
	}
}
