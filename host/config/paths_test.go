package config

import (
	"os"
	"path/filepath"
	"testing"
)

// Relative paths in a bench.toml are relative to its folder: conf/bench.toml naming
// "len.wasm" means conf/len.wasm whatever the working directory. Plugin names, absolute paths,
// unset keys and profile names stay as they are, and the keys keep their file:line.
func TestRelativePathsResolveAgainstTheFilesFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "conf")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "bench.toml")
	src := `api_key_file = "secrets/key"
out = "runs"
[lengths]
plugin = "len.wasm"
[router]
plugin = "gamma-router"
[prompt]
corpus = "../data/prompts.jsonl"
[tokenizer]
path = "/models/qwen"
[plugins]
dir = "wasm"
[engine]
profile = "profiles/mine.toml"
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ key, got, want string }{
		{"api_key_file", c.APIKeyFile, filepath.Join(dir, "secrets/key")},
		{"out", c.Out, filepath.Join(dir, "runs")},
		{"lengths.plugin", c.Lengths.Plugin, filepath.Join(dir, "len.wasm")},
		{"router.plugin", c.Router.Plugin, "gamma-router"},                                         // a name
		{"prompt.corpus", c.Prompt.Corpus, filepath.Join(filepath.Dir(dir), "data/prompts.jsonl")}, // ../ cleaned
		{"tokenizer.path", c.Tokenizer.Path, "/models/qwen"},                                       // absolute
		{"plugins.dir", c.Plugins.Dir, filepath.Join(dir, "wasm")},
		{"engine.profile", c.Engine.Profile, filepath.Join(dir, "profiles/mine.toml")},
	} {
		if tc.got != tc.want {
			t.Errorf("[%s] = %q, want %q", tc.key, tc.got, tc.want)
		}
	}
	if w := c.Where("lengths.plugin"); w != path+":4" {
		t.Errorf("Where(lengths.plugin) = %q, want %s:4", w, path)
	}
	// A profile name (no .toml, no '/') is not a path.
	c, err = Parse(path, []byte("[engine]\nprofile = \"dense-8b\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Engine.Profile != "dense-8b" {
		t.Errorf("[engine.profile] = %q, want the name dense-8b", c.Engine.Profile)
	}
}
