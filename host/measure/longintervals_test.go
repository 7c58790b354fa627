package measure

import (
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/sse"
)

// arrivals returns a recording of one request of b sequences of n one-token chunks with
// continuous usage, chunk k of sequence i arriving at 1 s + at(k) + a jitter drawn uniformly
// in [0, 0.4 ms) from seed (the client's read; arrivals keep TCP order).
func arrivals(b, n int, seed uint64, at func(k int) time.Duration) *recording.Result {
	return lateArrivals(b, n, seed, 400*time.Microsecond, at)
}

// lateArrivals is arrivals with each chunk late by a jitter drawn uniformly in [0, jitter).
func lateArrivals(b, n int, seed uint64, jitter time.Duration, at func(k int) time.Duration) *recording.Result {
	rng := rand.New(rand.NewPCG(seed, 11))
	res := &recording.Result{MaxTokens: n, Requests: []recording.Request{{HasUsage: true}}}
	for i := range b {
		s := recording.Sequence{Prompt: i}
		s.Index = i
		prev := time.Duration(0)
		for k := range n {
			t := max(time.Second+at(k)+time.Duration(rng.Int64N(int64(jitter))), prev)
			prev = t
			s.Marks.Append(sse.Mark{At: t, Text: 4, Tokens: 1})
		}
		s.Finished, s.FinishReason, s.FinishAt = true, "length", prev
		s.CompletionTokens, s.TokenSource, s.HasUsage = n, sse.TokensChoiceUsage, true
		res.Sequences = append(res.Sequences, s)
	}
	return res
}

const step = 20 * time.Millisecond

// steady is a 20 ms step: chunk k at k steps.
func steady(k int) time.Duration { return time.Duration(k) * step }

// near reports |got/want − 1| ≤ tol.
func near(got, want, tol float64) bool { return math.Abs(got/want-1) <= tol }

// A delivery lag that starts mid-stream (from chunk 50 on every chunk 10 or 30 steps late) and
// one slow forward pass (an 820 ms step at token 50) look alike from the client: fwd is their
// mean (+9 %, +30 %, +40 %) and says so, with the share the one long interval carries and the
// typical forward pass (20 ms) without it.
func TestLongIntervalShiftIsMeasured(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lag   time.Duration // added to every chunk from 50 on
		share float64       // lag / decode time
	}{
		{"lag of 10 steps", 10 * step, 200.0 / 2180},
		{"lag of 30 steps", 30 * step, 600.0 / 2580},
		{"one 820 ms forward pass", 40 * step, 800.0 / 2780},
	} {
		for _, b := range []int{1, 4, 16} {
			res := arrivals(b, 100, uint64(b), func(k int) time.Duration {
				if k >= 50 {
					return steady(k) + tc.lag
				}
				return steady(k)
			})
			f := Compute(res, Options{MaxTokens: 100})
			fwd := (99*float64(step) + float64(tc.lag)) / 99
			li := f.LongIntervals
			switch {
			case !near(float64(f.PerForward.Mean), fwd, 0.002):
				t.Errorf("%s, B=%d: fwd %v, want the mean %.3f ms", tc.name, b, f.PerForward.Mean, fwd/1e6)
			case li == nil:
				t.Errorf("%s, B=%d: no long interval found", tc.name, b)
			case li.Sequences != b || li.Of != b || li.MaxPerSequence != 1:
				t.Errorf("%s, B=%d: long intervals in %d of %d sequences, up to %d", tc.name, b, li.Sequences, li.Of, li.MaxPerSequence)
			case !near(li.Share, tc.share, 0.01):
				t.Errorf("%s, B=%d: share %.4f, want %.4f", tc.name, b, li.Share, tc.share)
			case !near(float64(li.Without), float64(step), 0.002) || !near(float64(li.Typical), float64(step), 0.002):
				t.Errorf("%s, B=%d: without them %v, typical %v, want 20 ms", tc.name, b, li.Without, li.Typical)
			case !near(float64(li.Longest), float64(step+tc.lag), 0.01):
				t.Errorf("%s, B=%d: longest %v, want %v", tc.name, b, li.Longest, step+tc.lag)
			}
		}
	}
}

