package run

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/dispatch"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/scrape"
	"github.com/genload/genload/host/scrape/metrics"
	"github.com/genload/genload/host/sse"
	"github.com/genload/genload/host/warning"
)

// warningsOf builds a cell of b sequences of max_tokens 20 on a 5 ms step, the last zero of them
// finishing with no token, and returns its warnings.
func warningsOf(t *testing.T, b, zero int, o measure.Options, usage sse.Usage) ([]string, *measure.Figures) {
	t.Helper()
	res := &dispatch.Result{MaxTokens: 20, Mode: dispatch.ModeArray, Requests: []dispatch.Request{{Prompts: []int{0}, HasUsage: true, Usage: usage}}}
	for i := range b {
		s := dispatch.Sequence{Prompt: i}
		s.Finished, s.FinishReason = true, "length"
		if i < b-zero {
			for k := range 20 {
				s.Marks.Append(sse.Mark{At: time.Second + time.Duration(k)*5*time.Millisecond, Text: 3, Tokens: -1})
			}
			s.CompletionTokens, s.TokenSource = 20, sse.TokensEvenSplit
		} else {
			s.TokenSource = sse.TokensChunks
		}
		res.Sequences = append(res.Sequences, s)
	}
	o.MaxTokens = 20
	f := measure.Compute(res, o)
	rec := results.Cell{Figures: &f}
	ws, _ := cellWarnings(config.Default(), matrix.Cell{SeqLen: 1000, Batch: b}, &rec, false)
	return texts(ws), &f
}

// texts are the warnings' texts.
func texts(ws []warning.Warning) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Text
	}
	return out
}

// joined is the texts of cellWarnings' warnings, one a line (its verdict ignored).
func joined(ws []warning.Warning, _ bool) string { return strings.Join(texts(ws), "\n") }

func TestCellWarningsSayTheRealCause(t *testing.T) {
	// 4 of 10 with no token: the cell is partial, fwd is over 6, and nothing blames max_tokens.
	ws, f := warningsOf(t, 10, 4, measure.Options{}, sse.Usage{})
	all := strings.Join(ws, "\n")
	if !f.Partial() || f.Counted != 6 || !strings.Contains(all, "fwd over 6 of 10 sequences: left out: 4 of 10 sequences finished with no token") || strings.Contains(all, "max_tokens 20: a sequence needs") {
		t.Errorf("partial cell warnings:\n%s", all)
	}
	// every sequence with no token: both absent figures say why
	ws, f = warningsOf(t, 2, 2, measure.Options{}, sse.Usage{})
	all = strings.Join(ws, "\n")
	if f.PerForward.N != 0 || !strings.Contains(all, "no per-forward figure: no sequence ran its max_tokens; left out: 2 of 2 sequences finished with no token") ||
		!strings.Contains(all, "no full-batch figure: no counted sequences") {
		t.Errorf("empty cell warnings:\n%s", all)
	}
	// a truncated prompt downgraded to a warning names truncation and the numbers
	ws, f = warningsOf(t, 1, 0, measure.Options{PromptLengths: []int{6000}, TruncationWarns: true}, sse.Usage{PromptTokens: 4096})
	all = strings.Join(ws, "\n")
	if f.Prompts == nil || f.Prompts.TruncationError != "" || !strings.Contains(all, "prompts truncated by the server") || !strings.Contains(all, "4,096 of the 6,000") {
		t.Errorf("truncation warnings:\n%s", all)
	}
}

func TestResendsAreWarnedOf(t *testing.T) {
	_, f := warningsOf(t, 1, 0, measure.Options{}, sse.Usage{})
	rec := results.Cell{Figures: f, Retries: &results.Retries{Measured: 2, Free: 1,
		Reasons: map[string]int{"status 500: Internal Server Error": 2, "connection closed by the server": 1}}}
	ws := joined(cellWarnings(config.Default(), matrix.Cell{SeqLen: 1000, Batch: 1}, &rec, false))
	if want := "requests resent: 0 warmup, 2 measured (status 500: Internal Server Error ×2, connection closed by the server ×1)"; !strings.Contains(ws, want) {
		t.Errorf("warnings lack %q:\n%s", want, ws)
	}
	rec.Retries = &results.Retries{Free: 3, Reasons: map[string]int{"connection closed by the server": 3}}
	if ws := joined(cellWarnings(config.Default(), matrix.Cell{SeqLen: 1000, Batch: 1}, &rec, false)); strings.Contains(ws, "resent") {
		t.Errorf("a keep-alive resend alone is warned of:\n%s", ws)
	}
}

