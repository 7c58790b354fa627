package k8s

import (
	"strings"
	"testing"

	"github.com/genload/genload/host/config"
)

// parse decodes a bench.toml named bench.toml, failing the test on a bad one.
func parse(t *testing.T, src string) *config.Config {
	t.Helper()
	c, err := config.Parse("bench.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A file named by a relative path is not in the pod; an absolute path or a plugin name is.
func TestPodPathsRefusesRelativePaths(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want []string // the keys refused, in the order PodPaths checks them
	}{
		{"defaults", "max_tokens = 4\n", nil},
		{"plugin names and absolute paths", "[lengths]\nplugin = \"gamma\"\n[router]\nplugin = \"/opt/rr.wasm\"\n[engine]\nprofile = \"/opt/p.toml\"\n", nil},
		{"a profile name (no .toml, no /) is not a path", "[engine]\nprofile = \"h100\"\n", nil},
		{"relative corpus", "[prompt]\ncorpus = \"mycorpus.jsonl\"\n", []string{"prompt.corpus"}},
		{"relative plugin file and profile", "[lengths]\nplugin = \"e.wasm\"\n[engine]\nprofile = \"dir/p\"\n", []string{"lengths.plugin", "engine.profile"}},
		{"every relative path", "api_key_file = \"key\"\n[tokenizer]\npath = \"tok.json\"\n[plugins]\ndir = \"plugins\"\n[router]\nplugin = \"./rr.wasm\"\n",
			[]string{"router.plugin", "tokenizer.path", "plugins.dir", "api_key_file"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := PodPaths(parse(t, tc.src), []byte(tc.src))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("passed, want %v refused", tc.want)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("%d errors, want %d:\n%v", len(lines), len(tc.want), err)
			}
			for i, k := range tc.want {
				if !strings.HasPrefix(lines[i], "bench.toml:") || !strings.Contains(lines[i], "["+k+"] ") ||
					!strings.Contains(lines[i], "is a relative path: the pods mount only bench.toml (at "+ConfigMount+")") {
					t.Errorf("error %d = %q, want bench.toml:LINE naming [%s]", i, lines[i], k)
				}
			}
		})
	}
}

// The run flags' --target wins over bench.toml; workers are named in order, one without a
// url by [target]; the built-in engine is no shared server.
func TestSharedTarget(t *testing.T) {
	workers := parse(t, "target = \"http://a:8000\"\n[[workers]]\nurl = \"http://b:8000\"\n[[workers]]\n")
	cases := []struct {
		name   string
		target string
		cfg    *config.Config
		want   string
	}{
		{"nothing given: the built-in engine", "", nil, ""},
		{"--target", "http://vllm:8000", nil, "http://vllm:8000"},
		{"--target builtin over a server in the file", "builtin", parse(t, "target = \"http://a:8000\"\n"), ""},
		{"--target over the file's workers", "http://vllm:8000", workers, "http://vllm:8000"},
		{"the file's target", "", parse(t, "target = \"http://a:8000\"\n"), "http://a:8000"},
		{"the file's workers", "", workers, "the same workers (http://b:8000, http://a:8000)"},
		{"defaults", "", parse(t, "max_tokens = 4\n"), ""},
	}
	for _, tc := range cases {
		if got := SharedTarget(tc.target, tc.cfg); got != tc.want {
			t.Errorf("%s: SharedTarget(%q) = %q, want %q", tc.name, tc.target, got, tc.want)
		}
	}
}
