package clientcheck

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/dispatch"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/internal/logtest"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/scrape"
)

// step is one parsed engine step line.
type step struct {
	decode, prefill int
	wall            time.Duration
}

// steps reads the step lines the engine wrote to log.
func steps(t *testing.T, log *logtest.LockedBuffer) []step {
	t.Helper()
	var out []step
	for _, l := range logtest.Lines(log.String()) {
		out = append(out, step{
			decode:  l.Int(t, "decode"),
			prefill: l.Int(t, "prefill_tokens"),
			wall:    time.Duration(l.Float(t, "wall_ms") * 1e6),
		})
	}
	return out
}

func startEngine(t *testing.T, dialect string, log *logtest.LockedBuffer, mod ...func(*engine.Config)) string {
	t.Helper()
	cfg := engine.DefaultConfig()
	for _, m := range mod {
		m(&cfg)
	}
	cfg.Dialect = dialect
	cfg.EOSProbability = 0 // TGI drops ignore_eos: no early stops in any dialect
	cfg.TimeScale = 1      // real-time steps of a few ms, so that sub-ms scheduling jitter is small
	cfg.StepLog = log
	e, err := engine.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	u, err := e.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return u
}

func prompts(b, l int) [][]int32 {
	out := make([][]int32, b)
	for i := range out {
		p := make([]int32, l+i*7)
		for k := range p {
			p[k] = int32((i*131 + k*17) % 50000)
		}
		out[i] = p
	}
	return out
}

// Every mode on every dialect: all sequences complete with max_tokens tokens and the
// full-occupancy per-step latency is close to the engine's true full-batch decode step.
func TestAgainstEngine(t *testing.T) {
	const b, maxTok = 4, 40
	for _, dialect := range []string{engine.DialectVLLM, engine.DialectSGLang, engine.DialectLlamaCpp, engine.DialectTGI} {
		for _, mode := range []dispatch.Mode{dispatch.ModeArray, dispatch.ModeRouted, dispatch.ModeN} {
			tgi := dialect == engine.DialectTGI // TGI: string prompts only, n ignored
			if tgi && mode == dispatch.ModeN {
				continue
			}
			t.Run(fmt.Sprintf("%s/%s", dialect, mode), func(t *testing.T) {
				log := &logtest.LockedBuffer{}
				u := startEngine(t, dialect, log)
				c, err := dispatch.New(dispatch.Options{Target: u, ContinuousUsage: true,
					GenerationDurationHeader: "generation-duration", SpeculationAcceptanceHeader: "speculation-acceptance"})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				ps := prompts(b, 300)
				texts := make([]string, len(ps))
				for i := range texts {
					texts[i] = strings.Repeat(fmt.Sprintf("text %d. ", i), 40) // byte-level tokens
				}
				warm := func() error { return c.Warmup(context.Background(), mode, ps) }
				send := func() (*dispatch.Result, error) { return c.Send(context.Background(), mode, ps, maxTok) }
				if tgi {
					warm = func() error { return c.WarmupText(context.Background(), mode, texts) }
					send = func() (*dispatch.Result, error) { return c.SendText(context.Background(), mode, texts, maxTok) }
				}
				if err := warm(); err != nil {
					t.Fatal(err)
				}
				log.Reset()
				w, err := scrape.NewWatcher(context.Background(), u+"/metrics", "", 5*time.Millisecond)
				if err != nil {
					t.Fatal(err)
				}
				if w.Names.Dialect != dialect {
					t.Fatalf("detected %q, want %q", w.Names.Dialect, dialect)
				}
				if err := w.Begin(context.Background()); err != nil {
					t.Fatal(err)
				}
				res, err := send()
				cm, err2 := w.End(context.Background(), b)
				if err2 != nil {
					t.Fatal(err2)
				}
				st, occ := cm.Steps, cm.Occupancy
				if err != nil {
					t.Fatal(err)
				}
				if err := res.Err(); err != nil {
					t.Fatal(err)
				}
				f := measure.Compute(res, measure.Options{GenerationDurationHeader: "generation-duration", SpeculationAcceptanceHeader: "speculation-acceptance"})
				if f.Counted != b || f.CompletionTokens != b*maxTok || f.Short != 0 {
					t.Fatalf("figures: %+v", f)
				}
				// truth: the mean full-batch decode step; last: the index in all of the last
				// full-batch step, where the window's reference (the first sequence to
				// finish) received its last token
				var truth time.Duration
				all, n, last := steps(t, log), 0, -1
				for i, s := range all {
					if s.decode == b && s.prefill == 0 {
						truth, n, last = truth+s.wall, n+1, i
					}
				}
				if n == 0 || !f.Window.Valid {
					t.Fatalf("no full-batch decode step (%d) or window %+v", n, f.Window)
				}
				truth /= time.Duration(n)
				// the window times its reference's forward passes Trail before its last token
				// back Steps passes: the engine's steps last−Trail−Steps+1 … last−Trail, every
				// one a step the reference decoded in. All are full-batch steps but, when the
				// last sequence's first chunk arrived late, the first, the step that ran
				// that sequence's prefill beside the others' decode.
				from, to := last-f.Window.Trail-f.Window.Steps+1, last-f.Window.Trail+1
				if from < 0 || to <= from {
					t.Fatalf("window of %d steps, %d before the end, over %d steps up to the last full-batch one", f.Window.Steps, f.Window.Trail, last+1)
				}
				var wtruth time.Duration
				mixed := 0
				for _, s := range all[from:to] {
					wtruth += s.wall
					if s.decode != b || s.prefill != 0 {
						mixed++
					}
				}
				if mixed > 1 || mixed == 1 && all[from].prefill == 0 {
					t.Fatalf("window of %d steps, %d before the end: %d of its steps are not full-batch decode steps (%+v …)", f.Window.Steps, f.Window.Trail, mixed, all[from:min(to, from+3)])
				}
				if mixed == 1 {
					t.Logf("the window's first step ran a prefill: %+v", all[from])
				}
				wtruth /= time.Duration(f.Window.Steps)
				rel := float64(f.Window.PerStep-wtruth) / float64(wtruth)
				t.Logf("window %v over %d steps, engine %v over the same steps (all %d full-batch steps %v): error %+.2f%%; per-sequence mean %v; TTFT p50 %v; tokens from %v",
					f.Window.PerStep, f.Window.Steps, wtruth, n, truth, 100*rel, f.PerForward.Mean, f.TTFT.P50, f.TokenSources)
				t.Logf("metrics: step %v (has %v), truth %v over %v steps, tokens/step %.2f; occupancy %+v",
					st.StepTime, st.HasStepTime, st.TruthStepTime, st.TruthSteps, st.TokensPerStep, occ)
				if occ.Max > b || occ.Samples == 0 || occ.Mode != b {
					t.Errorf("occupancy %+v: want mode %d, max ≤ %d", occ, b, b)
				}
				if !st.HasTruth || st.TruthSteps < maxTok-1 {
					t.Errorf("truth from metrics: %+v", st)
				}
				if f.Header == nil {
					t.Errorf("no header figure (trailers not captured?)")
				} else {
					r := float64(f.Header.PerForward.Mean-truth) / float64(truth)
					t.Logf("header figure %v (%+.2f%%)", f.Header.PerForward.Mean, 100*r)
					if r < -0.1 || r > 0.1 {
						t.Errorf("header per-forward %v differs from the engine's %v by %.1f%%", f.Header.PerForward.Mean, truth, 100*r)
					}
				}
				if st.HasStepTime {
					// the metrics' mean ITL against the engine's full-batch decode step
					if r := float64(st.StepTime-truth) / float64(truth); r < -0.1 || r > 0.1 {
						t.Errorf("metrics step time %v differs from the engine's %v by %.1f%% (> 10%%)", st.StepTime, truth, 100*r)
					}
				} else {
					t.Errorf("no step time from %s metrics", dialect)
				}
				if rel < -0.1 || rel > 0.1 {
					t.Errorf("window per-step %v differs from the engine's %v over the same steps by %.1f%% (> 10%%)", f.Window.PerStep, wtruth, 100*rel)
				}
			})
		}
	}
}

