package merge_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
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

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/host/merge"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/run"
	"github.com/genload/genload/host/shard"
	"github.com/genload/genload/host/tokenizer"
)

// measuredTokens is the max_tokens of the test runs: the measured requests carry it, the
// warmups and probes 1.
const measuredTokens = 5

// bodyServer is a built-in engine behind a proxy that keeps the SHA-256 of every completions
// body with max_tokens = measuredTokens (a measured request).
type bodyServer struct {
	url    string
	mu     sync.Mutex
	bodies []string
}

func newBodyServer(t *testing.T, tok *tokenizer.Tokenizer) *bodyServer {
	t.Helper()
	ecfg := engine.DefaultConfig()
	ecfg.TimeScale = 0.05
	eng, err := engine.New(ecfg, tok)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	bs := &bodyServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/completions" {
			b, _ := io.ReadAll(r.Body)
			var req struct {
				MaxTokens int `json:"max_tokens"`
			}
			if json.Unmarshal(b, &req) == nil && req.MaxTokens == measuredTokens {
				bs.mu.Lock()
				bs.bodies = append(bs.bodies, fmt.Sprintf("%x %d", sha256.Sum256(b), len(b)))
				bs.mu.Unlock()
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		eng.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	bs.url = srv.URL
	return bs
}

func testConfig(t *testing.T, target, out string) *config.Config {
	t.Helper()
	src := fmt.Sprintf("target = %q\nmax_tokens = %d\nmetrics = \"off\"\nout = %q\n[matrix]\nseq_lens = [300, 1000, 2000]\nbatch_sizes = [1, 2, 3]\n",
		target, measuredTokens, out)
	c, err := config.Parse("bench.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// cellKey is what must be equal cell by cell between a merged and a single-process run: the
// cell (index, L, B, first corpus row), its status and every prompt's length.
func cellKey(c results.Cell) string {
	return fmt.Sprintf("%+v %s %v", c.Cell, c.Status, c.Lengths.Each)
}

// Three shard processes, each against its own built-in engine, measure exactly the cells of
// one process: the same cells with the same prompt lengths, and the measured requests' bodies
// (prompt token ids, seed, every field) byte for byte the same multiset.
func TestShardsMergeIntoTheSingleRun(t *testing.T) {
	t.Setenv(testplugins.EnvPluginDir, testplugins.Dir(t))
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	one := newBodyServer(t, tok)
	single, err := run.Run(context.Background(), testConfig(t, one.url, dir), run.Options{RunID: "single"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	var files, shardBodies []string
	for i := range n {
		srv := newBodyServer(t, tok)
		res, err := run.Run(context.Background(), testConfig(t, srv.url, dir), run.Options{RunID: fmt.Sprintf("nightly-shard-%d-of-%d", i, n), Shard: shard.Spec{Index: i, Count: n}})
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
		if h := res.Run.Header.Shard; h == nil || h.Index != i || h.Count != n || h.MatrixCells != 9 {
			t.Fatalf("shard %d header: %+v", i, h)
		}
		files = append(files, res.JSON)
		shardBodies = append(shardBodies, srv.bodies...)
	}
	in, err := merge.Read(files)
	if err != nil {
		t.Fatal(err)
	}
	got, err := merge.Join(in, merge.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Run.Header.RunID != "nightly" || len(got.Run.Header.Merged) != n || got.Run.Footer.OK != 9 {
		t.Fatalf("merged header %q, %d shards, footer %+v", got.Run.Header.RunID, len(got.Run.Header.Merged), got.Run.Footer)
	}
	if !slices.Equal(got.Run.Header.Cells, single.Run.Header.Cells) {
		t.Fatalf("merged matrix %v\nsingle %v", got.Run.Header.Cells, single.Run.Header.Cells)
	}
	var a, b []string
	for _, c := range got.Run.Cells {
		a = append(a, cellKey(c))
	}
	for _, c := range single.Run.Cells {
		b = append(b, cellKey(c))
	}
	if !slices.Equal(a, b) {
		t.Fatalf("merged cells\n%s\nsingle\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	// 9 cells of B = 1, 2, 3 in array mode: one measured request per cell.
	slices.Sort(shardBodies)
	slices.Sort(one.bodies)
	if len(one.bodies) != 9 || !slices.Equal(shardBodies, one.bodies) {
		t.Fatalf("measured bodies: shards %d %v\nsingle %d %v", len(shardBodies), shardBodies, len(one.bodies), one.bodies)
	}

	// A killed shard: its file lost its footer and last cell. Merge refuses and names it.
	killed := filepath.Join(dir, "killed.jsonl")
	kb, err := os.ReadFile(strings.TrimSuffix(files[1], ".json") + ".jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(kb), "\n"), "\n")
	if err := os.WriteFile(killed, []byte(strings.Join(lines[:len(lines)-2], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	in2, err := merge.Read([]string{files[0], killed, files[2]})
	if err != nil {
		t.Fatal(err)
	}
	_, err = merge.Join(in2, merge.Options{})
	if err == nil || !strings.Contains(err.Error(), "shard 1/3 ("+killed+") is incomplete: 1 of 3 cells not recorded") ||
		!strings.Contains(err.Error(), "no footer: the run was killed") {
		t.Fatalf("killed shard: err = %v", err)
	}
	// With Partial, the cells there are merged and the footer says what is missing.
	p, err := merge.Join(in2, merge.Options{Partial: true})
	if err != nil || len(p.Run.Cells) != 8 || p.Run.Footer.Status != results.StatusError || len(p.Problems) != 1 {
		t.Fatalf("partial: err %v, %d cells, footer %+v", err, len(p.Run.Cells), p.Run.Footer)
	}

	// A missing shard, a duplicated one, and a file of another configuration.
	_, err = merge.Join(in[:1:1], merge.Options{})
	if err == nil || !strings.Contains(err.Error(), "shard 1/3, 2/3 missing (given: shards 0 of 3)") {
		t.Fatalf("missing: err = %v", err)
	}
	_, err = merge.Join([]merge.Input{in[0], in[1], in[1], in[2]}, merge.Options{})
	if err == nil || !strings.Contains(err.Error(), "shard 1/3 given twice") {
		t.Fatalf("duplicated: err = %v", err)
	}
	other := *in[2].Run
	oc := *other.Header.Config
	oc.MaxTokens = 7
	other.Header.Config = &oc
	_, err = merge.Join([]merge.Input{in[0], in[1], {File: "other.json", Run: &other}}, merge.Options{})
	if err == nil || !strings.Contains(err.Error(), "not shards of one run") || !strings.Contains(err.Error(), "config.max_tokens: 5 → 7") {
		t.Fatalf("mixed configs: err = %v", err)
	}
	_, err = merge.Join([]merge.Input{in[0], {File: "single.json", Run: single.Run}}, merge.Options{})
	if err == nil || !strings.Contains(err.Error(), "single.json is not a shard") {
		t.Fatalf("unsharded: err = %v", err)
	}
}
