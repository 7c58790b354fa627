package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/report"
)

func TestSteplogOnARunOfTheBuiltinEngine(t *testing.T) {
	// A run against an engine writing its step log to a file, then genload steplog on the
	// run and the file: every cell was run at its B (the engine schedules exactly what it
	// is sent), so B is the modal occupancy, never exceeded, and the forward time at B is
	// there; --out attaches the same figures to the cells of a copy of the run.
	t.Setenv("GENLOAD_PLUGIN_DIR", testplugins.Dir(t))
	dir := t.TempDir()
	logPath := filepath.Join(dir, "steps.log")
	ecfg := engine.DefaultConfig()
	ecfg.TimeScale = 0.2
	ecfg.StepLogFile = logPath
	ecfg.Noise = engine.Noise{StepCV: 0.05, SlowFactor: 1, Seed: 3}
	eng, err := engine.New(ecfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	url, err := eng.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	cfg := writeConfig(t, fmt.Sprintf(`
max_tokens = 20
out = %q
[matrix]
seq_lens = [500]
batch_sizes = [1, 4]
`, dir))
	if code, stdout, stderr := cli(t, context.Background(), "run", "-c", cfg, "--target", url, "--run-id", "sl"); code != exitcode.OK {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	runPath := filepath.Join(dir, "sl.json")
	outPath := filepath.Join(dir, "sl-steplog.json")
	code, stdout, stderr := cli(t, context.Background(), "steplog", "--out", outPath, runPath, logPath)
	if code != exitcode.OK {
		t.Fatalf("steplog: exit %d\n%s\n%s", code, stdout, stderr)
	}
	t.Logf("\n%s%s", stdout, stderr)
	if !strings.Contains(stdout, "2 of 2 cells have step-log records: B is the modal occupancy in 2, never exceeded in 2") ||
		!strings.Contains(stderr, " 0 malformed") {
		t.Errorf("steplog output:\n%s\n%s", stdout, stderr)
	}
	run, err := report.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range run.Cells {
		g := c.StepLog
		// 20 tokens: the first from the prefill step, then 19 decode steps, all at B
		if g == nil || g.Forwards != 19 || g.Modal != c.Cell.Batch || g.AtTarget != 19 || !g.NeverAbove || g.FwdN != 19 || !(g.FwdMeanMs > 0) {
			t.Errorf("%s: attached figures %+v", c.Cell.Key(), g)
		}
	}
	// the same log through a command's output gives the same table
	code, fromCmd, stderr := cli(t, context.Background(), "steplog", "--cmd", "cat '"+logPath+"'", runPath)
	if code != exitcode.OK || fromCmd != stdout {
		t.Errorf("--cmd: exit %d, table\n%s\nwant\n%s\n%s", code, fromCmd, stdout, stderr)
	}
	if code, _, stderr := cli(t, context.Background(), "steplog", "--cmd", "exit 3", runPath); code == exitcode.OK || !strings.Contains(stderr, "exit status 3") {
		t.Errorf("a failing --cmd: exit %d, %q", code, stderr)
	}
	// --json gives the same figures
	code, js, _ := cli(t, context.Background(), "steplog", "--json", runPath, logPath)
	var rows []steplogRow
	if err := json.Unmarshal([]byte(js), &rows); code != exitcode.OK || err != nil || len(rows) != 2 || rows[1].Figures != *run.Cells[1].StepLog {
		t.Errorf("--json: exit %d, %v, %+v", code, err, rows)
	}
}

func TestSteplogArgumentErrors(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "x.log")
	os.WriteFile(log, []byte("nothing here\n"), 0o644)
	cases := []struct {
		args []string
		code exitcode.Code
		want string
	}{
		{[]string{"steplog", "run.json"}, exitcode.Usage, "want RUN.json and one or more log files"},
		{[]string{"steplog", "--preset", "vllm", "--regex", "x", "run.json", log}, exitcode.Usage, "give one"},
		{[]string{"steplog", "--preset", "tgi", "run.json", log}, exitcode.Usage, `preset "tgi": unknown`},
		{[]string{"steplog", "--regex", `(?P<active>\d+)`, "run.json", log}, exitcode.Usage, "no (?P<time>…) group"},
		{[]string{"steplog", "--tz", "Mars/Olympus", "run.json", log}, exitcode.Usage, "--tz"},
		{[]string{"steplog", filepath.Join(dir, "missing.json"), log}, exitcode.Failure, "missing.json"},
	}
	for _, c := range cases {
		code, _, stderr := cli(t, context.Background(), c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
}

func TestGPUTimeCommand(t *testing.T) {
	// A run of two cells (30 s and 50 s wall, of which warmups 6 s + 10 s and measured
	// 20 s + 35 s) in a 100 s run, on 2 GPUs: 2 × 100 s = 0.0556 GPU-h; cells 2 × 80 s =
	// 0.0444; warmups 2 × 16 s = 0.0089; measured 2 × 55 s = 0.0306.
	dir := t.TempDir()
	path := filepath.Join(dir, "a.json")
	mk := func(l, b int, wall, warm, meas time.Duration) report.Cell {
		return report.Cell{Type: "cell", Cell: matrix.Cell{SeqLen: l, Batch: b}, Status: report.StatusOK, Elapsed: report.Millis(wall),
			WarmupElapsed: report.Millis(warm), MeasuredElapsed: report.Millis(meas)}
	}
	run := &report.Run{Header: report.Header{Type: "header", Schema: report.Schema, RunID: "a"},
		Cells:  []report.Cell{mk(1000, 1, 30*time.Second, 6*time.Second, 20*time.Second), mk(1000, 8, 50*time.Second, 10*time.Second, 35*time.Second)},
		Footer: &report.Footer{Type: "footer", Elapsed: report.Millis(100 * time.Second), Status: "ok"}}
	if err := report.WriteJSON(path, run); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := cli(t, context.Background(), "gpu-time", "--gpus", "2", path)
	for _, want := range []string{"| L=1000,B=8 | ok | 50.000 | 10.000 | 35.000 |",
		"GPU time × 2 GPUs (flag): 1 run 1m40s wall = 0.0556 GPU-h; cells 1m20s = 0.0444 GPU-h",
		"warmups 16s = 0.0089 GPU-h (20.0 % of cells); measured requests 55s = 0.0306 GPU-h (68.8 %)"} {
		if code != exitcode.OK || !strings.Contains(stdout, want) {
			t.Errorf("exit %d, output lacks %q:\n%s%s", code, want, stdout, stderr)
		}
	}
	if code, _, stderr := cli(t, context.Background(), "gpu-time"); code != exitcode.Usage || !strings.Contains(stderr, "want one or more results files") {
		t.Errorf("no file: exit %d, %q", code, stderr)
	}
}
