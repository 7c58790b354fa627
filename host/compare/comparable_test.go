package compare

import (
	"slices"
	"strings"
	"testing"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/results"
)

func header(id, model string, maxTokens int, labels map[string]any, engine map[string]any) results.Header {
	cfg := config.Default()
	cfg.MaxTokens = maxTokens
	h := results.Header{RunID: id, Model: model, Config: cfg, Labels: labels, Engine: engine, TargetKind: "external",
		Context: 131072, ContextSource: "server /v1/models max_model_len"}
	if engine != nil {
		h.TargetKind, h.Target = "builtin", "http://127.0.0.1:4"+id // a fresh port every run: not compared
	}
	return h
}

func eng(p, h string, scale float64) map[string]any {
	return map[string]any{"profile": p, "profile_hash": h, "time_scale": scale, "quirks": ""}
}

func TestCheckComparable(t *testing.T) {
	a := IdentityOf("a.json", header("a", "m", 100, map[string]any{"gpu_count": int64(8)}, eng("moe-30b-a3b", "sha256:1111", 0.05)))
	// The same label read back from JSON is a float64: still the same.
	b := IdentityOf("", header("b", "m", 100, map[string]any{"gpu_count": float64(8)}, eng("moe-30b-a3b", "sha256:1111", 0.05)))
	c := CheckComparable([]Identity{a, b})
	if !c.Comparable() || c.Line() != `comparable: 2 runs of model "m", max_tokens 100, labels {gpu_count=8}, engine time scale 0.05, engine profile moe-30b-a3b (sha256:1111)` {
		t.Errorf("same runs: %q", c.Line())
	}
	// A profile edited in place: same name, another hash.
	d := IdentityOf("d.json", header("d", "m", 100, map[string]any{"gpu_count": 8}, eng("moe-30b-a3b", "sha256:2222", 0.05)))
	c = CheckComparable([]Identity{a, d})
	if c.Comparable() || !c.Differs(FieldProfile) || c.Differs(FieldModel) ||
		c.Line() != `NOT comparable: different engine profile: a.json moe-30b-a3b (sha256:1111) / d.json moe-30b-a3b (sha256:2222); same model "m", max_tokens 100, labels {gpu_count=8}, engine time scale 0.05` {
		t.Errorf("edited profile: %q", c.Line())
	}
	// What a command compares is listed, not held against the runs.
	if !c.ComparableExcept(AcrossDeployments...) || c.Line(AcrossDeployments...) != `comparable: 2 runs of model "m", max_tokens 100, labels {gpu_count=8}, engine time scale 0.05; compared across engine profile: a.json moe-30b-a3b (sha256:1111) / d.json moe-30b-a3b (sha256:2222)` {
		t.Errorf("compared across profiles: %q", c.Line(AcrossDeployments...))
	}
	// Every field differing; a hash missing from an older file is said so, the names still
	// compared.
	e := IdentityOf("e.json", header("e", "other", 50, nil, eng("moe-30b-a3b", "sha256:1111", 0.2)))
	old := IdentityOf("old.json", header("old", "m", 100, map[string]any{"gpu_count": 8}, map[string]any{"profile": "moe-30b-a3b", "time_scale": 0.05}))
	c = CheckComparable([]Identity{a, e, old})
	want := `NOT comparable: different model: a.json "m" / e.json "other"; different max_tokens: a.json 100 / e.json 50; ` +
		`different labels: a.json {gpu_count=8} / e.json {}; different engine time scale: a.json 0.05 / e.json 0.2; ` +
		`same engine profile moe-30b-a3b (hash not recorded)`
	if c.Line(AcrossDeployments...) != want || c.ComparableExcept(AcrossDeployments...) {
		t.Errorf("all differ:\n got %q\nwant %q", c.Line(AcrossDeployments...), want)
	}
}

// TestComparableTimeScaleNoiseQuirks: the built-in engine's time scale makes runs not
// comparable for every command (its figures are wall-clock at that scale); its noise is
// compared without the seed each repeat derives anew; quirks and noise are named when set.
func TestComparableTimeScaleNoiseQuirks(t *testing.T) {
	fast := IdentityOf("b2.json", header("b2", "genload-sim", 100, nil, eng("moe-30b-a3b", "sha256:cdf8", 0.2)))
	slow := IdentityOf("base.json", header("base", "genload-sim", 100, nil, eng("moe-30b-a3b", "sha256:cdf8", 0.05)))
	c := CheckComparable([]Identity{fast, slow})
	if got := c.Refused(AcrossDeployments...); !slices.Equal(got, []string{"different engine time scale: b2.json 0.2 / base.json 0.05"}) {
		t.Errorf("time scale: refused %q", got)
	}
	if !strings.HasPrefix(c.Line(AcrossDeployments...), "NOT comparable: different engine time scale: b2.json 0.2 / base.json 0.05; same model") {
		t.Errorf("time scale line: %q", c.Line(AcrossDeployments...))
	}
	noisy := func(name, noise, quirks string) Identity {
		e := eng("moe-30b-a3b", "sha256:cdf8", 0.05)
		e["noise"], e["quirks"] = noise, quirks
		return IdentityOf(name, header(name, "genload-sim", 100, nil, e))
	}
	r1, r2 := noisy("r1.json", "step-cv=0.02,burst-cv=0.05,seed=11", "late-usage"), noisy("r2.json", "step-cv=0.02,burst-cv=0.05,seed=12", "late-usage")
	c = CheckComparable([]Identity{r1, r2})
	if !c.Comparable() || !strings.HasSuffix(c.Line(), `, engine quirks "late-usage", engine noise "step-cv=0.02,burst-cv=0.05"`) {
		t.Errorf("repeats of one noise model: %q", c.Line())
	}
	quiet := noisy("q.json", "", "late-usage")
	c = CheckComparable([]Identity{r1, quiet})
	if c.ComparableExcept(AcrossInstances...) || !c.ComparableExcept(AcrossDeployments...) ||
		!slices.Equal(c.Refused(), []string{`different engine noise: r1.json "step-cv=0.02,burst-cv=0.05" / q.json none`}) {
		t.Errorf("noise against none: %+v", c)
	}
}

