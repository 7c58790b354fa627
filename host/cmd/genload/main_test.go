package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/host/internal/textcheck"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/tokenizer"
)

// TestMain lets a test re-run this binary as the genload CLI (for kill and signal tests):
// with GENLOAD_TEST_MAIN=1 the process runs main() with the arguments after "--".
//
// Otherwise $GENLOAD_PLUGIN_DIR is set once for every test (the plugins built if it does not
// name them), so that tests run in parallel — the commands wait on engines in real time —
// without a t.Setenv each.
func TestMain(m *testing.M) {
	if os.Getenv("GENLOAD_TEST_MAIN") == "1" {
		i := slices.Index(os.Args, "--")
		os.Args = append([]string{"genload"}, os.Args[i+1:]...)
		main()
		return
	}
	if err := testplugins.SetDir(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// cli runs one command line in-process and returns the exit code, stdout and stderr.
func cli(t testing.TB, ctx context.Context, args ...string) (exitcode.Code, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := doMain(ctx, args, &env{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }})
	return code, out.String(), errb.String()
}

// writeConfig writes a bench.toml into a temp dir and returns its path.
func writeConfig(t testing.TB, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bench.toml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// serveEngine starts the built-in engine with ecfg and tok (nil: the engine's own) on a free
// loopback port, closes it when the test ends, and returns its base URL.
func serveEngine(t testing.TB, ecfg engine.Config, tok engine.Tokenizer) string {
	t.Helper()
	eng, err := engine.New(ecfg, tok)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	url, err := eng.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return url
}

func TestRunOnTheBuiltinEngine(t *testing.T) {
	out := t.TempDir()
	cfg := writeConfig(t, fmt.Sprintf(`
max_tokens = 20
out = %q
[matrix]
seq_lens = [1000, 4000]
batch_sizes = [1, 8]
[engine]
time_scale = 1 # steps of ≥ 3.5 ms: a loaded or -race client still reads chunks apart
`, out))
	code, stdout, stderr := cli(t, context.Background(), "run", "-c", cfg, "--run-id", "e2e")
	if code != exitcode.OK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	// The table: header row plus one row per cell, L ascending then B ascending.
	var rows []string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| -") {
			rows = append(rows, l)
		}
	}
	if len(rows) != 5 || !strings.Contains(rows[0], "fwd ms mean") || !strings.HasPrefix(rows[4], "| 4000 | 8 |") {
		t.Fatalf("table rows:\n%s", strings.Join(rows, "\n"))
	}
	run, err := results.ReadFile(filepath.Join(out, "e2e.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Cells) != 4 || run.Footer == nil || run.Footer.OK != 4 {
		t.Fatalf("cells %d footer %+v", len(run.Cells), run.Footer)
	}
	if run.Header.Plugins["lengths"].Name != "gamma" || !strings.HasPrefix(run.Header.Tokenizer, "qwen3") || run.Header.Config.MaxTokens != 20 {
		t.Errorf("header = %+v", run.Header)
	}
	for _, c := range run.Cells {
		f := c.Figures
		sum := 0
		for _, l := range c.Lengths.Each {
			sum += l
		}
		// Exact lengths: the engine counted exactly the tokens genload built.
		if !f.HasPromptTokens || f.PromptTokens != sum {
			t.Errorf("%s: server counted %d prompt tokens, genload sent %d", c.Cell.Key(), f.PromptTokens, sum)
		}
		if f.CompletionTokens != 20*c.Cell.Batch || f.Short != 0 || len(f.Errors) != 0 {
			t.Errorf("%s: completion %d short %d errors %v", c.Cell.Key(), f.CompletionTokens, f.Short, f.Errors)
		}
		if f.PerForward.Mean <= 0 || f.PerForward.P50 < f.PerForward.Min || f.PerForward.P90 > f.PerForward.Max {
			t.Errorf("%s: per-forward %+v (reason %q, warnings %q)", c.Cell.Key(), f.PerForward, f.PerForwardReason, c.Warnings)
		}
		// Gamma lengths of an unclamped cell average L within 0.5 %.
		if c.Lengths.Clamped == 0 && (c.Lengths.Mean < 0.995*float64(c.Cell.SeqLen) || c.Lengths.Mean > 1.005*float64(c.Cell.SeqLen)) {
			t.Errorf("%s: mean length %.1f", c.Cell.Key(), c.Lengths.Mean)
		}
	}
	csv, err := os.ReadFile(filepath.Join(out, "e2e.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(csv)), "\n"); len(lines) != 5 || !strings.HasPrefix(lines[0], "run_id,cell,seq_len,batch") {
		t.Errorf("csv:\n%s", csv)
	}
}

// recorder is a fake OpenAI-compatible server that records every completions request and
// answers with a well-formed stream: max_tokens one-token chunks per choice, then usage.
type recorder struct {
	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	Header http.Header
	Body   struct {
		Model     string          `json:"model"`
		Prompt    json.RawMessage `json:"prompt"`
		N         int             `json:"n"`
		MaxTokens int             `json:"max_tokens"`
		IgnoreEOS bool            `json:"ignore_eos"`
		Stream    bool            `json:"stream"`
		Options   struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	prompts [][]int32
	raw     []byte
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/models":
		fmt.Fprint(w, `{"object":"list","data":[{"id":"rec-model","object":"model","max_model_len":32768}]}`)
		return
	case "/v1/completions":
	default:
		http.NotFound(w, r)
		return
	}
	var rec recorded
	rec.Header = r.Header.Clone()
	b, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(b, &rec.Body); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, 400)
		return
	}
	var many [][]int32
	if json.Unmarshal(rec.Body.Prompt, &many) != nil {
		var one []int32
		_ = json.Unmarshal(rec.Body.Prompt, &one)
		many = [][]int32{one}
	}
	rec.prompts = many
	rec.raw = b
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, rec)
	rc.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	n := max(rec.Body.N, 1)
	promptTokens := 0
	for _, p := range many {
		promptTokens += len(p)
	}
	fl := w.(http.Flusher)
	for tok := 0; tok < rec.Body.MaxTokens; tok++ {
		for c := 0; c < len(many)*n; c++ {
			fin := "null"
			if tok == rec.Body.MaxTokens-1 {
				fin = `"length"`
			}
			fmt.Fprintf(w, "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":[{\"index\":%d,\"text\":\" t\",\"finish_reason\":%s}]}\n\n", c, fin)
		}
		fl.Flush()
		time.Sleep(200 * time.Microsecond)
	}
	fmt.Fprintf(w, "data: {\"id\":\"cmpl-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n",
		promptTokens, rec.Body.MaxTokens*len(many)*n, promptTokens+rec.Body.MaxTokens*len(many)*n)
}

func TestRequestShapesReachTheServer(t *testing.T) {
	plainOnly(t) // the three shapes against a recorder; TestRunWritesPerRequestRecords races a routed run, host/dispatch and host/run each shape
	t.Parallel()
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatal(err)
	}
	tail := tok.Encode("\n\nSummarize and analyse the text above.<|im_end|>\n<|im_start|>assistant\n")
	for _, mode := range []string{"array", "routed", "n"} {
		t.Run(mode, func(t *testing.T) {
			rc := &recorder{}
			srv := httptest.NewServer(rc)
			defer srv.Close()
			workers := ""
			if mode == "routed" {
				workers = fmt.Sprintf("[[workers]]\nurl = %q\nheaders = { \"x-service-index\" = \"0\" }\n[[workers]]\nurl = %q\nheaders = { \"x-service-index\" = \"1\" }\n", srv.URL, srv.URL)
			}
			// token_counts = "usage": no token-count probe, so the server sees only the cell's requests.
			cfg := writeConfig(t, fmt.Sprintf("target = %q\nmode = %q\nmax_tokens = 5\ntoken_counts = \"usage\"\nout = %q\n[matrix]\nseq_lens = [2000]\nbatch_sizes = [3]\n%s",
				srv.URL, mode, t.TempDir(), workers))
			code, stdout, stderr := cli(t, context.Background(), "run", "-c", cfg)
			if code != exitcode.OK {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			if said := strings.Contains(stderr, "B identical sequences, the shape older benchmarks used"); said != (mode == "n") {
				t.Errorf("mode %s: the note on identical sequences printed %v:\n%s", mode, said, stderr)
			}
			perShape := map[string]int{"array": 1, "routed": 3, "n": 1}[mode]
			if len(rc.reqs) != 2*perShape {
				t.Fatalf("server got %d requests, want %d warmup + %d measured", len(rc.reqs), perShape, perShape)
			}
			warm, meas := rc.reqs[:perShape], rc.reqs[perShape:]
			// Routed requests are concurrent: pair warmup and measured requests by prompt.
			key := func(r recorded) string { return fmt.Sprint(r.prompts) }
			slices.SortFunc(warm, func(a, b recorded) int { return strings.Compare(key(a), key(b)) })
			slices.SortFunc(meas, func(a, b recorded) int { return strings.Compare(key(a), key(b)) })
			for i := range warm {
				w, m := warm[i], meas[i]
				if w.Body.MaxTokens != 1 || m.Body.MaxTokens != 5 {
					t.Errorf("request %d: warmup max_tokens %d, measured %d; want 1 and 5", i, w.Body.MaxTokens, m.Body.MaxTokens)
				}
				if !m.Body.IgnoreEOS || !m.Body.Stream || !m.Body.Options.IncludeUsage || m.Body.Model != "rec-model" {
					t.Errorf("request %d body: %+v", i, m.Body)
				}
				// Warmup carries the exact prompts of the measurement, to the same worker.
				if !slices.EqualFunc(w.prompts, m.prompts, slices.Equal[[]int32]) || w.Header.Get("x-service-index") != m.Header.Get("x-service-index") {
					t.Errorf("request %d: warmup prompts/worker differ from the measured request", i)
				}
				for _, p := range m.prompts {
					if !slices.Equal(p[len(p)-len(tail):], tail) {
						t.Errorf("request %d: a prompt does not end with the suffix and template tail", i)
					}
				}
			}
			switch mode {
			case "array":
				if len(meas[0].prompts) != 3 || meas[0].Body.N != 1 {
					t.Errorf("array: %d prompts, n = %d; want 3 and 1", len(meas[0].prompts), meas[0].Body.N)
				}
			case "n":
				if len(meas[0].prompts) != 1 || meas[0].Body.N != 3 {
					t.Errorf("n: %d prompts, n = %d; want 1 and 3", len(meas[0].prompts), meas[0].Body.N)
				}
			case "routed":
				got := map[string]int{}
				for _, m := range meas {
					if len(m.prompts) != 1 || m.Body.N != 1 {
						t.Errorf("routed: request with %d prompts, n = %d", len(m.prompts), m.Body.N)
					}
					got[m.Header.Get("x-service-index")]++
				}
				// round robin over 2 workers: 3 prompts → 2 and 1
				if got["0"]+got["1"] != 3 || got["0"] < 1 || got["1"] < 1 {
					t.Errorf("routed: worker assignment %v", got)
				}
			}
		})
	}
}

func TestBadInputGivesOneClearLineAndAnExitCode(t *testing.T) {
	plainOnly(t) // as TestErrorsInTheUsersTerms
	t.Parallel()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"data":[{"id":"m","max_model_len":8192}]}`)
			return
		}
		w.WriteHeader(400)
		fmt.Fprint(w, `{"error":{"message":"This model's maximum context length is 8192 tokens","type":"BadRequestError","code":400}}`)
	}))
	defer failing.Close()
	notDir := filepath.Join(t.TempDir(), "results")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, toml string
		args       []string
		code       exitcode.Code
		want       []string
	}{
		{"toml syntax", "seed = 1\nmax_tokens = \"x\"\n", nil, exitcode.InvalidConfig, []string{"bench.toml:2", "max_tokens"}},
		{"unknown key", "[matrix]\nbatch = [1]\n", nil, exitcode.InvalidConfig, []string{"bench.toml:2", "unknown key [matrix.batch]"}},
		{"unknown plugin", "[lengths]\nplugin = \"lognormal\"\n", nil, exitcode.PluginRejected, []string{"lognormal", "lengths.plugin"}},
		{"unreachable target", fmt.Sprintf("target = %q\n[warmup]\nretry_delay = \"10ms\"\n", deadURL), nil, exitcode.TargetFailed,
			[]string{deadURL + "/v1/models", "unreachable", "(after 3 retries)"}},
		{"4xx from the server", fmt.Sprintf("target = %q\n[matrix]\nseq_lens=[1000]\nbatch_sizes=[1]\n", failing.URL), nil, exitcode.TargetFailed,
			[]string{"400", "maximum context length is 8192"}},
		{"bad flag", "", []string{"--mode", "fast"}, exitcode.Usage, []string{"[mode] unknown mode \"fast\""}},
		{"--out is a file", "", []string{"--out", notDir}, exitcode.InvalidConfig,
			[]string{"flag --out: [out] " + notDir + " is a file, not a directory"}},
		{"unknown engine profile", "seed = 1\n[engine]\nprofile = \"nope\"\n", nil, exitcode.InvalidConfig,
			[]string{"bench.toml:3: [engine.profile]: engine profile \"nope\": unknown (known: dense-8b, moe-30b-a3b; or a profile file of your own: a path ending in .toml)"}},
		{"engine spin too long", "seed = 1\n[engine]\nspin_wait = \"6ms\"\n", nil, exitcode.InvalidConfig,
			[]string{"bench.toml:3: [engine.spin_wait]: at most 5ms (a spin absorbs a late wake-up, not a step), got 6ms"}},
		{"negative --spin-wait", "", []string{"--spin-wait", "-1ms"}, exitcode.Usage,
			[]string{"flag --spin-wait: [engine.spin_wait] must be ≥ 0, got -1ms"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeConfig(t, tc.toml)
			code, _, stderr := cli(t, context.Background(), append([]string{"run", "-c", cfg, "--out", t.TempDir()}, tc.args...)...)
			t.Logf("exit %d: %s", code, firstLine(stderr, "genload run:"))
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// TestKilledRunKeepsFinishedCells kills a real genload process (SIGKILL: no cleanup at all)
// once two cells are on disk, then reads the JSONL back.
func TestKilledRunKeepsFinishedCells(t *testing.T) {
	t.Parallel()
	dir := testplugins.Dir(t)
	out := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "--", "run", "--out", out, "--run-id", "killed",
		"--seq-lens", "1000,2000,4000,8000", "--batch-sizes", "1,2,4,8,16", "--max-tokens", "30", "--time-scale", "0.05")
	cmd.Env = append(os.Environ(), "GENLOAD_TEST_MAIN=1", "GENLOAD_PLUGIN_DIR="+dir)
	cmd.Dir = t.TempDir() // no bench.toml there: defaults
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(out, "killed.jsonl")
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		// Only whole lines count: a read can see a line the writer is still writing, and a
		// SIGKILL can cut a write of several pages short, so that line is never finished.
		if whole := b[:bytes.LastIndexByte(b, '\n')+1]; bytes.Count(whole, []byte(`"type":"cell"`)) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no two cells within 60 s; file:\n%s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	run, err := results.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Cells) < 2 || len(run.Cells) == 20 || run.Footer != nil {
		t.Fatalf("after kill: %d cells, footer %v", len(run.Cells), run.Footer)
	}
	for i, c := range run.Cells {
		if c.Status != results.StatusOK || c.Figures == nil || c.Cell.Index != i {
			t.Errorf("cell %d: %+v", i, c)
		}
	}

	// The run's header as an older genload wrote it, without the keys added since (token
	// counts, truncation, stall detection, engine quirks): the resume must still accept it.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitN(b, []byte("\n"), 2)
	var hdr map[string]any
	if err := json.Unmarshal(lines[0], &hdr); err != nil {
		t.Fatal(err)
	}
	cfgMap := hdr["config"].(map[string]any)
	for _, k := range []string{"token_counts", "truncation", "chosen"} {
		delete(cfgMap, k)
	}
	for _, k := range []string{"stall_steps", "stall_min", "stall"} {
		delete(cfgMap["timeouts"].(map[string]any), k)
	}
	delete(cfgMap["engine"].(map[string]any), "quirks")
	old, err := json.Marshal(hdr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(append(old, '\n'), lines[1]...), 0o644); err != nil {
		t.Fatal(err)
	}

	// A resume with another configuration is refused and says what differs.
	code, _, stderr := cli(t, context.Background(), "run", "--resume", path, "--max-tokens", "31")
	if code != exitcode.InvalidConfig || !strings.Contains(stderr, "max_tokens: 30 → 31") {
		t.Fatalf("resume with other max_tokens: exit %d\n%s", code, stderr)
	}
	// The resume skips the measured cells and measures the rest into the same file.
	code, stdout, stderr := cli(t, context.Background(), "run", "--resume", path)
	if code != exitcode.OK {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, fmt.Sprintf("%d of 20 cells already measured", len(run.Cells))) {
		t.Errorf("resume stderr:\n%s", stderr)
	}
	after, err := results.ReadFile(filepath.Join(out, "killed.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Cells) != 20 || after.Footer == nil || after.Footer.OK != 20 {
		t.Fatalf("after resume: %d cells, footer %+v", len(after.Cells), after.Footer)
	}
	for _, c := range run.Cells {
		if !after.Cells[c.Cell.Index].Started.Equal(c.Started) {
			t.Errorf("cell %d was measured again", c.Cell.Index)
		}
	}
}

// TestInterruptWritesWhatWasMeasured sends SIGINT mid-run: exit 130, the measured cells and a
// footer with status "interrupted" on disk, and the table of what was measured printed.
func TestInterruptWritesWhatWasMeasured(t *testing.T) {
	t.Parallel()
	dir := testplugins.Dir(t)
	out := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "--", "run", "--out", out, "--run-id", "int",
		"--seq-lens", "1000,2000,4000,8000", "--batch-sizes", "1,2,4,8,16", "--max-tokens", "30", "--time-scale", "0.05")
	cmd.Env = append(os.Environ(), "GENLOAD_TEST_MAIN=1", "GENLOAD_PLUGIN_DIR="+dir)
	cmd.Dir = t.TempDir()
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(out, "int.jsonl")
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if bytes.Count(b, []byte(`"type":"cell"`)) >= 1 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("no cell within 60 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want 130", err)
	}
	run, err := results.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if run.Footer == nil || run.Footer.Status != results.StatusInterrupted || run.Footer.OK < 1 {
		t.Fatalf("footer %+v", run.Footer)
	}
	if !strings.Contains(stdout.String(), "| 1000 | 1 |") {
		t.Errorf("the table of measured cells was not printed:\n%s", stdout.String())
	}
}

// TestAPIKeyNeverLeaks plants a key in the environment and in a key file, runs against a
// server that requires it, makes one run fail, and greps every output for the key.
func TestAPIKeyNeverLeaks(t *testing.T) {
	plainOnly(t) // a grep of the outputs for the key; its runs are TestRunOnTheBuiltinEngine's and TestServerFailureKeepsEarlierCells's kind
	t.Parallel()
	const key = "sk-planted-7f3a9c1e5b"
	rc := &recorder{}
	var authMu sync.Mutex
	var auths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authMu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		authMu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(401)
			fmt.Fprintf(w, `{"error":{"message":"bad key %s","type":"authentication_error"}}`, r.Header.Get("Authorization"))
			return
		}
		rc.ServeHTTP(w, r)
	}))
	defer srv.Close()
	keyFile := filepath.Join(t.TempDir(), "key")
	os.WriteFile(keyFile, []byte(key+"\n"), 0o600)
	out := t.TempDir()
	for _, tc := range []struct{ name, toml string }{
		{"env", "api_key_env = \"MY_KEY\"\n"},
		{"file", fmt.Sprintf("api_key_file = %q\n", keyFile)},
	} {
		cfg := writeConfig(t, fmt.Sprintf("target = %q\nmax_tokens = 3\n%s[matrix]\nseq_lens = [1000]\nbatch_sizes = [2]\n", srv.URL, tc.toml))
		var stdout, stderr bytes.Buffer
		code := doMain(context.Background(), []string{"run", "-c", cfg, "--out", out, "--run-id", tc.name},
			&env{stdout: &stdout, stderr: &stderr, getenv: func(k string) string {
				if k == "MY_KEY" {
					return key
				}
				return ""
			}})
		if code != exitcode.OK {
			t.Fatalf("%s: exit %d\n%s", tc.name, code, stderr.String())
		}
		if bytes.Contains(stdout.Bytes(), []byte(key)) || bytes.Contains(stderr.Bytes(), []byte(key)) {
			t.Errorf("%s: the key was printed", tc.name)
		}
	}
	// A run whose key is wrong fails with the server's 401 message — which echoes the header
	// the server got (the wrong key) but never the configured one.
	cfg := writeConfig(t, fmt.Sprintf("target = %q\napi_key_env = \"NOPE\"\n[matrix]\nseq_lens = [1000]\nbatch_sizes = [1]\n", srv.URL))
	code, _, stderr := cli(t, context.Background(), "run", "-c", cfg, "--out", out, "--run-id", "nokey")
	if code != exitcode.TargetFailed || !strings.Contains(stderr, "401") {
		t.Errorf("no key: exit %d\n%s", code, stderr)
	}
	authMu.Lock()
	sent := 0
	for _, a := range auths {
		if a == "Bearer "+key {
			sent++
		}
	}
	authMu.Unlock()
	if sent == 0 {
		t.Fatal("the key was never sent")
	}
	files, _ := filepath.Glob(filepath.Join(out, "*"))
	if len(files) < 6 {
		t.Fatalf("results files: %v", files)
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte(key)) {
			t.Errorf("%s contains the key", f)
		}
	}
}

func TestLengthsAndPluginCheckCommands(t *testing.T) {
	plainOnly(t) // lengths and plugin check call the plugin from one goroutine
	t.Parallel()
	dir := testplugins.Dir(t)
	code, out, errs := cli(t, context.Background(), "lengths", "--plugin", "uniform", "--mean", "1500", "--batch", "4")
	if code != exitcode.OK || !strings.Contains(out, "lengths: 1500 1500 1500 1500") || !strings.Contains(out, "mean=1500.0") {
		t.Errorf("lengths: exit %d\n%s%s", code, out, errs)
	}
	// 64 lengths of up to 5 digits: the list wraps within 120 columns.
	code, out, errs = cli(t, context.Background(), "lengths", "--plugin", "gamma", "--mean", "4000", "--batch", "64")
	if wide := textcheck.Wider(out, 120); code != exitcode.OK || len(wide) > 0 || strings.Count(out, "\n         ") < 2 {
		t.Errorf("lengths of 64: exit %d, lines over 120 columns %v\n%s%s", code, wide, out, errs)
	}
	// -c reads [lengths] min_len; --min given wins over it.
	withMin := writeConfig(t, "[lengths]\nplugin = \"gamma\"\nmin_len = 3000\n")
	code, out, errs = cli(t, context.Background(), "lengths", "-c", withMin, "--mean", "4000", "--batch", "8")
	if code != exitcode.OK || !strings.Contains(out, " min=3000 ") {
		t.Errorf("lengths -c with min_len 3000: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = cli(t, context.Background(), "lengths", "-c", withMin, "--min", "10", "--mean", "4000", "--batch", "8")
	if code != exitcode.OK || !strings.Contains(out, " min=") || strings.Contains(out, " min=3000 ") {
		t.Errorf("lengths -c with min_len 3000 and --min 10: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = cli(t, context.Background(), "plugin", "check", filepath.Join(dir, "gamma.wasm"))
	if code != exitcode.OK || !strings.Contains(out, "ok   config") || !strings.Contains(out, "kind lengths") {
		t.Errorf("plugin check gamma: exit %d\n%s%s", code, out, errs)
	}
	notWasm := filepath.Join(t.TempDir(), "x.wasm")
	os.WriteFile(notWasm, []byte("#!/bin/sh\n"), 0o644)
	code, _, errs = cli(t, context.Background(), "plugin", "check", notWasm)
	if code != exitcode.PluginRejected || !strings.Contains(errs, "x.wasm") {
		t.Errorf("plugin check of a non-wasm file: exit %d\n%s", code, errs)
	}
	code, _, errs = cli(t, context.Background(), "lengths", "--plugin", "gamma", "--set", "kk=1")
	if code != exitcode.PluginRejected || !strings.Contains(errs, "kk") {
		t.Errorf("bad plugin config: exit %d\n%s", code, errs)
	}
	// Flags out of range and values JSON cannot carry are usage errors that name the flag,
	// caught before any plugin is loaded.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--mean", "2147483648"}, "--mean 2147483648: want a mean length of 1 … 2147483647 tokens"},
		{[]string{"--mean", "0"}, "--mean 0: want a mean length of 1"},
		{[]string{"--batch", "-1"}, "--batch -1: want a batch size of 0 … 1048576"},
		{[]string{"--min", "10", "--max", "5"}, "--min 10 --max 5: want 1 ≤ min ≤ max"},
		{[]string{"--call-timeout", "0s"}, "--call-timeout 0s: want a positive duration"},
		{[]string{"--set", "k=nan"}, "--set k=nan: NaN is not a finite number"},
		{[]string{"--set", "k=-inf"}, "--set k=-inf: -Inf is not a finite number"},
		{[]string{"--set", "k=[1, nan]"}, "--set k=[1, nan]: NaN is not a finite number"},
		{[]string{"--set", "k=1e400"}, "--set k=1e400: number out of the range of a float64"},
	} {
		code, _, errs = cli(t, context.Background(), append([]string{"lengths", "--plugin", "no-such-plugin"}, c.args...)...)
		if code != exitcode.Usage || !strings.Contains(errs, c.want) {
			t.Errorf("lengths %v: exit %d, want %d with %q\n%s", c.args, code, exitcode.Usage, c.want, errs)
		}
	}
}

// TestSameSeedSameBodies: two runs of one config send byte-identical request bodies, in
// every mode.
func TestSameSeedSameBodies(t *testing.T) {
	plainOnly(t) // six runs against a recorder; TestRunWritesPerRequestRecords races a routed run; host/run pins the bodies too
	t.Parallel()
	bodies := func(mode string, seed int) [][]byte {
		rc := &recorder{}
		srv := httptest.NewServer(rc)
		defer srv.Close()
		cfg := writeConfig(t, fmt.Sprintf("target = %q\nmode = %q\nseed = %d\nmax_tokens = 2\n[matrix]\nseq_lens = [1000, 3000]\nbatch_sizes = [1, 5]\n", srv.URL, mode, seed))
		if code, _, stderr := cli(t, context.Background(), "run", "-c", cfg, "--out", t.TempDir()); code != exitcode.OK {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		var out [][]byte
		for _, r := range rc.reqs {
			out = append(out, r.raw)
		}
		// routed requests of a cell arrive in any order
		slices.SortFunc(out, bytes.Compare)
		return out
	}
	for _, mode := range []string{"array", "routed", "n"} {
		a, b := bodies(mode, 7), bodies(mode, 7)
		if !slices.EqualFunc(a, b, bytes.Equal) {
			t.Errorf("%s: two runs with seed 7 sent different bodies", mode)
		}
		if len(a) == 0 || !bytes.Contains(a[0], []byte(`"seed":7`)) {
			t.Errorf("%s: the body does not carry the seed", mode)
		}
	}
}

// TestTextPromptsAreCountedExactly: with prompt.format = "text" the server re-tokenizes the
// decoded prompts; the per-cell deviation is what it counted minus what genload built, and
// since the prompts' ids are the canonical tokenization of their text it is 0.
func TestTextPromptsAreCountedExactly(t *testing.T) {
	plainOnly(t) // one run of text prompts; host/run races TestTextPromptsServerBOS
	t.Parallel()
	out := t.TempDir()
	cfg := writeConfig(t, "max_tokens = 4\n[prompt]\nformat = \"text\"\n[matrix]\nseq_lens = [8000]\nbatch_sizes = [4]\n[engine]\ntime_scale = 0.01\n")
	code, stdout, stderr := cli(t, context.Background(), "run", "-c", cfg, "--out", out, "--run-id", "text")
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	run, err := results.ReadFile(filepath.Join(out, "text.json"))
	if err != nil {
		t.Fatal(err)
	}
	c := run.Cells[0]
	sum := 0
	for _, l := range c.Lengths.Each {
		sum += l
	}
	if c.PromptTokenDeviation != c.Figures.PromptTokens-sum {
		t.Errorf("deviation %d, want server %d − built %d", c.PromptTokenDeviation, c.Figures.PromptTokens, sum)
	}
	// The engine counts text prompts with the run's tokenizer: exactly what was built.
	if c.PromptTokenDeviation != 0 || c.Figures.PromptTokens != sum || strings.Contains(stdout, "the server counted") {
		t.Errorf("deviation %d (server %d, built %d), want 0:\n%s", c.PromptTokenDeviation, c.Figures.PromptTokens, sum, stdout)
	}
}

// TestContextTooSmallFailsBeforeAnyRequest: a context that cannot hold chat template +
// suffix + body + max_tokens is an error before the first completions request.
func TestContextTooSmallFailsBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	rc := &recorder{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	cfg := writeConfig(t, fmt.Sprintf("target = %q\ncontext = 120\n", srv.URL))
	code, _, stderr := cli(t, context.Background(), "run", "-c", cfg, "--out", t.TempDir())
	if code != exitcode.InvalidConfig || !strings.Contains(stderr, "context 120 (bench.toml [context]) minus max_tokens 100 is below the shortest prompt") {
		t.Errorf("exit %d\n%s", code, stderr)
	}
	if len(rc.reqs) != 0 {
		t.Errorf("%d completions requests were sent", len(rc.reqs))
	}
}

// TestServerFailureKeepsEarlierCells: the built-in engine answers the first two cells, then
// fails in one way per case. The run stops with TargetFailed and one clear line; the two cells
// measured before stay on disk, and the failed cell is recorded with the reason.
func TestServerFailureKeepsEarlierCells(t *testing.T) {
	t.Parallel()
	ecfg := engine.DefaultConfig()
	ecfg.TimeScale = 0.01
	eng, err := engine.New(ecfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	cases := []struct {
		name   string
		header [2]string // fault header to add after two cells; empty: a non-JSON 200 body
		want   string
	}{
		{"http 500", [2]string{"X-Genload-Fault-Status", "500"}, "500"},
		{"http 429", [2]string{"X-Genload-Fault-Status", "429"}, "429"},
		{"http 400", [2]string{"X-Genload-Fault-Status", "400"}, "400"},
		{"error event mid-stream", [2]string{"X-Genload-Error-After", "3"}, "server"},
		{"reset mid-stream", [2]string{"X-Genload-Reset-After", "3"}, "POST"},
		{"stream cut mid-event", [2]string{"X-Genload-Cut-After", "3"}, "POST"},
		{"non-JSON body", [2]string{}, "POST"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			completions := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/v1/completions" {
					mu.Lock()
					completions++
					n := completions
					mu.Unlock()
					if n > 4 { // two cells: warmup + measured each
						if tc.header[0] == "" {
							w.Header().Set("Content-Type", "text/event-stream")
							fmt.Fprint(w, "data: <html>not json</html>\n\n")
							return
						}
						r.Header.Set(tc.header[0], tc.header[1])
					}
				}
				eng.Handler().ServeHTTP(w, r)
			}))
			defer srv.Close()
			out := t.TempDir()
			cfg := writeConfig(t, fmt.Sprintf("target = %q\nmax_tokens = 8\nmetrics = \"off\"\ntoken_counts = \"usage\"\n[warmup]\nretries = 1\nretry_delay = \"1ms\"\n[matrix]\nseq_lens = [1000]\nbatch_sizes = [1, 2, 4, 8]\n", srv.URL))
			code, stdout, stderr := cli(t, context.Background(), "run", "-c", cfg, "--out", out, "--run-id", "f")
			t.Logf("exit %d: %s", code, firstLine(stderr, "genload run:"))
			if code != exitcode.TargetFailed {
				t.Fatalf("exit %d, want %d\n%s", code, exitcode.TargetFailed, stderr)
			}
			if !strings.Contains(stderr, "genload run: cell L=1000,B=4: ") || !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr lacks the failing cell and %q:\n%s", tc.want, stderr)
			}
			run, err := results.ReadFile(filepath.Join(out, "f.json"))
			if err != nil {
				t.Fatal(err)
			}
			if len(run.Cells) != 3 || run.Cells[0].Status != results.StatusOK || run.Cells[1].Status != results.StatusOK ||
				run.Cells[2].Status != results.StatusError || run.Cells[2].Error == "" {
				t.Fatalf("cells: %+v", run.Cells)
			}
			if !strings.Contains(stdout, "| 1000 | 2 |") || !strings.Contains(stdout, "✗ L=1000,B=4:") {
				t.Errorf("table:\n%s", stdout)
			}
		})
	}
}

// firstLine returns the first line of s that starts with prefix (the error line of a run).
func firstLine(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

func TestFlagsAfterArgumentsAndHelpOnce(t *testing.T) {
	dir := testplugins.Dir(t)
	// --set after the file is still a flag.
	code, out, errs := cli(t, context.Background(), "plugin", "check", filepath.Join(dir, "gamma.wasm"), "--set", "k=2")
	if code != exitcode.OK || !strings.Contains(out, "ok   trial") {
		t.Errorf("plugin check FILE --set: exit %d\n%s%s", code, out, errs)
	}
	for _, cmd := range []string{"run", "serve", "lengths", "plugin", "consistency", "diff", "plot", "version"} {
		code, out, _ := cli(t, context.Background(), cmd, "--help")
		if code != exitcode.OK || strings.Count(out, "Usage: genload "+cmd) != 1 {
			t.Errorf("%s --help: exit %d, usage shown %d times", cmd, code, strings.Count(out, "Usage: genload "+cmd))
		}
	}
}

// TestPrecedenceDefaultsFileFlags: defaults < bench.toml < flags, key by key.
func TestPrecedenceDefaultsFileFlags(t *testing.T) {
	t.Parallel()
	rc := &recorder{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	out := t.TempDir()
	// file: seed 9, max_tokens 6, gamma k = 2; flags: max_tokens 3, --set k=4.
	cfg := writeConfig(t, fmt.Sprintf("target = %q\nseed = 9\nmax_tokens = 6\n[lengths.config]\nk = 2.0\n[matrix]\nseq_lens = [1500]\nbatch_sizes = [2]\n", srv.URL))
	code, _, stderr := cli(t, context.Background(), "run", "-c", cfg, "--out", out, "--run-id", "p", "--max-tokens", "3", "--set", "k=4")
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	run, err := results.ReadFile(filepath.Join(out, "p.json"))
	if err != nil {
		t.Fatal(err)
	}
	c := run.Header.Config
	cases := []struct {
		key       string
		got, want any
	}{
		{"seed (file over default 42)", c.Seed, uint64(9)},
		{"max_tokens (flag over file 6)", c.MaxTokens, 3},
		{"lengths.config.k (--set over file 2.0)", c.Lengths.Config["k"], float64(4)},
		{"mode (default)", c.Mode, "array"},
		{"warmup.retries (default)", c.Warmup.Retries, 3},
		{"timeouts.stall_steps (default)", c.Timeouts.StallSteps, 20},
		{"timeouts.stall_min (default)", c.Timeouts.StallMin.Duration, 10 * time.Second},
	}
	for _, tc := range cases {
		if fmt.Sprint(tc.got) != fmt.Sprint(tc.want) {
			t.Errorf("%s = %v, want %v", tc.key, tc.got, tc.want)
		}
	}
	if last := rc.reqs[len(rc.reqs)-1]; last.Body.MaxTokens != 3 {
		t.Errorf("the server got max_tokens %d, want 3", last.Body.MaxTokens)
	}
}

// The run's first lines say what is measured where — cells, target, model, context and its
// source, results file — each within the width the tables keep.
func TestRunStartLinesFitTheTableWidth(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	cfg := writeConfig(t, "max_tokens = 4\nmetrics = \"off\"\n[matrix]\nseq_lens = [1000]\nbatch_sizes = [1, 2]\n[engine]\ntime_scale = 0.05\n")
	code, _, stderr := cli(t, context.Background(), "run", "-c", cfg, "--out", out, "--run-id", "w")
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	lines := strings.Split(stderr, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "genload ") })
	if i < 0 || i+2 >= len(lines) {
		t.Fatalf("no start line:\n%s", stderr)
	}
	start := lines[i : i+3]
	// The built-in engine serves max_model_len 131072 (engine.DefaultConfig), below the
	// embedded tokenizer's limit, so the server's figure is the context.
	wants := []string{": 2 cells against http://127.0.0.1:", "  model genload-sim, context 131072 from server /v1/models max_model_len",
		"  results → " + filepath.Join(out, "w.jsonl")}
	for k, l := range start {
		if !strings.Contains(l, wants[k]) {
			t.Errorf("start line %d = %q, want it to hold %q", k+1, l, wants[k])
		}
		if n := len([]rune(l)); n > report.NarrowWidth {
			t.Errorf("start line %d is %d columns wide (> %d): %q", k+1, n, report.NarrowWidth, l)
		}
	}
}
