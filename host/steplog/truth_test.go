package steplog

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/genload/genload/host/engine"
)

// syncBuf is a goroutine-safe log sink.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// truthSeq is one line of the engine's sequence log.
type truthSeq struct {
	req, firstStep, lastStep int
	firstMs, lastMs          float64
}

func parseSeqLog(t *testing.T, log string) []truthSeq {
	t.Helper()
	var out []truthSeq
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		var s truthSeq
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			var err error
			switch k {
			case "req":
				s.req, err = strconv.Atoi(v)
			case "first_step":
				s.firstStep, err = strconv.Atoi(v)
			case "last_step":
				s.lastStep, err = strconv.Atoi(v)
			case "first_ms":
				s.firstMs, err = strconv.ParseFloat(v, 64)
			case "last_ms":
				s.lastMs, err = strconv.ParseFloat(v, 64)
			}
			if err != nil {
				t.Fatalf("seq log %q: %v", line, err)
			}
		}
		out = append(out, s)
	}
	return out
}

// truthFigures computes a cell's figures from the engine's sequence log alone (prompts of a
// few tokens, so that a sequence's prefill is the one step that gives its first token): step
// s schedules the sequences with first_step ≤ s ≤ last_step and is a forward pass when one of
// them decodes (first_step < s). The forward time at B is over the steps at B where every
// sequence decodes (none prefills); they must form one run [lo, hi] whose bounding step ends
// — of step lo−1 and of step hi — the sequence log gives (as some sequence's first_ms or
// last_ms), and it is (end(hi) − end(lo−1)) / (hi − lo + 1). ok is false when the steps at B
// do not have that shape (the test's requests must then be changed).
func truthFigures(seqs []truthSeq, b int) (forwards, modal, atB, above int, fwdMs float64, ok bool) {
	lo, hi := math.MaxInt, 0
	end := map[int]float64{} // step → its end, ms, where the sequence log gives it
	for _, s := range seqs {
		lo, hi = min(lo, s.firstStep), max(hi, s.lastStep)
		end[s.firstStep], end[s.lastStep] = s.firstMs, s.lastMs
	}
	active := map[int]int{}
	var pure []int // steps at B where every scheduled sequence decodes
	for st := lo + 1; st <= hi; st++ {
		n, decoding := 0, 0
		for _, s := range seqs {
			if s.firstStep <= st && st <= s.lastStep {
				n++
			}
			if s.firstStep < st && st <= s.lastStep {
				decoding++
			}
		}
		if decoding == 0 {
			continue
		}
		forwards++
		active[st] = n
		if n == b && decoding == n {
			pure = append(pure, st)
		}
	}
	counts := map[int]int{}
	for _, n := range active {
		counts[n]++
		if n == b {
			atB++
		} else if n > b {
			above++
		}
	}
	best := 0
	for a, n := range counts {
		if n > best || (n == best && a > modal) {
			modal, best = a, n
		}
	}
	if len(pure) == 0 {
		return forwards, modal, atB, above, 0, true
	}
	pl, ph := pure[0], pure[len(pure)-1]
	e0, ok0 := end[pl-1]
	e1, ok1 := end[ph]
	if ph-pl+1 != len(pure) || !ok0 || !ok1 {
		return forwards, modal, atB, above, 0, false
	}
	return forwards, modal, atB, above, (e1 - e0) / float64(ph-pl+1), true
}

