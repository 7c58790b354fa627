package engine

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"
)

// Dialect names accepted by Config.Dialect.
const (
	DialectVLLM     = "vllm"
	DialectSGLang   = "sglang"
	DialectLlamaCpp = "llamacpp"
	DialectTGI      = "tgi"
	DialectOllama   = "ollama"
)

// Config configures an Engine. Build one with DefaultConfig and change fields; New validates it.
type Config struct {
	// Profile is the cost-model profile: an embedded name (see ProfileNames) or a TOML file
	// path. Defaults to DefaultProfile ("moe-30b-a3b").
	Profile string
	// TimeScale is wall seconds per simulated second: every simulated step duration is
	// multiplied by it before sleeping. Defaults to 0.05, which runs the default bench matrix
	// (91 cells, warmup + 100-token measurement) in about 90 s on a 2-core machine.
	TimeScale float64
	// SpinWait is how long before a step's planned end the scheduler stops sleeping and spins
	// (clock.SleepUntilSpin), so that a late wake-up of its thread on a busy host does not
	// make the step late: it costs up to SpinWait of CPU per step, and never more than a
	// quarter of the step's wall duration (spinning through most of a 0.35 ms step starved
	// the client on a 2-core host beside a busy process: a cell's chunks arrived together).
	// Defaults to 0 (sleep the whole step); at most MaxSpinWait.
	SpinWait time.Duration
	// MaxModelLen is the context length in tokens (prompt + completion). Defaults to 131072.
	MaxModelLen int
	// ModelName is the served model id reported by /v1/models. Defaults to "genload-sim".
	ModelName string
	// Seed seeds generated tokens when a request has no seed. Defaults to 0.
	Seed int64
	// Dialect selects the wire dialect: "vllm" (default), "sglang", "llamacpp" or "tgi".
	Dialect string
	// MaxNumSeqs is the most sequences scheduled in one step (vLLM max_num_seqs). Defaults to 256.
	MaxNumSeqs int
	// MaxNumBatchedTokens is the per-step token budget shared by decode and chunked prefill
	// (vLLM max_num_batched_tokens), in tokens. Defaults to 8192.
	MaxNumBatchedTokens int
	// KVCacheTokens is the KV cache capacity in tokens (rounded down to whole blocks).
	// Defaults to 8388608 (≥ 64 sequences × 64,100 tokens + prefix-cache room).
	KVCacheTokens int
	// BlockSize is the KV cache and prefix-cache block size in tokens. Defaults to 16.
	BlockSize int
	// DisablePrefixCaching turns the prefix cache off. Defaults to false (caching on).
	DisablePrefixCaching bool
	// EOSProbability is the per-token probability of an end-of-sequence token when a request
	// does not set ignore_eos (decided by a hash of seed, prompt and position, so it is
	// deterministic). Defaults to 0.01.
	EOSProbability float64
	// VocabSize bounds accepted prompt token ids: 0 ≤ id < VocabSize. Defaults to 151936 (Qwen3).
	VocabSize int
	// HidePromptTokensDetails reports usage.prompt_tokens_details as null, like vLLM without
	// --enable-prompt-tokens-details. Defaults to false (cached_tokens reported).
	HidePromptTokensDetails bool
	// ForceIncludeUsage always sends the usage chunk in streams (vLLM
	// --enable-force-include-usage). Defaults to false.
	ForceIncludeUsage bool
	// StreamInterval is the number of tokens per choice coalesced into one stream chunk
	// (vLLM --stream-interval). Defaults to 1 (one chunk per token).
	StreamInterval int
	// SpecTokens is the speculative-decoding draft length k (tokens proposed per sequence per
	// decode step); 0 disables speculative decoding. Defaults to 0.
	SpecTokens int
	// SpecAcceptance is the probability that each drafted token is accepted given that the
	// previous one was (i.i.d. acceptance, Leviathan et al. 2023): a step emits 1 + a tokens
	// where a is the run of accepted drafts, E[1 + a] = (1 − α^(k+1)) / (1 − α).
	// Defaults to 0.7.
	SpecAcceptance float64
	// SpecDraftMs is the simulated cost of one draft-model forward pass, in ms; a step with
	// drafting pays k of them. Defaults to 0.35 (an EAGLE-style one-layer draft head).
	SpecDraftMs float64
	// TimingHeaders sends Fireworks-style timing: "generation-duration" (seconds from a
	// request's first to its last token, server clock) and, with speculative decoding,
	// "speculation-acceptance" (accepted fraction of drafted tokens, 0..1) as response
	// headers on non-streaming responses and as HTTP trailers on streams. Defaults to true.
	TimingHeaders bool
	// Faults injects failures into completion requests; see Faults.
	Faults Faults
	// Quirks reproduce behaviours of real servers (usage, chunking, finish reasons,
	// truncation, prompt shapes, metrics, stalls); see Quirks. Defaults to none.
	Quirks Quirks
	// StepLog, when not nil, receives one line per engine step, written with one Write:
	// "time=T step=N active=A decode=D decoding=G prefill_tokens=P spec_tokens=S waiting=W
	// kv_blocks=K experts=E sum_ctx=C max_ctx=M fwd_ms=F wall_ms=W [planned_ms=P] [noise=X]" — T the step's end (wall clock,
	// UTC, RFC 3339 with µs), A the sequences scheduled in the step (decode and prefill), D
	// those the cost model charges as decode (one new token on a computed context, which
	// includes a 1-token prefill rest after a prefix-cache hit), G those that already have
	// output and decode their next token (the forward passes a client sees), C and M the sum
	// and the largest of the D decode sequences' context lengths in tokens (the cost model's
	// ΣC and maxC), F the step's simulated duration (Noise included), W its measured wall duration (≈ F ×
	// TimeScale on average; the wall_ms of the steps between a sequence's first and last
	// token sum to its last_ms − first_ms in SeqLog), P its planned wall duration (F ×
	// TimeScale; absent when TimeScale is 0), so that W − P is how far a busy host made it
	// overrun, X the Noise factor (only with Noise on).
	// Defaults to nil.
	StepLog io.Writer
	// StepLogFile, when not "" and StepLog is nil, is a file New opens for appending (created
	// 0644 if missing) and uses as StepLog; Close closes it. "-" is standard error. Appending
	// lets a log rotator truncate or replace the file while the engine runs. Defaults to "".
	StepLogFile string
	// Noise perturbs step times with seeded noise of a known size (per step, per burst,
	// occasional slow steps); see Noise. Defaults to none.
	Noise Noise
	// SeqLog, when not nil, receives one line per finished sequence, the truth a client's
	// per-sequence figures are checked against:
	// "seq req=R id=ID choice=C prompt=P max_tokens=M tokens=T finish=F arrival_ms=Q
	// first_step=S1 last_step=S2 first_ms=A last_ms=B" — R numbers requests from 1 in arrival
	// order, P is the prompt tokens the engine computed, M the max_tokens the request asked
	// (0 when it gave none), F the finish reason, Q the request's arrival, S1/S2 the engine
	// steps that produced the first and last token and A/B the ends of those steps; times
	// in ms since Engine.Started (monotonic; A, B = −1 without a token). (B − A) / (S2 − S1)
	// is the sequence's true time per decode forward pass (= (B − A) / (T − 1) without
	// speculative decoding). Defaults to nil.
	SeqLog io.Writer
}

