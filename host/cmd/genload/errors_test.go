package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/host/plugin"
)

// The exact one-line errors of the mistakes a new user makes: each names the flag, the key
// (with file:line) or the plugin at fault, says what was wrong in the user's terms, and
// suggests the nearest right name.
func TestErrorsInTheUsersTerms(t *testing.T) {
	plainOnly(t) // input refused before or at the first request; host/run races the failing client
	pdir := testplugins.Dir(t)
	t.Setenv("GENLOAD_PLUGIN_DIR", pdir)
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, "<!DOCTYPE HTML>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Error response</title>\n</head>\n<body>\n<h1>Error response</h1>\n<p>Error code: 404</p>\n<p>Message: File not found.</p>\n</body>\n</html>\n")
	}))
	defer html.Close()
	// A web server that lists a model (a static file) and answers POST with its 501 page.
	page := "<!DOCTYPE HTML>\n<html lang=\"en\">\n    <head>\n        <meta charset=\"utf-8\">\n        <title>Error response</title>\n    </head>\n    <body>\n        <h1>Error response</h1>\n        <p>Error code: 501</p>\n        <p>Message: Unsupported method ('POST').</p>\n    </body>\n</html>\n"
	static := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"data":[{"id":"m"}]}`)
			return
		}
		w.Header().Set("Content-Type", "text/html;charset=utf-8")
		w.WriteHeader(http.StatusNotImplemented)
		fmt.Fprint(w, page)
	}))
	defer static.Close()
	notOpenAI := " answered HTTP 501 with an HTML page titled \"Error response\": this is not an OpenAI-compatible server (check the target: the base URL of a vLLM, SGLang, llama.cpp or TGI server, such as http://127.0.0.1:8000)"
	var builtIn []string
	for _, b := range plugin.Builtins() {
		builtIn = append(builtIn, b.Name)
	}
	if len(builtIn) == 0 {
		builtIn = []string{"none (compiled without `make plugins`)"}
	}
	cases := []struct {
		name, toml string
		args       []string
		code       exitcode.Code
		want       string // the whole of stderr
	}{
		{"list flag with a suffix", "", []string{"--batch-sizes", "8abc"}, exitcode.Usage,
			`genload run: --batch-sizes "8abc": "8abc" is not a positive integer: want positive integers separated by commas, such as 1,8,64 (see 'genload run --help')`},
		{"list flag with a fraction", "", []string{"--seq-lens", "1000,2.5"}, exitcode.Usage,
			`genload run: --seq-lens "1000,2.5": "2.5" is not a positive integer: want positive integers separated by commas, such as 1,8,64 (see 'genload run --help')`},
		{"list flag given twice", "", []string{"--seq-lens", "200", "--seq-lens", "400"}, exitcode.Usage,
			`genload run: --seq-lens "400": given a second time, after 200: give one comma-separated list, such as 200,400 (see 'genload run --help')`},
		{"list flag with a value twice", "", []string{"--batch-sizes", "1,1"}, exitcode.Usage,
			`genload run: --batch-sizes "1,1": 1 is given twice: give each value once (see 'genload run --help')`},
		{"list key with a value twice", "[matrix]\nseq_lens = [200]\nbatch_sizes = [1, 8, 1]\n", nil, exitcode.InvalidConfig,
			"genload run: BENCH:3: [matrix.batch_sizes] lists 1 twice: give each batch size once"},
		{"length given twice", "[matrix]\nseq_lens = [200, 400, 200]\nbatch_sizes = [1]\n", nil, exitcode.InvalidConfig,
			"genload run: BENCH:2: [matrix.seq_lens] lists 200 twice: give each sequence length once"},
		{"label of another type", "[labels]\ngpus = [1]\n", nil, exitcode.InvalidConfig,
			"genload run: BENCH:2: [labels.gpus] must be a string or an integer, not an array ([1])"},
		{"flag value out of range", "", []string{"--time-scale", "-1"}, exitcode.Usage,
			"genload run: flag --time-scale: [engine.time_scale] must be ≥ 0, got -1"},
		{"flag value out of range beside the file's", "max_tokens = 0\n", []string{"--time-scale", "-1"}, exitcode.InvalidConfig,
			"genload run: BENCH:1: [max_tokens] must be ≥ 1, got 0\nflag --time-scale: [engine.time_scale] must be ≥ 0, got -1"},
		{"unknown flag", "", []string{"--max-token", "5"}, exitcode.Usage,
			"genload run: unknown flag --max-token (did you mean --max-tokens?) (see 'genload run --help')"},
		{"type error", "[matrix]\nseq_lens = 300\n", nil, exitcode.InvalidConfig,
			"genload run: BENCH:2: [matrix.seq_lens] must be an array of integers, not an integer (300); write [300]"},
		{"unknown key", "max_tokns = 5\n", nil, exitcode.InvalidConfig,
			"genload run: BENCH:1: unknown key [max_tokns]; did you mean [max_tokens]?"},
		{"plugin name", "[lengths]\nplugin = \"gama\"\n", nil, exitcode.PluginRejected,
			fmt.Sprintf(`genload run: BENCH:2: [lengths.plugin]: plugin "gama" not found: it is not built into genload (built in: %s); searched %s; did you mean "gamma"? (a plugin of your own: give its .wasm path, or set GENLOAD_PLUGIN_DIR to its directory)`,
				strings.Join(builtIn, ", "), filepath.Join(pdir, "gama.wasm"))},
		{"plugin value on its key's line", "[lengths.config]\nk = -1\n", nil, exitcode.PluginRejected,
			"genload run: BENCH:2: [lengths.config.k]: plugin gamma: k = -1, want a shape in [0.01, 10000] (default 0.9): below 0.01 nearly every length is the minimum, above 10000 every length is within 1 % of the mean (use the uniform plugin)"},
		{"unknown plugin key", "[lengths.config]\nk = 2\nkk = 2\n", nil, exitcode.PluginRejected,
			"genload run: BENCH:3: unknown key [lengths.config.kk] of plugin gamma; did you mean [lengths.config.k]?"},
		{"plugin key of another type", "[lengths.config]\nk = 2\n", []string{"--set", "k=abc"}, exitcode.PluginRejected,
			`genload run: flag --set: [lengths.config.k] must be a number, not a string ("abc") (plugin gamma)`},
		{"unknown --set key beside the file's", "[lengths.config]\nk = 2\n", []string{"--set", "normalise=true"}, exitcode.PluginRejected,
			"genload run: flag --set: unknown key [lengths.config.normalise] of plugin gamma; did you mean [lengths.config.normalize]?"},
		{"plugin of no keys", "[lengths]\nplugin = \"uniform\"\n[lengths.config]\nmean = 3\n", nil, exitcode.PluginRejected,
			"genload run: BENCH:4: unknown key [lengths.config.mean] of plugin uniform; it takes no config keys"},
		{"no cell left blamed on its flag", "", []string{"--seq-lens", "200000", "--batch-sizes", "1"}, exitcode.InvalidConfig,
			"genload run: flag --seq-lens: matrix: no cells left (1 dropped: L + max_tokens = 200100 exceeds the model context 131072)"},
		{"not an OpenAI-compatible server", "", []string{"--target", html.URL}, exitcode.TargetFailed,
			"genload run: GET " + html.URL + `/v1/models answered HTTP 404 with an HTML page titled "Error response": this is not an OpenAI-compatible server (check the target: the base URL of a vLLM, SGLang, llama.cpp or TGI server, such as http://127.0.0.1:8000)`},
		{"HTML page at the token-count probe", "", []string{"--target", static.URL, "--seq-lens", "100", "--batch-sizes", "1"}, exitcode.TargetFailed,
			"genload run: token-count probe: POST " + static.URL + "/v1/completions" + notOpenAI},
		{"HTML page at the capability probe", "", []string{"--target", static.URL, "--mode", "auto", "--seq-lens", "100", "--batch-sizes", "1"}, exitcode.TargetFailed,
			"genload run: flag --target: capability probe (every prompt shape): POST " + static.URL + "/v1/completions" + notOpenAI},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeConfig(t, tc.toml)
			code, stdout, stderr := cli(t, context.Background(), append([]string{"run", "-c", cfg, "--out", t.TempDir()}, tc.args...)...)
			want := strings.ReplaceAll(tc.want, "BENCH", cfg) + "\n"
			if code != tc.code || stderr != want || stdout != "" {
				t.Errorf("exit %d, want %d\nstderr:\n%s\nwant:\n%s\nstdout: %q", code, tc.code, stderr, want, stdout)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	want := fmt.Sprintf("genload %s (%s, %s/%s)\n%s\n", fullVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH, builtinLine())
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, out, errs := cli(t, context.Background(), args...)
		if code != exitcode.OK || out != want || errs != "" {
			t.Errorf("%v: exit %d\n%s%s\nwant\n%s", args, code, out, errs, want)
		}
	}
	if bs := plugin.Builtins(); len(bs) > 0 && !strings.HasPrefix(builtinLine(), "plugins built in: "+bs[0].Name+" "+bs[0].SHA256[:16]) {
		t.Errorf("builtinLine() = %q", builtinLine())
	}
}

// Mode "n" says the length plugin is ignored, and the header does not name it.
func TestModeNDoesNotNameTheLengthPlugin(t *testing.T) {
	t.Setenv("GENLOAD_PLUGIN_DIR", testplugins.Dir(t))
	code, stdout, stderr := cli(t, context.Background(), "run", "--mode", "n", "--seq-lens", "300", "--batch-sizes", "2",
		"--max-tokens", "4", "--time-scale", "0.05", "--out", t.TempDir())
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, `mode "n": each cell sends one prompt of length L with n = B`) || !strings.Contains(stderr, "the length plugin gamma is ignored") {
		t.Errorf("stderr does not say the plugin is ignored:\n%s", stderr)
	}
	if !strings.Contains(stdout, "mode n, lengths –") || strings.Contains(stdout, "gamma") {
		t.Errorf("the header names the length plugin:\n%s", stdout)
	}
}
