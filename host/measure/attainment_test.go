package measure

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/sse"
)

func resultOf(seqs ...recording.Sequence) *recording.Result {
	return &recording.Result{Requests: []recording.Request{{}}, Sequences: seqs}
}

// jittered returns n marks from first, every step ms, with a fixed sub-step offset.
func jittered(first, step, off float64, n int) []float64 { return every(first+off, step, n) }

func TestAttain(t *testing.T) {
	cases := []struct {
		name  string
		b     int
		seqs  []recording.Sequence
		state string
		conc  int
		why   string
	}{
		{"one sequence", 1, []recording.Sequence{seq(0, true, 20, every(0, 10, 20)...)}, AttainmentReached, 1, "its own batch"},
		// 4 sequences on the same 10 ms steps, 0.1–0.4 ms apart: every chunk has a partner
		// within 2.5 ms
		{"batched", 4, []recording.Sequence{
			seq(0, true, 20, jittered(0, 10, 0.1, 20)...), seq(0, true, 20, jittered(0, 10, 0.2, 20)...),
			seq(0, true, 20, jittered(0, 10, 0.3, 20)...), seq(0, true, 20, jittered(0, 10, 0.4, 20)...)},
			AttainmentReached, 4, "100 % of their chunks arriving together"},
		// two at a time: sequences 2 and 3 start a step after 0 and 1 finished
		{"two at a time", 4, []recording.Sequence{
			seq(0, true, 20, jittered(0, 10, 0.1, 20)...), seq(0, true, 20, jittered(0, 10, 0.2, 20)...),
			seq(0, true, 20, jittered(200, 10, 0.1, 20)...), seq(0, true, 20, jittered(200, 10, 0.2, 20)...)},
			AttainmentProbablyNotReached, 2, "at most 2 of 4 sequences were decoding at once as the client saw them; first tokens spread over 200.1 ms ≈ 20 chunk intervals"},
		// interleaved: both decode over the same span, each 10 ms, half a step apart
		{"interleaved", 2, []recording.Sequence{seq(0, true, 20, every(0, 10, 20)...), seq(0, true, 20, every(5, 10, 20)...)},
			AttainmentProbablyNotReached, 2, "only 0 % of their chunks arrived together"},
		// the same with 2-token chunks: coalescing need not line up, so unknown
		{"interleaved, coalesced", 2, []recording.Sequence{seq(0, true, 40, every(0, 10, 20)...), seq(0, true, 40, every(5, 10, 20)...)},
			AttainmentUnknown, 2, "chunks carry 2.00 tokens"},
		{"a sequence without tokens", 3, []recording.Sequence{seq(0, true, 20, every(0, 10, 20)...), seq(0, true, 20, every(0, 10, 20)...), seq(0, true, 0)},
			AttainmentProbablyNotReached, 2, "only 2 of 3 sequences streamed a token"},
		// overlapping for only 2 chunks of sequence 1
		{"short overlap", 2, []recording.Sequence{seq(0, true, 20, every(0, 10, 20)...), seq(0, true, 20, every(180.1, 10, 20)...)},
			AttainmentUnknown, 2, "too few to compare"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := Attain(resultOf(tc.seqs...), tc.b)
			if a.State != tc.state || a.Concurrency != tc.conc || !strings.Contains(a.Reason, tc.why) {
				t.Fatalf("%+v\nwant state %q, concurrency %d, reason containing %q", a, tc.state, tc.conc, tc.why)
			}
		})
	}
}

// Counting the marks that arrived together by intervals gives the exact counts of the sort
// by arrival, on 120 generated worlds at tolerances from a fortieth of a step to two steps.
func TestTogetherByBucketsIsBySort(t *testing.T) {
	compared, some := 0, 0
	for seed := range uint64(120) {
		w := randomWorld(seed)
		if w.B < 2 {
			continue
		}
		res, _ := w.build()
		st := streamedOf(res, false)
		start, end, _, ok := span(st.seqs)
		if !ok {
			continue
		}
		for _, frac := range []float64{1.0 / 40, 0.25, 0.6, 2} {
			tol := time.Duration(frac * w.Step)
			gt, gn := togetherByBuckets(st.seqs, start, end, tol)
			wt, wn := togetherBySort(st.seqs, start, end, tol, st.marks)
			if gt != wt || gn != wn {
				t.Errorf("seed %d, tolerance %v: by intervals %d of %d together, by sort %d of %d", seed, tol, gt, gn, wt, wn)
			}
			compared++
			if wt > 0 && wt < wn {
				some++
			}
		}
	}
	if compared < 200 || some < 20 {
		t.Errorf("compared %d cells and tolerances, %d with some but not all marks together: too few to tell", compared, some)
	}
}

