// Package config is the bench.toml schema: defaults, decoding with file:line errors, and one
// Validate that reports every problem at once.
//
// Precedence, lowest first: [Default] < the TOML file < command-line flags (applied by the CLI on
// the decoded value before [Config.Validate]). The struct is the API: constructors downstream take
// a validated *Config and never re-check it.
package config

import (
	"fmt"
	"time"
)

// Builtin is the [Config.Target] value that selects the built-in serving engine, started
// in-process on a loopback port for the duration of the run.
const Builtin = "builtin"

// Request shapes ([Config.Mode]).
const (
	// ModeArray sends one /v1/completions request whose prompt is the B token-id arrays, n = 1.
	ModeArray = "array"
	// ModeRouted sends B concurrent n = 1 requests, prompt i to the worker the router picks.
	ModeRouted = "routed"
	// ModeN is the legacy shape: one prompt, n = B (every sequence identical).
	ModeN = "n"
	// ModeAuto lets a capability probe before the first cell choose array or routed (array
	// when the server accepts a list of prompts, else routed).
	ModeAuto = "auto"
)

// Prompt formats ([Prompt.Format]).
const (
	// TokenCountsAuto, TokenCountsUsage and TokenCountsLogprobs are the values of
	// [Config.TokenCounts].
	TokenCountsAuto     = "auto"
	TokenCountsUsage    = "usage"
	TokenCountsLogprobs = "logprobs"
	// FormatTokens sends token ids: lengths are exact by construction.
	FormatTokens = "tokens"
	// FormatText decodes the ids and sends text; the server re-tokenizes, and the deviation
	// from the target length is reported per cell.
	FormatText = "text"
	// FormatAuto lets the capability probe choose: tokens when the server accepts token ids,
	// else text.
	FormatAuto = "auto"
)

// Config is the whole of bench.toml. Every field gives its unit and default.
type Config struct {
	// Seed makes prompts, plugin random sources and request bodies reproducible. Default 42.
	Seed uint64 `toml:"seed" json:"seed"`
	// Target is "builtin" (default) or the base URL of an OpenAI-compatible server, e.g.
	// "http://127.0.0.1:8000" (no /v1 suffix).
	Target string `toml:"target" json:"target"`
	// Model is the model name sent in requests. Default: the first model of /v1/models.
	Model string `toml:"model" json:"model"`
	// MaxTokens is the number of tokens generated per sequence (decode steps + 1). Default 100.
	MaxTokens int `toml:"max_tokens" json:"max_tokens"`
	// Temperature is sent with every request. Default 0 (greedy).
	Temperature float64 `toml:"temperature" json:"temperature"`
	// Mode is the request shape: "array" (default), "routed", "n" or "auto" (the capability
	// probe picks array or routed; see [Config.Chosen]).
	Mode string `toml:"mode" json:"mode"`
	// Context caps the model context in tokens. Default 0: the smallest of the server's
	// /v1/models max_model_len and the tokenizer's model config is used.
	Context int `toml:"context" json:"context"`
	// Out is the results directory. Default "results".
	Out string `toml:"out" json:"out"`
	// ContinuousUsage asks for per-chunk usage (stream_options.continuous_usage_stats), so
	// servers that support it (vLLM, recent SGLang, the built-in engine) report tokens per
	// chunk exactly. Default true.
	ContinuousUsage bool `toml:"continuous_usage" json:"continuous_usage"`
	// TokenCounts is where completion token counts come from: "auto" (default: the server's
	// usage when a probe before the first cell shows it is exact, else one logprobs entry per
	// token, asked with "logprobs": 1, when the server sends them), "usage" (never ask for
	// logprobs) or "logprobs" (always ask: exact per chunk, at ≈ 70 % more bytes per token).
	TokenCounts string `toml:"token_counts" json:"token_counts"`
	// Truncation is what a cell whose server counted fewer prompt tokens than genload sent
	// (token-id prompts) is: "error" (default: the cell fails, its figures kept in the record)
	// or "warn" (a warning that names the truncation).
	Truncation string `toml:"truncation" json:"truncation"`
	// DraftTokens is the speculative draft length k of the server, used with the
	// speculation-acceptance header to count forward passes. Default 0 (unknown).
	DraftTokens int `toml:"draft_tokens" json:"draft_tokens"`
	// Metrics is "auto" (default: scrape the target's /metrics before and after each cell and
	// sample its running-requests gauge during it, when the endpoint exists) or "off".
	Metrics string `toml:"metrics" json:"metrics"`
	// APIKeyEnv names an environment variable holding the API key (sent as a Bearer token;
	// never printed or written). Default "GENLOAD_API_KEY".
	APIKeyEnv string `toml:"api_key_env" json:"api_key_env"`
	// APIKeyFile names a file holding the API key; it wins over APIKeyEnv. Default "".
	APIKeyFile string `toml:"api_key_file" json:"api_key_file"`

	Matrix    Matrix        `toml:"matrix" json:"matrix"`
	Lengths   PluginRef     `toml:"lengths" json:"lengths"`
	Router    PluginRef     `toml:"router" json:"router"`
	Workers   []Worker      `toml:"workers" json:"workers"`
	Grid      WorkerGrid    `toml:"worker_grid" json:"worker_grid"`
	Prompt    Prompt        `toml:"prompt" json:"prompt"`
	Tokenizer TokenizerConf `toml:"tokenizer" json:"tokenizer"`
	Warmup    Warmup        `toml:"warmup" json:"warmup"`
	Timeouts  Timeouts      `toml:"timeouts" json:"timeouts"`
	Headers   Headers       `toml:"headers" json:"headers"`
	Plugins   Plugins       `toml:"plugins" json:"plugins"`
	Engine    Engine        `toml:"engine" json:"engine"`
	Run       RunTable      `toml:"run" json:"run,omitzero"`
	// Labels are free deployment dimensions written into every results file's header
	// (gpu_count = 8, draft_tokens = 3, deployment = "h100-tp1"): string or integer values,
	// keys of letters, digits, '_', '-' and '.'. Latency models (genload fit, gate) group
	// and match runs by them. Default none.
	Labels map[string]any `toml:"labels" json:"labels,omitempty"`

	// File is the path the config was read from ("" for defaults only). Not a TOML key.
	File string `toml:"-" json:"file"`
	// Chosen records, by dotted key ("mode", "prompt.format"), what the capability probe
	// chose for a key set to "auto", and why ("routed: the server rejected a list of
	// prompts (…)"). Set by the run, not a TOML key.
	Chosen map[string]string `toml:"-" json:"chosen,omitempty"`
	// lines maps a dotted key to its line in File, for error messages.
	lines map[string]int
	// flags maps a dotted key to the command-line flag that set it (see Override).
	flags map[string]string
}

