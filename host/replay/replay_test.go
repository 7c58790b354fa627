package replay

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/genload/genload/corpus"
	"github.com/genload/genload/host/dispatch"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/plan"
	"github.com/genload/genload/host/prompt"
	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/records"
	"github.com/genload/genload/host/sse"
	"github.com/genload/genload/host/tokenizer"
	"github.com/genload/genload/host/trace"
)

func builder(t testing.TB) (*prompt.Builder, *tokenizer.Tokenizer) {
	t.Helper()
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := corpus.Default()
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, len(rows))
	for i, r := range rows {
		texts[i] = r.Text
	}
	b, err := prompt.New(tok, nil, texts, prompt.Options{Suffix: "."})
	if err != nil {
		t.Fatal(err)
	}
	return b, tok
}

func TestScheduleWindowSpeedAndSkips(t *testing.T) {
	reqs := []trace.Request{
		{Src: "t:1", Arrival: 0, Input: 10, Output: 5},
		{Src: "t:2", Arrival: 3 * time.Second, Input: 10, Output: 0},
		{Src: "t:3", Arrival: 2 * time.Second, Input: 10, Output: 5},
		{Src: "t:4", Arrival: 4 * time.Second, Input: 900, Output: 200},
		{Src: "t:5", Arrival: 6 * time.Second, Input: 10, Output: 5},
	}
	s, err := NewSchedule(reqs, time.Second, 6*time.Second, 2, 1000)
	if err != nil {
		t.Fatal(err)
	}
	// In [1 s, 6 s): t:3 (at (2−1)/2 = 0.5 s), t:2 (no output), t:4 (over the context).
	if len(s.Items) != 1 || s.Items[0].Src != "t:3" || s.Items[0].At != 500*time.Millisecond {
		t.Fatalf("items %+v", s.Items)
	}
	if len(s.Skipped) != 2 || !strings.Contains(s.Skipped[0].Why, "output length 0") || !strings.Contains(s.Skipped[1].Why, "exceed the model context 1000") {
		t.Errorf("skipped %+v", s.Skipped)
	}
	if _, err := NewSchedule(reqs, 7*time.Second, 0, 1, 0); err == nil || !strings.Contains(err.Error(), "holds no request") {
		t.Errorf("empty window: %v", err)
	}
	if _, err := NewSchedule(reqs, 0, 0, 0, 0); err == nil {
		t.Error("speed 0 accepted")
	}
	from, to, err := ParseWindow("90s-2m")
	if err != nil || from != 90*time.Second || to != 2*time.Minute {
		t.Errorf("ParseWindow: %v %v %v", from, to, err)
	}
	if from, to, err := ParseWindow("600-"); err != nil || from != 600*time.Second || to != 0 {
		t.Errorf("ParseWindow open: %v %v %v", from, to, err)
	}
	if _, _, err := ParseWindow("5-2"); err == nil {
		t.Error("end before start accepted")
	}
}

