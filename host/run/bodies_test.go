package run

import (
	"bytes"
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/host/tokenizer"
)

var updateBodies = flag.Bool("update", false, "rewrite host/run/testdata/bodies.txt from the current request bodies")

// The same bench.toml and seed send byte-identical request bodies, in every request shape and
// prompt format: every completions body of a small run (probes, warmups, measured requests) is
// pinned by its SHA-256 and length in testdata/bodies.txt, so a change in how prompts or bodies
// are built — a refactoring that should change nothing — fails here, and one that means to
// change them shows in the diff of that file (go test ./host/run -run Bodies -update).
func TestRequestBodiesAreReproducible(t *testing.T) {
	plainOnly(t) // a byte-exact pin of the bodies; the routed and retry tests race the sending
	t.Setenv(testplugins.EnvPluginDir, testplugins.Dir(t))
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatal(err)
	}
	ecfg := engine.DefaultConfig()
	ecfg.TimeScale = 0.05
	eng, err := engine.New(ecfg, tok) // the run's tokenizer, as the built-in target serves it

	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	var lines []string
	for _, shape := range []struct{ mode, format string }{{"array", "tokens"}, {"routed", "tokens"}, {"n", "tokens"}, {"array", "text"}, {"routed", "text"}} {
		var mu sync.Mutex
		var sums []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/completions" {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				sums = append(sums, fmt.Sprintf("%x %d", sha256.Sum256(b), len(b)))
				mu.Unlock()
				r.Body = io.NopCloser(bytes.NewReader(b))
			}
			eng.Handler().ServeHTTP(w, r)
		}))
		cfg := probeCfg(t, fmt.Sprintf("target = %q\nmode = %q\nmax_tokens = 6\nmetrics = \"off\"\nout = %q\n[prompt]\nformat = %q\n[matrix]\nseq_lens = [300, 2000]\nbatch_sizes = [1, 3]\n",
			srv.URL, shape.mode, t.TempDir(), shape.format))
		var stderr bytes.Buffer
		_, err := Run(context.Background(), cfg, Options{Stderr: &stderr, RunID: "bodies"})
		srv.Close()
		if err != nil {
			t.Fatalf("%s/%s: %v\n%s", shape.mode, shape.format, err, stderr.String())
		}
		slices.Sort(sums) // routed requests of a cell go out concurrently
		for _, s := range sums {
			lines = append(lines, shape.mode+"/"+shape.format+" "+s)
		}
	}
	got := strings.Join(lines, "\n") + "\n"
	path := filepath.Join("testdata", "bodies.txt")
	if *updateBodies {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./host/run -run Bodies -update creates it)", err)
	}
	if got != string(want) {
		t.Errorf("request bodies differ from testdata/bodies.txt:\n got\n%s\nwant\n%s", got, want)
	}
}

// Text prompts against a server whose tokenizer is not genload's (the engine's byte-level
// fallback): the run stops before the first cell and names the setting to change.
func TestTextPromptsAgainstAnotherTokenizer(t *testing.T) {
	t.Setenv(testplugins.EnvPluginDir, testplugins.Dir(t))
	url := startEngine(t, nil)
	cfg := probeCfg(t, fmt.Sprintf("target = %q\nmax_tokens = 6\nout = %q\n[prompt]\nformat = \"text\"\n[matrix]\nseq_lens = [300]\nbatch_sizes = [1]\n", url, t.TempDir()))
	res, err := Run(context.Background(), cfg, Options{RunID: "othertok"})
	if err == nil || !strings.Contains(err.Error(), "the server's tokenizer is not genload's; set [tokenizer] path") {
		t.Fatalf("err = %v", err)
	}
	if res != nil && len(res.Run.Cells) > 0 {
		t.Fatalf("%d cells sent; want none", len(res.Run.Cells))
	}
}

// startEngine starts a built-in engine at time scale 0.05 (steps of ~0.2 ms) serving tok (nil:
// its byte-level fallback) on a loopback port, closed with the test; it returns its base URL.
func startEngine(t *testing.T, tok engine.Tokenizer) string {
	t.Helper()
	ecfg := engine.DefaultConfig()
	ecfg.TimeScale = 0.05
	eng, err := engine.New(ecfg, tok)
	if err != nil {
		t.Fatal(err)
	}
	u, err := eng.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return u
}
