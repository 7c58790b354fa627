package latmodel

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/results"
)

// Keys of a Hugging Face config.json that give a mixture of experts' routed experts per layer
// (E) and experts per token (k), in the order they are looked for: Qwen2/Qwen3-MoE and OLMoE
// write num_experts, DeepSeek-V2/V3 n_routed_experts (its shared experts run for every token:
// they are part of the fixed cost), Mixtral, Llama 4 and gpt-oss num_local_experts; all of them
// num_experts_per_tok (gpt-oss also experts_per_token).
var (
	expertKeys = []string{"num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts"}
	activeKeys = []string{"num_experts_per_tok", "experts_per_token", "moe_top_k"}
)

// StructureFromModelConfig reads a model's config.json (b, read from path, which names it in
// the Source and in errors) for its mixture-of-experts shape: the first of expertKeys and of
// activeKeys, at the top level or else under text_config (multimodal models). A config with
// no expert count, or one of at most one expert, is a dense model. Errors (exitcode.InvalidConfig):
// invalid JSON, a count that is not a positive integer, an expert count without experts per
// token (or the reverse), k > E.
func StructureFromModelConfig(b []byte, path string) (*results.ModelStructure, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, exitcode.Errorf(exitcode.InvalidConfig, "%s: invalid JSON: %v", path, err)
	}
	var text map[string]json.RawMessage
	_ = json.Unmarshal(top["text_config"], &text) // absent or not an object: no nested config
	find := func(keys []string) (key string, v int, err error) {
		for _, scope := range []struct {
			prefix string
			m      map[string]json.RawMessage
		}{{"", top}, {"text_config.", text}} {
			for _, k := range keys {
				raw, ok := scope.m[k]
				if !ok || string(raw) == "null" {
					continue
				}
				var f float64
				if err := json.Unmarshal(raw, &f); err != nil || f < 0 || f != math.Trunc(f) || f > 1<<20 {
					return scope.prefix + k, 0, exitcode.Errorf(exitcode.InvalidConfig, "%s: [%s%s] is %s: want a count of experts (an integer ≥ 0)", path, scope.prefix, k, raw)
				}
				return scope.prefix + k, int(f), nil
			}
		}
		return "", 0, nil
	}
	ek, e, err := find(expertKeys)
	if err != nil {
		return nil, err
	}
	ak, k, err := find(activeKeys)
	if err != nil {
		return nil, err
	}
	switch {
	case e <= 1 && ek == "":
		return &results.ModelStructure{Kind: results.StructureDense, Source: fmt.Sprintf("%s: no expert count (%s)", path, strings.Join(expertKeys, ", "))}, nil
	case e <= 1:
		return &results.ModelStructure{Kind: results.StructureDense, Source: fmt.Sprintf("%s [%s = %d]", path, ek, e)}, nil
	case ak == "" || k < 1:
		return nil, exitcode.Errorf(exitcode.InvalidConfig, "%s: [%s] = %d experts but no experts per token (%s): give genload fit --experts %d --active k", path, ek, e, strings.Join(activeKeys, ", "), e)
	case k > e:
		return nil, exitcode.Errorf(exitcode.InvalidConfig, "%s: [%s] = %d experts per token exceeds [%s] = %d experts", path, ak, k, ek, e)
	}
	return &results.ModelStructure{Kind: results.StructureMoE, Experts: e, Active: k, Source: fmt.Sprintf("%s [%s = %d, %s = %d]", path, ek, e, ak, k)}, nil
}

// StructureFromModelDir reads the config.json beside a tokenizer: in the directory dir, or
// beside the file dir when it is one (a tokenizer.json path). No config.json there is
// (nil, nil): nothing is known. Errors are StructureFromModelConfig's and unreadable files.
func StructureFromModelDir(dir string) (*results.ModelStructure, error) {
	if dir == "" {
		return nil, nil
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		dir = filepath.Dir(dir)
	}
	p := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, exitcode.With(exitcode.InvalidConfig, err)
	}
	return StructureFromModelConfig(b, p)
}

// ProfileLookup returns the structure of a built-in engine profile by name, for results files
// written before headers recorded the structure (nil when unknown).
type ProfileLookup func(profile string) *results.ModelStructure

// ResolveExperts decides whether the fit gets the moe term, and says why:
//
//   - flags given (set, or a dense override: flagDense): they win, "--experts E --active k";
//   - else the runs' recorded structure (results.Header.Structure), which must agree between
//     runs; a mixture of experts gets the term, a dense model not;
//   - else, for a run of the built-in engine whose header predates the field, lookup of its
//     profile (when lookup is not nil);
//   - else nothing is known and the dense form is fitted, said so.
//
// Runs recording different structures are an error (exitcode.InvalidConfig) naming both,
// unless allowMixed: the dense form is then fitted, and the source says why.
func ResolveExperts(flag *Experts, flagDense bool, runs []*results.Run, lookup ProfileLookup, allowMixed bool) (*Experts, string, error) {
	if flag != nil {
		return flag, fmt.Sprintf("--experts %d --active %d", flag.Experts, flag.Active), nil
	}
	if flagDense {
		return nil, "dense: --experts 0 (the moe term is not tried)", nil
	}
	var st *results.ModelStructure
	var from string
	for _, r := range runs {
		s := r.Header.Structure
		if s == nil && lookup != nil && r.Header.Engine != nil {
			if name, ok := r.Header.Engine["profile"].(string); ok {
				s = lookup(name)
			}
		}
		if s == nil {
			continue
		}
		if st == nil {
			st, from = s, r.Header.RunID
			continue
		}
		if s.Kind != st.Kind || s.Experts != st.Experts || s.Active != st.Active {
			if allowMixed {
				return nil, fmt.Sprintf("runs %s and %s record different structures (%s; %s): the dense form is fitted (--experts E --active k to choose)", from, r.Header.RunID, describe(st), describe(s)), nil
			}
			return nil, "", exitcode.Errorf(exitcode.InvalidConfig, "runs %s and %s record different model structures (%s; %s): fit them apart, or give --experts E --active k", from, r.Header.RunID, describe(st), describe(s))
		}
	}
	switch {
	case st == nil:
		return nil, "unknown: no model structure recorded, the dense form is fitted (--experts E --active k for a mixture of experts)", nil
	case st.Kind == results.StructureMoE:
		e := &Experts{Experts: st.Experts, Active: st.Active}
		if err := e.validate(); err != nil {
			return nil, "", fmt.Errorf("run %s: model structure: %w", from, err)
		}
		return e, "mixture of experts from " + st.Source, nil
	}
	return nil, "dense, from " + st.Source, nil
}

func describe(s *results.ModelStructure) string {
	if s.Kind == results.StructureMoE {
		return fmt.Sprintf("%d experts, %d active, from %s", s.Experts, s.Active, s.Source)
	}
	return s.Kind + " from " + s.Source
}