func TestStepLogAttainmentEqualsEngineTruth(t *testing.T) {
	// Three cells against the built-in engine, each a warmup (max_tokens = 1) then one
	// measured request, run as genload run does: B = 4 reached; B = 4 where one sequence
	// stops early (3 active most of the time); B = 2 with 3 sequences sent (above target).
	// The step log read with the genload preset must give, per cell, the figures computed
	// from the engine's per-sequence truth log alone.
	steps, seqs := &syncBuf{}, &syncBuf{}
	cfg := engine.DefaultConfig()
	cfg.Profile = "dense-8b"
	cfg.TimeScale = 0.3 // a dense-8b decode step ≈ 7 ms simulated → ≈ 2 ms wall
	cfg.StepLog, cfg.SeqLog = steps, seqs
	cfg.Noise = engine.Noise{StepCV: 0.05, BurstCV: 0.1, SlowProb: 0.05, SlowFactor: 3, Seed: 5}
	eng, err := engine.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	url, err := eng.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	send := func(prompts []string, maxTokens []int) {
		t.Helper()
		var wg sync.WaitGroup
		for i, p := range prompts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := fmt.Sprintf(`{"prompt":%s,"max_tokens":%d,"ignore_eos":true}`, p, maxTokens[i])
				resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}()
		}
		wg.Wait()
	}
	type cell struct {
		b         int
		maxTokens []int
	}
	cells := []cell{{4, []int{30, 30, 30, 30}}, {4, []int{30, 30, 30, 10}}, {2, []int{20, 20, 20}}}
	var spans []Span
	reqs := 0
	firstReq := make([]int, len(cells)) // request number of each cell's first measured request
	for ci, c := range cells {
		// one request with all the cell's prompts, so that they are admitted in one step
		prompt := "["
		for i := range c.maxTokens {
			if i > 0 {
				prompt += ","
			}
			prompt += fmt.Sprintf("[%d,%d,%d]", 10*ci+i+1, 100+i, 200+ci)
		}
		prompt += "]"
		start := time.Now()
		send([]string{prompt}, []int{1}) // warmup
		reqs++
		// the measured request: one prompt per distinct max_tokens group, sent together
		groups := map[int][]string{}
		var order []int
		for i, m := range c.maxTokens {
			if _, ok := groups[m]; !ok {
				order = append(order, m)
			}
			groups[m] = append(groups[m], fmt.Sprintf("[%d,%d,%d]", 10*ci+i+1, 100+i, 200+ci))
		}
		var ps []string
		var ms []int
		for _, m := range order {
			ps = append(ps, "["+strings.Join(groups[m], ",")+"]")
			ms = append(ms, m)
		}
		firstReq[ci] = reqs + 1
		send(ps, ms)
		reqs += len(ps)
		spans = append(spans, Span{Start: start, End: time.Now(), Batch: c.b})
	}
	truth := parseSeqLog(t, seqs.String())
	f, _ := Preset("genload")
	p := NewParser(f, Options{})
	if err := p.Read(strings.NewReader(steps.String()), "steps.log"); err != nil {
		t.Fatal(err)
	}
	if errs := p.Errors(); len(errs) > 0 {
		t.Fatalf("step log errors: %v", errs)
	}
	recs := p.Records()
	for ci, c := range cells {
		var cs []truthSeq
		last := reqs + 1
		if ci+1 < len(cells) {
			last = firstReq[ci+1] - 1 // the next cell's warmup
		}
		for _, s := range truth {
			if s.req >= firstReq[ci] && s.req < last {
				cs = append(cs, s)
			}
		}
		if len(cs) != len(c.maxTokens) {
			t.Fatalf("cell %d: %d sequences in the truth log, want %d", ci, len(cs), len(c.maxTokens))
		}
		fw, modal, atB, above, fwdMs, ok := truthFigures(cs, c.b)
		if !ok {
			t.Fatalf("cell %d: the steps at B do not form one run bounded by known step ends: %+v", ci, cs)
		}
		got := Attain(recs, spans[ci], true)
		t.Logf("cell %d (B=%d): step log %d forwards, modal %d, %d at B, %d above, fwd %.4f ms (CV %v); truth %d, %d, %d, %d, %.4f ms",
			ci, c.b, got.Forwards, got.Modal, got.AtTarget, got.Above, got.FwdMeanMs, cvOf(got), fw, modal, atB, above, fwdMs)
		if got.Forwards != fw || got.Modal != modal || got.AtTarget != atB || got.Above != above {
			t.Errorf("cell %d: step log forwards %d modal %d at-B %d above %d; truth %d %d %d %d",
				ci, got.Forwards, got.Modal, got.AtTarget, got.Above, fw, modal, atB, above)
		}
		// Both logs carry the same clock reading of each step's end; wall_ms is printed to
		// 1 µs and first_ms/last_ms to 0.1 µs, so the means agree within 2 µs.
		if fwdMs > 0 && math.Abs(got.FwdMeanMs-fwdMs) > 0.002 {
			t.Errorf("cell %d: step-log fwd mean %.4f ms, truth %.4f ms", ci, got.FwdMeanMs, fwdMs)
		}
		if fwdMs == 0 && (got.FwdN != 0 || got.FwdReason == "") {
			t.Errorf("cell %d: no step at B in the truth, but the step log gives %d (%q)", ci, got.FwdN, got.FwdReason)
		}
	}
}

// cvOf formats a cell's fwd CV, or the reason it has none.
func cvOf(f Figures) string {
	if f.FwdCV == nil {
		return f.FwdCVReason
	}
	return fmt.Sprintf("%.3f", *f.FwdCV)
}
