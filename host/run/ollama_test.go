package run

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/host/tokenizer"
)

// An ollama server (the engine's ollama dialect) with mode and prompt.format "auto": the probe
// finds it by GET /api/version and every request of the run — the probes, the warmups, the
// cells — goes to its native /api/generate; each cell's figures carry the server's own
// eval_duration per forward pass for every sequence, and their counts come from eval_count.
// Behind a proxy that passes /v1 alone (quirk no-native-api) the run speaks /v1/completions.
func TestRunOllamaNative(t *testing.T) {
	t.Setenv(testplugins.EnvPluginDir, testplugins.Dir(t))
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, quirks := range []string{"", "no-native-api"} {
		ecfg := engine.DefaultConfig()
		ecfg.Dialect, ecfg.TimeScale, ecfg.EOSProbability = engine.DialectOllama, 0.05, 0
		ecfg.VocabSize = max(ecfg.VocabSize, tok.VocabSize())
		if ecfg.Quirks, err = engine.ParseQuirks(quirks); err != nil {
			t.Fatal(err)
		}
		eng, err := engine.New(ecfg, tok)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		paths := map[string]int{}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				mu.Lock()
				paths[r.URL.Path]++
				mu.Unlock()
			}
			eng.Handler().ServeHTTP(w, r)
		}))
		cfg := probeCfg(t, fmt.Sprintf("target = %q\nmode = \"auto\"\nmax_tokens = 24\nout = %q\n[prompt]\nformat = \"auto\"\n[matrix]\nseq_lens = [300]\nbatch_sizes = [1, 4]\n",
			srv.URL, t.TempDir()))
		var stderr bytes.Buffer
		res, err := Run(context.Background(), cfg, Options{Stderr: &stderr, RunID: "ollama"})
		srv.Close()
		eng.Close()
		if err != nil {
			t.Fatalf("%q: %v\n%s", quirks, err, stderr.String())
		}
		chosen := res.Run.Header.Config.Chosen
		if quirks != "" {
			if chosen[ChosenAPI] != "" || paths["/api/generate"] != 0 || paths["/v1/completions"] == 0 {
				t.Errorf("/v1 only: api %q, requests %v", chosen[ChosenAPI], paths)
			}
			continue
		}
		if !strings.HasPrefix(chosen[ChosenAPI], "ollama") || chosen["mode"] == "" || res.Run.Header.Config.Mode != config.ModeRouted ||
			!strings.Contains(stderr.String(), "native POST /api/generate") {
			t.Errorf("api %q, mode %q (%q); stderr:\n%s", chosen[ChosenAPI], res.Run.Header.Config.Mode, chosen["mode"], stderr.String())
		}
		if paths["/v1/completions"] != 0 || paths["/api/generate"] == 0 {
			t.Errorf("requests %v, want /api/generate alone", paths)
		}
		for _, c := range res.Run.Cells {
			f := c.Figures
			if f == nil {
				t.Fatalf("%s: %s %s", c.Cell.Key(), c.Status, c.Error)
			}
			st := f.ServerTimings
			if st == nil || st.Source != "ollama eval_duration" || st.PerForward.N != c.Cell.Batch || st.PerForward.Mean <= 0 {
				t.Errorf("%s: server timings %+v", c.Cell.Key(), st)
			}
			if f.TokenSources["choice_usage"] != c.Cell.Batch || f.CompletionTokens != 24*c.Cell.Batch {
				t.Errorf("%s: token sources %v, %d tokens", c.Cell.Key(), f.TokenSources, f.CompletionTokens)
			}
		}
	}
}

// chooseAPI keeps /v1/completions, saying why, for a server that answers /api/version but
// whose /api/generate fails or sends no eval_count, for settings that need arrays or token
// ids, and for a mix of ollama and other servers; a server that is not ollama gets no line.
func TestChooseAPIFallbacks(t *testing.T) {
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatal(err)
	}
	fake := func(generate string, status int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/api/version":
				w.Write([]byte(`{"version":"9.9.9"}`))
			case "/api/generate":
				w.WriteHeader(status)
				w.Write([]byte(generate))
			default:
				http.NotFound(w, r)
			}
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	noMetrics := fake(`{"response":"hi","done":false}`+"\n"+`{"response":"","done":true,"done_reason":"length"}`+"\n", 200)
	failing := fake(`{"error":"boom"}`, 500)
	good := fake(`{"response":"hi","done":false}`+"\n"+`{"response":"","done":true,"done_reason":"length","eval_count":2,"eval_duration":5}`+"\n", 200)
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	cases := []struct {
		name, target, mode, format, extra, line string
		native                                  bool
	}{
		{"ollama", good, "auto", "auto", "", "requests go to its native POST /api/generate", true},
		{"no eval_count", noMetrics, "auto", "auto", "", "sent no eval_count: /v1/completions instead", false},
		{"failing", failing, "routed", "text", "", "/api/generate: status 500: boom): /v1/completions instead", false},
		{"array", good, "array", "auto", "", `with mode = "array" and prompt.format = "auto" genload speaks /v1/completions`, false},
		{"tokens", good, "routed", "tokens", "", `prompt.format = "tokens"`, false},
		{"mixed", good, "routed", "text", fmt.Sprintf("[[workers]]\nurl = %q\n[[workers]]\nurl = %q\n", good, other.URL), "is not ollama", false},
		{"not ollama", other.URL, "auto", "auto", "", "", false},
	}
	for _, c := range cases {
		cfg := probeCfg(t, fmt.Sprintf("target = %q\nmode = %q\n[prompt]\nformat = %q\n%s", c.target, c.mode, c.format, c.extra))
		got, opts, line, err := chooseAPI(context.Background(), cfg, clientOptions(cfg, c.target, "m", "", cfg.ResolvedWorkers(c.target)), tok)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if native := opts.API == "ollama" && apiOf(got) == "ollama"; native != c.native || c.line == "" && line != "" || !strings.Contains(line, c.line) {
			t.Errorf("%s: native %v (api %q), line %q; want native %v, a line with %q", c.name, native, got.Chosen[ChosenAPI], line, c.native, c.line)
		}
		if c.native && (got.Mode != config.ModeRouted || got.Prompt.Format != config.FormatText) || !c.native && got != cfg {
			t.Errorf("%s: mode %q, format %q (config changed: %v)", c.name, got.Mode, got.Prompt.Format, got != cfg)
		}
	}
}