// Override records that a command-line flag set key (dotted, e.g. "lengths.plugin"), so that
// messages about that key name the flag instead of a line of the file.
func (c *Config) Override(key, flag string) {
	if c.flags == nil {
		c.flags = map[string]string{}
	}
	c.flags[key] = flag
}

// Matrix selects the (target mean sequence length L, batch size B) cells.
type Matrix struct {
	// SeqLens are the target mean sequence lengths L in tokens (prompt tokens, chat template
	// included). Default {1000, 2000, 4000, 8000, 16000, 32000, 64000}.
	SeqLens []int `toml:"seq_lens" json:"seq_lens"`
	// BatchSizes are the batch sizes B (concurrent sequences). Default {1..8, 12, 16, 32, 48, 64}.
	BatchSizes []int `toml:"batch_sizes" json:"batch_sizes"`
	// Pairs are extra explicit [L, B] cells run after the grid. Default none.
	Pairs [][]int `toml:"pairs" json:"pairs"`
	// MaxKVCacheEntries drops cells whose (L + max_tokens)·B exceeds it, in tokens.
	// Default 0 (no cap).
	MaxKVCacheEntries int `toml:"max_kv_cache_entries" json:"max_kv_cache_entries"`
	// AutoSeqLens replaces SeqLens with MinSeqLen, 2·MinSeqLen, 4·MinSeqLen, … up to the model
	// context minus max_tokens. Default false.
	AutoSeqLens bool `toml:"auto_seq_lens" json:"auto_seq_lens"`
	// MinSeqLen is the first auto sequence length in tokens. Default 1000.
	MinSeqLen int `toml:"min_seq_len" json:"min_seq_len"`
}

// PluginRef names a WebAssembly plugin and its configuration table.
type PluginRef struct {
	// Plugin is a plugin name found in the plugin directories ("gamma", "uniform",
	// "router-rr") or a path to a .wasm file.
	Plugin string `toml:"plugin" json:"plugin"`
	// MinLen is, for length plugins, the smallest prompt length in tokens. Default 0: the chat
	// template + analysis suffix + 1 body token.
	MinLen int `toml:"min_len" json:"min_len,omitempty"`
	// Config is passed to the plugin as JSON; the plugin rejects unknown keys.
	Config map[string]any `toml:"config" json:"config"`
}

