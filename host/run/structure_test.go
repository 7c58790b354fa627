package run

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/results"
)

func TestModelStructureAndProfileHash(t *testing.T) {
	cfg := config.Default()
	// The built-in engine: its profile says, whatever the tokenizer.
	s, err := modelStructure(cfg, map[string]any{"profile": "moe-30b-a3b"})
	if err != nil || s.Kind != results.StructureMoE || s.Experts != 128 || s.Active != 8 || !strings.Contains(s.Source, "built-in engine profile moe-30b-a3b") {
		t.Errorf("moe profile: %+v, %v", s, err)
	}
	if s, err = modelStructure(cfg, map[string]any{"profile": "dense-8b"}); err != nil || s.Kind != results.StructureDense {
		t.Errorf("dense profile: %+v, %v", s, err)
	}
	// An external server: the config.json beside the tokenizer; none, nothing known.
	if s, err = modelStructure(cfg, nil); s != nil || err != nil {
		t.Errorf("embedded tokenizer: %+v, %v", s, err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"num_local_experts": 8, "num_experts_per_tok": 2}`), 0o644)
	cfg.Tokenizer.Path = dir
	if s, err = modelStructure(cfg, nil); err != nil || s.Experts != 8 || s.Active != 2 || s.Source != filepath.Join(dir, "config.json")+" [num_local_experts = 8, num_experts_per_tok = 2]" {
		t.Errorf("config.json: %+v, %v", s, err)
	}
	// The hash follows the figures, not the file: same figures, same hash; one changed, another.
	p, err := engine.LoadProfile("moe-30b-a3b")
	if err != nil {
		t.Fatal(err)
	}
	q := p
	h := ProfileHash(p)
	if !strings.HasPrefix(h, "sha256:") || len(h) != len("sha256:")+16 || ProfileHash(q) != h {
		t.Errorf("hash %q", h)
	}
	q.FixedMs = 2.6
	if ProfileHash(q) == h {
		t.Error("a changed fixed_ms keeps the hash")
	}
}
