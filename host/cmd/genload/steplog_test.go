package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/steplog/cellcheck"
)

func TestSteplogOnARunOfTheBuiltinEngine(t *testing.T) {
	t.Parallel()
	// A run against an engine writing its step log to a file, then genload steplog on the
	// run and the file: every cell was run at its B (the engine schedules exactly what it
	// is sent), so B is the modal occupancy, never exceeded, and the forward time at B is
	// there; --out attaches the same figures to the cells of a copy of the run.
	dir := t.TempDir()
	logPath := filepath.Join(dir, "steps.log")
	ecfg := engine.DefaultConfig()
	ecfg.TimeScale = 0.2
	ecfg.StepLogFile = logPath
	ecfg.Noise = engine.Noise{StepCV: 0.05, SlowFactor: 1, Seed: 3}
	url := serveEngine(t, ecfg, nil)
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
	run, err := results.ReadFile(outPath)
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
	var rows []cellcheck.Row
	if err := json.Unmarshal([]byte(js), &rows); code != exitcode.OK || err != nil || len(rows) != 2 || !reflect.DeepEqual(rows[1].Figures, *run.Cells[1].StepLog) {
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
		{[]string{"steplog", filepath.Join(dir, "missing.json"), log}, exitcode.InvalidConfig, "missing.json"},
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
	mk := func(l, b int, wall, warm, meas time.Duration) results.Cell {
		return results.Cell{Type: "cell", Cell: matrix.Cell{SeqLen: l, Batch: b}, Status: results.StatusOK, Elapsed: results.Millis(wall),
			WarmupElapsed: results.Millis(warm), MeasuredElapsed: results.Millis(meas)}
	}
	run := &results.Run{Header: results.Header{Type: "header", Schema: results.Schema, RunID: "a"},
		Cells:  []results.Cell{mk(1000, 1, 30*time.Second, 6*time.Second, 20*time.Second), mk(1000, 8, 50*time.Second, 10*time.Second, 35*time.Second)},
		Footer: &results.Footer{Type: "footer", Elapsed: results.Millis(100 * time.Second), Status: "ok"}}
	if err := results.WriteJSON(path, run); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := cli(t, context.Background(), "gpu-time", "--gpus", "2", path)
	for _, want := range []string{"| L=1000,B=8 | ok | 50.000 | 10.000 | 35.000 |",
		"GPU time × 2 GPUs (flag): 1 run 1m40s wall = 0.0556 GPU-h; cells 1m20s = 0.0444 GPU-h",
		"warmups 16s = 0.0089 GPU-h (20.0 % of cells); measured requests 55s = 0.0306 GPU-h (68.8 %)"} {
		if code != exitcode.OK || !strings.Contains(squeeze(stdout), want) {
			t.Errorf("exit %d, output lacks %q:\n%s%s", code, want, stdout, stderr)
		}
	}
	if code, _, stderr := cli(t, context.Background(), "gpu-time"); code != exitcode.Usage || !strings.Contains(stderr, "want one or more results files") {
		t.Errorf("no file: exit %d, %q", code, stderr)
	}
}

// synthRun writes a run of two cells — L=1000,B=2 repeat 1 then repeat 2, 100 ms each from t0
// — and a genload-preset log of 10 decode steps at B = 2 in each (fwd 5, 6, …, 14 ms wall; in
// the second cell only one step at B, the others at 1), and returns the two paths.
func synthRun(t *testing.T, t0 time.Time) (runPath, logPath string) {
	t.Helper()
	dir := t.TempDir()
	run := &results.Run{Header: results.Header{Type: "header", Started: t0}}
	for k := range 2 {
		run.Cells = append(run.Cells, results.Cell{Type: "cell", Cell: matrix.Cell{SeqLen: 1000, Batch: 2}, Status: results.StatusOK,
			Started: t0.Add(time.Duration(k) * 100 * time.Millisecond), Elapsed: results.Millis(100 * time.Millisecond), Repeat: k + 1})
	}
	runPath = filepath.Join(dir, "run.json")
	if err := results.WriteJSON(runPath, run); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for k := range 2 {
		for i := range 10 {
			active := 2
			if k == 1 && i > 0 {
				active = 1
			}
			ts := t0.Add(time.Duration(k)*100*time.Millisecond + time.Duration(i+1)*9*time.Millisecond).Format("2006-01-02T15:04:05.000000Z07:00")
			fmt.Fprintf(&b, "time=%s step=%d active=%d decode=%d decoding=%d prefill_tokens=0 spec_tokens=0 waiting=0 kv_blocks=1 experts=0 fwd_ms=5.000 wall_ms=%d.000\n",
				ts, 10*k+i, active, active, active, 5+i)
		}
	}
	logPath = filepath.Join(dir, "steps.log")
	if err := os.WriteFile(logPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return runPath, logPath
}

func TestSteplogDuplicatesRepeatsAndOneStepCV(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	runPath, logPath := synthRun(t, t0)
	_, once, _ := cli(t, context.Background(), "steplog", runPath, logPath)
	code, twice, stderr := cli(t, context.Background(), "steplog", runPath, logPath, logPath)
	// fwd at B of repeat 1: 5 … 14 ms → mean 9.5, SD sqrt(110/12) = 3.0277 → CV 31.87 %
	for _, want := range []string{
		"| fwd ms at B [1] | fwd CV % | notes |",
		"| 1000 | 2 | 1 | ok | 10 | 2 (100.0 %) | 100.00 % | never | 9.500 | 31.87 | |",
		"| 1000 | 2 | 2 | ok | 10 | 1 (90.0 %) | 10.00 % | never | 5.000 | – | [2] |",
		"[1] fwd is each step's measured wall time on the engine's host (wall_ms)",
		"[2] one forward pass at exactly B = 2: a CV needs two.",
	} {
		if !strings.Contains(squeeze(twice), want) {
			t.Errorf("table lacks %q:\n%s", want, twice)
		}
	}
	if code != exitcode.OK || twice != once || !strings.Contains(stderr, "40 lines, 20 records, 0 malformed, 0 other lines; 20 duplicate records counted once") ||
		!strings.Contains(stderr, logPath+":1 repeats "+logPath+":1") {
		t.Errorf("the log given twice: exit %d, stderr %q; table twice == once: %v", code, stderr, twice == once)
	}
	code, js, _ := cli(t, context.Background(), "steplog", "--json", runPath, logPath)
	var rows []cellcheck.Row
	if err := json.Unmarshal([]byte(js), &rows); code != exitcode.OK || err != nil || len(rows) != 2 || rows[0].Repeat != 1 || rows[1].Repeat != 2 ||
		rows[1].Figures.FwdCV != nil || rows[1].Figures.FwdCVReason == "" || strings.Contains(js, `"fwd_cv": 0,`) || len(rows[0].Notes) != 1 {
		t.Errorf("--json: exit %d, %v:\n%s", code, err, js)
	}
}

func TestSteplogHintsAndRefusals(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	runPath, logPath := synthRun(t, t0)
	// the log two hours ahead (a server logging UTC+2 without a zone)
	code, stdout, stderr := cli(t, context.Background(), "steplog", "--clock-offset", "-2h", runPath, logPath)
	if code != exitcode.OK || !strings.Contains(stdout, "0 of 2 cells have step-log records") ||
		!strings.Contains(stderr, "the log's records span 2026-12-01 12:00:00.009 – 2026-12-01 12:00:00.190 UTC, the run's cells 2026-12-01 10:00:00.000 – 2026-12-01 10:00:00.200 UTC; the log starts 1h59m59.809s after the run's last cell") ||
		!strings.Contains(stderr, "--tz UTC") || !strings.Contains(stderr, "--clock-offset (now -2h0m0s") {
		t.Errorf("no record in any cell: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// a gzip-compressed log
	gz := filepath.Join(t.TempDir(), "steps.log.gz")
	os.WriteFile(gz, []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0}, 0o644)
	if code, _, stderr := cli(t, context.Background(), "steplog", runPath, gz); code != exitcode.InvalidConfig || !strings.Contains(stderr, "gzip-compressed; decompress it, or read it with --cmd 'zcat") {
		t.Errorf(".gz: exit %d, %q", code, stderr)
	}
	// --out onto the run itself, or to a .jsonl name
	for _, out := range []string{runPath, strings.TrimSuffix(runPath, ".json") + ".jsonl"} {
		if code, _, stderr := cli(t, context.Background(), "steplog", "--out", out, runPath, logPath); code != exitcode.Usage || !strings.Contains(stderr, "--out "+out) {
			t.Errorf("--out %s: exit %d, %q", out, code, stderr)
		}
	}
}

func TestSteplogCmdKeepsWhatWasRead(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	runPath, logPath := synthRun(t, t0)
	_, want, _ := cli(t, context.Background(), "steplog", runPath, logPath)
	// a command that fails after writing the log: the table, then the exit and its stderr
	code, stdout, stderr := cli(t, context.Background(), "steplog", "--cmd", "cat '"+logPath+"'; echo 'disk on fire' >&2; exit 3", runPath)
	if code != exitcode.Failure || stdout != want || !strings.Contains(stderr, "exit status 3; the table holds what it wrote before; its stderr ended with:\n  disk on fire") {
		t.Errorf("cat; exit 3: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// the command's own complaint is shown, not swallowed as a log line
	code, _, stderr = cli(t, context.Background(), "steplog", "--cmd", "cat '"+logPath+".missing'", runPath)
	if code == exitcode.OK || !strings.Contains(stderr, "No such file or directory") {
		t.Errorf("cat missing: exit %d, %q", code, stderr)
	}
	// a command that does not end (tail -f): Ctrl-C once it has written the log keeps the table
	mark := filepath.Join(t.TempDir(), "written")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if _, err := os.Stat(mark); err == nil {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	code, stdout, stderr = cli(t, ctx, "steplog", "--cmd", "cat '"+logPath+"'; touch '"+mark+"'; exec sleep 60", runPath)
	<-done
	if code != exitcode.Interrupted || stdout != want || !strings.Contains(stderr, "interrupted; the table holds what it wrote until then") {
		t.Errorf("interrupted: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// A record lost to a malformed line is noted in the cell whose span holds the records read
// before and after it, and as possibly lost in both cells when they straddle two.
func TestSteplogNotesLostRecords(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	runPath, logPath := synthRun(t, t0)
	b, _ := os.ReadFile(logPath)
	lines := strings.Split(string(b), "\n")
	lines[4] = strings.Replace(lines[4], "active=2", "active=?", 1) // cell 1's 5th step
	lines[9] = strings.Replace(lines[9], "active=2", "active=?", 1) // cell 1's last step, before cell 2's first
	os.WriteFile(logPath, []byte(strings.Join(lines, "\n")), 0o644)
	code, stdout, stderr := cli(t, context.Background(), "steplog", runPath, logPath)
	flat := squeeze(stdout)
	for _, want := range []string{
		"| 1000 | 2 | 1 | ok | 8 |", "| [2] |",
		"[2] 1 record(s) lost to malformed lines (" + logPath + ":5); may have lost 1 record(s) to malformed lines at its edges (" + logPath + ":10).",
		"| 1000 | 2 | 2 | ok | 10 |", "| [3] [4] |",
		"[4] may have lost 1 record(s) to malformed lines at its edges (" + logPath + ":10).",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	if code != exitcode.OK || !strings.Contains(stderr, "2 malformed") {
		t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// squeeze is text with each run of spaces, and each line break that continues a wrapped
// note (a newline and the indent of its text), made one space: the table's padded cells and
// wrapped lines compared as words.
func squeeze(text string) string {
	text = regexp.MustCompile(`\n {4}`).ReplaceAllString(text, " ")
	return regexp.MustCompile(` +`).ReplaceAllString(text, " ")
}