// Prompt says how prompts are built from the corpus.
type Prompt struct {
	// Corpus is a JSONL file with a "text" field per line. Default "": the embedded corpus.
	Corpus string `toml:"corpus" json:"corpus"`
	// Suffix is the analysis instruction that ends every prompt body; it is never cut.
	// Default "Summarize and analyse the text above.".
	Suffix string `toml:"suffix" json:"suffix"`
	// Separator is put between repeats of a corpus row. Default "\n\n".
	Separator string `toml:"separator" json:"separator"`
	// Format is "tokens" (default), "text" or "auto" (the capability probe picks tokens when
	// the server accepts token ids, else text).
	Format string `toml:"format" json:"format"`
}

// TokenizerConf selects the tokenizer.
type TokenizerConf struct {
	// Path is a model directory or a tokenizer.json. Default "": the embedded Qwen3 tokenizer.
	Path string `toml:"path" json:"path"`
}

// RunTable is the [run] table: what a run does when a cell fails, and when the built-in
// engine says the host disturbed a cell.
type RunTable struct {
	// OnError is what a failed cell does to the run: "stop" (default; "" is the same) ends the
	// run after writing the failed cell, "continue" writes it (status "error", its error) and
	// goes on to the next cell. Either way a run with a failed cell exits non-zero, and
	// --resume measures its failed cells again. The --keep-going flag sets "continue". An
	// interruption always stops.
	OnError string `toml:"on_error" json:"on_error,omitempty"`
	// RemeasureOverrun is how many times a cell's measured requests are sent again when the
	// built-in engine (in genload's process or as `genload serve`) reports that its steps ran
	// more than the stated share off their plan while it served them, from a few late steps
	// (metrics.Overrun's Disturbed and Intermittent: the host's scheduling delays, not the
	// cost model; a lateness of every step is reported, not re-measured). The warmup is not
	// repeated; the figures are the last attempt's, each earlier attempt's lateness is in
	// the record (results.Cell.Remeasured) and its wall time in the cell's. Default 2; 0 never
	// sends them again. A server without the engine's overrun metrics is never re-measured.
	RemeasureOverrun int `toml:"remeasure_overrun" json:"remeasure_overrun,omitempty"`
}

// DefaultRemeasureOverrun is [run] remeasure_overrun's default, and MaxRemeasureOverrun its
// bound. Two: beside one busy process about 3 of the default matrix's 91 cells ran over the
// share at time scale 0.1 (1–12 per run), so with each attempt a fresh draw of the host's
// noise two more attempts leave about 91 × 0.035³ ≈ 0.004 such cells a run.
const (
	DefaultRemeasureOverrun = 2
	MaxRemeasureOverrun     = 10
)

// IsZero reports a table with on_error "stop" and no re-measuring, which results files do not
// write: a header written before the keys existed decodes to it.
func (r RunTable) IsZero() bool {
	return (r.OnError == "" || r.OnError == OnErrorStop) && r.RemeasureOverrun == 0
}

// The values of [run] on_error.
const (
	OnErrorStop     = "stop"
	OnErrorContinue = "continue"
)

// Warmup configures the warmup request sent before each cell's measurement.
type Warmup struct {
	// Disabled skips warmup (not recommended). Default false.
	Disabled bool `toml:"disabled" json:"disabled"`
	// Retries is how many times a transport error or 5xx is retried. Default 3.
	Retries int `toml:"retries" json:"retries"`
	// RetryDelay is the wait before the first retry, doubled each time. Default 500ms.
	RetryDelay Duration `toml:"retry_delay" json:"retry_delay"`
}

// Timeouts bound each request, counted from its start. 0 means none.
type Timeouts struct {
	// Connect bounds TCP connection setup. Default 10s.
	Connect Duration `toml:"connect" json:"connect"`
	// FirstToken bounds the time from sending a request to its first streamed token,
	// whether the server sent its headers or not: a server that hangs before its first
	// token fails the request (a first_token timeout) instead of holding the run for ever.
	// Default 10m, longer than the prefill of any default-matrix cell on a single GPU; raise
	// it for cells whose prefill takes longer; 0 waits for ever.
	FirstToken Duration `toml:"first_token" json:"first_token"`
	// Total bounds the whole request. Default 0 (none).
	Total Duration `toml:"total" json:"total"`
	// StallSteps ends a stream that stops sending after its first token: no byte for
	// StallSteps × the stream's observed step time (at least StallMin) fails the request
	// with a stall timeout. Default 20; 0 disables (unless Stall is set).
	StallSteps int `toml:"stall_steps" json:"stall_steps"`
	// StallMin is the floor of the stall limit. Default 10s: in array mode one sequence's
	// tokens can pause while the server prefills the request's other prompts.
	StallMin Duration `toml:"stall_min" json:"stall_min"`
	// Stall, when > 0, is a fixed stall limit replacing the StallSteps rule. Default 0.
	Stall Duration `toml:"stall" json:"stall"`
}

