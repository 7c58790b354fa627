package steplog

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func mustPreset(t *testing.T, name string) Format {
	t.Helper()
	f, err := Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestPresetsReadTheirServersLines(t *testing.T) {
	ref := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	cases := []struct {
		preset, line string
		want         Record
	}{
		{"genload", "time=2026-12-01T10:00:00.123456Z step=7 active=64 decode=64 decoding=63 prefill_tokens=12 spec_tokens=0 waiting=0 kv_blocks=9 experts=0 fwd_ms=20.000 wall_ms=1.002 noise=1.01",
			Record{Time: time.Date(2026, 12, 1, 10, 0, 0, 123456000, time.UTC), Active: 64, Decode: 63, FwdMs: 1.002}},
		{"active-fwd", "2026-12-01 10:00:00.250 DEBUG step 9 active=32 kv=0.4 fwd=12.5ms",
			Record{Time: time.Date(2026, 12, 1, 10, 0, 0, 250e6, time.UTC), Res: time.Millisecond, Active: 32, Decode: -1, FwdMs: 12.5}},
		// SGLang's log_decode_stats line behind configure_logger's prefix
		{"sglang", "[2026-12-01 10:00:05 TP0] Decode batch. #running-req: 64, #token: 8192, token usage: 0.05, gen throughput (token/s): 1234.56, #queue-req: 0, ",
			Record{Time: time.Date(2026, 12, 1, 10, 0, 5, 0, time.UTC), Res: time.Second, Active: 64, Decode: -1}},
		// vLLM v1's LoggingStatLogger line, with the API server's process prefix
		{"vllm", "(APIServer pid=7) INFO 12-01 10:00:10 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 640.0 tokens/s, Running: 48 reqs, Waiting: 0 reqs, GPU KV cache usage: 5.0%, Prefix cache hit rate: 0.0%",
			Record{Time: time.Date(2026, 12, 1, 10, 0, 10, 0, time.UTC), Res: time.Second, Active: 48, Decode: -1}},
		// the older vLLM prefix ("metrics.py:345]" without the bracket before the file)
		{"vllm", "INFO 12-01 10:00:15 metrics.py:345] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 10.0 tokens/s, Running: 2 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.1%, CPU KV cache usage: 0.0%.",
			Record{Time: time.Date(2026, 12, 1, 10, 0, 15, 0, time.UTC), Res: time.Second, Active: 2, Decode: -1}},
	}
	for _, c := range cases {
		t.Run(c.preset, func(t *testing.T) {
			p := NewParser(mustPreset(t, c.preset), Options{Reference: ref})
			p.Line("x.log:1", c.line)
			if errs := p.Errors(); len(errs) > 0 {
				t.Fatal(errs)
			}
			recs := p.Records()
			if len(recs) != 1 {
				t.Fatalf("%d records, want 1", len(recs))
			}
			r := recs[0]
			fwdOK := r.FwdMs == c.want.FwdMs || (c.want.FwdMs == 0 && r.FwdMs != r.FwdMs) // NaN: no fwd_ms group
			if !r.Time.Equal(c.want.Time) || r.Res != c.want.Res || r.Active != c.want.Active || r.Decode != c.want.Decode || !fwdOK || r.Src != "x.log:1" {
				t.Errorf("record %+v, want %+v", r, c.want)
			}
		})
	}
}

func TestParseTime(t *testing.T) {
	berlin := time.FixedZone("CET", 3600)
	ref := time.Date(2026, 12, 31, 23, 59, 0, 0, time.UTC)
	cases := []struct {
		in   string
		loc  *time.Location
		want time.Time
		res  time.Duration
	}{
		{"2026-12-01T10:00:00Z", nil, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), time.Second},
		{"2026-12-01T11:00:00.5+01:00", nil, time.Date(2026, 12, 1, 10, 0, 0, 5e8, time.UTC), 100 * time.Millisecond},
		// zone-less times are in the given location: 11:00 CET = 10:00 UTC
		{"2026-12-01 11:00:00,125", berlin, time.Date(2026, 12, 1, 10, 0, 0, 125e6, time.UTC), time.Millisecond},
		// no year: the one nearest the reference (31 Dec 2026) is 2027 for 1 January
		{"01-01 00:00:05", nil, time.Date(2027, 1, 1, 0, 0, 5, 0, time.UTC), time.Second},
		{"12-31 23:58:00", nil, time.Date(2026, 12, 31, 23, 58, 0, 0, time.UTC), time.Second},
		{"1764583200.25", nil, time.Unix(1764583200, 25e7).UTC(), 10 * time.Millisecond},
	}
	for _, c := range cases {
		got, res, err := ParseTime(c.in, c.loc, ref)
		if err != nil || !got.Equal(c.want) || res != c.res {
			t.Errorf("ParseTime(%q) = %v, %v, %v; want %v, %v", c.in, got, res, err, c.want, c.res)
		}
	}
	for _, bad := range []string{"yesterday", "2026-13-01 10:00:00", "42"} {
		if _, _, err := ParseTime(bad, nil, ref); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseTime(%q): %v, want an error quoting it", bad, err)
		}
	}
	if _, _, err := ParseTime("01-01 00:00:05", nil, time.Time{}); err == nil {
		t.Errorf("a year-less time without a reference: no error")
	}
}

