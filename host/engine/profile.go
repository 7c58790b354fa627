package engine

import (
	"embed"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

//go:embed profiles/*.toml
var profileFS embed.FS

// DefaultProfile is the name of the profile used when Config.Profile is empty.
const DefaultProfile = "moe-30b-a3b"

// Profile is the cost model of one simulated forward pass (engine step), read from a TOML file.
// Every figure is simulated time on the modelled GPU; Config.TimeScale converts it to wall time.
//
// The step time of a batch is
//
//	T = fixed + per_seq·S + kv_read·ΣC + kv_tail·maxC + prefill·P + attn·Q + expert·E
//
// with
//
//	S    sequences scheduled in the step (decode and prefill)            [sequences]
//	ΣC   sum over decoding sequences of their context length (KV read)   [tokens]
//	maxC the longest context among decoding sequences                    [tokens]
//	P    prompt (prefill) tokens processed in the step                   [tokens]
//	Q    causal attention (query, key) pairs of the prefill chunks:
//	     Σ chunk·(start + (chunk+1)/2) for a chunk of `chunk` tokens at `start`  [pairs]
//	E    distinct (layer, expert) pairs activated by the step (MoE only) [pairs]
//
// With speculative decoding the k drafted tokens of each decoding sequence are verified in
// the same forward pass: they add k·S_decode tokens at the prefill per-token rate, their
// experts join E, and the draft model adds k × Config.SpecDraftMs (StepShape.DraftMs).
//
// The shipped profiles (profiles/*.toml) derive each coefficient from datasheet bandwidth and
// FLOP/s figures and the model's config.json; each file documents its arithmetic.
type Profile struct {
	// Name identifies the profile, e.g. "moe-30b-a3b".
	Name string `toml:"name"`
	// Description is one line about the modelled model and hardware.
	Description string `toml:"description"`
	// FixedMs is the per-step cost independent of the batch (weights read, launch), in ms.
	FixedMs float64 `toml:"fixed_ms"`
	// PerSeqMs is the cost per scheduled sequence (sampling, output processing), in ms.
	PerSeqMs float64 `toml:"per_seq_ms"`
	// KVReadNsPerToken is the cost of reading one cached token's K and V in decode, in ns.
	KVReadNsPerToken float64 `toml:"kv_read_ns_per_token"`
	// KVTailNsPerToken is the cost per token of the longest decoding context (kernel tail), in ns.
	KVTailNsPerToken float64 `toml:"kv_tail_ns_per_token"`
	// PrefillNsPerToken is the linear (GEMM) cost of one prefill token, in ns.
	PrefillNsPerToken float64 `toml:"prefill_ns_per_token"`
	// PrefillAttnNsPerPair is the causal attention cost per (query, key) pair in prefill, in ns.
	PrefillAttnNsPerPair float64 `toml:"prefill_attn_ns_per_pair"`
	// MoELayers is the number of MoE layers; 0 for a dense model.
	MoELayers int `toml:"moe_layers"`
	// MoEExperts is the number of routed experts per layer.
	MoEExperts int `toml:"moe_experts"`
	// MoETopK is the number of experts each token activates per layer.
	MoETopK int `toml:"moe_top_k"`
	// MoEExpertUs is the cost of one distinct activated (layer, expert) pair, in µs.
	MoEExpertUs float64 `toml:"moe_expert_us"`
}

// ProfileNames lists the names of the embedded profiles, sorted.
func ProfileNames() []string {
	ents, _ := profileFS.ReadDir("profiles")
	var names []string
	for _, e := range ents {
		names = append(names, strings.TrimSuffix(e.Name(), ".toml"))
	}
	sort.Strings(names)
	return names
}

// LoadProfile returns the embedded profile called name (see ProfileNames), or, when name
// contains a path separator or ends in ".toml", the profile read from that file. An empty name
// means DefaultProfile. Errors name the file and, for TOML errors, line and key.
func LoadProfile(name string) (Profile, error) {
	if name == "" {
		name = DefaultProfile
	}
	var data []byte
	var err error
	src := name
	if strings.ContainsRune(name, os.PathSeparator) || strings.HasSuffix(name, ".toml") {
		data, err = os.ReadFile(name)
		if err != nil {
			return Profile{}, fmt.Errorf("engine profile: %w", err)
		}
	} else {
		src = "profiles/" + name + ".toml"
		data, err = profileFS.ReadFile(src)
		if err != nil {
			return Profile{}, fmt.Errorf("engine profile %q: unknown (known: %s; or a profile file of your own: a path ending in .toml)", name, strings.Join(ProfileNames(), ", "))
		}
	}
	var p Profile
	md, err := toml.Decode(string(data), &p)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return Profile{}, fmt.Errorf("engine profile %s:%d: %s", src, pe.Position.Line, pe.Message)
		}
		return Profile{}, fmt.Errorf("engine profile %s: %w", src, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return Profile{}, fmt.Errorf("engine profile %s: unknown key [%s]", src, und[0].String())
	}
	if err := p.Validate(); err != nil {
		return Profile{}, fmt.Errorf("engine profile %s: %w", src, err)
	}
	return p, nil
}