// MaxSpinWait bounds Config.SpinWait: a spin is for a wake-up's lateness, not a step.
const MaxSpinWait = 5 * time.Millisecond

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Profile:             DefaultProfile,
		TimeScale:           0.05,
		MaxModelLen:         131072,
		ModelName:           "genload-sim",
		Dialect:             DialectVLLM,
		MaxNumSeqs:          256,
		MaxNumBatchedTokens: 8192,
		KVCacheTokens:       8388608,
		BlockSize:           16,
		EOSProbability:      0.01,
		VocabSize:           151936,
		StreamInterval:      1,
		SpecAcceptance:      0.7,
		SpecDraftMs:         0.35,
		TimingHeaders:       true,
		Faults:              DefaultFaults(),
		Noise:               DefaultNoise(),
	}
}

// Validate reports every invalid field at once, naming each field's flag in brackets.
func (c Config) Validate() error {
	var errs []error
	bad := func(f string, format string, args ...any) {
		errs = append(errs, fmt.Errorf("[%s] "+format, append([]any{f}, args...)...))
	}
	if !(c.TimeScale >= 0) {
		bad("time-scale", "must be >= 0, got %v", c.TimeScale)
	}
	if c.SpinWait < 0 || c.SpinWait > MaxSpinWait {
		bad("spin-wait", "must be in [0, %v], got %v", MaxSpinWait, c.SpinWait)
	}
	if c.MaxModelLen < 2 {
		bad("max-model-len", "must be >= 2, got %d", c.MaxModelLen)
	}
	if c.ModelName == "" {
		bad("model", "must not be empty")
	}
	switch c.Dialect {
	case DialectVLLM, DialectSGLang, DialectLlamaCpp, DialectTGI, DialectOllama:
	default:
		bad("dialect", "must be vllm, sglang, llamacpp, tgi or ollama, got %q", c.Dialect)
	}
	if c.MaxNumSeqs < 1 {
		bad("max-num-seqs", "must be >= 1, got %d", c.MaxNumSeqs)
	}
	if c.MaxNumBatchedTokens < 1 {
		bad("max-num-batched-tokens", "must be >= 1, got %d", c.MaxNumBatchedTokens)
	}
	if c.BlockSize < 1 {
		bad("block-size", "must be >= 1, got %d", c.BlockSize)
	}
	if c.BlockSize >= 1 && c.KVCacheTokens < c.BlockSize {
		bad("kv-cache-tokens", "must be >= block size %d, got %d", c.BlockSize, c.KVCacheTokens)
	}
	if !(c.EOSProbability >= 0 && c.EOSProbability <= 1) {
		bad("eos-probability", "must be in [0, 1], got %v", c.EOSProbability)
	}
	if c.VocabSize < 1 {
		bad("vocab-size", "must be >= 1, got %d", c.VocabSize)
	}
	if c.StreamInterval < 1 {
		bad("stream-interval", "must be >= 1, got %d", c.StreamInterval)
	}
	if c.SpecTokens < 0 || c.SpecTokens > 16 {
		bad("spec-tokens", "must be in 0..16, got %d", c.SpecTokens)
	}
	if !(c.SpecAcceptance >= 0 && c.SpecAcceptance <= 1) {
		bad("spec-acceptance", "must be in [0, 1], got %v", c.SpecAcceptance)
	}
	if !(c.SpecDraftMs >= 0) {
		bad("spec-draft-ms", "must be >= 0, got %v", c.SpecDraftMs)
	}
	if err := c.Faults.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Quirks.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Noise.validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Quirks.Truncate > c.MaxModelLen {
		bad("quirk truncate", "the real context %d must not exceed max-model-len %d", c.Quirks.Truncate, c.MaxModelLen)
	}
	return errors.Join(errs...)
}

