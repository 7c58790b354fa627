package run

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/latmodel"
	"github.com/genload/genload/host/results"
)

// ProfileHash identifies a built-in engine profile by its cost figures: "sha256:" and the
// first 16 hex digits of the SHA-256 of the profile as JSON (its fields in declaration order),
// so that a profile file edited in place no longer compares equal to the old one while
// comments and key order do not count.
func ProfileHash(p engine.Profile) string {
	b, _ := json.Marshal(p) // a struct of numbers and strings: cannot fail
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:8])
}

// ProfileStructure is the model structure a built-in engine profile simulates: a mixture of
// experts when it has an expert term ([engine.Profile.IsMoE]), else dense.
func ProfileStructure(p engine.Profile) *results.ModelStructure {
	if p.IsMoE() {
		return &results.ModelStructure{Kind: results.StructureMoE, Experts: p.MoEExperts, Active: p.MoETopK,
			Source: fmt.Sprintf("built-in engine profile %s (moe_experts = %d, moe_top_k = %d)", p.Name, p.MoEExperts, p.MoETopK)}
	}
	return &results.ModelStructure{Kind: results.StructureDense, Source: fmt.Sprintf("built-in engine profile %s (no moe_layers)", p.Name)}
}

// LookupProfileStructure is a [latmodel.ProfileLookup] over the built-in engine's profiles
// (an embedded name or a .toml path): nil when the profile cannot be read.
func LookupProfileStructure(name string) *results.ModelStructure {
	p, err := engine.LoadProfile(name)
	if err != nil {
		return nil
	}
	return ProfileStructure(p)
}

// modelStructure is what the run knows of the served model's structure: the built-in
// engine's profile, else the config.json beside the tokenizer ([tokenizer] path); nil, with
// the reason printed by the caller, when neither says.
func modelStructure(cfg *config.Config, engineInfo map[string]any) (*results.ModelStructure, error) {
	if engineInfo != nil {
		if name, ok := engineInfo["profile"].(string); ok {
			if s := LookupProfileStructure(name); s != nil {
				return s, nil
			}
		}
	}
	return latmodel.StructureFromModelDir(cfg.Tokenizer.Path)
}

// ProfilePath is the absolute path of a built-in engine profile given as a file (a name
// [engine.LoadProfile] reads from disk: one holding a path separator or ending in ".toml"),
// "" for an embedded profile name or when the working directory cannot be read.
func ProfilePath(name string) string {
	if !strings.ContainsRune(name, os.PathSeparator) && !strings.HasSuffix(name, ".toml") {
		return ""
	}
	abs, err := filepath.Abs(name)
	if err != nil {
		return ""
	}
	return abs
}

// RecordedProfileFigures finds the built-in engine profile a run used from what its results
// header (or a model file) records about the engine (engine): the file at "profile_path"
// (absolute), else "profile" as configured (an embedded name, or a path resolved from the
// working directory). A profile found is used only when its [ProfileHash] equals the recorded
// "profile_hash": a file of the same name that holds other figures is not the run's profile.
// It returns the figures, where they were read, and whether the hash was checked (false for
// files that predate profile_hash). The error names each place tried and why it was refused
// (not found; hash X found, Y recorded).
func RecordedProfileFigures(engineInfo map[string]any) (latmodel.ProfileFigures, string, bool, error) {
	want, _ := engineInfo["profile_hash"].(string)
	var tried []string
	var cands []string
	for _, k := range []string{"profile_path", "profile"} {
		if v, ok := engineInfo[k].(string); ok && v != "" && !slices.Contains(cands, v) {
			cands = append(cands, v)
		}
	}
	if len(cands) == 0 {
		return latmodel.ProfileFigures{}, "", false, fmt.Errorf("the runs record no engine profile")
	}
	for _, c := range cands {
		p, err := engine.LoadProfile(c)
		if err != nil {
			tried = append(tried, err.Error())
			continue
		}
		if got := ProfileHash(p); want != "" && got != want {
			tried = append(tried, fmt.Sprintf("%s holds other figures than the runs' profile (hash %s, the runs recorded %s)", c, got, want))
			continue
		}
		f, err := ProfileFigures(c)
		if err != nil {
			tried = append(tried, err.Error())
			continue
		}
		return f, c, want != "", nil
	}
	return latmodel.ProfileFigures{}, "", false, errors.New(strings.Join(tried, "; "))
}

// ProfileFigures returns a built-in engine profile's cost figures for the latency model's
// comparison of fitted terms with the profile (an embedded name or a .toml path). Errors are
// engine.LoadProfile's.
func ProfileFigures(name string) (latmodel.ProfileFigures, error) {
	p, err := engine.LoadProfile(name)
	if err != nil {
		return latmodel.ProfileFigures{}, err
	}
	f := latmodel.ProfileFigures{Name: p.Name, FixedMs: p.FixedMs, PerSeqMs: p.PerSeqMs, KVReadNs: p.KVReadNsPerToken,
		KVTailNs: p.KVTailNsPerToken, MoEUs: p.MoEExpertUs * float64(p.MoELayers)}
	if p.IsMoE() {
		f.Experts, f.TopK = p.MoEExperts, p.MoETopK
	}
	return f, nil
}