func line(step int, active int) string {
	ts := time.Date(2026, 12, 1, 10, 0, 0, step*1000, time.UTC).Format("2006-01-02T15:04:05.000000Z07:00")
	return "time=" + ts + " step=" + strconv.Itoa(step) + " active=" + strconv.Itoa(active) + " decode=" + strconv.Itoa(active) + " decoding=" + strconv.Itoa(active) + " prefill_tokens=0 spec_tokens=0 waiting=0 kv_blocks=1 experts=0 fwd_ms=1.000 wall_ms=0.050"
}

func TestMalformedAndInterleavedLines(t *testing.T) {
	// Every record-looking line that does not parse is an error naming file:line, every
	// record that does is kept, and other lines are only counted.
	l1, l2, l3 := line(1, 4), line(2, 4), line(3, 4)
	log := strings.Join([]string{
		l1,
		"INFO some other server output", // other
		l2[:40] + l3,                    // a record cut short by the next one: 1 error, l3 kept
		strings.Replace(l1, "active=4", "active=x", 1),       // holds the marker, does not match: 1 error
		strings.Replace(l1, "2026-12-01T", "2026-13-01T", 1), // matches, bad time: 1 error
		line(4, 4) + " " + line(5, 4),                        // two whole records on one line: both kept
		"",
	}, "\n")
	p := NewParser(mustPreset(t, "genload"), Options{})
	if err := p.Read(strings.NewReader(log), "steps.log"); err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	if st.Lines != 6 || st.Records != 4 || st.Malformed != 3 || st.Other != 1 {
		t.Errorf("stats %+v, want 6 lines, 4 records, 3 malformed, 1 other", st)
	}
	var srcs []string
	for _, r := range p.Records() {
		srcs = append(srcs, r.Src)
	}
	// sorted by time: steps 1, 3, 4, 5
	if got := strings.Join(srcs, " "); got != "steps.log:1 steps.log:3 steps.log:6 steps.log:6" {
		t.Errorf("record sources %q, want steps 1, 3, 4, 5 from lines 1, 3, 6, 6", got)
	}
	want := []string{"steps.log:3: holds \"time=\" 2 times but 1 records parse", "steps.log:4: holds \"time=\" 1 times but 0 records parse", "steps.log:5: time \"2026-13-01T"}
	errs := p.Errors()
	if len(errs) != len(want) {
		t.Fatalf("errors %v, want %d", errs, len(want))
	}
	for i, w := range want {
		var le *LineError
		if !strings.HasPrefix(errs[i].Error(), w) || !errors.As(errs[i], &le) {
			t.Errorf("error %d %q, want a LineError starting %q", i, errs[i], w)
		}
	}
}

