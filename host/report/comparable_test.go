package report

import (
	"strings"
	"testing"

	"github.com/genload/genload/host/config"
)

func header(id, model string, maxTokens int, labels map[string]any, engine map[string]any) Header {
	cfg := config.Default()
	cfg.MaxTokens = maxTokens
	return Header{RunID: id, Model: model, Config: cfg, Labels: labels, Engine: engine}
}

func TestCheckComparable(t *testing.T) {
	eng := func(p, h string) map[string]any {
		return map[string]any{"profile": p, "profile_hash": h, "time_scale": 0.05}
	}
	a := IdentityOf("a.json", header("a", "m", 100, map[string]any{"gpu_count": int64(8)}, eng("moe-30b-a3b", "sha256:1111")))
	// The same label read back from JSON is a float64: still the same.
	b := IdentityOf("", header("b", "m", 100, map[string]any{"gpu_count": float64(8)}, eng("moe-30b-a3b", "sha256:1111")))
	c := CheckComparable([]Identity{a, b})
	if !c.Comparable() || c.Line() != `comparable: 2 runs of model "m", max_tokens 100, labels {gpu_count=8}, engine profile moe-30b-a3b (sha256:1111)` {
		t.Errorf("same runs: %q", c.Line())
	}
	// A profile edited in place: same name, another hash.
	d := IdentityOf("d.json", header("d", "m", 100, map[string]any{"gpu_count": 8}, eng("moe-30b-a3b", "sha256:2222")))
	c = CheckComparable([]Identity{a, d})
	if c.Comparable() || !c.Differs(FieldProfile) || c.Differs(FieldModel) ||
		c.Line() != `NOT comparable: engine profile differs: a.json moe-30b-a3b (sha256:1111) / d.json moe-30b-a3b (sha256:2222); same model "m", max_tokens 100, labels {gpu_count=8}` {
		t.Errorf("edited profile: %q", c.Line())
	}
	// What a command compares is listed, not held against the runs.
	if !c.ComparableExcept(FieldProfile) || !strings.HasPrefix(c.Line(FieldProfile), `comparable: 2 runs of model "m", max_tokens 100, labels {gpu_count=8}; compared across engine profile: a.json moe-30b-a3b (sha256:1111) / d.json`) {
		t.Errorf("compared across profiles: %q", c.Line(FieldProfile))
	}
	// Every field differing, and an external server (no profile); a hash missing from an
	// older file is said so, the names still compared.
	e := IdentityOf("e.json", header("e", "other", 50, nil, nil))
	old := IdentityOf("old.json", header("old", "m", 100, map[string]any{"gpu_count": 8}, map[string]any{"profile": "moe-30b-a3b"}))
	c = CheckComparable([]Identity{a, e, old})
	for _, want := range []string{`model differs: a.json "m" / e.json "other"`, "max_tokens differs: a.json 100 / e.json 50", "labels differs: a.json {gpu_count=8} / e.json {}",
		"engine profile differs: a.json moe-30b-a3b (hash not recorded) / e.json (external server)"} {
		if !strings.Contains(c.Line(), want) {
			t.Errorf("line lacks %q: %q", want, c.Line())
		}
	}
	if c.ComparableExcept(FieldProfile) || len(c.Same) != 0 {
		t.Errorf("all differ: %+v", c)
	}
}