// A stall of 200 ms inside a stream of 5 ms steps: the mean carries it, the median interval
// does not, and the warning says which figure to trust.
func TestStallInflatedMeanIsWarnedOf(t *testing.T) {
	res := &dispatch.Result{MaxTokens: 20, Mode: dispatch.ModeArray, Requests: []dispatch.Request{{Prompts: []int{0}, HasUsage: true}}}
	s := dispatch.Sequence{Prompt: 0}
	s.Finished, s.FinishReason = true, "length"
	at := time.Second
	for k := range 20 {
		if k == 10 {
			at += 200 * time.Millisecond
		} else if k > 0 {
			at += 5 * time.Millisecond
		}
		s.Marks.Append(sse.Mark{At: at, Text: 3, Tokens: 1})
	}
	s.CompletionTokens, s.TokenSource, s.HasUsage = 20, sse.TokensChoiceUsage, true
	res.Sequences = append(res.Sequences, s)
	f := measure.Compute(res, measure.Options{MaxTokens: 20})
	ws := joined(cellWarnings(config.Default(), matrix.Cell{SeqLen: 1000, Batch: 1}, &results.Cell{Figures: &f}, false))
	// 19 intervals: 18 of 5 ms and one of 200 ms, which adds 195 ms to the 290 ms of decode
	if want := "fwd 15.263 ms includes long chunk intervals that shifted every chunk after them: up to 1 interval in 1 of 1 sequences (the longest 200.0 ms, 40× the typical forward pass 5.000 ms) carry 67.2 % of the decode time (said above 2 %); without them fwd would read 5.000 ms"; !strings.Contains(ws, want) {
		t.Errorf("warnings lack %q:\n%s", want, ws)
	}
	// A regular stream says nothing of it.
	if ws, _ := warningsOf(t, 4, 0, measure.Options{}, sse.Usage{}); strings.Contains(strings.Join(ws, "\n"), "long chunk intervals") {
		t.Errorf("a regular stream is warned of stalls: %q", ws)
	}
}

// arrivalCell is a cell of b sequences of 100 one-token chunks (continuous usage), chunk k of
// every sequence arriving at 1 s + at(k) + 37 µs × the sequence's index (the client reads
// them one after the other).
func arrivalCell(b int, at func(k int) time.Duration) *results.Cell {
	res := &dispatch.Result{MaxTokens: 100, Mode: dispatch.ModeArray, Requests: []dispatch.Request{{HasUsage: true}}}
	for i := range b {
		s := dispatch.Sequence{Prompt: i}
		s.Index = i
		for k := range 100 {
			s.Marks.Append(sse.Mark{At: time.Second + at(k) + time.Duration(i)*37*time.Microsecond, Text: 3, Tokens: 1})
		}
		s.Finished, s.FinishReason, s.FinishAt = true, "length", s.Marks.At(99)
		s.CompletionTokens, s.TokenSource, s.HasUsage = 100, sse.TokensChoiceUsage, true
		res.Sequences = append(res.Sequences, s)
	}
	f := measure.Compute(res, measure.Options{MaxTokens: 100})
	return &results.Cell{Figures: &f}
}

