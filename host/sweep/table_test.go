package sweep

import (
	"bytes"
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/internal/textcheck"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/results"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current Table")

// tablePoint is a point of a sweep over profile × spec_tokens with results in dir.
func tablePoint(i int, name, profile string, spec int, dir string) PointResult {
	fwd := &Spread{Min: results.Millis(179 * time.Microsecond), Median: results.Millis(387 * time.Microsecond), Max: results.Millis(913 * time.Microsecond)}
	ttft := results.Millis(2400 * time.Microsecond)
	return PointResult{Index: i, Name: name, Status: StatusOK, Labels: map[string]any{"hardware": "built-in engine", "profile": profile, "spec_tokens": int64(spec)},
		ReadyAfter: results.Millis(900 * time.Millisecond), Cells: 6, Measured: 6, PerForward: fwd, TTFT: &ttft,
		Results: filepath.Join(dir, name+".jsonl"), JSON: filepath.Join(dir, name+".json")}
}

// The sweep summary is pinned by golden files and keeps within 120 columns as valid
// markdown: the four points of sweep.toml (long names: an index column, the names under it;
// the varying labels as columns, the shared one under the table); a sweep with short names
// and a failed point (its error on a line of its own, wrapped); and one whose labels do not
// fit as columns (a line per point); one whose names alone are too long (an index column).
// `go test ./host/sweep -run TableGolden -update`
// rewrites the files.
func TestTableGolden(t *testing.T) {
	dir := "/home/user/bench/results/sweep-profiles/"
	profiles := &Summary{Sweep: "profiles", Points: []PointResult{
		tablePoint(0, "00_profile=moe-30b-a3b_spec-tokens=0", "moe-30b-a3b", 0, dir),
		tablePoint(1, "01_profile=moe-30b-a3b_spec-tokens=2", "moe-30b-a3b", 2, dir),
		tablePoint(2, "02_profile=dense-8b_spec-tokens=0", "dense-8b", 0, dir),
		tablePoint(3, "03_profile=dense-8b_spec-tokens=2", "dense-8b", 2, dir),
	}}
	failed := &Summary{Sweep: "tp", Points: []PointResult{tablePoint(0, "tp1", "dense-8b", 0, dir), tablePoint(1, "tp2", "dense-8b", 2, dir)}}
	failed.Points[1].Status, failed.Points[1].PerForward, failed.Points[1].TTFT, failed.Points[1].Measured = StatusServer, nil, nil, 0
	failed.Points[1].Error = "the server exited during the run (exit status 1); last lines of " + dir + "tp2.server.log:\n  CUDA out of memory | tried to allocate 2.00 GiB (GPU 0; 79.10 GiB total capacity; 77.80 GiB already allocated)"
	failed.Points[1].JSON = dir + "tp2-1764620000.json" // measured again under another run id
	wide := &Summary{Sweep: "deployments", Points: []PointResult{
		tablePoint(0, "h100-tp8-vllm-0.11-fp8-eagle3", "h100-80gb-sxm5-nvlink-tp8-fp8-kv", 3, dir),
		tablePoint(1, "h200-tp4-sglang-0.5-fp8-eagle3", "h200-141gb-sxm5-nvlink-tp4-fp8-kv", 3, dir),
	}}
	wide.Points[0].Labels["serve"] = "vllm serve --tensor-parallel-size 8 --kv-cache-dtype fp8"
	wide.Points[1].Labels["serve"] = "python -m sglang.launch_server --tp 4 --kv-cache-dtype fp8_e5m2"
	long := &Summary{Sweep: "long", Points: []PointResult{
		tablePoint(0, "00_vllm-0.11.2-h100-80gb-sxm5-tp8-pp1-fp8-kv-cache-eagle3-draft-3-chunked-prefill-8192", "dense-8b", 0, dir),
		tablePoint(1, "01_vllm-0.11.2-h100-80gb-sxm5-tp8-pp1-fp8-kv-cache-eagle3-draft-3-chunked-prefill-4096", "dense-8b", 0, dir),
	}}
	for name, s := range map[string]*Summary{"profiles.md": profiles, "failed.md": failed, "wide-labels.md": wide, "long-names.md": long} {
		var b bytes.Buffer
		Table(&b, s)
		got := b.String()
		if n, err := textcheck.MarkdownTables(got); n != 1 || err != nil {
			t.Errorf("%s: %d tables, %v:\n%s", name, n, err, got)
		}
		if w := textcheck.Wider(got, report.NarrowWidth); len(w) > 0 {
			t.Errorf("%s: lines wider than %d: %q", name, report.NarrowWidth, w)
		}
		for _, p := range s.Points {
			if !strings.Contains(got, p.Name) {
				t.Errorf("%s: point %s not named", name, p.Name)
			}
		}
		textcheck.Golden(t, filepath.Join("testdata", "golden", name), []byte(got), *update)
	}
}