// TestComparableExternal: two external servers are told apart by their URL and the context
// their server reported, and the line says what was compared; a different URL is noted, not
// held against the runs, by repeats and comparisons alike; the built-in engine beside an
// external server differs in target.
func TestComparableExternal(t *testing.T) {
	ext := func(name, url string, ctx int) Identity {
		h := header(name, "genload-sim", 100, nil, nil)
		h.Target, h.Context = url, ctx
		return IdentityOf(name, h)
	}
	c1, c2 := ext("c1.json", "http://127.0.0.1:18103", 131072), ext("c2.json", "http://127.0.0.1:18103", 131072)
	c := CheckComparable([]Identity{c1, c2})
	if !c.Comparable() || c.Line() != `comparable: 2 runs of model "genload-sim", max_tokens 100, labels {}, target http://127.0.0.1:18103, context 131072 (server /v1/models max_model_len)` {
		t.Errorf("one server: %q", c.Line())
	}
	c3 := ext("c3.json", "http://127.0.0.1:18104", 40960)
	c = CheckComparable([]Identity{c1, c3})
	if c.Comparable() || !c.ComparableExcept(AcrossInstances...) || !c.ComparableExcept(AcrossDeployments...) {
		t.Errorf("two servers: %+v", c)
	}
	want := `comparable: 2 runs of model "genload-sim", max_tokens 100, labels {}; compared across target: c1.json http://127.0.0.1:18103 / c3.json http://127.0.0.1:18104; ` +
		`context: c1.json 131072 (server /v1/models max_model_len) / c3.json 40960 (server /v1/models max_model_len)`
	if got := c.Line(AcrossInstances...); got != want {
		t.Errorf("two servers:\n got %q\nwant %q", got, want)
	}
	if got := c.Line(); !strings.HasPrefix(got, "NOT comparable: different target: c1.json http://127.0.0.1:18103 / c3.json http://127.0.0.1:18104; different context") {
		t.Errorf("two servers, nothing compared across: %q", got)
	}
	// Routed: the workers' URLs are the target.
	h := header("rt", "genload-sim", 100, nil, nil)
	h.Target, h.Workers = "http://w1:8000", []results.Worker{{URL: "http://w1:8000"}, {URL: "http://w2:8000"}}
	if id := IdentityOf("rt.json", h); id.Target != "http://w1:8000, http://w2:8000" {
		t.Errorf("routed target %q", id.Target)
	}
	sim := IdentityOf("sim.json", header("sim", "genload-sim", 100, nil, eng("moe-30b-a3b", "sha256:cdf8", 0.05)))
	c = CheckComparable([]Identity{sim, c1})
	if got := c.Noted(AcrossDeployments...); !slices.Equal(got, []string{"target kind: sim.json built-in engine / c1.json external server"}) ||
		!c.ComparableExcept(AcrossDeployments...) || c.ComparableExcept(AcrossInstances...) {
		t.Errorf("built-in beside external: noted %q, line %q", got, c.Line(AcrossDeployments...))
	}
	if strings.Contains(c.Line(AcrossDeployments...), "engine time scale 0.05") {
		t.Errorf("an engine setting of one run listed as shared: %q", c.Line(AcrossDeployments...))
	}
}

// CheckFields compares the fields named alone, in the order CheckComparable checks them, and
// Line calls the inputs by Subject when set (genload gap: a model file and a replay).
func TestCheckFieldsComparesTheFieldsNamed(t *testing.T) {
	a := Identity{Name: "model m.json", Model: "m", MaxTokens: 100, Labels: map[string]any{"gpu": 8}}
	a.SetEngine(eng("moe-30b-a3b", "sha256:1111", 0.05))
	b := Identity{Name: "replay r.json", Model: "m"}
	b.SetEngine(map[string]any{"profile": "moe-30b-a3b", "time_scale": 0.2, "noise": "step-cv=0.1,seed=3"})
	c := CheckFields([]Identity{a, b}, FieldTimeScale, FieldModel)
	c.Subject = "model m.json and replay r.json"
	if want := `NOT comparable: different engine time scale: model m.json 0.05 / replay r.json 0.2; same model "m"`; c.Line() != want {
		t.Errorf("time scale:\n got %s\nwant %s", c.Line(), want)
	}
	b.TimeScale = 0.05
	c = CheckFields([]Identity{a, b}, FieldModel, FieldTimeScale, FieldProfile)
	c.Subject = "model m.json and replay r.json"
	if want := `comparable: model m.json and replay r.json of model "m", engine time scale 0.05, engine profile moe-30b-a3b (hash not recorded)`; c.Line() != want {
		t.Errorf("same:\n got %s\nwant %s", c.Line(), want)
	}
	// Over every field the labels, max_tokens and noise differ.
	if got := CheckComparable([]Identity{a, b}); !got.Differs(FieldLabels) || !got.Differs(FieldMaxTokens) || !got.Differs(FieldNoise) || got.Differs(FieldTimeScale) {
		t.Errorf("all fields: %+v", got.Diffs)
	}
}
