package measure

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/genload/genload/host/recording"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/figures.golden.json from the current Compute")

// goldenCell is one recording of the golden set with the options it is computed under.
type goldenCell struct {
	name string
	res  *recording.Result
	o    Options
}

// goldenCells are the 100 recordings whose Figures testdata/figures.golden.json holds: the
// cells of a one-cell run of 1,024 streams (array: one stream for all; routed: one per
// sequence), held-back and bunched starts, late and early first chunks, stalls, coalesced
// and speculative streams, short, zero-token and overlong sequences (14 synthetic streams, as
// TestSyntheticStreams draws them) and 80 generated worlds (randomWorld).
func goldenCells() []goldenCell {
	const S = 5 * time.Millisecond
	var cells []goldenCell
	add := func(name string, res *recording.Result, o Options) {
		cells = append(cells, goldenCell{name, res, o})
	}
	w := func(name string, w world) {
		res, _ := w.build()
		add(name, res, Options{})
	}
	w("array B=1024 200 tokens", computeWorld1024(false))
	w("routed B=1024 200 tokens", computeWorld1024(true))
	w("array B=64 bunched first 10", world{B: 64, Tokens: 128, Step: 8e6, CV: 0.01, BunchK: 10, Read: "uniform", J: 1e5, Seed: 1})
	w("routed B=64 first chunk 0.6 steps late", world{B: 64, Tokens: 128, Step: 8e6, CV: 0.01, LateSteps: 0.6, Routed: true, Read: "exp", J: 1e5, Seed: 2})
	w("routed B=16 stalls, ramp, 1-3 tokens a chunk", world{B: 16, Tokens: 200, Step: 6e6, Grow: 0.002, CV: 0.03, StallP: 0.02, StallX: 5, RampSteps: 20, Ramp: 0.2, Chunk3: true, Routed: true, Read: "uniform", J: 2e5, HiccupP: 0.01, Hiccup: 0.8, Seed: 3})
	w("array B=32 staggered, one token a chunk over 100", world{B: 32, Tokens: 300, Step: 4e6, Stagger: 10, Read: "exp", J: 5e4, Seed: 4})
	add("stream late first chunk 40 ms", stream{B: 8, MaxTokens: 40, Step: S, Jitter: 200 * time.Microsecond, Usage: "final", FirstDelay: 40 * time.Millisecond}.result(), Options{})
	add("stream early first chunk 20 ms", stream{B: 8, MaxTokens: 40, Step: S, Jitter: 200 * time.Microsecond, Usage: "final", FirstDelay: -20 * time.Millisecond}.result(), Options{})
	add("stream whole stream held back", stream{B: 8, MaxTokens: 24, Step: S, Jitter: 200 * time.Microsecond, Usage: "final", FirstDelay: 200 * time.Millisecond}.result(), Options{})
	add("stream stall then burst", stream{B: 1, MaxTokens: 20, Step: S, Usage: "continuous", BurstGap: 10 * time.Microsecond}.result(), Options{})
	add("stream coalesced continuous", stream{B: 8, MaxTokens: 64, Step: S, Jitter: 300 * time.Microsecond, Usage: "continuous", Coalesce: 0.2}.result(), Options{})
	add("stream coalesced exact count only", stream{B: 8, MaxTokens: 64, Step: S, Jitter: 300 * time.Microsecond, Usage: "final", Coalesce: 0.2}.result(), Options{})
	add("stream no usage 2-token chunks", stream{B: 4, MaxTokens: 64, Step: S, Usage: "none", Coalesce: 0.5, Seed: 3}.result(), Options{})
	add("stream zero usage", stream{B: 4, MaxTokens: 64, Step: S, Usage: "zero"}.result(), Options{})
	add("stream zero, early, overlong", stream{B: 12, MaxTokens: 64, Step: S, Jitter: 300 * time.Microsecond, Usage: "continuous", Zero: 2, Early: 2, EarlyAt: 5, Overlong: 1}.result(), Options{})
	add("stream one of 4 in one chunk", stream{B: 4, MaxTokens: 64, Step: S, Jitter: 300 * time.Microsecond, Usage: "continuous", OneChunk: 1}.result(), Options{})
	add("stream speculative", stream{B: 8, MaxTokens: 120, Step: S, Jitter: 300 * time.Microsecond, Usage: "continuous", Spec: 3}.result(), Options{ChunkForwards: true})
	add("stream window too short", stream{B: 4, MaxTokens: 20, Step: S, Jitter: 300 * time.Microsecond, Usage: "final", Starts: []int{0, 5, 10, 12}}.result(), Options{})
	add("stream 1 ms jitter, 600 tokens", stream{B: 16, MaxTokens: 600, Step: S, Jitter: 2 * time.Millisecond, Usage: "final", Seed: 11}.result(), Options{})
	add("stream 256 x 512 coalesced", stream{B: 256, MaxTokens: 512, Step: S, Jitter: 300 * time.Microsecond, Usage: "continuous", Coalesce: 0.1}.result(), Options{})
	for seed := range uint64(80) {
		w(fmt.Sprintf("world %d", seed), randomWorld(seed))
	}
	return cells
}

