package clientcheck

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/genload/genload/host/dispatch"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/internal/logtest"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/scrape"
)

// decodeTruth is the mean wall time of the logged decode steps (no prefill) with b
// sequences, or with any number when b = 0.
func decodeTruth(t *testing.T, log *logtest.LockedBuffer, b int) time.Duration {
	t.Helper()
	var truth time.Duration
	n := 0
	for _, s := range steps(t, log) {
		if (s.decode == b || b == 0 && s.decode > 0) && s.prefill == 0 {
			truth += s.wall
			n++
		}
	}
	if n == 0 {
		t.Fatalf("no decode step with %d sequences", b)
	}
	return truth / time.Duration(n)
}

// spanTruth is what a generation-duration header of the sequences in seqLog times per
// forward pass, from the engine's own log: per request, from its earliest first token to its
// latest last token over the steps between, averaged over the requests (one in array mode,
// one per sequence routed).
func spanTruth(t *testing.T, seqLog *logtest.LockedBuffer) time.Duration {
	t.Helper()
	type span struct {
		first, last         float64
		firstStep, lastStep int
	}
	reqs := map[int]*span{}
	for _, l := range logtest.Lines(seqLog.String()) {
		r := l.Int(t, "req")
		sp := reqs[r]
		if sp == nil {
			sp = &span{first: math.Inf(1), last: math.Inf(-1)}
			reqs[r] = sp
		}
		if f := l.Float(t, "first_ms"); f < sp.first {
			sp.first, sp.firstStep = f, l.Int(t, "first_step")
		}
		if v := l.Float(t, "last_ms"); v > sp.last {
			sp.last, sp.lastStep = v, l.Int(t, "last_step")
		}
	}
	var sum float64
	for _, sp := range reqs {
		sum += (sp.last - sp.first) / float64(sp.lastStep-sp.firstStep)
	}
	if len(reqs) == 0 {
		t.Fatal("no sequence in the engine's log")
	}
	return time.Duration(sum / float64(len(reqs)) * 1e6)
}

// The header figure with speculative decoding (k = 3, α = 0.7) and draft_tokens set: the
// generation duration of a request spans its forward passes from its first token to its last
// (every sequence's, in one request of B), and the figure divides it by those forward passes
// — the engine's own log gives the same span and steps, so the figure is held to it within
// 1 % whatever the steps took.
func TestSpeculativeHeaderFigureAtBatch(t *testing.T) {
	const maxTok, k = 40, 3
	for _, mode := range []dispatch.Mode{dispatch.ModeArray, dispatch.ModeRouted} {
		for _, b := range []int{1, 8, 16} {
			if mode == dispatch.ModeRouted && b == 1 {
				continue
			}
			t.Run(fmt.Sprintf("%s/B=%d", mode, b), func(t *testing.T) {
				log, seqLog := &logtest.LockedBuffer{}, &logtest.LockedBuffer{}
				u := startEngine(t, engine.DialectVLLM, log, func(c *engine.Config) { c.SpecTokens, c.SpecAcceptance, c.SeqLog = k, 0.7, seqLog })
				c, err := dispatch.New(dispatch.Options{Target: u, GenerationDurationHeader: "generation-duration", SpeculationAcceptanceHeader: "speculation-acceptance"})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				ps := prompts(b, 300)
				if err := c.Warmup(context.Background(), mode, ps); err != nil {
					t.Fatal(err)
				}
				log.Reset()
				seqLog.Reset()
				res, err := c.Send(context.Background(), mode, ps, maxTok)
				if err != nil || res.Err() != nil {
					t.Fatal(err, res.Err())
				}
				o := measure.Options{GenerationDurationHeader: "generation-duration",
					SpeculationAcceptanceHeader: "speculation-acceptance", DraftTokens: k, ChunkForwards: true}
				f := measure.Compute(res, o)
				if f.Header == nil || f.Header.PerForward.N == 0 {
					t.Fatalf("no header figure: %+v", f.Header)
				}
				h, truth := f.Header.PerForward.Mean, spanTruth(t, seqLog)
				t.Logf("hdr fwd %v (τ %.2f); engine: %v over each request's span; all decode steps %v", h, f.Header.TokensPerForward, truth, decodeTruth(t, log, 0))
				if rel := float64(h)/float64(truth) - 1; math.Abs(rel) > 0.01 {
					t.Errorf("hdr fwd %v is %+.2f %% off the engine's %v over the same spans", h, 100*rel, truth)
				}
				if mode == dispatch.ModeArray && b > 1 {
					// without counting chunks, the acceptance rate cannot give the slowest
					// sequence's forward passes: absent, with the reason
					o.ChunkForwards = false
					if g := measure.Compute(res, o); g.Header == nil || g.Header.PerForward.N != 0 || g.Header.Reason == "" {
						t.Errorf("array of %d without chunk forwards: header %+v, want no figure and a reason", b, g.Header)
					}
				}
			})
		}
	}
}

