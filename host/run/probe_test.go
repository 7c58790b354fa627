package run

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/dispatch"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/host/tokenizer"
)

const goStringOnly = "json: cannot unmarshal array into Go struct field CompletionRequest.prompt of type string"

// stringOnlyServer accepts only "prompt": "text" (as Go OpenAI layers that type the prompt
// as a string do) and reports maxModelLen in /v1/models.
func stringOnlyServer(t *testing.T, maxModelLen int) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/v1/models":
			fmt.Fprintf(w, `{"object":"list","data":[{"id":"m","max_model_len":%d}]}`, maxModelLen)
			return
		case "/v1/completions":
		default:
			http.NotFound(w, r)
			return
		}
		var req struct {
			Prompt    json.RawMessage `json:"prompt"`
			MaxTokens int             `json:"max_tokens"`
		}
		json.Unmarshal(body, &req)
		if bytes.HasPrefix(bytes.TrimSpace(req.Prompt), []byte("[")) {
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"error":{"message":%q}}`, goStringOnly)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 1; i <= req.MaxTokens; i++ {
			fin := "null"
			if i == req.MaxTokens {
				fin = `"length"`
			}
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\" t\",\"finish_reason\":%s}]}\n\n", fin)
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestAllowedShapes(t *testing.T) {
	all := dispatch.Shapes
	cases := []struct {
		mode, format string
		several      bool
		want         []dispatch.Shape
	}{
		{"auto", "auto", false, all},
		{"auto", "auto", true, []dispatch.Shape{dispatch.ShapeIDs, dispatch.ShapeString}},
		{"auto", "tokens", false, []dispatch.Shape{dispatch.ShapeIDLists, dispatch.ShapeIDs}},
		{"array", "auto", false, []dispatch.Shape{dispatch.ShapeIDLists, dispatch.ShapeStrings}},
		{"routed", "text", false, []dispatch.Shape{dispatch.ShapeString}},
		{"n", "auto", false, []dispatch.Shape{dispatch.ShapeIDs, dispatch.ShapeString}},
	}
	for _, c := range cases {
		if got := allowedShapes(c.mode, c.format, c.several); !slices.Equal(got, c.want) {
			t.Errorf("allowedShapes(%s, %s, several %v) = %v, want %v", c.mode, c.format, c.several, got, c.want)
		}
	}
}

// failingEngine starts a built-in engine (tokenizer tok, nil for its own; steps at timeScale)
// that answers every second completion request with 503, closed when the test ends, and
// returns its URL.
func failingEngine(t *testing.T, tok *tokenizer.Tokenizer, timeScale float64) string {
	t.Helper()
	ecfg := engine.DefaultConfig()
	ecfg.TimeScale = timeScale
	ecfg.Faults.Status, ecfg.Faults.Every = 503, 2
	var eng *engine.Engine
	var err error
	if tok == nil { // a nil *Tokenizer is not a nil interface: the engine's own is asked for by nil
		eng, err = engine.New(ecfg, nil)
	} else {
		eng, err = engine.New(ecfg, tok)
	}
	if err != nil {
		t.Fatal(err)
	}
	url, err := eng.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return url
}

func probeCfg(t *testing.T, src string) *config.Config {
	c, err := config.Parse("bench.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// mode = prompt.format = "auto" against a server that accepts only a string: routed + text,
// and one line saying why.
func TestProbeChoosesWhatTheServerAccepts(t *testing.T) {
	srv := stringOnlyServer(t, 4096)
	tok, _ := tokenizer.Default()
	cfg := probeCfg(t, fmt.Sprintf("target = %q\nmode = \"auto\"\n[prompt]\nformat = \"auto\"\n", srv.URL))
	info, err := probeServer(context.Background(), cfg, clientOptions(cfg, srv.URL, "m", "", cfg.ResolvedWorkers(srv.URL)), tok, false)
	if err != nil {
		t.Fatal(err)
	}
	if info.cfg.Mode != "routed" || info.cfg.Prompt.Format != "text" || cfg.Mode != "auto" {
		t.Fatalf("chose mode %q format %q (caller's cfg now %q)", info.cfg.Mode, info.cfg.Prompt.Format, cfg.Mode)
	}
	why := "the server rejected an array of token-id lists (status 400: " + goStringOnly + "); one token-id list (status 400: " + goStringOnly +
		"); an array of strings (status 400: " + goStringOnly + "), and accepts a string"
	wantLine := fmt.Sprintf("probe of %s/v1/completions: mode = \"routed\", prompt.format = \"text\" (auto): %s; no usage, no /metrics, no tokenize endpoint", srv.URL, why)
	if info.line != wantLine {
		t.Fatalf("line\n got %q\nwant %q", info.line, wantLine)
	}
	if info.cfg.Chosen["mode"] != "routed: "+why || info.cfg.Chosen["prompt.format"] != "text: "+why {
		t.Fatalf("chosen = %v", info.cfg.Chosen)
	}
}

// A setting fixed to what the server rejects: the error names the settings and what works.
func TestProbeRejectionNamesTheSettings(t *testing.T) {
	srv := stringOnlyServer(t, 4096)
	tok, _ := tokenizer.Default()
	cfg := probeCfg(t, fmt.Sprintf("target = %q\nmode = \"auto\"\n[prompt]\nformat = \"tokens\"\n", srv.URL))
	_, err := probeServer(context.Background(), cfg, clientOptions(cfg, srv.URL, "m", "", cfg.ResolvedWorkers(srv.URL)), tok, false)
	want := fmt.Sprintf(`bench.toml:2: capability probe of %s/v1/completions: [mode] = "auto" / [prompt.format] = "tokens" rejected: `+
		`the server refused an array of token-id lists (status 400: %s); one token-id list (status 400: %s). It accepts a string: set mode = "routed" and prompt.format = "text"`,
		srv.URL, goStringOnly, goStringOnly)
	if err == nil || err.Error() != want {
		t.Fatalf("err\n got %v\nwant %s", err, want)
	}
}

// The built-in engine takes the preferred shape at once; with nothing "auto" no completion
// is probed, but the tokenize endpoint and /metrics are.
func TestProbeBuiltin(t *testing.T) {
	tok, _ := tokenizer.Default()
	cfg := probeCfg(t, "mode = \"auto\"\n[prompt]\nformat = \"auto\"\n[engine]\ntime_scale = 0.001\n")
	eng, url, _, err := startBuiltin(cfg, tok, "")
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	info, err := probeServer(context.Background(), cfg, clientOptions(cfg, url, "", "", cfg.ResolvedWorkers(url)), tok, false)
	if err != nil {
		t.Fatal(err)
	}
	if info.cfg.Mode != "array" || info.cfg.Prompt.Format != "tokens" || len(info.caps.Shapes) != 1 {
		t.Fatalf("chose %q %q after %d shapes", info.cfg.Mode, info.cfg.Prompt.Format, len(info.caps.Shapes))
	}
	if !strings.HasSuffix(info.line, `(auto): the server accepts an array of token-id lists; usage on every chunk, /metrics answers, POST /tokenize (prompt)`) {
		t.Fatalf("line %q", info.line)
	}
	fixed := probeCfg(t, "[engine]\ntime_scale = 0.001\n")
	info, err = probeServer(context.Background(), fixed, clientOptions(fixed, url, "", "", fixed.ResolvedWorkers(url)), tok, false)
	if err != nil || info.cfg != fixed || info.line != "" || len(info.caps.Shapes) != 0 || info.tokens == nil || !info.caps.Metrics {
		t.Fatalf("fixed settings: err %v, line %q, %d shapes, tokens %v", err, info.line, len(info.caps.Shapes), info.tokens)
	}
}

// Routed workers on two servers: each is asked for its context; the run's is the smallest.
func TestWorkerContexts(t *testing.T) {
	a, b := stringOnlyServer(t, 32768), stringOnlyServer(t, 4096)
	cfg := probeCfg(t, fmt.Sprintf("target = %q\nmode = \"routed\"\n[[workers]]\nname = \"a\"\nurl = %q\n[[workers]]\nname = \"b\"\nurl = %q\n[[workers]]\nname = \"a2\"\nurl = %q\n",
		a.URL, a.URL, b.URL, a.URL+"/v1"))
	each, smallest, src, err := workerContexts(context.Background(), cfg, cfg.ResolvedWorkers(a.URL), a.URL, "m", "", 32768, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(each, []int{32768, 4096, 32768}) || smallest != 4096 || src != "worker b ("+b.URL+") /v1/models max_model_len" {
		t.Fatalf("each %v, smallest %d from %q", each, smallest, src)
	}
	_, _, _, err = workerContexts(context.Background(), cfg, cfg.ResolvedWorkers(a.URL), a.URL, "other", "", 32768, io.Discard)
	if err == nil || err.Error() != fmt.Sprintf(`worker b: [model] "other" is not served by %s (it lists m)`, b.URL) {
		t.Fatalf("err = %v", err)
	}
}

// A whole run with mode = prompt.format = "auto" against a server that accepts only a
// string: every cell is measured routed with text prompts, the line is printed, and the
// header records what was chosen; routed workers' contexts are recorded.
func TestRunAutoAgainstStringOnlyServer(t *testing.T) {
	t.Setenv(testplugins.EnvPluginDir, testplugins.Dir(t))
	srv := stringOnlyServer(t, 8192)
	cfg := probeCfg(t, fmt.Sprintf("target = %q\nmode = \"auto\"\nmax_tokens = 4\nout = %q\n[matrix]\nseq_lens = [1500]\nbatch_sizes = [2]\n[prompt]\nformat = \"auto\"\n",
		srv.URL, t.TempDir()))
	var stderr bytes.Buffer
	res, err := Run(context.Background(), cfg, Options{Stderr: &stderr, RunID: "auto"})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if res.Measured != 1 || !strings.Contains(stderr.String(), `mode = "routed", prompt.format = "text" (auto): the server rejected`) {
		t.Fatalf("measured %d\n%s", res.Measured, stderr.String())
	}
	h := res.Run.Header
	if h.Config.Mode != "routed" || h.Config.Prompt.Format != "text" || !strings.HasPrefix(h.Config.Chosen["mode"], "routed: the server rejected") {
		t.Fatalf("header config mode %q format %q chosen %v", h.Config.Mode, h.Config.Prompt.Format, h.Config.Chosen)
	}
	if len(h.Workers) != 1 || h.Workers[0].Context != 8192 || h.Context != 8192 {
		t.Fatalf("header workers %+v, context %d", h.Workers, h.Context)
	}
}

// A server that answers every second completion request with 503: the cell's measured request
// is resent once, and the cell's record says so, with the reason.
func TestRetriesAreRecordedPerCell(t *testing.T) {
	t.Setenv(testplugins.EnvPluginDir, testplugins.Dir(t))
	url := failingEngine(t, nil, 0.01)
	cfg := probeCfg(t, fmt.Sprintf("target = %q\nmax_tokens = 4\ntoken_counts = \"usage\"\nout = %q\n[matrix]\nseq_lens = [300]\nbatch_sizes = [2]\n[warmup]\nretries = 2\nretry_delay = \"1ms\"\n",
		url, t.TempDir()))
	var stderr bytes.Buffer
	res, err := Run(context.Background(), cfg, Options{Stderr: &stderr, RunID: "retries"})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	c := res.Run.Cells[0]
	if c.Retries == nil || c.Retries.Warmup != 0 || c.Retries.Measured != 1 {
		t.Fatalf("retries %+v, want 0 warmup and 1 measured", c.Retries)
	}
	for k := range c.Retries.Reasons {
		if !strings.Contains(k, "503") {
			t.Errorf("reason %q does not name the 503", k)
		}
	}
}

// Routed workers that all name their server, with target left at "builtin": no built-in
// engine is started, and the run measures (and says it measures) the first worker.
func TestWorkersWithOwnServersNeedNoBuiltinEngine(t *testing.T) {
	t.Setenv(testplugins.EnvPluginDir, testplugins.Dir(t))
	urls := []string{startEngine(t, nil), startEngine(t, nil)}
	cfg := probeCfg(t, fmt.Sprintf("mode = \"routed\"\nmax_tokens = 4\nout = %q\n[matrix]\nseq_lens = [300]\nbatch_sizes = [2]\n[[workers]]\nurl = %q\n[[workers]]\nurl = %q\n",
		t.TempDir(), urls[0], urls[1]))
	var stderr bytes.Buffer
	res, err := Run(context.Background(), cfg, Options{Stderr: &stderr, RunID: "named"})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	h := res.Run.Header
	if h.TargetKind != "external" || h.Target != urls[0] || h.Engine != nil || !strings.Contains(stderr.String(), "no built-in engine is started") {
		t.Fatalf("target %s (%s), engine %v\n%s", h.Target, h.TargetKind, h.Engine, stderr.String())
	}
}