func TestFollowSurvivesRotation(t *testing.T) {
	// A followed log is appended to, truncated in place (copytruncate) with a partial line
	// pending, appended to again, then replaced by a new file (rename and create) while the
	// old one still had unread lines: every whole record is read once, the partial line is
	// one error, and the counts say what happened.
	dir := t.TempDir()
	path := filepath.Join(dir, "steps.log")
	write := func(name string, flag int, s string) {
		t.Helper()
		f, err := os.OpenFile(name, flag|os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	write(path, os.O_TRUNC, line(1, 4)+"\n"+line(2, 4)+"\n")
	p := NewParser(mustPreset(t, "genload"), Options{})
	fw, err := Follow(path, p)
	if err != nil {
		t.Fatal(err)
	}
	poll := func() {
		t.Helper()
		if err := fw.Poll(); err != nil {
			t.Fatal(err)
		}
	}
	poll()
	write(path, os.O_APPEND, line(3, 4)+"\n"+line(4, 4)[:30]) // a partial line pending
	poll()
	write(path, os.O_TRUNC, line(5, 4)+"\n") // truncated, then a shorter new content
	poll()
	write(path, os.O_APPEND, line(6, 4)+"\n"+line(7, 4))
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	write(path+".1", os.O_APPEND, "\n") // the old file's writer ends its line after the rename
	write(path, os.O_TRUNC, line(8, 4)+"\n")
	poll()
	write(path, os.O_APPEND, line(9, 4)+"\n")
	poll()
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	if st.Records != 8 || st.Truncations != 1 || st.Replacements != 1 || st.CutLines != 1 || st.Malformed != 1 {
		t.Errorf("stats %+v, want 8 records (steps 1–3, 5–9), 1 truncation, 1 replacement, 1 cut line", st)
	}
	var srcs []string
	for _, r := range p.Records() {
		srcs = append(srcs, strings.TrimPrefix(r.Src, dir+string(filepath.Separator)))
	}
	want := "steps.log:1 steps.log:2 steps.log:3 steps.log (rotation 1):1 steps.log (rotation 1):2 steps.log (rotation 1):3 steps.log (rotation 2):1 steps.log (rotation 2):2"
	if got := strings.Join(srcs, " "); got != want {
		t.Errorf("sources\n%s\nwant\n%s", got, want)
	}
	if errs := p.Errors(); len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), path+":4: line cut off by a truncation") {
		t.Errorf("errors %v, want the cut line at steps.log:4", errs)
	}
}

func TestNewFormatChecksGroups(t *testing.T) {
	if _, err := NewFormat(`active=(?P<active>\d+)`, ""); err == nil || !strings.Contains(err.Error(), "(?P<time>") {
		t.Errorf("no time group: %v", err)
	}
	if _, err := NewFormat(`(?P<time>\S+) (?P<active>\d+) (?P<fwd>\d+)`, ""); err == nil || !strings.Contains(err.Error(), "unknown group (?P<fwd>") {
		t.Errorf("unknown group: %v", err)
	}
	f, err := NewFormat(`^(?P<time>\S+) n=(?P<active>\d+) t=(?P<fwd_ms>[\d.]+)$`, "n=")
	if err != nil || !f.HasFwd() {
		t.Fatalf("NewFormat: %v (fwd %v)", err, f.HasFwd())
	}
	if _, err := Preset("tgi"); err == nil || !strings.Contains(err.Error(), "known: active-fwd, genload, sglang, vllm") {
		t.Errorf("unknown preset: %v", err)
	}
}

func TestAttainCountsPerCell(t *testing.T) {
	// Records 10 ms apart, active: 2 prefill-only, then 4,4,4,3,4 decoding, then 5 (above),
	// in a cell of B = 4 spanning them all, and a second cell with no record.
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	mk := func(i, active, decode int, fwd float64) Record {
		return Record{Time: t0.Add(time.Duration(i) * 10 * time.Millisecond), Active: active, Decode: decode, FwdMs: fwd}
	}
	recs := []Record{mk(0, 4, 0, 9), mk(1, 4, 4, 10), mk(2, 4, 4, 12), mk(3, 4, 4, 14), mk(4, 3, 3, 8), mk(5, 4, 4, 12), mk(6, 5, 5, 13)}
	f := Attain(recs, Span{Start: t0, End: t0.Add(time.Second), Batch: 4}, true)
	// forwards: 6 (the prefill-only one is not); at B: 4 of 6; modal 4; above 1 (the 5);
	// fwd at B: 10, 12, 14, 12 → mean 12, SD sqrt(8/3) → CV 0.13608
	if f.Records != 7 || f.Forwards != 6 || f.Modal != 4 || !f.ModalAtTarget || f.AtTarget != 4 || f.Above != 1 || f.NeverAbove || f.MaxActive != 5 ||
		f.FwdN != 4 || f.FwdMeanMs != 12 || f.FwdCV == nil || *f.FwdCV < 0.13607 || *f.FwdCV > 0.13609 {
		t.Errorf("figures %+v", f)
	}
	// one step at B (the 5 at i = 6 is above, the 3 at i = 4 below): no CV, with the reason
	if g := Attain(recs, Span{Start: t0.Add(35 * time.Millisecond), End: t0.Add(65 * time.Millisecond), Batch: 3}, true); g.FwdN != 1 || g.FwdMeanMs != 8 || g.FwdCV != nil ||
		g.FwdCVReason != "one forward pass at exactly B = 3: a CV needs two" {
		t.Errorf("one step at B: %+v, want fwd 8 ms and no CV with its reason", g)
	}
	if g := Attain(recs, Span{Start: t0.Add(time.Hour), End: t0.Add(2 * time.Hour), Batch: 4}, true); g.Forwards != 0 || g.Reason == "" {
		t.Errorf("an empty cell: %+v, want no forwards and a reason", g)
	}
	// whole-second timestamps: a record stamped 10:00:00 is taken at 10:00:00.5, so it
	// belongs to a cell [10:00:00.4, 10:00:01) and not to one ending at 10:00:00.4
	sec := []Record{{Time: t0, Res: time.Second, Active: 4, Decode: -1, FwdMs: 1}}
	if a := Attain(sec, Span{Start: t0.Add(400 * time.Millisecond), End: t0.Add(time.Second), Batch: 4}, false); a.Forwards != 1 || a.Reason == "" || a.FwdReason == "" {
		t.Errorf("coarse record in the later cell: %+v (want 1 forward, a resolution note, no fwd)", a)
	}
	if a := Attain(sec, Span{Start: t0.Add(-time.Second), End: t0.Add(400 * time.Millisecond), Batch: 4}, false); a.Forwards != 0 {
		t.Errorf("coarse record in the earlier cell: %+v", a)
	}
}