// Paired frames (two chunks per write: intervals of 41 µs and 40 ms) and steps alternating
// 10/30 ms with two hiccups a read late by 300 ms (the chunks after them on time again) have a
// right mean (20 ms) and a bimodal or paired interval distribution whose p99 is over 10× its
// p50: no slow-forwards, since no long interval shifted the chunks after it. A lag of 10 steps
// from chunk 50 on (fwd +9.2 %) is said, with its share and fwd without it.
func TestSlowForwardsIsTheTailsShareOfTheDecodeTime(t *testing.T) {
	const step = 20 * time.Millisecond
	cells := []struct {
		name string
		b    int
		at   func(k int) time.Duration
		want string // "" : no slow-forwards
	}{
		{"pairs", 16, func(k int) time.Duration { return time.Duration(k|1)*step + time.Duration(k&1)*41*time.Microsecond }, ""},
		{"alternating 10/30 ms with two hiccups", 1, func(k int) time.Duration {
			at := time.Duration(k/2)*2*step + time.Duration(k%2)*step/2
			if k == 30 || k == 70 {
				at += 300 * time.Millisecond
			}
			return at
		}, ""},
		{"lag of 10 steps from chunk 50", 4, func(k int) time.Duration {
			if k >= 50 {
				return time.Duration(k+10) * step
			}
			return time.Duration(k) * step
		}, "fwd 22.020 ms includes long chunk intervals that shifted every chunk after them: up to 1 interval in 4 of 4 sequences (the longest 220.0 ms, 11× the typical forward pass 20.000 ms) carry 9.2 % of the decode time (said above 2 %); without them fwd would read 20.000 ms"},
	}
	for _, c := range cells {
		rec := arrivalCell(c.b, c.at)
		f := rec.Figures
		if i := f.ITL; c.want == "" && (i.P99 <= 10*i.P50 || f.PerForward.Mean <= 3*i.P50/2) {
			t.Errorf("%s: ITL p50 %v, p99 %v, fwd %v: not the shape a quantile ratio misreads", c.name, i.P50, i.P99, f.PerForward.Mean)
		}
		if c.want == "" && (f.PerForward.Mean < 19900*time.Microsecond || f.PerForward.Mean > 20100*time.Microsecond) {
			t.Errorf("%s: fwd %v, want 20 ms", c.name, f.PerForward.Mean)
		}
		ws, _ := cellWarnings(config.Default(), matrix.Cell{SeqLen: 1000, Batch: c.b}, rec, false)
		var got []string
		for _, w := range ws {
			if w.Name == warning.SlowForwards {
				got = append(got, w.Text)
			}
		}
		switch {
		case c.want == "" && len(got) > 0:
			t.Errorf("%s: warned of slow forward passes: %q", c.name, got)
		case c.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], c.want)):
			t.Errorf("%s: slow-forwards %q, want %q", c.name, got, c.want)
		}
	}
}

// A server whose running gauge counts HTTP requests reads 1 for an array request of B prompts
// its engine decodes together. With the client's marks showing all B sharing forward passes
// the cell is not partial, and the warning says the gauge counts requests; with marks that show
// the sequences one after another, the gauge's "batch not reached" stands.
func TestGaugeOfRequestsAgainstTheClientsMarks(t *testing.T) {
	const step = 20 * time.Millisecond
	together := arrivalCell(4, func(k int) time.Duration { return time.Duration(k) * step })
	together.Server = &scrape.CellMetrics{Occupancy: metrics.Occupy([]int{1, 1, 1, 1, 1, 1}, 4)}
	ws, notReached := cellWarnings(config.Default(), matrix.Cell{SeqLen: 1000, Batch: 4}, together, false)
	var att []warning.Warning
	for _, w := range ws {
		if w.Name == warning.BatchNotReached || w.Name == warning.AttainmentUnknown {
			att = append(att, w)
		}
	}
	want := "batch attainment unknown (the running-requests gauge read at most 1, one per HTTP request: it counts requests, not sequences, and the cell sent its 4 prompts in 1 request; gauge: "
	if notReached || len(att) != 1 || att[0].Name != warning.AttainmentUnknown || !strings.HasPrefix(att[0].Text, want) ||
		!strings.Contains(att[0].Text, "the client's marks show all 4 sequences decoding at once, 100 % of their chunks arriving together") {
		t.Errorf("gauge of requests, B together: not reached %v, %+v\nwant %q…", notReached, att, want)
	}
	// one sequence after another: each starts when the one before has finished
	res := &dispatch.Result{MaxTokens: 100, Mode: dispatch.ModeArray, Requests: []dispatch.Request{{HasUsage: true}}}
	for i := range 4 {
		s := dispatch.Sequence{Prompt: i}
		s.Index = i
		for k := range 100 {
			s.Marks.Append(sse.Mark{At: time.Second + time.Duration(100*i+k)*step, Text: 3, Tokens: 1})
		}
		s.Finished, s.FinishReason, s.FinishAt = true, "length", s.Marks.At(99)
		s.CompletionTokens, s.TokenSource, s.HasUsage = 100, sse.TokensChoiceUsage, true
		res.Sequences = append(res.Sequences, s)
	}
	f := measure.Compute(res, measure.Options{MaxTokens: 100})
	apart := &results.Cell{Figures: &f, Server: &scrape.CellMetrics{Occupancy: metrics.Occupy([]int{1, 1, 1, 1, 1, 1}, 4)}}
	ws, notReached = cellWarnings(config.Default(), matrix.Cell{SeqLen: 1000, Batch: 4}, apart, false)
	if got := joined(ws, notReached); !notReached || !strings.Contains(got, "batch not reached: the server ran at most 1 sequences at once, not B = 4") {
		t.Errorf("gauge of 1, sequences one after another: not reached %v\n%s", notReached, got)
	}
}

