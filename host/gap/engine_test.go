package gap

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/genload/genload/corpus"
	"github.com/genload/genload/host/dispatch"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/prompt"
	"github.com/genload/genload/host/records"
	"github.com/genload/genload/host/replay"
	"github.com/genload/genload/host/steplog"
	"github.com/genload/genload/host/tokenizer"
	"github.com/genload/genload/host/trace"
)

// The contexts rebuilt from a replay's records are the engine's own: a replay of 24 requests
// against the built-in engine, its step log read back, and for each decode step the sequences
// in flight by the records (B) and their mean and longest context against the log's B, sum_ctx
// and max_ctx. At least 95 % of the steps agree on B exactly and on the mean context to 1 %.
// The rule needs each chunk delivered before the next step ends: at time scale 0.5 a step
// lasts milliseconds, longer than a loaded host (or the race detector) delays a chunk.
func TestRebuiltContextsAreTheEngines(t *testing.T) {
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := corpus.Default()
	texts := make([]string, len(rows))
	for i, r := range rows {
		texts[i] = r.Text
	}
	b, err := prompt.New(tok, nil, texts, prompt.Options{Suffix: "."})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ecfg := engine.DefaultConfig()
	ecfg.TimeScale = 0.5
	ecfg.StepLogFile = filepath.Join(dir, "r.steps.log")
	eng, err := engine.New(ecfg, tok)
	if err != nil {
		t.Fatal(err)
	}
	url, err := eng.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var reqs []trace.Request
	for i := range 24 {
		reqs = append(reqs, trace.Request{Src: fmt.Sprint(i), Arrival: time.Duration(i) * 40 * time.Millisecond, Input: 300 + 97*i, Output: 10 + i%20})
	}
	s, _ := replay.NewSchedule(reqs, 0, 0, 1, 0)
	client, _ := dispatch.New(dispatch.Options{Target: url, Model: ecfg.ModelName, ContinuousUsage: true})
	sum, err := replay.Run(context.Background(), replay.Options{Schedule: s, Blocks: b, Sender: client,
		Records: filepath.Join(dir, "r.records.jsonl"), Header: records.Header{ID: "t"}})
	client.Close()
	eng.Close()
	if err != nil || sum.OK != 24 {
		t.Fatalf("replay: %v, %+v", err, sum)
	}
	recs, err := records.Read(filepath.Join(dir, "r.records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	f, _ := steplog.Preset("genload")
	p := steplog.NewParser(f, steplog.Options{Location: time.UTC})
	extra, err := readLog(p, ecfg.StepLogFile)
	if err != nil {
		t.Fatal(err)
	}
	c := newContexts(recs.Records)
	n, sameB, closeCtx := 0, 0, 0
	for _, st := range p.Records() {
		e := extra[st.Src]
		if !e.has || e.prefill > 0 || st.Active == 0 || !st.Forward() {
			continue
		}
		n++
		bn, sumc, _ := c.at(records.Ms(st.Time.Sub(recs.Header.Started)))
		if bn == st.Active {
			sameB++
			if math.Abs(sumc/float64(bn)-float64(e.sumCtx)/float64(st.Active)) <= 0.01*float64(e.sumCtx)/float64(st.Active) {
				closeCtx++
			}
		}
	}
	t.Logf("%d decode steps: B agrees on %d, mean context within 1 %% on %d", n, sameB, closeCtx)
	if n < 50 || float64(sameB) < 0.95*float64(n) || float64(closeCtx) < 0.95*float64(n) {
		t.Errorf("%d decode steps: B agrees on %d, mean context on %d; want ≥ 95 %% each", n, sameB, closeCtx)
	}
}
