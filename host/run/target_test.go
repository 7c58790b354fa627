package run

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/genload/genload/host/config"
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
