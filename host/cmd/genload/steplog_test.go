package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/testplugins"
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