// Validate reports every negative coefficient and inconsistent MoE shape at once.
func (p Profile) Validate() error {
	var errs []error
	neg := func(key string, v float64) {
		if v < 0 || math.IsNaN(v) {
			errs = append(errs, fmt.Errorf("[%s] must be >= 0, got %v", key, v))
		}
	}
	neg("fixed_ms", p.FixedMs)
	neg("per_seq_ms", p.PerSeqMs)
	neg("kv_read_ns_per_token", p.KVReadNsPerToken)
	neg("kv_tail_ns_per_token", p.KVTailNsPerToken)
	neg("prefill_ns_per_token", p.PrefillNsPerToken)
	neg("prefill_attn_ns_per_pair", p.PrefillAttnNsPerPair)
	neg("moe_expert_us", p.MoEExpertUs)
	if p.MoELayers < 0 || p.MoEExperts < 0 || p.MoETopK < 0 {
		errs = append(errs, fmt.Errorf("[moe_layers], [moe_experts], [moe_top_k] must be >= 0"))
	}
	if p.MoELayers > 0 && (p.MoETopK < 1 || p.MoETopK > p.MoEExperts) {
		errs = append(errs, fmt.Errorf("[moe_top_k] must be in 1..[moe_experts]=%d, got %d", p.MoEExperts, p.MoETopK))
	}
	if p.MoELayers*p.MoEExperts > 1<<20 {
		errs = append(errs, fmt.Errorf("[moe_layers]×[moe_experts] must be <= 1048576"))
	}
	return errors.Join(errs...)
}

// IsMoE reports whether the profile has an expert term.
func (p Profile) IsMoE() bool { return p.MoELayers > 0 && p.MoEExperts > 0 && p.MoETopK > 0 }

// StepShape is what the cost model needs to know about one engine step.
type StepShape struct {
	// Seqs is the number of sequences scheduled in the step.
	Seqs int
	// DecodeSeqs is how many of them decode one token.
	DecodeSeqs int
	// SumCtx is the sum of the decoding sequences' context lengths, in tokens.
	SumCtx int64
	// MaxCtx is the longest decoding context, in tokens.
	MaxCtx int64
	// PrefillTokens is the number of prompt tokens processed, in tokens.
	PrefillTokens int64
	// PrefillPairs is the causal attention work of the prefill chunks, in (query, key) pairs.
	PrefillPairs float64
	// Experts is the number of distinct (layer, expert) pairs activated.
	Experts int
	// SpecTokens is the number of drafted tokens verified in the step (speculative decoding),
	// charged at the prefill per-token rate, in tokens.
	SpecTokens int64
	// DraftMs is the draft model's cost for the step (draft forwards × cost each), in ms.
	DraftMs float64
}

// StepTime returns the simulated duration of a step of shape s (see Profile for the formula).
func (p Profile) StepTime(s StepShape) time.Duration {
	if s.Seqs == 0 {
		return 0
	}
	ms := p.FixedMs + p.PerSeqMs*float64(s.Seqs) +
		(p.KVReadNsPerToken*float64(s.SumCtx)+p.KVTailNsPerToken*float64(s.MaxCtx)+
			p.PrefillNsPerToken*float64(s.PrefillTokens+s.SpecTokens)+p.PrefillAttnNsPerPair*s.PrefillPairs)/1e6 +
		p.MoEExpertUs*float64(s.Experts)/1e3 + s.DraftMs
	return time.Duration(ms * 1e6)
}

// prefillExperts returns the expected number of (layer, expert) pairs a prefill chunk of
// tokens activates in addition to the already activated `have` pairs, assuming each token picks
// top_k experts per layer uniformly: a pair stays untouched with probability
// (1 − k/N)^tokens, so the expected new pairs are (L·N − have)·(1 − (1 − k/N)^tokens).
// Prefill tokens are estimated rather than hashed so that a step's CPU work stays O(batch).
func (p Profile) prefillExperts(have int, tokens int64) int {
	if !p.IsMoE() || tokens <= 0 {
		return 0
	}
	total := p.MoELayers * p.MoEExperts
	miss := math.Pow(1-float64(p.MoETopK)/float64(p.MoEExperts), float64(tokens))
	return int(math.Round(float64(total-have) * (1 - miss)))
}