// computeWorld1024 is the recording of a one-cell run of 1,024 streams of 200 tokens on a
// 10 ms step (the N = 1,024 cells of genload-perf's binary row): every chunk one token with
// its exact delta, read on one stream (array) or one per sequence (routed), reads late by up
// to 0.5 % of a step.
func computeWorld1024(routed bool) world {
	return world{B: 1024, Tokens: 200, Step: 10e6, CV: 0.01, Routed: routed, Read: "uniform", J: 5e4, Seed: 1024}
}

// TestComputeGolden: Compute gives, byte for byte, the Figures (as JSON) that
// testdata/figures.golden.json holds for every recording of goldenCells. The file was
// written by the Compute before its allocation-free rewrite (go test ./host/measure -run
// TestComputeGolden -update-golden), so the rewrite changed no figure. A change meant to
// change figures rewrites it and says why.
func TestComputeGolden(t *testing.T) {
	path := filepath.Join("testdata", "figures.golden.json")
	cells := goldenCells()
	got := make(map[string]json.RawMessage, len(cells))
	for _, c := range cells {
		b, err := json.Marshal(Compute(c.res, c.o))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got[c.name] = b
	}
	if *updateGolden {
		// one cell a line, in goldenCells' order, so that a diff names the cells that changed
		var b bytes.Buffer
		b.WriteString("{\n")
		for i, c := range cells {
			name, _ := json.Marshal(c.name)
			fmt.Fprintf(&b, "%s: %s", name, got[c.name])
			if i < len(cells)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString("}\n")
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (write it with -update-golden)", err)
	}
	var want map[string]json.RawMessage
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(want) != len(cells) {
		t.Errorf("%s holds %d cells, the test computes %d", path, len(want), len(cells))
	}
	differ := 0
	for _, c := range cells {
		w, ok := want[c.name]
		if !ok {
			t.Errorf("%s: no golden figures in %s", c.name, path)
			continue
		}
		if !bytes.Equal(got[c.name], w) {
			differ++
			t.Errorf("%s: figures differ from the golden ones:\n got %s\nwant %s", c.name, got[c.name], w)
		}
	}
	if differ > 0 {
		t.Logf("%d of %d cells differ", differ, len(cells))
	}
}

// BenchmarkCompute1024 is Compute on the recordings of a one-cell run of 1,024 streams of
// 200 tokens (computeWorld1024): 204,800 marks per op. Besides -benchmem's figures it reports
// alloc-B/mark, the bytes Compute allocates per mark (one streamed token each here), and
// peak-live-B/mark, the most it holds at once per mark: the live heap above the recording's,
// at its highest over the garbage collections of one Compute run with GOGC=1 (peakLive).
func BenchmarkCompute1024(b *testing.B) {
	for _, routed := range []bool{false, true} {
		name := "array"
		if routed {
			name = "routed"
		}
		res, _ := computeWorld1024(routed).build()
		marks := 0
		for i := range res.Sequences {
			marks += res.Sequences[i].Marks.Len()
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			n := 0
			for b.Loop() {
				Compute(res, Options{})
				n++
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(n)/float64(marks), "alloc-B/mark")
			peak := peakLive(func() { Compute(res, Options{}) })
			b.ReportMetric(float64(peak)/float64(marks), "peak-live-B/mark")
		})
	}
}

// peakLive runs fn under GOGC=1 (a collection every 1 % of heap growth) and returns the
// highest live heap (/gc/heap/live:bytes, what the last collection marked) seen after a
// collection during fn, less the live heap before it: what fn held at once, in bytes, to
// within the 1 % between collections (and the odd collection whose figure was overwritten
// before it was read).
func peakLive(fn func()) uint64 {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	live := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	runtime.GC()
	base := live()
	var peak atomic.Uint64
	var stop atomic.Bool
	// a sentinel whose cleanup runs after each collection and arms the next one
	var arm func()
	arm = func() {
		x := new([64]byte)
		runtime.AddCleanup(x, func(struct{}) {
			if l := live(); l > peak.Load() {
				peak.Store(l)
			}
			if !stop.Load() {
				arm()
			}
		}, struct{}{})
	}
	old := debug.SetGCPercent(1)
	arm()
	fn()
	stop.Store(true)
	debug.SetGCPercent(old)
	runtime.GC()
	if p := peak.Load(); p > base {
		return p - base
	}
	return 0
}