// RegisterFlags defines one flag per Config field on fs, writing into cfg; the defaults shown
// are cfg's current values. StepLogFile is the flag -step-log FILE ("-" = standard error).
func RegisterFlags(fs *flag.FlagSet, cfg *Config) {
	fs.StringVar(&cfg.Profile, "profile", cfg.Profile, "cost-model profile: "+fmt.Sprint(ProfileNames())+" or a .toml path")
	fs.Float64Var(&cfg.TimeScale, "time-scale", cfg.TimeScale, "wall seconds per simulated second (0 = no sleeping)")
	fs.DurationVar(&cfg.SpinWait, "spin-wait", cfg.SpinWait, "spin instead of sleeping for this long before each step's planned end (0 = sleep; costs that much CPU per step)")
	fs.IntVar(&cfg.MaxModelLen, "max-model-len", cfg.MaxModelLen, "context length in tokens (prompt + completion)")
	fs.StringVar(&cfg.ModelName, "model", cfg.ModelName, "served model name")
	fs.Int64Var(&cfg.Seed, "seed", cfg.Seed, "seed for generated tokens of requests without a seed")
	fs.StringVar(&cfg.Dialect, "dialect", cfg.Dialect, "wire dialect: vllm, sglang, llamacpp or tgi")
	fs.IntVar(&cfg.MaxNumSeqs, "max-num-seqs", cfg.MaxNumSeqs, "most sequences per engine step")
	fs.IntVar(&cfg.MaxNumBatchedTokens, "max-num-batched-tokens", cfg.MaxNumBatchedTokens, "per-step token budget for decode + chunked prefill")
	fs.IntVar(&cfg.KVCacheTokens, "kv-cache-tokens", cfg.KVCacheTokens, "KV cache capacity in tokens")
	fs.IntVar(&cfg.BlockSize, "block-size", cfg.BlockSize, "KV / prefix-cache block size in tokens")
	fs.BoolVar(&cfg.DisablePrefixCaching, "no-prefix-caching", cfg.DisablePrefixCaching, "disable the prefix cache")
	fs.Float64Var(&cfg.EOSProbability, "eos-probability", cfg.EOSProbability, "per-token EOS probability when ignore_eos is false")
	fs.IntVar(&cfg.VocabSize, "vocab-size", cfg.VocabSize, "accepted prompt token ids are 0..vocab-size-1")
	fs.BoolVar(&cfg.HidePromptTokensDetails, "hide-prompt-tokens-details", cfg.HidePromptTokensDetails, "report usage.prompt_tokens_details as null")
	fs.BoolVar(&cfg.ForceIncludeUsage, "force-include-usage", cfg.ForceIncludeUsage, "always send the streaming usage chunk")
	fs.IntVar(&cfg.StreamInterval, "stream-interval", cfg.StreamInterval, "tokens per choice coalesced into one stream chunk")
	fs.IntVar(&cfg.SpecTokens, "spec-tokens", cfg.SpecTokens, "speculative decoding draft length k (0 = off)")
	fs.Float64Var(&cfg.SpecAcceptance, "spec-acceptance", cfg.SpecAcceptance, "per-draft-token acceptance probability")
	fs.Float64Var(&cfg.SpecDraftMs, "spec-draft-ms", cfg.SpecDraftMs, "simulated ms per draft forward pass")
	fs.BoolVar(&cfg.TimingHeaders, "timing-headers", cfg.TimingHeaders, "send generation-duration / speculation-acceptance headers (trailers on streams)")
	registerFaultFlags(fs, &cfg.Faults)
	fs.Var(quirkFlag{&cfg.Quirks}, "quirk", quirkHelp())
	registerNoiseFlags(fs, &cfg.Noise)
	fs.StringVar(&cfg.StepLogFile, "step-log", cfg.StepLogFile, "append one line per engine step to FILE (- = standard error)")
}