// Headers names the optional server timing headers.
type Headers struct {
	// GenerationDuration is the header carrying server-side generation time. Default
	// "generation-duration".
	GenerationDuration string `toml:"generation_duration" json:"generation_duration"`
	// SpeculationAcceptance is the header carrying the speculative-decoding acceptance rate.
	// Default "speculation-acceptance".
	SpeculationAcceptance string `toml:"speculation_acceptance" json:"speculation_acceptance"`
}

// Plugins configures the WebAssembly plugin host.
type Plugins struct {
	// Dir is an extra directory searched for plugins by name. Default "".
	Dir string `toml:"dir" json:"dir"`
	// CallTimeout bounds every plugin call. Default 2s.
	CallTimeout Duration `toml:"call_timeout" json:"call_timeout"`
	// MemoryLimitMiB caps a plugin's linear memory. Default 64.
	MemoryLimitMiB int `toml:"memory_limit_mib" json:"memory_limit_mib"`
}

// Engine configures the built-in engine when Target is "builtin".
type Engine struct {
	// Profile is a shipped cost-model profile name or a TOML path. Default "" (the engine's).
	Profile string `toml:"profile" json:"profile"`
	// TimeScale multiplies every simulated duration. Default 0 (the engine's default).
	TimeScale float64 `toml:"time_scale" json:"time_scale"`
	// SpinWait is how long before each step's planned end the engine spins instead of
	// sleeping (engine.Config.SpinWait), so that a busy host's late wake-ups do not make its
	// steps late; it costs that much CPU per step. Default 0 (sleep).
	SpinWait Duration `toml:"spin_wait" json:"spin_wait,omitzero"`
	// MaxModelLen is the context the engine reports in tokens. Default 0 (the engine's).
	MaxModelLen int `toml:"max_model_len" json:"max_model_len"`
	// Quirks are real servers' behaviours for the engine to reproduce, as `genload serve
	// --quirk` takes them ("zero-usage,tokens-per-chunk=2"). Default "" (none).
	Quirks string `toml:"quirks" json:"quirks"`
	// Noise is seeded step-time noise of a known size for the engine to inject, as `genload
	// serve` takes it ("step-cv=0.02,burst-cv=0.05,slow-prob=0.001,slow-factor=5,seed=1").
	// Each round of `run --repeat` and `--until-cv` and each side of `ab` draws with a seed
	// derived from this seed and the round or side (the header's engine info records it).
	// Default "" (none).
	Noise string `toml:"noise" json:"noise,omitempty"`
}

// Duration is a time.Duration that decodes from TOML strings such as "500ms" or "2s".
type Duration struct{ time.Duration }

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("not a duration (want e.g. \"500ms\", \"2s\"): %q", b)
	}
	d.Duration = v
	return nil
}

// MarshalText writes the Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.Duration.String()), nil }

// Default returns the configuration used when bench.toml sets nothing.
func Default() *Config {
	return &Config{
		Seed:            42,
		Target:          Builtin,
		ContinuousUsage: true,
		TokenCounts:     TokenCountsAuto,
		Truncation:      "error",
		Run:             RunTable{OnError: OnErrorStop, RemeasureOverrun: DefaultRemeasureOverrun},
		Metrics:         "auto",
		MaxTokens:       100,
		Mode:            ModeArray,
		Out:             "results",
		APIKeyEnv:       "GENLOAD_API_KEY",
		Matrix: Matrix{
			SeqLens:    []int{1000, 2000, 4000, 8000, 16000, 32000, 64000},
			BatchSizes: []int{1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 32, 48, 64},
			MinSeqLen:  1000,
		},
		Lengths: PluginRef{Plugin: "gamma", Config: map[string]any{"k": 0.9}},
		Router:  PluginRef{Plugin: "router-rr", Config: map[string]any{}},
		Grid:    WorkerGrid{ServerHeader: "x-service-index", GeneratorHeader: "x-local-index", Generators: 1},
		Prompt: Prompt{
			Suffix:    "Summarize and analyse the text above.",
			Separator: "\n\n",
			Format:    FormatTokens,
		},
		Warmup:   Warmup{Retries: 3, RetryDelay: Duration{500 * time.Millisecond}},
		Timeouts: Timeouts{Connect: Duration{10 * time.Second}, FirstToken: Duration{10 * time.Minute}, StallSteps: 20, StallMin: Duration{10 * time.Second}},
		Headers: Headers{
			GenerationDuration:    "generation-duration",
			SpeculationAcceptance: "speculation-acceptance",
		},
		Plugins: Plugins{CallTimeout: Duration{2 * time.Second}, MemoryLimitMiB: 64},
	}
}
