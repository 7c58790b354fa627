package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/latmodel"
	"github.com/genload/genload/host/records"
)

// replay on the built-in engine writes the records, the summary and the engine's step log, and
// gap reads them against a model file; a window with no request is a config error.
func TestReplayThenGap(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": %d, \"hash_ids\": [0, %d]}\n", 40*i, 700+50*i, 10+i%7, i+1)
	}
	log := filepath.Join(dir, "t.jsonl")
	os.WriteFile(log, []byte(b.String()), 0o644)
	code, out, errs := cli(t, context.Background(), "replay", log, "--speed", "2", "--time-scale", "0.01", "--out", dir, "--id", "rp")
	if code != exitcode.OK {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	if !strings.Contains(out, "replay: 30 scheduled") || !strings.Contains(out, "30 ok") || !strings.Contains(out, "send lag behind the schedule") {
		t.Errorf("output:\n%s", out)
	}
	f, err := records.Read(filepath.Join(dir, "rp.records.jsonl"))
	if err != nil || len(f.Records) != 30 {
		t.Fatalf("records: %v, %d", err, len(f.Records))
	}
	if _, err := os.Stat(filepath.Join(dir, "rp.steps.log")); err != nil {
		t.Fatal(err)
	}
	// A model of the same engine (the replay's own description: profile, hash, time scale).
	var sum struct {
		Header records.Header `json:"header"`
	}
	sb, _ := os.ReadFile(filepath.Join(dir, "rp.json"))
	if err := json.Unmarshal(sb, &sum); err != nil {
		t.Fatal(err)
	}
	eng, _ := sum.Header.Extra["engine"].(map[string]any)
	if h, _ := eng["profile_hash"].(string); !strings.HasPrefix(h, "sha256:") || eng["time_scale"] != 0.01 {
		t.Fatalf("the replay's engine: %v", eng)
	}
	m := latmodel.Model{Schema: latmodel.Schema, Model: sum.Header.Model, Engine: eng, MaxTokens: 20, Form: "fixed+kv_read",
		Terms: []latmodel.Term{{Name: "fixed", Coef: 0.02}, {Name: "kv_read", Coef: 4e-7}},
		Cov:   [][]float64{{0, 0}, {0, 0}}, Range: latmodel.Range{MeanLen: [2]float64{10, 100000}, Batch: [2]int{1, 256}}}
	mb, _ := json.Marshal(m)
	model := filepath.Join(dir, "model.json")
	os.WriteFile(model, mb, 0o644)
	code, out, errs = cli(t, context.Background(), "gap", model, filepath.Join(dir, "rp.json"), "-o", filepath.Join(dir, "gap"))
	if code != exitcode.OK || !strings.HasPrefix(out, "comparable: model "+model) || !strings.Contains(out, "| all ") || !strings.Contains(out, "contexts are the log's own") {
		t.Fatalf("gap: exit %d, %s\n%s", code, errs, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "gap.png")); err != nil {
		t.Error(err)
	}
	// Another time scale is refused; a model measured from B = 2 leaves the replay's passes
	// (one sequence at a time at this pace) out: exit 9.
	m.Engine = map[string]any{"profile": eng["profile"], "profile_hash": eng["profile_hash"], "time_scale": 0.2}
	mb, _ = json.Marshal(m)
	os.WriteFile(model, mb, 0o644)
	code, _, errs = cli(t, context.Background(), "gap", model, filepath.Join(dir, "rp.json"))
	if code != exitcode.InvalidConfig || !strings.Contains(errs, "NOT comparable: different engine time scale: model "+model+" 0.2 / replay "+filepath.Join(dir, "rp.json")+" 0.01") {
		t.Errorf("another time scale: exit %d, %s", code, errs)
	}
	m.Engine, m.Range.Batch = eng, [2]int{2, 256}
	mb, _ = json.Marshal(m)
	os.WriteFile(model, mb, 0o644)
	code, out, errs = cli(t, context.Background(), "gap", model, filepath.Join(dir, "rp.json"))
	if code != exitcode.OutOfRange || !strings.Contains(errs, "decode forward passes lie outside the model's measured range (B 2–256, L̄ 10–100000 tokens)") || !strings.Contains(out, "| all ") {
		t.Errorf("B ≥ 2 model: exit %d, %s\n%s", code, errs, out)
	}
	code, _, errs = cli(t, context.Background(), "replay", log, "--window", "100s-200s", "--out", dir)
	if code != exitcode.InvalidConfig || !strings.Contains(errs, "holds no request") {
		t.Errorf("empty window: exit %d, %s", code, errs)
	}
}