// Hand-placed marks at a tolerance of 10 ns over the window [100, 200] ns, where a mark's
// only neighbour of another sequence is exactly 10 ns away in the next interval (or the one
// before), and the earliest (latest) mark of that interval is of its own sequence, recorded
// before or after the other sequence's: both
// counts find every mark together.
func TestTogetherAtTheToleranceAcrossIntervals(t *testing.T) {
	marks := func(at ...time.Duration) *recording.Sequence {
		s := &recording.Sequence{}
		for _, a := range at {
			s.Marks.Append(sse.Mark{At: a, Text: 1, Tokens: 1})
		}
		return s
	}
	cases := []struct {
		name string
		seqs []*recording.Sequence
	}{
		// 104 (seq 1) is alone in [100, 110); in [110, 120) seq 1's 111 is the earliest,
		// seq 0's 114 the earliest of the others
		{"next interval", []*recording.Sequence{marks(114), marks(104, 111)}},
		// 200 (seq 1) is alone in [200, 210); in [190, 200) seq 1's 193 is the latest,
		// seq 0's 190 the latest of the others
		{"interval before", []*recording.Sequence{marks(190), marks(193, 200)}},
		// the same with the other sequence's mark recorded after the earliest (latest)
		{"next interval, recorded after", []*recording.Sequence{marks(104, 111), marks(114)}},
		{"interval before, recorded after", []*recording.Sequence{marks(193, 200), marks(190)}},
	}
	for _, c := range cases {
		bt, bn := togetherByBuckets(c.seqs, 100, 200, 10)
		st, sn := togetherBySort(c.seqs, 100, 200, 10, 3)
		if bt != 3 || bn != 3 || st != 3 || sn != 3 {
			t.Errorf("%s: by intervals %d of %d together, by sort %d of %d; want 3 of 3", c.name, bt, bn, st, sn)
		}
	}
}

// late returns n marks of a sequence that decodes every step ms from first, each chunk
// delivered late by a delay drawn uniformly from [0, maxLate) ms (a generator of its own,
// seeded), never before the chunk before it.
func late(first, step, maxLate float64, n int, seed uint64) []float64 {
	out := make([]float64, n)
	prev := math.Inf(-1)
	for k := range out {
		seed = seed*6364136223846793005 + 1442695040888963407
		d := maxLate * float64(seed>>11) / float64(1<<53)
		out[k] = math.Max(first+step*float64(k)+d, prev+0.001)
		prev = out[k]
	}
	return out
}

// Delivery jitter that parts the chunks of shared forward passes is not evidence that they
// were not shared: four sequences in lock step on 10 ms steps, each chunk late by up to 3
// steps, read unknown with the jitter named — not "probably not reached", which an
// interleaving server keeps when its chunks arrive each on time or with a jitter below the
// together tolerance; lock-step sequences with that small jitter stay reached.
func TestAttainUnderDeliveryJitter(t *testing.T) {
	lockstep := func(maxLate float64) []recording.Sequence {
		var out []recording.Sequence
		for i := range 4 {
			out = append(out, seq(0, true, 60, late(0, 10, maxLate, 60, uint64(i+1))...))
		}
		return out
	}
	interleaved := func(maxLate float64) []recording.Sequence {
		return []recording.Sequence{seq(0, true, 60, late(0, 10, maxLate, 60, 1)...), seq(0, true, 60, late(5, 10, maxLate, 60, 2)...)}
	}
	for _, tc := range []struct {
		name  string
		b     int
		seqs  []recording.Sequence
		state string
		why   string
	}{
		{"lock step, late up to 3 steps", 4, lockstep(30), AttainmentUnknown, "delivery jitter that wide"},
		{"lock step, late up to 0.5 ms", 4, lockstep(0.5), AttainmentReached, "shared forward passes"},
		{"interleaved, on time", 2, interleaved(0), AttainmentProbablyNotReached, "did not share forward passes"},
		{"interleaved, late up to 1 ms", 2, interleaved(1), AttainmentProbablyNotReached, "did not share forward passes"},
	} {
		a := Attain(resultOf(tc.seqs...), tc.b)
		if a.State != tc.state || !strings.Contains(a.Reason, tc.why) {
			t.Errorf("%s: %+v\nwant state %q, reason containing %q", tc.name, a, tc.state, tc.why)
		}
	}
}
