package main

import (
	"context"
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/textcheck"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/results"
)

var update = flag.Bool("update", false, "rewrite host/cmd/genload/testdata/golden from the commands' current output")

// golden compares got with testdata/golden/name (rewritten with -update) and checks that it
// holds tables well-formed tables of markdown and no line over report.NarrowWidth columns.
func golden(t *testing.T, name, got string, tables int) {
	t.Helper()
	if n, err := textcheck.MarkdownTables(got); n != tables || err != nil {
		t.Errorf("%s: %d markdown tables (want %d), %v:\n%s", name, n, tables, err, got)
	}
	if w := textcheck.Wider(got, report.NarrowWidth); len(w) > 0 {
		t.Errorf("%s: lines wider than %d columns: %q", name, report.NarrowWidth, w)
	}
	textcheck.Golden(t, filepath.Join("testdata", "golden", name), []byte(got), *update)
}

// goldenRun writes results/<id>.json of a 2 × 2 run of the built-in engine at time scale
// 0.05 with the header a run writes (config, tokenizer, context, plugins), fwd =
// slow · (0.5 + B·L/4000) ms, lengths from L/2 to 3L/2, and one warning on L=4000,B=8.
func goldenRun(t *testing.T, dir, id string, slow float64) string {
	t.Helper()
	r := &results.Run{Header: results.Header{Type: "header", Schema: results.Schema, RunID: id, Model: "genload-sim", Target: "http://127.0.0.1:41875",
		TargetKind: "builtin", Tokenizer: "qwen3 (embedded)", Context: 131072, ContextSource: "server /v1/models max_model_len", Config: config.Default(),
		Engine: map[string]any{"profile": "moe-30b-a3b", "time_scale": 0.05}, Plugins: map[string]results.PluginInfo{"lengths": {Name: "gamma", Version: "1.0.0"}}},
		Footer: &results.Footer{Type: "footer", Status: "ok", OK: 4, Elapsed: results.Millis(2500 * time.Millisecond)}}
	for i, k := range [][2]int{{1000, 1}, {1000, 8}, {4000, 1}, {4000, 8}} {
		d := time.Duration(slow * (0.5 + float64(k[0]*k[1])/4000) * float64(time.Millisecond))
		c := results.Cell{Type: "cell", Cell: matrix.Cell{Index: i, SeqLen: k[0], Batch: k[1]}, Status: results.StatusOK,
			Lengths: results.Lengths{Target: k[0], Min: k[0] / 2, Mean: float64(k[0]), Max: 3 * k[0] / 2, Each: []int{k[0] / 2, 3 * k[0] / 2}},
			Figures: &measure.Figures{Sequences: k[1], Counted: k[1], CompletionTokens: 100 * k[1],
				PerForward: measure.Summary{N: k[1], Mean: d, P50: d, P90: d, P99: d, Min: d, Max: d},
				TTFT:       measure.Summary{N: k[1], P50: time.Duration(float64(k[0]) * float64(time.Microsecond))},
				Window:     measure.Window{Valid: true, Steps: 98, PerStep: d}}}
		if k == [2]int{4000, 8} {
			c.Warnings = []string{"realised mean length 3960 is -1.0 % off L = 4000: 1 of 8 lengths clamped to [50, 130972]"}
		}
		r.Cells = append(r.Cells, c)
	}
	p := filepath.Join(dir, id+".json")
	if err := results.WriteJSON(p, r); err != nil {
		t.Fatal(err)
	}
	return p
}

// The polished text output of the commands, pinned: genload report of two files prints the
// legend once, under the first table (none with --no-legend); genload steplog's table has as
// many delimiter cells as headers and its notes under it; genload gpu-time's table and summary.
// Every table is valid markdown and every line within 120 columns.
func TestCommandOutputGolden(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := goldenRun(t, dir, "a", 1)
	b := goldenRun(t, dir, "b", 1.1)
	code, two, stderr := cli(t, ctx, "report", a, b)
	if code != exitcode.OK {
		t.Fatalf("report: exit %d, %s", code, stderr)
	}
	if n := strings.Count(two, "  fwd ms mean      latency per decode forward pass"); n != 1 {
		t.Errorf("report of two runs: the legend %d times, want once", n)
	}
	golden(t, "report-two-runs.md", two, 2)
	_, bare, _ := cli(t, ctx, "report", "--no-legend", a, b)
	if strings.Contains(bare, "latency per decode forward pass") || strings.Count(bare, "| 4000 | 8 |") != 2 {
		t.Errorf("--no-legend: a legend line, or a table missing:\n%s", bare)
	}
	golden(t, "report-two-runs-no-legend.md", bare, 2)

	runPath, logPath := synthRun(t, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	code, sl, stderr := cli(t, ctx, "steplog", runPath, logPath)
	if code != exitcode.OK {
		t.Fatalf("steplog: exit %d, %s", code, stderr)
	}
	golden(t, "steplog.md", sl, 1)

	mk := func(l, b, rep int, wall, warm, meas time.Duration) results.Cell {
		return results.Cell{Type: "cell", Cell: matrix.Cell{SeqLen: l, Batch: b}, Status: results.StatusOK, Elapsed: results.Millis(wall),
			WarmupElapsed: results.Millis(warm), MeasuredElapsed: results.Millis(meas), Repeat: rep}
	}
	ucv := &results.Run{Header: results.Header{Type: "header", Schema: results.Schema, RunID: "ucv", TargetKind: "builtin", Engine: map[string]any{"time_scale": 0.05}},
		Cells: []results.Cell{mk(1000, 1, 1, 3*time.Second, time.Second, 2*time.Second), mk(1000, 1, 2, 3*time.Second, time.Second, 2*time.Second),
			mk(1000, 8, 1, 5*time.Second, time.Second, 3500*time.Millisecond), mk(1000, 8, 2, 5*time.Second, time.Second, 3500*time.Millisecond)},
		Footer: &results.Footer{Type: "footer", Elapsed: results.Millis(17 * time.Second), Status: "ok"}}
	path := filepath.Join(dir, "ucv.json")
	if err := results.WriteJSON(path, ucv); err != nil {
		t.Fatal(err)
	}
	code, gt, stderr := cli(t, ctx, "gpu-time", path)
	if code != exitcode.OK {
		t.Fatalf("gpu-time: exit %d, %s", code, stderr)
	}
	golden(t, "gpu-time-repeats.md", gt, 1)
}