// llama.cpp's /metrics step time at max_tokens 10: its counters add every generated token
// but only the n − 1 forward passes after the first; the figure divides by the forwards and
// equals the engine's decode-step mean (it read −10 % dividing by tokens).
func TestLlamaCppMetricsStepTime(t *testing.T) {
	const b, maxTok = 4, 10
	log := &logtest.LockedBuffer{}
	u := startEngine(t, engine.DialectLlamaCpp, log)
	c, err := dispatch.New(dispatch.Options{Target: u})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ps := prompts(b, 300)
	if err := c.Warmup(context.Background(), dispatch.ModeArray, ps); err != nil {
		t.Fatal(err)
	}
	w, err := scrape.NewWatcher(context.Background(), u+"/metrics", "", 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	log.Reset()
	if err := w.Begin(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, err := c.Send(context.Background(), dispatch.ModeArray, ps, maxTok)
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	cm, err := w.End(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	truth := decodeTruth(t, log, 0)
	st := cm.Steps
	r := float64(st.StepTime-truth) / float64(truth)
	t.Logf("metrics fwd %v vs engine decode steps %v: %+.2f %%; engine's own %v", st.StepTime, truth, 100*r, st.TruthDecodeStepTime)
	// ±5 %: the old formula read −10 % here, and 9 decode steps timed by the engine's counters
	// move by a few % when a -race build on a loaded machine delays a slot's first token.
	if !st.HasStepTime || r < -0.05 || r > 0.05 {
		t.Errorf("llama.cpp metrics fwd %v (has %v: %s) vs engine %v: %+.1f %%", st.StepTime, st.HasStepTime, st.StepTimeReason, truth, 100*r)
	}
}

// Routed over two engines (workers w0 and w2 on A, w1 on B; round robin over B = 6 puts 4
// sequences on A and 2 on B): each server's /metrics is scraped, its occupancy is its share
// and its step time is its own engine's decode step; the combined figures pool both.
func TestRoutedOverTwoServers(t *testing.T) {
	const b, maxTok = 6, 30
	la, lb := &logtest.LockedBuffer{}, &logtest.LockedBuffer{}
	ua, ub := startEngine(t, engine.DialectVLLM, la), startEngine(t, engine.DialectVLLM, lb)
	workers := []dispatch.Worker{{Name: "w0", URL: ua}, {Name: "w1", URL: ub}, {Name: "w2", URL: ua}}
	c, err := dispatch.New(dispatch.Options{Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ps := prompts(b, 300)
	if err := c.Warmup(context.Background(), dispatch.ModeRouted, ps); err != nil {
		t.Fatal(err)
	}
	w, err := scrape.NewRoutedWatcher(context.Background(), []scrape.Worker{{Name: "w0", MetricsURL: ua + "/metrics"},
		{Name: "w1", MetricsURL: ub + "/metrics"}, {Name: "w2", MetricsURL: ua + "/metrics"}}, "", 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []*logtest.LockedBuffer{la, lb} {
		l.Reset()
	}
	if err := w.Begin(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, err := c.Send(context.Background(), dispatch.ModeRouted, ps, maxTok)
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	assign := make([]int, b)
	for _, s := range res.Sequences {
		assign[s.Prompt] = res.Requests[s.Request].Worker
	}
	m, err := w.EndRouted(context.Background(), b, assign)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Servers) != 2 {
		t.Fatalf("servers %+v", m.Servers)
	}
	for i, want := range []struct {
		share int
		log   *logtest.LockedBuffer
	}{{4, la}, {2, lb}} {
		s := m.Servers[i]
		truth := decodeTruth(t, want.log, want.share)
		r := float64(s.Steps.StepTime-truth) / float64(truth)
		t.Logf("%s: %d sequences, occupancy %+v, metrics fwd %v vs its engine's %d-sequence decode step %v (%+.1f %%)",
			s.URL, s.Sequences, s.Occupancy, s.Steps.StepTime, want.share, truth, 100*r)
		if s.Sequences != want.share || s.Occupancy.Mode != want.share || s.Occupancy.Max != want.share {
			t.Errorf("%s: share %d, occupancy %+v; want %d", s.URL, s.Sequences, s.Occupancy, want.share)
		}
		if !s.Steps.HasStepTime || r < -0.1 || r > 0.1 {
			t.Errorf("%s: metrics fwd %v vs %v", s.URL, s.Steps.StepTime, truth)
		}
	}
	if m.Occupancy.Target != b || m.Occupancy.Max != b || !m.Steps.HasStepTime || !m.Steps.HasTruthDecode {
		t.Errorf("combined %+v", m)
	}
	t.Logf("combined: occupancy %+v, metrics fwd %v, engines' decode steps %v", m.Occupancy, m.Steps.StepTime, m.Steps.TruthDecodeStepTime)
}

// Attainment from the client's marks: the engine with max_num_seqs = 2 runs B = 4 and 8
// two at a time (probably not reached, client concurrency 2); with the default limit the
// batch of B is reached, in array and routed mode.
func TestAttainmentAgainstEngine(t *testing.T) {
	const maxTok = 20
	for _, tc := range []struct {
		maxSeqs, b int
		mode       dispatch.Mode
		state      string
		conc       int
	}{
		{2, 4, dispatch.ModeArray, measure.AttainmentProbablyNotReached, 2},
		{2, 8, dispatch.ModeRouted, measure.AttainmentProbablyNotReached, 2},
		{0, 4, dispatch.ModeArray, measure.AttainmentReached, 4},
		{0, 8, dispatch.ModeRouted, measure.AttainmentReached, 8},
		{0, 1, dispatch.ModeArray, measure.AttainmentReached, 1},
	} {
		t.Run(fmt.Sprintf("max_num_seqs=%d/B=%d/%s", tc.maxSeqs, tc.b, tc.mode), func(t *testing.T) {
			u := startEngine(t, engine.DialectVLLM, &logtest.LockedBuffer{}, func(c *engine.Config) {
				if tc.maxSeqs > 0 {
					c.MaxNumSeqs = tc.maxSeqs
				}
			})
			c, err := dispatch.New(dispatch.Options{Target: u})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ps := prompts(tc.b, 300)
			if err := c.Warmup(context.Background(), tc.mode, ps); err != nil {
				t.Fatal(err)
			}
			res, err := c.Send(context.Background(), tc.mode, ps, maxTok)
			if err != nil || res.Err() != nil {
				t.Fatal(err, res.Err())
			}
			a := measure.Attain(res, tc.b)
			t.Logf("%+v", a)
			if a.State != tc.state || a.Concurrency != tc.conc {
				t.Errorf("attainment %+v, want %q with client concurrency %d", a, tc.state, tc.conc)
			}
		})
	}
}
