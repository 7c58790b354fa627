package clientcheck

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/genload/genload/host/dispatch"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/scrape"
)

// stepLog collects the engine's per-step lines.
type stepLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *stepLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// step is one parsed engine step line.
type step struct {
	decode, prefill int
	wall            time.Duration
}

func (l *stepLog) steps(t *testing.T) []step {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []step
	sc := bufio.NewScanner(bytes.NewReader(l.buf.Bytes()))
	for sc.Scan() {
		var s step
		for _, f := range strings.Fields(sc.Text()) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "decode":
				s.decode, _ = strconv.Atoi(v)
			case "prefill_tokens":
				s.prefill, _ = strconv.Atoi(v)
			case "wall_ms":
				x, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatalf("step line %q: %v", sc.Text(), err)
				}
				s.wall = time.Duration(x * 1e6)
			}
		}
		out = append(out, s)
	}
	return out
}

func startEngine(t *testing.T, dialect string, log *stepLog) string {
	t.Helper()
	cfg := engine.DefaultConfig()
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
				log := &stepLog{}
				u := startEngine(t, dialect, log)
				c, err := dispatch.New(dispatch.Options{Target: u, ContinuousUsage: true})
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
					warm = func() error { return c.WarmupText(context.Background(), mode, texts, nil) }
					send = func() (*dispatch.Result, error) { return c.SendText(context.Background(), mode, texts, nil, maxTok) }
				}
				if err := warm(); err != nil {
					t.Fatal(err)
				}
				log.mu.Lock()
				log.buf.Reset()
				log.mu.Unlock()
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
				f := measure.Compute(res, measure.Options{})
				if f.Counted != b || f.CompletionTokens != b*maxTok || f.Short != 0 {
					t.Fatalf("figures: %+v", f)
				}
				var truth time.Duration
				n := 0
				for _, s := range log.steps(t) {
					if s.decode == b && s.prefill == 0 {
						truth += s.wall
						n++
					}
				}
				if n == 0 || !f.Window.Valid {
					t.Fatalf("no full-batch decode step (%d) or window %+v", n, f.Window)
				}
				truth /= time.Duration(n)
				rel := float64(f.Window.PerStep-truth) / float64(truth)
				t.Logf("window %v over %d steps, engine full-batch step %v (%d steps): error %+.2f%%; per-sequence mean %v; TTFT p50 %v; tokens from %v",
					f.Window.PerStep, f.Window.Steps, truth, n, 100*rel, f.PerForward.Mean, f.TTFT.P50, f.TokenSources)
				t.Logf("metrics: step %v (has %v), truth %v over %v steps, tokens/step %.2f; occupancy %+v",
					st.StepTime, st.HasStepTime, st.TruthStepTime, st.TruthSteps, st.TokensPerStep, occ)
				if occ.Max > b || occ.Samples == 0 || occ.Mode != b {
					t.Errorf("occupancy %+v: want mode %d, max ≤ %d", occ, b, b)
				}
				if !st.HasTruth || st.TruthSteps < maxTok-1 {
					t.Errorf("truth from metrics: %+v", st)
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
					t.Errorf("window per-step %v differs from the engine's %v by %.1f%% (> 10%%)", f.Window.PerStep, truth, 100*rel)
				}
			})
		}
	}
}
