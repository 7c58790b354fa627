package run

import (
	"bytes"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/matrix"
)

// stepNoise is an engine step log that keeps each step's noise factor.
type stepNoise struct {
	mu      sync.Mutex
	factors []string
}

var noiseField = regexp.MustCompile(` noise=(\S+)`)

func (s *stepNoise) Write(p []byte) (int, error) {
	if m := noiseField.FindSubmatch(p); m != nil {
		s.mu.Lock()
		s.factors = append(s.factors, string(m[1]))
		s.mu.Unlock()
	}
	return len(p), nil
}

// first returns the first factor logged since reset, waiting up to 2 s for the scheduler to
// log it (a step's line may follow the response's last byte).
func (s *stepNoise) first(t *testing.T) string {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		if len(s.factors) > 0 {
			f := s.factors[0]
			s.mu.Unlock()
			return f
		}
		s.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("no step logged")
		}
	}
}

func (s *stepNoise) reset() {
	s.mu.Lock()
	s.factors = nil
	s.mu.Unlock()
}

// noisyEngine starts the built-in engine with noise n (a burst factor only, so that a step's
// factor is its burst's) and a step log, and returns it with its URL.
func noisyEngine(t *testing.T, n engine.Noise) (*engine.Engine, string, *stepNoise) {
	t.Helper()
	ecfg := engine.DefaultConfig()
	ecfg.TimeScale = 0.01
	ecfg.Noise = n
	log := &stepNoise{}
	ecfg.StepLog = log
	eng, err := engine.New(ecfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	u, err := eng.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng, u, log
}

func complete(t *testing.T, url string) {
	t.Helper()
	resp, err := http.Post(url+"/v1/completions", "application/json",
		strings.NewReader(`{"model":"genload-sim","prompt":[1,2,3,4],"max_tokens":2}`))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("completion: %d %s", resp.StatusCode, b.String())
	}
}

// Round k of a run with repeats draws the built-in engine's noise from the seed derived from
// the configured one and "repeat k": once the run's round starter has started round k, the
// engine's next burst has the factor of an engine started with that seed, and each round's
// another; the header lists the same seeds, round k at index k − 1.
func TestRoundsReseedTheEngineNoise(t *testing.T) {
	conf := engine.Noise{BurstCV: 0.05, SlowFactor: 1, Seed: 1}
	eng, url, log := noisyEngine(t, conf.ForStart("repeat 1"))
	var stderr strings.Builder
	s := &setup{cfg: &config.Config{Engine: config.Engine{Noise: conf.String()}}, eng: eng, engineInfo: map[string]any{},
		opt: Options{Stderr: &stderr}}
	complete(t, url) // a burst on repeat 1's generator, as the setup's probe would draw
	seen := map[string]bool{}
	start := s.roundStarter()
	for _, k := range []int{1, 2, 3} {
		start([]matrix.Cell{{SeqLen: 100, Batch: 1}, {SeqLen: 200, Batch: 1}}).finish()
		log.reset()
		complete(t, url)
		_, ref, refLog := noisyEngine(t, conf.ForStart(fmt.Sprintf("repeat %d", k)))
		complete(t, ref)
		if got, want := log.first(t), refLog.first(t); got != want {
			t.Errorf("round %d: first step's noise factor %s, an engine started with repeat %d's seed draws %s", k, got, k, want)
		}
		seen[log.first(t)] = true
	}
	if len(seen) != 3 {
		t.Errorf("three rounds drew %d distinct burst factors", len(seen))
	}
	if want := "round 1: 2 cells\nround 2: 2 cells\nround 3: 2 cells\n"; stderr.String() != want {
		t.Errorf("stderr %q, want the rounds announced: %q", stderr.String(), want)
	}
	s.repeatNoise(3)
	list, _ := s.engineInfo["noise_repeats"].([]string)
	for k := 1; k <= 3; k++ {
		if want := conf.ForStart(fmt.Sprintf("repeat %d", k)).String(); len(list) != 3 || list[k-1] != want {
			t.Errorf("noise_repeats %v: round %d should be %q", list, k, want)
		}
	}
}
