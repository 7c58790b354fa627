package cellcheck

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/steplog"
)

// synth returns a run of two repeats of L=1000,B=2, 100 ms each from t0, and the path of a
// genload-preset log of 10 steps per repeat, 9 ms apart: repeat 1 all at active 2 with wall
// times 5 … 14 ms, repeat 2 at 2 in its first step only.
func synth(t *testing.T, t0 time.Time) (*results.Run, string) {
	t.Helper()
	run := &results.Run{Header: results.Header{Type: "header", Started: t0}}
	for k := range 2 {
		run.Cells = append(run.Cells, results.Cell{Type: "cell", Cell: matrix.Cell{SeqLen: 1000, Batch: 2}, Status: results.StatusOK,
			Started: t0.Add(time.Duration(k) * 100 * time.Millisecond), Elapsed: results.Millis(100 * time.Millisecond), Repeat: k + 1})
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
	p := filepath.Join(t.TempDir(), "steps.log")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return run, p
}

func genload(t *testing.T) steplog.Format {
	t.Helper()
	f, err := steplog.Preset("genload")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Each record goes to the repeat whose span holds it: repeat 1 has its 10 forwards at B = 2
// with wall times 5 … 14 ms (mean 9.5, SD √(110/12) = 3.0277, CV 31.87 %), repeat 2 one
// forward at B (no CV: its reason), 9 at 1. The table has a repeat column and the format's
// note; Attached puts each row's figures on its cell.
func TestCheckAlignsRecordsToRepeats(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	run, log := synth(t, t0)
	res, err := Check(context.Background(), run, Options{Format: genload(t), TZ: "UTC", Files: []string{log}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2 {
		t.Fatalf("%d rows, want 2", len(res.Rows))
	}
	r1, r2 := res.Rows[0].Figures, res.Rows[1].Figures
	if r1.Forwards != 10 || r1.AtTarget != 10 || r1.FwdN != 10 || r1.FwdMeanMs != 9.5 || r1.FwdCV == nil || fmt.Sprintf("%.4f", *r1.FwdCV) != "0.3187" {
		t.Errorf("repeat 1: %+v", r1)
	}
	if r2.Forwards != 10 || r2.AtTarget != 1 || r2.Modal != 1 || r2.FwdN != 1 || r2.FwdCV != nil || r2.FwdCVReason == "" {
		t.Errorf("repeat 2: %+v", r2)
	}
	if res.Rows[0].Repeat != 1 || res.Rows[1].Repeat != 2 || len(res.Rows[0].Notes) != 1 {
		t.Errorf("rows: %+v", res.Rows)
	}
	var tab strings.Builder
	res.WriteTable(&tab)
	for _, want := range []string{"| repeat | status | forwards |", "|      1 | ok     |       10 |  2 (100.0 %) | 100.00 % | never   |           9.500 |    31.87 |", "2 of 2 cells have step-log records: B is the modal occupancy in 1, never exceeded in 2",
		"[2] one forward pass at exactly B = 2: a CV needs two."} {
		if !strings.Contains(tab.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tab.String())
		}
	}
	var sum strings.Builder
	res.WriteSummary(&sum)
	if got := sum.String(); got != "step log: 20 lines, 20 records, 0 malformed, 0 other lines\n" {
		t.Errorf("summary %q", got)
	}
	a := res.Attached()
	if a.Cells[0].StepLog == nil || a.Cells[0].StepLog.FwdN != 10 || a.Cells[1].StepLog == nil || a.Cells[1].StepLog.AtTarget != 1 {
		t.Errorf("attached: %+v, %+v", a.Cells[0].StepLog, a.Cells[1].StepLog)
	}
}

// A cell whose measured requests were sent again is aligned from the end of its last
// discarded attempt: with repeat 1's first 50 ms discarded (ending at t0 + 50 ms), its
// forwards are the five steps after it (wall times 10 … 14 ms, mean 12).
func TestCheckLeavesOutRemeasuredAttempts(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	run, log := synth(t, t0)
	run.Cells[0].Remeasured = []results.Remeasured{{Ended: t0.Add(50 * time.Millisecond)}}
	res, err := Check(context.Background(), run, Options{Format: genload(t), TZ: "UTC", Files: []string{log}})
	if err != nil {
		t.Fatal(err)
	}
	if r1 := res.Rows[0].Figures; r1.Forwards != 5 || r1.FwdN != 5 || r1.FwdMeanMs != 12 || !res.Rows[0].Start.Equal(t0.Add(50*time.Millisecond)) {
		t.Errorf("repeat 1 after its discarded attempt: %+v from %v", r1, res.Rows[0].Start)
	}
	if r2 := res.Rows[1].Figures; r2.Forwards != 10 {
		t.Errorf("repeat 2: %+v", r2)
	}
}

// A record lost to a malformed line lies in the cell whose span holds the records read before
// and after it; one between two cells may have been lost by either. The summary counts both
// and lists them with file:line.
func TestCheckNotesLostRecords(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	run, log := synth(t, t0)
	b, _ := os.ReadFile(log)
	lines := strings.Split(string(b), "\n")
	lines[4] = strings.Replace(lines[4], "active=2", "active=?", 1) // repeat 1's 5th step
	lines[9] = strings.Replace(lines[9], "active=2", "active=?", 1) // repeat 1's last, before repeat 2's first
	os.WriteFile(log, []byte(strings.Join(lines, "\n")), 0o644)
	res, err := Check(context.Background(), run, Options{Format: genload(t), TZ: "UTC", Files: []string{log}})
	if err != nil {
		t.Fatal(err)
	}
	l5, l10 := log+":5", log+":10"
	if r := res.Rows[0]; fmt.Sprint(r.Lost, r.MaybeLost) != fmt.Sprint([]string{l5}, []string{l10}) || r.Figures.Forwards != 8 {
		t.Errorf("repeat 1: lost %v, maybe %v, %d forwards; want [%s] [%s], 8", r.Lost, r.MaybeLost, r.Figures.Forwards, l5, l10)
	}
	if r := res.Rows[1]; len(r.Lost) != 0 || fmt.Sprint(r.MaybeLost) != fmt.Sprint([]string{l10}) {
		t.Errorf("repeat 2: lost %v, maybe %v; want none, [%s]", r.Lost, r.MaybeLost, l10)
	}
	var sum strings.Builder
	res.WriteSummary(&sum)
	if !strings.Contains(sum.String(), "2 malformed") || !strings.Contains(sum.String(), "  "+l5+": ") {
		t.Errorf("summary:\n%s", sum.String())
	}
}

// A log whose records all lie outside the run's cells gets the hint with both spans and the
// gap; a clock offset that brings them in aligns them. A log with no record of the format is
// an error after the result; a missing file is an error without one.
func TestCheckHintsOffsetsAndErrors(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	run, log := synth(t, t0)
	shifted := &results.Run{Header: run.Header}
	for _, c := range run.Cells {
		c.Started = c.Started.Add(-2 * time.Hour)
		shifted.Cells = append(shifted.Cells, c)
	}
	res, err := Check(context.Background(), shifted, Options{Format: genload(t), TZ: "UTC", Files: []string{log}})
	if err != nil {
		t.Fatal(err)
	}
	var sum strings.Builder
	res.WriteSummary(&sum)
	if !strings.Contains(sum.String(), "the log starts 1h59m59.809s after the run's last cell") || !strings.Contains(sum.String(), "--tz UTC") {
		t.Errorf("no hint of the gap:\n%s", sum.String())
	}
	res, err = Check(context.Background(), shifted, Options{Format: genload(t), TZ: "UTC", Offset: 2 * time.Hour, Files: []string{log}})
	if err != nil || res.Rows[0].Figures.Forwards != 10 {
		t.Errorf("--clock-offset 2h: %v, %+v", err, res.Rows[0].Figures)
	}
	empty := filepath.Join(t.TempDir(), "empty.log")
	os.WriteFile(empty, []byte("nothing here\n"), 0o644)
	res, err = Check(context.Background(), run, Options{Format: genload(t), Files: []string{empty}})
	if res == nil || err == nil || !strings.Contains(err.Error(), "no record in the step log matched the genload format (1 lines read)") || exitcode.Of(err) != exitcode.InvalidConfig {
		t.Errorf("empty log: %v, %v (exit %d, want 3: an invalid step log)", res, err, exitcode.Of(err))
	}
	res, err = Check(context.Background(), run, Options{Format: genload(t), Files: []string{empty + ".missing"}})
	if res != nil || exitcode.Of(err) != exitcode.InvalidConfig {
		t.Errorf("missing log: %v, %v (exit %d)", res, err, exitcode.Of(err))
	}
}