// Frames written in pairs and read one by one (intervals of 41 µs and 40 ms): over half of the
// intervals are a sliver, not 0, and they are said as chunks that arrived together, as the same
// stream read in one piece is.
func TestChunksTogetherAtASliver(t *testing.T) {
	const step = 20 * time.Millisecond
	for _, gap := range []time.Duration{0, 41 * time.Microsecond} {
		rec := arrivalCell(16, func(k int) time.Duration { return time.Duration(k|1)*step + time.Duration(k&1)*gap })
		ws, _ := cellWarnings(config.Default(), matrix.Cell{SeqLen: 1000, Batch: 16}, rec, false)
		var got []string
		for _, w := range ws {
			if w.Name == warning.ChunksTogether {
				got = append(got, w.Text)
			}
		}
		want := "over half of the chunk intervals are 0: "
		if gap > 0 {
			want = fmt.Sprintf("over half of the chunk intervals are under a tenth of their mean (ITL p50 %.3f ms, mean %.3f ms)", measure.Ms(rec.Figures.ITL.P50), measure.Ms(rec.Figures.ITL.Mean))
		}
		if len(got) != 1 || !strings.HasPrefix(got[0], want) {
			t.Errorf("pairs %v apart: chunks-together %q, want %q…", gap, got, want)
		}
		if p50 := rec.Figures.ITL.P50; p50 != gap {
			t.Errorf("pairs %v apart: ITL p50 %v", gap, p50)
		}
	}
	// a steady stream is not
	rec := arrivalCell(16, func(k int) time.Duration { return time.Duration(k) * step })
	ws, _ := cellWarnings(config.Default(), matrix.Cell{SeqLen: 1000, Batch: 16}, rec, false)
	for _, w := range ws {
		if w.Name == warning.ChunksTogether {
			t.Errorf("steady stream: %s", w.Text)
		}
	}
}

// With the built-in engine in genload's process, a busy process is the engine's and the
// client's together: no client-bottleneck warning while the client's fwd agrees with the
// engine's own decode step time, a warning that says the process is shared (and the gap) when
// it does not; another server keeps the plain warning.
func TestClientBottleneckAgainstTheInProcessEngine(t *testing.T) {
	busy := &recording.ClientLoad{SchedP50: 100 * time.Microsecond, SchedP99: 1500 * time.Microsecond, Cores: 2, CPUShare: 0.15}
	f := &measure.Figures{PerForward: measure.Summary{N: 4, Mean: 1000 * time.Microsecond}, ITL: measure.Summary{N: 40, P50: time.Millisecond}}
	truth := func(d time.Duration) *metrics.CellMetrics {
		return &metrics.CellMetrics{Steps: metrics.Steps{HasTruthDecode: true, TruthDecodeStepTime: d}}
	}
	remote := config.Default()
	remote.Target = "http://127.0.0.1:8000"
	for _, tc := range []struct {
		name   string
		cfg    *config.Config
		server *metrics.CellMetrics
		want   string // "" = no warning; else a part of it
		shared bool
	}{
		{"in-process, fwd agrees with the engine", config.Default(), truth(1030 * time.Microsecond), "", false},
		{"in-process, fwd 10 % off the engine", config.Default(), truth(1100 * time.Microsecond), "differs from the engine's own decode step time 1.100 ms by -9.1 %", true},
		{"in-process, no engine step time", config.Default(), nil, "waited up to 1.5 ms", true},
		{"another server", remote, truth(1030 * time.Microsecond), "waited up to 1.5 ms", false},
	} {
		got := clientBottleneck(tc.cfg, &results.Cell{Client: busy, Server: tc.server}, f)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
		if strings.Contains(got, "runs in genload's process") != tc.shared {
			t.Errorf("%s: %q: says the process is shared %v, want %v", tc.name, got, !tc.shared, tc.shared)
		}
	}
	if got := clientBottleneck(config.Default(), &results.Cell{Client: &recording.ClientLoad{Cores: 2, CPUShare: 0.1}, Server: truth(2 * time.Millisecond)}, f); got != "" {
		t.Errorf("an idle client: %q", got)
	}
}