// Steps that alternate 10/30 ms, frames that arrive in pairs (0/40 ms intervals), jitter of up
// to 3 steps per chunk, steps that grow from 20 to 30 ms with two reads 100 ms late, 30 steps of
// 40 ms at the start (a read late among them), and a hiccup mid-stream (chunks 40–59 held back and released together,
// then on time again) have no long interval that shifted the chunks after it: their mean is
// right and there is nothing to say.
func TestNoShiftWithoutALevelShift(t *testing.T) {
	for _, tc := range []struct {
		name string
		fwd  time.Duration // the mean forward pass
		tol  float64       // of fwd: its endpoints' jitter over 99 forward passes
		at   func(k int) time.Duration
	}{
		{"alternating 10/30 ms", step, 0.01, func(k int) time.Duration { return time.Duration(k/2)*2*step + time.Duration(k%2)*step/2 }},
		{"pairs", step, 0.005, func(k int) time.Duration { return steady(k | 1) }},
		{"steps growing 20→30 ms, two late reads", (drift(99) - drift(0)) / 99, 0.005, func(k int) time.Duration { return drift(k) + hiccup(k) }},
		{"30 steps of 40 ms, then 20 ms, a late read", 2580 * time.Millisecond / 99, 0.005, func(k int) time.Duration {
			return steady(k) + time.Duration(min(k, 30))*step + hiccup(k-5)
		}},
		{"held 40–59", step, 0.005, func(k int) time.Duration {
			if k >= 40 && k < 60 {
				return steady(60)
			}
			return steady(k)
		}},
	} {
		for _, b := range []int{1, 16} {
			f := Compute(arrivals(b, 100, uint64(b), tc.at), Options{MaxTokens: 100})
			if li := f.LongIntervals; li != nil {
				t.Errorf("%s, B=%d: long intervals carry %.1f %% (%+v)", tc.name, b, 100*li.Share, *li)
			}
			if f.PerForward.N > 0 && !near(float64(f.PerForward.Mean), float64(tc.fwd), tc.tol) {
				t.Errorf("%s, B=%d: fwd %v, want %v", tc.name, b, f.PerForward.Mean, tc.fwd)
			}
			for _, c := range f.Checks {
				if strings.Contains(c, "arrived early") {
					t.Errorf("%s, B=%d: %s", tc.name, b, c)
				}
			}
		}
	}
	// every chunk of every sequence late by up to 3 steps, drawn on its own: the intervals
	// reach 4 steps, the levels on either side of them stay; what noise counts stays under
	// half of what is said
	for seed := uint64(1); seed <= 8; seed++ {
		f := Compute(lateArrivals(16, 100, seed, 3*step, steady), Options{MaxTokens: 100})
		if li := f.LongIntervals; li != nil && li.Share > LongShareSaid/2 {
			t.Errorf("late by up to 3 steps, seed %d: long intervals %+v (fwd %v)", seed, *li, f.PerForward.Mean)
		}
		for _, c := range f.Checks {
			if strings.Contains(c, "arrived early") {
				t.Errorf("late by up to 3 steps, seed %d: %s", seed, c)
			}
		}
	}
}

// drift is a step that grows from 20 to 30 ms over 100 tokens: chunk k at 20k + 0.05k² ms.
func drift(k int) time.Duration {
	return time.Duration(k)*step + time.Duration(k*k)*50*time.Microsecond
}

// hiccup is a read 100 ms late at chunks 30 and 70, the chunks after them on time.
func hiccup(k int) time.Duration {
	if k == 30 || k == 70 {
		return 100 * time.Millisecond
	}
	return 0
}

