package run

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/tokenizer"
)

// A relative [api_key_file] is read beside the bench.toml, and when it cannot be read the
// error names the path that was tried, not only the key, and never the content.
func TestAPIKeyFileErrorNamesThePathRead(t *testing.T) {
	dir := t.TempDir()
	toml := filepath.Join(dir, "bench.toml")
	cfg, err := config.Parse(toml, []byte("api_key_file = \"key.txt\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = readAPIKey(cfg, os.Getenv)
	want := toml + ":1: [api_key_file]: cannot read the API key file " + filepath.Join(dir, "key.txt") + ": no such file or directory"
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "key.txt"), []byte(" sk-test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if key, err := readAPIKey(cfg, os.Getenv); err != nil || key != "sk-test" {
		t.Fatalf("key %q, err %v; want sk-test", key, err)
	}
}

// [engine] spin_wait reaches the built-in engine and the results header's engine record.
func TestSpinWaitReachesTheEngine(t *testing.T) {
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Engine.SpinWait.Duration = 300 * time.Microsecond
	eng, _, info, err := startBuiltin(cfg, tok, "")
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if got := eng.Config().SpinWait; got != 300*time.Microsecond {
		t.Errorf("engine SpinWait %v, want 300µs", got)
	}
	if got := info["spin_wait_us"]; got != int64(300) {
		t.Errorf("engine record spin_wait_us = %v (%T), want 300", got, got)
	}
	cfg.Engine.SpinWait.Duration = 0
	eng0, _, info0, err := startBuiltin(cfg, tok, "")
	if err != nil {
		t.Fatal(err)
	}
	defer eng0.Close()
	if _, ok := info0["spin_wait_us"]; ok || eng0.Config().SpinWait != 0 {
		t.Errorf("no spin configured: record %v, engine %v", info0, eng0.Config().SpinWait)
	}
}
