package latmodel

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/results"
)

func TestStructureFromModelConfig(t *testing.T) {
	for _, c := range []struct {
		name, json string
		kind       string
		e, k       int
		source     string
	}{
		{"qwen3-moe", `{"num_experts": 128, "num_experts_per_tok": 8, "hidden_size": 2048}`, results.StructureMoE, 128, 8, "[num_experts = 128, num_experts_per_tok = 8]"},
		{"deepseek-v3", `{"n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8}`, results.StructureMoE, 256, 8, "[n_routed_experts = 256, num_experts_per_tok = 8]"},
		{"mixtral", `{"num_local_experts": 8, "num_experts_per_tok": 2}`, results.StructureMoE, 8, 2, "[num_local_experts = 8, num_experts_per_tok = 2]"},
		{"gpt-oss", `{"num_local_experts": 32, "experts_per_token": 4}`, results.StructureMoE, 32, 4, "[num_local_experts = 32, experts_per_token = 4]"},
		{"llama4 (nested)", `{"text_config": {"num_local_experts": 16, "num_experts_per_tok": 1}}`, results.StructureMoE, 16, 1, "[text_config.num_local_experts = 16, text_config.num_experts_per_tok = 1]"},
		{"dense", `{"hidden_size": 4096, "num_hidden_layers": 32}`, results.StructureDense, 0, 0, "no expert count (num_experts, n_routed_experts, num_local_experts, moe_num_experts)"},
		{"one expert", `{"num_experts": 1, "num_experts_per_tok": 1}`, results.StructureDense, 0, 0, "[num_experts = 1]"},
		{"null experts", `{"num_experts": null}`, results.StructureDense, 0, 0, "no expert count"},
	} {
		s, err := StructureFromModelConfig([]byte(c.json), "m/config.json")
		if err != nil || s.Kind != c.kind || s.Experts != c.e || s.Active != c.k || !strings.Contains(s.Source, c.source) || !strings.HasPrefix(s.Source, "m/config.json") {
			t.Errorf("%s: %+v, %v; want %s %d/%d with %q", c.name, s, err, c.kind, c.e, c.k, c.source)
		}
	}
	for _, c := range []struct{ json, want string }{
		{`{"num_experts": 64}`, "m/config.json: [num_experts] = 64 experts but no experts per token (num_experts_per_tok, experts_per_token, moe_top_k): give genload fit --experts 64 --active k"},
		{`{"num_experts": 8, "num_experts_per_tok": 9}`, "[num_experts_per_tok] = 9 experts per token exceeds [num_experts] = 8 experts"},
		{`{"num_experts": 8.5, "num_experts_per_tok": 2}`, "[num_experts] is 8.5: want a count of experts"},
		{`{"num_experts": "many"}`, `[num_experts] is "many"`},
		{`{"num_experts": 8,`, "m/config.json: invalid JSON"},
	} {
		_, err := StructureFromModelConfig([]byte(c.json), "m/config.json")
		wantCode(t, err, exitcode.InvalidConfig, c.want)
	}
	// Beside a tokenizer: the directory, or the directory of a tokenizer.json path; none there
	// is nothing known.
	dir := t.TempDir()
	if s, err := StructureFromModelDir(dir); s != nil || err != nil {
		t.Errorf("no config.json: %+v, %v", s, err)
	}
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"num_experts": 60, "num_experts_per_tok": 4}`), 0o644)
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(`{}`), 0o644)
	for _, p := range []string{dir, filepath.Join(dir, "tokenizer.json")} {
		if s, err := StructureFromModelDir(p); err != nil || s.Experts != 60 || s.Active != 4 {
			t.Errorf("%s: %+v, %v", p, s, err)
		}
	}
}

func TestResolveExpertsAndFitRuns(t *testing.T) {
	obs := synthetic(fullForm, 0, nil)
	moeRun := func(id string) *results.Run {
		r := run(id, "m", nil, obs)
		r.Header.Structure = &results.ModelStructure{Kind: results.StructureMoE, Experts: 128, Active: 8, Source: "built-in engine profile p"}
		return r
	}
	// Recorded: the moe term without flags, and the model says where it came from.
	m, _, err := FitRuns([]*results.Run{moeRun("a")}, nil, false, 0, FitOptions{})
	if err != nil || m.Experts == nil || *m.Experts != *moe || !strings.Contains(m.Form, TermMoE) || m.Structure != "mixture of experts from built-in engine profile p" {
		t.Fatalf("recorded moe: %v, experts %v, form %s, structure %q", err, m.Experts, m.Form, m.Structure)
	}
	// Flags win; --experts 0 fits the dense form.
	if m, _, err = FitRuns([]*results.Run{moeRun("a")}, nil, false, 0, FitOptions{Experts: &Experts{Experts: 64, Active: 4}}); err != nil || m.Experts.Experts != 64 || m.Structure != "--experts 64 --active 4" {
		t.Errorf("flags: %v %+v %q", err, m.Experts, m.Structure)
	}
	m, _, err = FitRuns([]*results.Run{moeRun("a")}, nil, false, 0, FitOptions{Dense: true})
	if err != nil || m.Experts != nil || slices.ContainsFunc(m.Candidates, func(c Candidate) bool { return strings.Contains(c.Form, TermMoE) }) {
		t.Errorf("dense override: %v, %+v", err, m.Candidates)
	}
	// A dense record: no moe term is tried.
	dense := run("d", "m", nil, synthetic("fixed+per_seq+kv_read+kv_tail", 0, nil))
	dense.Header.Structure = &results.ModelStructure{Kind: results.StructureDense, Source: "cfg.json: no expert count"}
	if m, _, err = FitRuns([]*results.Run{dense}, nil, false, 0, FitOptions{}); err != nil || m.Experts != nil || len(m.Candidates) != 6 || m.Structure != "dense, from cfg.json: no expert count" {
		t.Errorf("dense: %v, %d candidates, %q", err, len(m.Candidates), m.Structure)
	}
	// An old file of the built-in engine: its profile is looked up.
	old := run("o", "m", nil, obs)
	old.Header.Engine = map[string]any{"profile": "p", "time_scale": 0.05}
	lookup := func(name string) *results.ModelStructure {
		if name == "p" {
			return &results.ModelStructure{Kind: results.StructureMoE, Experts: 128, Active: 8, Source: "looked up p"}
		}
		return nil
	}
	if ex, why, err := ResolveExperts(nil, false, []*results.Run{old}, lookup, false); err != nil || ex == nil || why != "mixture of experts from looked up p" {
		t.Errorf("lookup: %v %v %q", ex, err, why)
	}
	// Nothing known: dense, said so.
	if ex, why, err := ResolveExperts(nil, false, []*results.Run{run("x", "m", nil, obs)}, nil, false); ex != nil || err != nil || !strings.HasPrefix(why, "unknown: no model structure recorded") {
		t.Errorf("unknown: %v %q %v", ex, why, err)
	}
	// Runs that disagree: an error naming both, or dense with --allow-mixed.
	_, _, err = ResolveExperts(nil, false, []*results.Run{moeRun("a"), dense}, nil, false)
	wantCode(t, err, exitcode.InvalidConfig, "runs a and d record different model structures (128 experts, 8 active, from built-in engine profile p; dense from cfg.json")
	if ex, why, err := ResolveExperts(nil, false, []*results.Run{moeRun("a"), dense}, nil, true); ex != nil || err != nil || !strings.Contains(why, "the dense form is fitted") {
		t.Errorf("mixed allowed: %v %q %v", ex, why, err)
	}
}