// A first chunk at its tick and every later chunk 4.5 steps late (a lag that begins after the
// first flush) reads +4.5 %: the early first chunk is said, with what fwd would read on the
// line of the chunks after it; 0.2 steps (within the tolerance) is not.
func TestEarlyFirstChunkIsSaid(t *testing.T) {
	for _, tc := range []struct {
		lag  float64 // steps
		said bool
	}{{4.5, true}, {3, true}, {0.2, false}} {
		lag := time.Duration(tc.lag * float64(step))
		f := Compute(arrivals(4, 100, 3, func(k int) time.Duration {
			if k > 0 {
				return steady(k) + lag
			}
			return 0
		}), Options{MaxTokens: 100})
		var got string
		for _, c := range f.Checks {
			if strings.HasPrefix(c, "the first chunks of 4 of 4 sequences arrived early") {
				got = c
			}
		}
		fwd := (99*float64(step) + float64(lag)) / 99
		if !near(float64(f.PerForward.Mean), fwd, 0.002) {
			t.Errorf("lag %.1f steps: fwd %v, want %.3f ms", tc.lag, f.PerForward.Mean, fwd/1e6)
		}
		if li := f.LongIntervals; li != nil { // the first interval is this check's, not theirs
			t.Errorf("lag %.1f steps: long intervals %+v", tc.lag, *li)
		}
		if !tc.said {
			if got != "" {
				t.Errorf("lag %.1f steps: %s", tc.lag, got)
			}
			continue
		}
		// the first chunk is lag early; on the line of the chunks after it fwd reads 20 ms
		m := earlyText.FindStringSubmatch(got)
		if m == nil {
			t.Errorf("lag %.1f steps: no early first chunks said (checks %q)", tc.lag, f.Checks)
			continue
		}
		early, _ := strconv.ParseFloat(m[1], 64)
		gap, _ := strconv.ParseFloat(m[2], 64)
		if want := 100 * (float64(step)/fwd - 1); math.Abs(early-Ms(lag)) > 0.5 || math.Abs(gap-want) > 0.1 {
			t.Errorf("lag %.1f steps: first chunk %.1f ms early, fwd would read %+.1f %%; want %.1f ms, %+.1f %%", tc.lag, early, gap, Ms(lag), want)
		}
	}
}

var earlyText = regexp.MustCompile(`their first chunk ([\d.]+) ms \(median\) earlier .* fwd would read ([-+][\d.]+) %$`)

// Steps of 7 ms, each 40× slower with probability 1 % (seeded, as the built-in engine's
// slow-prob=0.01,slow-factor=40 noise): the slow steps' excess is the share said, and fwd
// without them is the 7 ms step.
func TestSeededSlowStepsAreMeasured(t *testing.T) {
	const base = 7 * time.Millisecond
	withSlow := 0
	for seed := uint64(1); seed <= 6; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		at := make([]time.Duration, 100)
		slow := 0
		for k := 1; k < 100; k++ {
			d := base
			if rng.Float64() < 0.01 {
				d, slow = 40*base, slow+1
			}
			at[k] = at[k-1] + d
		}
		f := Compute(arrivals(4, 100, seed, func(k int) time.Duration { return at[k] }), Options{MaxTokens: 100})
		li := f.LongIntervals
		share := float64(slow) * 39 * float64(base) / float64(at[99]-at[0])
		switch {
		case slow == 0 && li != nil:
			t.Errorf("seed %d: no slow step, long intervals %+v", seed, *li)
		case slow == 0:
			continue
		case li == nil:
			t.Errorf("seed %d: %d slow steps, no long interval found", seed, slow)
		case li.MaxPerSequence != slow || li.Sequences != 4 || !near(li.Share, share, 0.01) || !near(float64(li.Without), float64(base), 0.01):
			t.Errorf("seed %d: %d slow steps (share %.4f): long intervals %+v", seed, slow, share, *li)
		}
		withSlow++
	}
	if withSlow < 3 {
		t.Errorf("%d of 6 seeds drew a slow step", withSlow)
	}
}
