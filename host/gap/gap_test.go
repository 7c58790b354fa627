package gap

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/latmodel"
	"github.com/genload/genload/host/records"
	"github.com/genload/genload/host/replay"
)

// writeModel writes a model of form fixed+per_seq+kv_read+kv_tail (ms per unit) with max_tokens m.
// Each edit changes the model before it is written.
func writeModel(t *testing.T, dir string, fixed, perSeq, kvRead, kvTail float64, m int, edit ...func(*latmodel.Model)) string {
	t.Helper()
	mod := latmodel.Model{Schema: latmodel.Schema, MaxTokens: m, Form: "fixed+per_seq+kv_read+kv_tail",
		Terms: []latmodel.Term{{Name: "fixed", Coef: fixed}, {Name: "per_seq", Coef: perSeq}, {Name: "kv_read", Coef: kvRead}, {Name: "kv_tail", Coef: kvTail}},
		Cov:   [][]float64{{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}},
		Range: latmodel.Range{MeanLen: [2]float64{100, 20000}, Batch: [2]int{1, 8}}}
	for _, e := range edit {
		e(&mod)
	}
	b, _ := json.Marshal(mod)
	p := filepath.Join(dir, "model.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// t0 is the origin of the hand-written replay.
var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// writeReplay writes, in dir, a replay of three sequences and a step log by hand, and the
// replay summary sum (its schema and files filled in); it returns the log's text and the
// summary's path. Sequences a (prompt 1000) and b (prompt 3000) decode tokens 2…4 at 10, 20,
// 30 ms; c (prompt 500) alone at 50, 60 ms.
func writeReplay(t *testing.T, dir string, sum replay.Summary) (log, path string) {
	t.Helper()
	recs := []records.Record{
		{Index: 0, PromptTokens: 1000, MaxTokens: 4, CompletionTokens: 4, Status: 200, Chunks: []records.Chunk{{5, 1}, {15, 1}, {25, 1}, {35, 1}}},
		{Index: 1, PromptTokens: 3000, MaxTokens: 4, CompletionTokens: 4, Status: 200, Chunks: []records.Chunk{{5, 1}, {15, 1}, {25, 1}, {35, 1}}},
		{Index: 2, PromptTokens: 500, MaxTokens: 3, CompletionTokens: 3, Status: 200, Chunks: []records.Chunk{{45, 1}, {55, 1}, {65, 1}}},
	}
	for i := range recs {
		e := recs[i].Chunks[len(recs[i].Chunks)-1][0] + 1
		recs[i].E2EMs = &e
	}
	rw, err := records.Create(filepath.Join(dir, "r.records.jsonl"), records.Header{Source: "replay", Started: t0})
	if err != nil {
		t.Fatal(err)
	}
	if err := rw.Write(recs...); err != nil {
		t.Fatal(err)
	}
	rw.Close()
	step := func(ms float64, active, decoding, prefill, sum, mx int, wall float64) string {
		return fmt.Sprintf("time=%s step=1 active=%d decode=%d decoding=%d prefill_tokens=%d spec_tokens=0 waiting=0 kv_blocks=1 experts=0 sum_ctx=%d max_ctx=%d fwd_ms=1.0 wall_ms=%.3f\n",
			t0.Add(time.Duration(ms*float64(time.Millisecond))).Format("2006-01-02T15:04:05.000000Z07:00"), active, active, decoding, prefill, sum, mx, wall)
	}
	log = step(-5, 1, 0, 900, 0, 0, 3) + // before the replay
		step(4, 2, 0, 4000, 0, 0, 9) + // the prefill: nothing decodes
		step(40, 2, 1, 500, 500, 500, 9) + // c's prefill mixed with a decode
		step(10, 2, 2, 0, 4002, 3001, 1.5) +
		step(20, 2, 2, 0, 4004, 3002, 1.6) +
		step(30, 2, 2, 0, 4006, 3003, 1.7) +
		step(50, 1, 1, 0, 501, 501, 1.0) +
		step(60, 1, 1, 0, 502, 502, 1.25) +
		step(500, 1, 1, 0, 10, 10, 1) // after it
	if err := os.WriteFile(filepath.Join(dir, "r.steps.log"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	sum.Schema, sum.Records, sum.Steps = replay.SummarySchema, "r.records.jsonl", "r.steps.log"
	b, _ := json.Marshal(sum)
	path = filepath.Join(dir, "r.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return log, path
}

// A replay of three sequences and a step log written by hand: the gap prices each decode step
// at its own contexts, leaves out the prefilling and the out-of-span steps, and bands by B.
func TestGapPricesEachLoggedStep(t *testing.T) {
	dir := t.TempDir()
	// Model: 1 ms + 0.1 ms/seq + 1e-4 ms per cached token read + 1e-5 ms per token of the
	// longest context; m = 100, so contexts enter as they are.
	model := writeModel(t, dir, 1, 0.1, 1e-4, 1e-5, 100)
	log, rp := writeReplay(t, dir, replay.Summary{})

	r, err := Run(Options{Model: model, Replay: rp})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Forwards) != 5 || r.Outside != 2 || r.Prefill != 1 || r.NoDecode != 1 {
		t.Fatalf("%d forwards, %d outside, %d prefill, %d no decode", len(r.Forwards), r.Outside, r.Prefill, r.NoDecode)
	}
	// Step at 10 ms: 1 + 0.1·2 + 1e-4·4002 + 1e-5·3001 = 1.63022 ms, observed 1.5.
	f := r.Forwards[0]
	if want := 1 + 0.2 + 1e-4*4002 + 1e-5*3001; math.Abs(f.PredictedMs-want) > 1e-9 || math.Abs(f.Rel-(want-1.5)/1.5) > 1e-9 || !f.FromLog {
		t.Errorf("forward 0: %+v, want predicted %v", f, want)
	}
	if len(r.Bands) != 2 || r.Bands[0].Name != "1" || r.Bands[0].N != 2 || r.Bands[1].Name != "2–3" || r.Bands[1].N != 3 || r.All.N != 5 {
		t.Fatalf("bands %+v all %+v", r.Bands, r.All)
	}
	// B = 1: predictions 1 + 0.1 + 1e-4·501 + 1e-5·501 = 1.15511 (obs 1.0) and 1.15522
	// (obs 1.25): errors +15.511 % and −7.58 %; the median of two is their midpoint
	// (+3.96 %), the P90 of |error| the nearest-rank one: the larger, 15.511 %.
	hi, lo := 1.1+1.1e-4*501-1, (1.1+1.1e-4*502-1.25)/1.25
	if b := r.Bands[0]; math.Abs(b.MedianRel-(hi+lo)/2) > 1e-9 || math.Abs(b.P90AbsRel-hi) > 1e-9 {
		t.Errorf("band 1: median %v (want %v), P90 %v (want %v)", b.MedianRel, (hi+lo)/2, b.P90AbsRel, hi)
	}
	// All five: the nearest-rank P90 of |error| is the ⌈0.9·5⌉ = 5th, the largest.
	largest := 0.0
	for _, f := range r.Forwards {
		largest = max(largest, math.Abs(f.Rel))
	}
	if r.All.P90AbsRel != largest {
		t.Errorf("all: P90 |error| %v, want the largest, %v", r.All.P90AbsRel, largest)
	}
	// Without the log's contexts (another format), the records give the same ones.
	noCtx := strings.NewReplacer(" sum_ctx=", " x_sum=", " max_ctx=", " x_max=").Replace(log)
	os.WriteFile(filepath.Join(dir, "r.steps.log"), []byte(noCtx), 0o644)
	r2, err := Run(Options{Model: model, Replay: rp})
	if err != nil {
		t.Fatal(err)
	}
	if len(r2.Forwards) != 5 {
		t.Fatalf("rebuilt: %d forwards", len(r2.Forwards))
	}
	for i, f := range r2.Forwards {
		g := r.Forwards[i]
		if f.FromLog || f.Batch != g.Batch || f.MeanCtx != g.MeanCtx || f.MaxCtx != g.MaxCtx {
			t.Errorf("forward %d rebuilt %+v, from the log %+v", i, f, g)
		}
	}
	if _, err := r.Plot(); err != nil {
		t.Error(err)
	}
}