func TestARecordCutByTheNextIsNotMerged(t *testing.T) {
	// The first record lost its end (fwd=) to the second written into the same line: the
	// expression alone would read one record with the first's time and active and the
	// second's fwd; the parser reports the first as cut and keeps the second whole.
	p := NewParser(mustPreset(t, "active-fwd"), Options{})
	p.Line("a.log:7", "2026-12-01 10:00:00.100 active=3 2026-12-01 10:00:00.200 active=4 fwd=2.5ms")
	recs, errs := p.Records(), p.Errors()
	if len(recs) != 1 || recs[0].Active != 4 || recs[0].FwdMs != 2.5 || recs[0].Time.Nanosecond() != 200e6 {
		t.Errorf("records %+v, want the second one only", recs)
	}
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "a.log:7: a record cut short by the next one") {
		t.Errorf("errors %v, want the cut record at a.log:7", errs)
	}
}

// The same log read twice, and two rotated parts that overlap by three lines, give each
// record once, with the repeats counted and named.
func TestDuplicateLinesAreCountedOnce(t *testing.T) {
	var all []string
	for i := range 10 {
		all = append(all, line(i, 4))
	}
	log := strings.Join(all, "\n") + "\n"
	p := NewParser(mustPreset(t, "genload"), Options{})
	for range 2 {
		if err := p.Read(strings.NewReader(log), "steps.log"); err != nil {
			t.Fatal(err)
		}
	}
	if st := p.Stats(); st.Lines != 20 || st.Records != 10 || st.Duplicates != 10 || st.DuplicateLines != 10 || len(p.Records()) != 10 {
		t.Errorf("read twice: %+v, %d records", st, len(p.Records()))
	}
	if d := p.Duplicates(); len(d) != 5 || d[0] != "steps.log:1 repeats steps.log:1" {
		t.Errorf("duplicates named %q", d)
	}
	// rotated parts: lines 0–6 then 4–9
	p = NewParser(mustPreset(t, "genload"), Options{})
	_ = p.Read(strings.NewReader(strings.Join(all[:7], "\n")+"\n"), "steps.log.1")
	_ = p.Read(strings.NewReader(strings.Join(all[4:], "\n")+"\n"), "steps.log")
	if st := p.Stats(); st.Records != 10 || st.Duplicates != 3 || len(p.Records()) != 10 {
		t.Errorf("overlapping parts: %+v", st)
	}
	if d := p.Duplicates(); len(d) != 3 || d[0] != "steps.log:1 repeats steps.log.1:5" {
		t.Errorf("duplicates named %q", d)
	}
}

func TestFormatNotesSayWhatFwdMeasures(t *testing.T) {
	g := mustPreset(t, "genload").Notes()
	if len(g) != 1 || !strings.Contains(g[0], "wall time") || !strings.Contains(g[0], "sleep jitter") {
		t.Errorf("genload notes %q", g)
	}
	a := mustPreset(t, "active-fwd").Notes()
	if len(a) != 1 || !strings.Contains(a[0], "no decode group: steps at B that also prefill are counted") {
		t.Errorf("active-fwd notes %q", a)
	}
	if s := mustPreset(t, "sglang").Notes(); len(s) != 0 {
		t.Errorf("sglang (no fwd_ms) notes %q", s)
	}
	f, err := NewFormat(`(?P<time>\S+) a=(?P<active>\d+) d=(?P<decode>\d+) t=(?P<fwd_ms>[\d.]+)`, "")
	if err != nil || len(f.Notes()) != 0 {
		t.Errorf("a regex with decode and fwd_ms: notes %q, %v", f.Notes(), err)
	}
}