// Speculative decoding (k = 3 drafted tokens per step, acceptance 0.7): chunks carry
// several tokens; the header figure, counting one chunk per forward pass, recovers the
// engine's true decode step, while the per-sequence figure is the time per output token
// (smaller by the mean tokens per forward).
func TestSpeculativeHeaderFigure(t *testing.T) {
	const b, maxTok, k = 4, 60, 3
	log, seqLog := &logtest.LockedBuffer{}, &logtest.LockedBuffer{}
	u := startEngine(t, engine.DialectVLLM, log, func(c *engine.Config) { c.SpecTokens, c.SpecAcceptance, c.SeqLog = k, 0.7, seqLog })
	c, err := dispatch.New(dispatch.Options{Target: u, ContinuousUsage: true,
		GenerationDurationHeader: "generation-duration", SpeculationAcceptanceHeader: "speculation-acceptance"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ps := prompts(b, 300)
	if err := c.Warmup(context.Background(), dispatch.ModeArray, ps); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	seqLog.Reset()
	res, err := c.Send(context.Background(), dispatch.ModeArray, ps, maxTok)
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	// One chunk per forward pass counted (draft_tokens set): the request's generation
	// duration spans the forward passes from its first token to its last, as the engine's log
	// does.
	f := measure.Compute(res, measure.Options{GenerationDurationHeader: "generation-duration",
		SpeculationAcceptanceHeader: "speculation-acceptance", DraftTokens: k, ChunkForwards: true})
	if f.Header == nil {
		t.Fatal("no header figure")
	}
	truth := spanTruth(t, seqLog)
	r := float64(f.Header.PerForward.Mean-truth) / float64(truth)
	t.Logf("header per-forward %v (τ = %.2f tokens/forward) vs engine %v over the request's span (all decode steps %v): %+.2f%%; per-sequence TPOT %v; ITL tokens/chunk %.2f",
		f.Header.PerForward.Mean, f.Header.TokensPerForward, truth, decodeTruth(t, log, 0), 100*r, f.PerForward.Mean, f.ITLTokens)
	if r < -0.01 || r > 0.01 {
		t.Errorf("header per-forward %v vs engine %v: %.1f%%", f.Header.PerForward.Mean, truth, 100*r)
	}
	if f.ITLTokens <= 1 || f.CompletionTokens != b*maxTok {
		t.Errorf("tokens per chunk %.2f (want > 1 with speculation), tokens %d", f.ITLTokens, f.CompletionTokens)
	}
}