// Requests sharing leading hashes share exactly those tokens; different hashes differ from
// their first token; every prompt has exactly its logged length.
func TestPromptsShareTheLoggedPrefixBlocks(t *testing.T) {
	b, _ := builder(t)
	reqs := []trace.Request{
		{Src: "a", Input: 1300, Output: 4, Hashes: []int64{7, 8, 9}},
		{Src: "b", Input: 1100, Output: 4, Hashes: []int64{7, 8, 10}},
		{Src: "c", Input: 700, Output: 4, Hashes: []int64{11, 12}},
		{Src: "d", Input: 900, Output: 4},                      // no hashes: its own source
		{Src: "e", Input: 1500, Output: 4, Hashes: []int64{7}}, // fewer hashes than blocks
	}
	s, err := NewSchedule(reqs, 0, 0, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := buildPrompts(s, b)
	if err != nil {
		t.Fatal(err)
	}
	p := make([][]int32, len(s.Items))
	for i := range s.Items {
		p[i] = ps.prompt(&s.Items[i])
		if len(p[i]) != s.Items[i].Input {
			t.Fatalf("%s: %d tokens, want %d", s.Items[i].Src, len(p[i]), s.Items[i].Input)
		}
	}
	common := func(x, y []int32) int {
		k := 0
		for k < len(x) && k < len(y) && x[k] == y[k] {
			k++
		}
		return k
	}
	if c := common(p[0], p[1]); c < 1024 || c > 1024+3 {
		t.Errorf("a and b share hashes 7, 8 (1024 tokens): common prefix %d", c)
	}
	if c := common(p[0], p[4]); c < 512 || c > 512+3 {
		t.Errorf("a and e share hash 7: common prefix %d", c)
	}
	for _, pair := range [][2]int{{0, 2}, {0, 3}, {2, 3}} {
		if c := common(p[pair[0]], p[pair[1]]); c > 3 {
			t.Errorf("%s and %s share no hash but %d tokens", s.Items[pair[0]].Src, s.Items[pair[1]].Src, c)
		}
	}
}

// Against the built-in engine: every request of a small log is sent, generates exactly its
// logged output length, is counted as sent by the server, and has its record in the file; the
// client's lag is recorded per request; a request sent after the first one finished finds
// their shared block in the prefix cache.
func TestReplayAgainstTheBuiltinEngine(t *testing.T) {
	b, tok := builder(t)
	ecfg := engine.DefaultConfig()
	ecfg.TimeScale = 0.01
	eng, err := engine.New(ecfg, tok)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	url, err := eng.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var reqs []trace.Request
	for i := range 20 {
		reqs = append(reqs, trace.Request{Src: fmt.Sprintf("log:%d", i+1), Arrival: time.Duration(i) * 50 * time.Millisecond,
			Input: 600 + 37*i, Output: 3 + i%5, Hashes: []int64{0, int64(100 + i)}})
	}
	s, err := NewSchedule(reqs, 0, 0, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	client, err := dispatch.New(dispatch.Options{Target: url, Model: ecfg.ModelName, ContinuousUsage: true})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	path := filepath.Join(t.TempDir(), "r.jsonl")
	sum, err := Run(context.Background(), Options{Schedule: s, Blocks: b, Sender: client, Records: path, Header: records.Header{ID: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Sent != 20 || sum.Finished != 20 || sum.OK != 20 || sum.WrongLength != 0 || sum.PromptMismatch != 0 || sum.Lag.N != 20 {
		t.Fatalf("summary %+v", sum)
	}
	f, err := records.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Records) != 20 || f.Header.Source != "replay" {
		t.Fatalf("%d records, header %+v", len(f.Records), f.Header)
	}
	var firstEnd float64
	for _, r := range f.Records {
		if r.Index == 0 {
			firstEnd = r.SentMs + *r.E2EMs
		}
	}
	hits, dialled := 0, 0
	var first *records.Record
	for i, r := range f.Records {
		if r.ConnectMs != nil {
			dialled++
		}
		if r.Index == 0 {
			first = &f.Records[i]
		}
		it := s.Items[r.Index]
		if r.Src != it.Src || r.PromptTokens != it.Input || r.CompletionTokens != it.Output || len(r.Chunks) != it.Output || r.ScheduledMs == nil ||
			*r.ScheduledMs != records.Ms(it.At) || r.LagMs == nil || *r.LagMs != r.SentMs-*r.ScheduledMs+connectMs(&r) || *r.LagMs < 0 {
			t.Errorf("record %+v for item %+v", r, it)
		}
		if r.Index > 0 && r.SentMs > firstEnd {
			if r.CachedTokens == nil || *r.CachedTokens < 512 {
				t.Errorf("%s: cached %v tokens, want the shared 512-token block", r.Src, r.CachedTokens)
			}
			hits++
		}
	}
	if hits < 10 {
		t.Errorf("%d requests sent after the first finished, want at least 10 to check the cache", hits)
	}
	// The client had no connection open: the first request waited for one, and its lag says so.
	if first == nil || first.ConnectMs == nil || *first.ConnectMs <= 0 || dialled > 20 {
		t.Errorf("first request's record %+v, %d of 20 waited for a connection", first, dialled)
	}
}

// fakeSender holds every request until its context ends (a server that never answers), counts
// what it was sent, and calls cancel (Ctrl-C) when the count reaches cancelAt.
type fakeSender struct {
	mu       sync.Mutex
	sent     int
	cancelAt int
	cancel   func()
}

func (f *fakeSender) Do(ctx context.Context, p *plan.Plan) (*recording.Result, error) {
	f.mu.Lock()
	f.sent++
	if f.sent == f.cancelAt {
		f.cancel()
	}
	f.mu.Unlock()
	<-ctx.Done()
	res := &recording.Result{Start: time.Now(), MaxTokens: p.MaxTokens, Sequences: []recording.Sequence{{}},
		Requests: []recording.Request{{Err: &recording.RequestError{Kind: recording.KindCanceled, Err: ctx.Err()}, Error: "canceled"}}}
	return res, nil
}

// Ctrl-C stops sending and keeps every record: the requests in flight end canceled and are
// written; the later ones are never sent; the summary says interrupted.
func TestInterruptKeepsTheRecords(t *testing.T) {
	b, _ := builder(t)
	var reqs []trace.Request
	for i := range 50 {
		reqs = append(reqs, trace.Request{Src: fmt.Sprintf("log:%d", i+1), Arrival: time.Duration(i) * 10 * time.Millisecond, Input: 50, Output: 2})
	}
	s, _ := NewSchedule(reqs, 0, 0, 1, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fs := &fakeSender{cancelAt: 25, cancel: cancel}
	path := filepath.Join(t.TempDir(), "r.jsonl")
	sum, err := Run(ctx, Options{Schedule: s, Blocks: b, Sender: fs, Records: path})
	if err != nil {
		t.Fatal(err)
	}
	f, err := records.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Interrupted || sum.Sent == 0 || sum.Sent >= 50 || sum.Sent != fs.sent || len(f.Records) != sum.Sent || sum.Failed != sum.Sent {
		t.Fatalf("interrupted %v, sent %d (sender saw %d), records %d, failed %d", sum.Interrupted, sum.Sent, fs.sent, len(f.Records), sum.Failed)
	}
	idx := make([]int, 0, len(f.Records))
	for _, r := range f.Records {
		idx = append(idx, r.Index)
	}
	slices.Sort(idx)
	for i, x := range idx {
		if x != i {
			t.Fatalf("records of items %v: want the first %d", idx, sum.Sent)
		}
	}
	_ = os.Remove(path)
}

// slowSender sends at the plan's SendAt as dispatch does, answers every request d later, and
// tracks the most requests in flight at once.
type slowSender struct {
	d         time.Duration
	mu        sync.Mutex
	now, most int
}

func (s *slowSender) Do(ctx context.Context, p *plan.Plan) (*recording.Result, error) {
	s.mu.Lock()
	s.now++
	s.most = max(s.most, s.now)
	s.mu.Unlock()
	time.Sleep(time.Until(p.SendAt))
	start := time.Now()
	time.Sleep(s.d)
	s.mu.Lock()
	s.now--
	s.mu.Unlock()
	var q recording.Sequence
	q.Marks.Append(sse.Mark{At: s.d, Tokens: 1})
	q.CompletionTokens = 1
	return &recording.Result{Start: start, MaxTokens: 1, Sequences: []recording.Sequence{q},
		Requests: []recording.Request{{Status: 200, End: s.d}}}, nil
}

// --max-concurrency 2 with 10 requests due at once and a server taking 40 ms each: never more
// than 2 in flight, and the held requests are late by the waits they made — the lag shows it.
func TestMaxConcurrencyShowsAsLag(t *testing.T) {
	b, _ := builder(t)
	var reqs []trace.Request
	for i := range 10 {
		reqs = append(reqs, trace.Request{Src: fmt.Sprint(i), Input: 20, Output: 1})
	}
	s, _ := NewSchedule(reqs, 0, 0, 1, 0)
	ss := &slowSender{d: 40 * time.Millisecond}
	sum, err := Run(context.Background(), Options{Schedule: s, Blocks: b, Sender: ss, MaxConcurrency: 2, Records: filepath.Join(t.TempDir(), "r.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	// The last two wait for four rounds of two: 160 ms late at least.
	if ss.most != 2 || sum.OK != 10 || sum.Lag.Max < 160 || sum.TTFTSched.Max < sum.TTFT.Max+160 {
		t.Errorf("most in flight %d, ok %d, lag %+v, TTFT %+v from schedule %+v", ss.most, sum.OK, sum.Lag, sum.TTFT, sum.TTFTSched)
	}
}

// --window accepts 0 ≤ START < END and an open end; a negative start, an empty window and a
// time that is only partly a number are errors naming the flag, not another window.
func TestWindowFlagRefusesNegativeAndEmptyWindows(t *testing.T) {
	for _, c := range []struct {
		in       string
		from, to time.Duration
	}{{"90s-2m", 90 * time.Second, 2 * time.Minute}, {"600-", 600 * time.Second, 0}, {"0-0.5", 0, 500 * time.Millisecond}, {" 10 - 20s ", 10 * time.Second, 20 * time.Second}} {
		from, to, err := ParseWindow(c.in)
		if err != nil || from != c.from || to != c.to {
			t.Errorf("ParseWindow(%q) = %v, %v, %v; want %v, %v", c.in, from, to, err, c.from, c.to)
		}
	}
	const want = "want START-END of the log's time with 0 ≤ START < END (e.g. 600s-660s, 600-660 in seconds, or 600- to the end)"
	for in, msg := range map[string]string{
		"-5s-10s":   `--window "-5s-10s": the start is negative or missing: ` + want,
		"-10s":      `--window "-10s": the start is negative or missing: ` + want,
		"0-0":       `--window "0-0": empty: the end 0s must come after the start 0s`,
		"660s-600s": `--window "660s-600s": empty: the end 10m0s must come after the start 11m0s`,
		"5s-5000ms": `--window "5s-5000ms": empty: the end 5s must come after the start 5s`,
		"5--3s":     `--window "5--3s": end "-3s" is not a duration or a number of seconds ≥ 0: ` + want,
		"5x-10":     `--window "5x-10": start "5x" is not a duration or a number of seconds ≥ 0: ` + want,
		"5-10y":     `--window "5-10y": end "10y" is not a duration or a number of seconds ≥ 0: ` + want,
		"600":       `--window "600": ` + want,
	} {
		if _, _, err := ParseWindow(in); err == nil || err.Error() != msg {
			t.Errorf("ParseWindow(%q): %v\n want %s", in, err, msg)
		}
	}
}

// cancelOn is a stderr that cancels when a line holding word is written.
type cancelOn struct {
	word   string
	cancel func()
	b      strings.Builder
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.b.Write(p)
	if strings.Contains(string(p), c.word) {
		c.cancel()
	}
	return len(p), nil
}

// The command: a log without arrival times is refused naming its first record and the
// field; an interrupted replay names its records file with its directory, and the summary
// says the built-in engine's time scale.
func TestCommandRefusesALogWithoutTimesAndNamesTheRecordsPath(t *testing.T) {
	dir := t.TempDir()
	noTime := filepath.Join(dir, "nots.jsonl")
	os.WriteFile(noTime, []byte(`{"input_length": 100, "output_length": 5}`+"\n"), 0o644)
	started := false
	builtin := func(tok *tokenizer.Tokenizer, stepLog string) (string, map[string]any, func(), error) {
		started = true
		cfg := engine.DefaultConfig()
		cfg.TimeScale, cfg.StepLogFile = 0.01, stepLog
		eng, err := engine.New(cfg, tok)
		if err != nil {
			return "", nil, nil, err
		}
		url, err := eng.Start("127.0.0.1:0")
		return url, map[string]any{"time_scale": cfg.TimeScale}, func() { eng.Close() }, err
	}
	out := filepath.Join(dir, "rp")
	c := Command{Trace: noTime, Speed: 1, Out: out, ID: "x", Engine: builtin}
	var stdout strings.Builder
	_, err := c.Run(context.Background(), &stdout, &stdout)
	if exitcode.Of(err) != exitcode.InvalidConfig || err == nil || !strings.Contains(err.Error(), noTime+`:1: no field "timestamp" (the arrival time, which the schedule is made of; name another with --time`) || started {
		t.Fatalf("no timestamps: exit %d, %v (engine started: %v)", exitcode.Of(err), err, started)
	}
	log := filepath.Join(dir, "t.jsonl")
	os.WriteFile(log, []byte(`{"timestamp": 0, "input_length": 100, "output_length": 5}`+"\n"+`{"timestamp": 5000, "input_length": 200, "output_length": 5}`+"\n"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &cancelOn{word: "prompts built", cancel: cancel}
	c.Trace = log
	stdout.Reset()
	sum, err := c.Run(ctx, &stdout, stderr)
	want := "interrupted after sending 0 of 2 requests; the records of the 0 that finished are in " + filepath.Join(out, "x.records.jsonl")
	if exitcode.Of(err) != exitcode.Interrupted || err.Error() != want {
		t.Fatalf("interrupt: exit %d, %v\nwant %s\n%s", exitcode.Of(err), err, want, stderr.b.String())
	}
	if sum.TimeScale != 0.01 || sum.Speed != 1 || !strings.Contains(stdout.String(), "time scale: the built-in engine at time scale 0.01") ||
		!strings.Contains(stderr.b.String(), "replay: 2 requests of "+log+" (log time 0s-5s at speed 1: 0.2 requests/s)") {
		t.Errorf("summary %+v\n%s\n%s", sum, stdout.String(), stderr.b.String())
	}
	// The same --id again: refused before the engine starts, naming the file.
	started = false
	_, err = c.Run(context.Background(), &stdout, &stdout)
	if exitcode.Of(err) != exitcode.InvalidConfig || err == nil || !strings.Contains(err.Error(), "--id x: "+filepath.Join(out, "x.records.jsonl")+" exists") || started {
		t.Errorf("the same --id: exit %d, %v (engine started: %v)", exitcode.Of(err), err, started)
	}
}

// connectMs is r's wait for a new connection (0 when it had none).
func connectMs(r *records.Record) float64 {
	if r.ConnectMs == nil {
		return 0
	}
	return *r.ConnectMs
}