// The slow-body-write warning on the time-scaled built-in engine gives the write's share at
// time scale 1 beside the measured one: 0.8 ms of a 4.6 ms TTFT p50 at scale 0.1 is 17.4 %
// measured and 0.8 / ((4.6 − 0.8)/0.1 + 0.8) = 2.06 % at scale 1.
func TestBodyWriteWarningOnTheScaledEngine(t *testing.T) {
	l := &recording.ClientLoad{WriteRequest: 3, Write: 800 * time.Microsecond, Build: time.Millisecond}
	f := &measure.Figures{TTFT: measure.Summary{N: 8, P50: 4600 * time.Microsecond}}
	w := bodyWriteWarning(l, f, 0.1)
	if w == nil || !strings.Contains(w.Text, "17.4 % of the cell's TTFT p50 4.6 ms") || !strings.Contains(w.Text, "time scale 0.1") || !strings.Contains(w.Text, "about 2.1 % of TTFT") {
		t.Fatalf("scale 0.1: %+v", w)
	}
	if w := bodyWriteWarning(l, f, 0); w == nil || strings.Contains(w.Text, "time scale") {
		t.Errorf("another server: %+v", w)
	}
	if w := bodyWriteWarning(l, f, 1); w == nil || strings.Contains(w.Text, "time scale") {
		t.Errorf("scale 1: %+v", w)
	}
	if s := builtinTimeScale(config.Default()); s != engine.DefaultConfig().TimeScale || s <= 0 {
		t.Errorf("default time scale %g", s)
	}
}

// On the built-in engine in genload's process, long chunk intervals the engine repaid (its
// decode steps on their plan in all, the client's fwd its decode step time) are not said to
// weigh on fwd; the same cell whose decode steps ran 5 % over their plan, or on another
// server, keeps the warning.
func TestSlowForwardsRepaidByTheEngine(t *testing.T) {
	const step = 20 * time.Millisecond
	lag := func(k int) time.Duration {
		if k >= 50 {
			return time.Duration(k+10) * step
		}
		return time.Duration(k) * step
	}
	remote := config.Default()
	remote.Target = "http://127.0.0.1:8000"
	for _, tc := range []struct {
		name   string
		cfg    *config.Config
		decode float64 // the engine's decode steps' net share over their plan
		said   bool
	}{
		{"built-in, decode steps on plan", config.Default(), 0.004, false},
		{"built-in, decode steps 5 % over", config.Default(), 0.05, true},
		{"another server", remote, 0.004, true},
	} {
		rec := arrivalCell(4, lag)
		rec.Server = &metrics.CellMetrics{Steps: metrics.Steps{HasTruthDecode: true, TruthDecodeStepTime: rec.Figures.PerForward.Mean,
			Overrun: &metrics.Overrun{Steps: 100, HasDecode: true, Decode: tc.decode}}}
		ws, _ := cellWarnings(tc.cfg, matrix.Cell{SeqLen: 1000, Batch: 4}, rec, false)
		said := false
		for _, w := range ws {
			said = said || w.Name == warning.SlowForwards
		}
		if said != tc.said {
			t.Errorf("%s: slow-forwards said %v, want %v", tc.name, said, tc.said)
		}
	}
}
