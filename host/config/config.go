// Package config is the bench.toml schema: defaults, decoding with file:line errors, and one
// Validate that reports every problem at once.
//
// Precedence, lowest first: [Default] < the TOML file < command-line flags (applied by the CLI on
// the decoded value before [Config.Validate]). The struct is the API: constructors downstream take
// a validated *Config and never re-check it.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/genload/genload/host/exitcode"
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

// Worker is one routing target in routed mode: a base URL and/or extra headers (e.g. routing
// headers such as a service index).
type Worker struct {
	// Name labels the worker in results. Default "w<i>".
	Name string `toml:"name" json:"name"`
	// URL is the worker's base URL. Default: [Config.Target].
	URL string `toml:"url" json:"url"`
	// Headers are added to every request sent to this worker.
	Headers map[string]string `toml:"headers" json:"headers,omitempty"`
}

// WorkerGrid expands to Servers × Generators workers in server-first order: worker w is
// server w mod Servers, generator w div Servers, so consecutive workers (and a round-robin
// router) cycle through the servers first.
type WorkerGrid struct {
	// Servers is the number of servers. Default 0 (no grid).
	Servers int `toml:"servers" json:"servers"`
	// ServerURLs optionally gives each server its base URL (len must equal Servers).
	ServerURLs []string `toml:"server_urls" json:"server_urls,omitempty"`
	// ServerHeader carries the server index. Default "x-service-index".
	ServerHeader string `toml:"server_header" json:"server_header"`
	// Generators is the number of generators per server. Default 1.
	Generators int `toml:"generators" json:"generators"`
	// GeneratorHeader carries the generator index. Default "x-local-index".
	GeneratorHeader string `toml:"generator_header" json:"generator_header"`
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

// RunTable is the [run] table: what a run does when a cell fails.
type RunTable struct {
	// OnError is what a failed cell does to the run: "stop" (default; "" is the same) ends the
	// run after writing the failed cell, "continue" writes it (status "error", its error) and
	// goes on to the next cell. Either way a run with a failed cell exits non-zero, and
	// --resume measures its failed cells again. The --keep-going flag sets "continue". An
	// interruption always stops.
	OnError string `toml:"on_error" json:"on_error,omitempty"`
}

// IsZero reports the default table (on_error "stop"), which results files do not write: the
// header of a run that kept the default reads as one written before the key existed.
func (r RunTable) IsZero() bool { return r.OnError == "" || r.OnError == OnErrorStop }

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
	// FirstToken bounds the time to the first streamed token. Default 0 (none).
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
	// MaxModelLen is the context the engine reports in tokens. Default 0 (the engine's).
	MaxModelLen int `toml:"max_model_len" json:"max_model_len"`
	// Quirks are real servers' behaviours for the engine to reproduce, as `genload serve
	// --quirk` takes them ("zero-usage,tokens-per-chunk=2"). Default "" (none).
	Quirks string `toml:"quirks" json:"quirks"`
	// Noise is seeded step-time noise of a known size for the engine to inject, as `genload
	// serve` takes it ("step-cv=0.02,burst-cv=0.05,slow-prob=0.001,slow-factor=5,seed=1").
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
		Run:             RunTable{OnError: OnErrorStop},
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
		Timeouts: Timeouts{Connect: Duration{10 * time.Second}, StallSteps: 20, StallMin: Duration{10 * time.Second}},
		Headers: Headers{
			GenerationDuration:    "generation-duration",
			SpeculationAcceptance: "speculation-acceptance",
		},
		Plugins: Plugins{CallTimeout: Duration{2 * time.Second}, MemoryLimitMiB: 64},
	}
}

// Load reads path over [Default]. Syntax errors, type errors and unknown keys are reported
// with path:line and the key; the returned error carries [exitcode.InvalidConfig]. Load does
// not call Validate (flags may still change the value).
func Load(path string) (*Config, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.InvalidConfig, "read config: %w", err)
	}
	return Parse(path, src)
}

// Parse decodes src (named path in messages) over [Default]. Errors as for [Load].
func Parse(path string, src []byte) (*Config, error) {
	c := Default()
	// Tables given in the file replace the defaults' plugin configs rather than merge into them.
	c.Lengths.Config, c.Router.Config = nil, nil
	md, err := toml.NewDecoder(bytes.NewReader(src)).Decode(c)
	c.File = path
	c.lines = keyLines(src)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			line := pe.Position.Line
			if strings.Contains(pe.Message, `'\n'`) && line > 1 {
				line-- // the parser stands on the next line when the newline itself is unexpected
			}
			return nil, exitcode.Errorf(exitcode.InvalidConfig, "%s:%d: %s", path, line, cleanTOMLError(pe))
		}
		// Decode-time type errors read "toml: line N (last key "k"): …".
		if m := typeErrRe.FindStringSubmatch(err.Error()); m != nil {
			return nil, exitcode.Errorf(exitcode.InvalidConfig, "%s:%s: [%s] %s", path, m[1], m[2], m[3])
		}
		return nil, exitcode.Errorf(exitcode.InvalidConfig, "%s: %v", path, err)
	}
	if c.Lengths.Config == nil {
		if c.Lengths.Plugin == "gamma" {
			c.Lengths.Config = map[string]any{"k": 0.9}
		} else {
			c.Lengths.Config = map[string]any{}
		}
	}
	if c.Router.Config == nil {
		c.Router.Config = map[string]any{}
	}
	c.resolvePaths(md)
	var errs []error
	// TOML integers are signed: a negative seed decodes into the unsigned field wrapped
	// (−1 as 2⁶⁴−1); read it signed to tell.
	var signed struct {
		Seed *int64 `toml:"seed"`
	}
	if _, err := toml.NewDecoder(bytes.NewReader(src)).Decode(&signed); err == nil && signed.Seed != nil && *signed.Seed < 0 {
		errs = append(errs, fmt.Errorf("%s: [seed] must be ≥ 0, got %d", c.Where("seed"), *signed.Seed))
	}
	for _, k := range md.Undecoded() {
		key := k.String()
		if strings.HasPrefix(key, "lengths.config.") || strings.HasPrefix(key, "router.config.") {
			continue // plugin tables are validated by the plugin itself
		}
		errs = append(errs, fmt.Errorf("%s: unknown key [%s]", c.Where(key), key))
	}
	if len(errs) > 0 {
		return nil, exitcode.With(exitcode.InvalidConfig, errors.Join(errs...))
	}
	return c, nil
}

// resolvePaths makes the relative paths the file gives relative to the file's folder, not to
// the working directory, so that a bench.toml works from wherever genload is started:
// [lengths.plugin] and [router.plugin] when they are paths (end in .wasm or hold a '/'; a
// plugin name such as "gamma" is not a path), [prompt.corpus], [tokenizer.path], [plugins.dir],
// [api_key_file] and [engine.profile] when it is a path (ends in .toml or holds a '/').
// Absolute paths, empty values and keys the file does not set are left alone; flags given
// later keep their meaning (relative to the working directory). Messages about these keys
// still name the key and its file:line ([Config.Where]).
func (c *Config) resolvePaths(md toml.MetaData) {
	dir := filepath.Dir(c.File)
	isPath := func(v, ext string) bool {
		return strings.HasSuffix(v, ext) || strings.ContainsRune(v, '/') || strings.ContainsRune(v, filepath.Separator)
	}
	for _, k := range []struct {
		key []string
		v   *string
		ext string // "" = always a path
	}{
		{[]string{"lengths", "plugin"}, &c.Lengths.Plugin, ".wasm"},
		{[]string{"router", "plugin"}, &c.Router.Plugin, ".wasm"},
		{[]string{"prompt", "corpus"}, &c.Prompt.Corpus, ""},
		{[]string{"tokenizer", "path"}, &c.Tokenizer.Path, ""},
		{[]string{"plugins", "dir"}, &c.Plugins.Dir, ""},
		{[]string{"api_key_file"}, &c.APIKeyFile, ""},
		{[]string{"engine", "profile"}, &c.Engine.Profile, ".toml"},
	} {
		v := *k.v
		if v == "" || filepath.IsAbs(v) || !md.IsDefined(k.key...) || (k.ext != "" && !isPath(v, k.ext)) {
			continue
		}
		*k.v = filepath.Join(dir, v)
	}
}

func cleanTOMLError(pe toml.ParseError) string {
	msg := pe.Message
	if msg == "" {
		msg = pe.Error()
	}
	if pe.LastKey != "" && !strings.Contains(msg, pe.LastKey) {
		msg = fmt.Sprintf("[%s]: %s", pe.LastKey, msg)
	}
	return msg
}

// Where returns "flag --x" when a command-line flag set the key (or a key inside it, or the
// table holding it), else "file:line" for a dotted key when the key appears in the file, else
// "file" (or "config" when no file was read).
func (c *Config) Where(key string) string {
	for k, flag := range c.flags {
		if k == key || strings.HasPrefix(key, k+".") || strings.HasPrefix(k, key+".") {
			return "flag " + flag
		}
	}
	if c.File == "" {
		return "config"
	}
	for k := key; k != ""; {
		if n, ok := c.lines[k]; ok {
			return fmt.Sprintf("%s:%d", c.File, n)
		}
		i := strings.LastIndexByte(k, '.')
		if i < 0 {
			break
		}
		k = k[:i]
	}
	return c.File
}

var (
	typeErrRe = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`)
	tableRe   = regexp.MustCompile(`^\s*\[\[?\s*([A-Za-z0-9_.\-" ]+?)\s*\]\]?\s*(#.*)?$`)
	keyRe     = regexp.MustCompile(`^\s*("?[A-Za-z0-9_\-]+"?)\s*=`)
)

// labelKeyRe is what a [labels] key may be.
var labelKeyRe = regexp.MustCompile(`^[A-Za-z0-9_.\-]+$`)

// keyLines maps each dotted key of a TOML document to the line where it is set (array-of-table
// keys are recorded without an index: the first occurrence wins). It is a best-effort scanner
// for messages, not a parser: the TOML library has already accepted the document.
func keyLines(src []byte) map[string]int {
	m := map[string]int{}
	prefix := ""
	for i, line := range strings.Split(string(src), "\n") {
		if t := tableRe.FindStringSubmatch(line); t != nil {
			prefix = strings.ReplaceAll(strings.ReplaceAll(t[1], `"`, ""), " ", "")
			if _, ok := m[prefix]; !ok {
				m[prefix] = i + 1
			}
			continue
		}
		if k := keyRe.FindStringSubmatch(line); k != nil {
			key := strings.Trim(k[1], `"`)
			if prefix != "" {
				key = prefix + "." + key
			}
			if _, ok := m[key]; !ok {
				m[key] = i + 1
			}
		}
	}
	return m
}

// Validate reports every problem at once (errors.Join), each naming file:line and the key in
// brackets. The error carries [exitcode.InvalidConfig].
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: [%s] %s", c.Where(key), key, fmt.Sprintf(format, args...)))
	}
	if c.Target != Builtin {
		if err := checkURL(c.Target); err != nil {
			bad("target", "%v (want \"builtin\" or a base URL such as http://127.0.0.1:8000)", err)
		}
	}
	if c.MaxTokens < 1 {
		bad("max_tokens", "must be ≥ 1, got %d", c.MaxTokens)
	}
	if c.Context != 0 && c.MaxTokens >= c.Context {
		bad("max_tokens", "%d leaves no room for a prompt in context %d", c.MaxTokens, c.Context)
	}
	if c.DraftTokens < 0 {
		bad("draft_tokens", "must be ≥ 0, got %d", c.DraftTokens)
	}
	switch c.TokenCounts {
	case TokenCountsAuto, TokenCountsUsage, TokenCountsLogprobs:
	default:
		bad("token_counts", "unknown value %q (want \"auto\", \"usage\" or \"logprobs\")", c.TokenCounts)
	}
	if c.Truncation != "error" && c.Truncation != "warn" {
		bad("truncation", "unknown value %q (want \"error\" or \"warn\")", c.Truncation)
	}
	switch c.Run.OnError {
	case "", OnErrorStop, OnErrorContinue:
	default:
		bad("run.on_error", "unknown value %q (want \"stop\" or \"continue\")", c.Run.OnError)
	}
	if c.Metrics != "auto" && c.Metrics != "off" {
		bad("metrics", "unknown value %q (want \"auto\" or \"off\")", c.Metrics)
	}
	if c.Temperature < 0 {
		bad("temperature", "must be ≥ 0, got %g", c.Temperature)
	}
	switch c.Mode {
	case ModeArray, ModeRouted, ModeN, ModeAuto:
	default:
		bad("mode", "unknown mode %q (want \"array\", \"routed\", \"n\" or \"auto\")", c.Mode)
	}
	if c.Out == "" {
		bad("out", "must name a directory")
	}
	m := c.Matrix
	if !m.AutoSeqLens {
		for _, l := range m.SeqLens {
			if l < 1 {
				bad("matrix.seq_lens", "sequence lengths must be ≥ 1 token, got %d", l)
			}
		}
	} else if m.MinSeqLen < 1 {
		bad("matrix.min_seq_len", "must be ≥ 1 token, got %d", m.MinSeqLen)
	}
	for _, b := range m.BatchSizes {
		if b < 1 {
			bad("matrix.batch_sizes", "batch sizes must be ≥ 1, got %d", b)
		}
	}
	for i, p := range m.Pairs {
		if len(p) != 2 || p[0] < 1 || p[1] < 1 {
			bad("matrix.pairs", "pair %d must be [seq_len, batch] with both ≥ 1, got %v", i, p)
		}
	}
	gridEmpty := (len(m.SeqLens) == 0 && !m.AutoSeqLens) || len(m.BatchSizes) == 0
	if gridEmpty && len(m.Pairs) == 0 {
		bad("matrix", "no cells: give seq_lens and batch_sizes, auto_seq_lens, or pairs")
	}
	if m.MaxKVCacheEntries < 0 {
		bad("matrix.max_kv_cache_entries", "must be ≥ 0 tokens, got %d", m.MaxKVCacheEntries)
	}
	if c.Lengths.Plugin == "" {
		bad("lengths.plugin", "must name a length plugin (e.g. \"gamma\", \"uniform\") or a .wasm path")
	}
	if c.Lengths.MinLen < 0 {
		bad("lengths.min_len", "must be ≥ 0 tokens, got %d", c.Lengths.MinLen)
	}
	if (c.Mode == ModeRouted || c.Mode == ModeAuto) && c.Router.Plugin == "" {
		bad("router.plugin", "%s mode needs a router plugin (e.g. \"router-rr\")", c.Mode)
	}
	seen := map[string]int{}
	for i, w := range c.Workers {
		key := fmt.Sprintf("workers.%d", i)
		if w.URL != "" {
			if err := checkURL(w.URL); err != nil {
				bad("workers", "worker %d: %v", i, err)
			}
		}
		id := w.URL + "\x00" + fmt.Sprint(sortedHeaders(w.Headers))
		if j, dup := seen[id]; dup {
			bad("workers", "worker %d duplicates worker %d (same url and headers)", i, j)
		}
		seen[id] = i
		_ = key
	}
	if g := c.Grid; g.Servers != 0 {
		if len(c.Workers) > 0 {
			bad("worker_grid", "give either [[workers]] or [worker_grid], not both")
		}
		if g.Servers < 0 || g.Generators < 1 {
			bad("worker_grid", "servers must be ≥ 1 and generators ≥ 1, got %d × %d", g.Servers, g.Generators)
		}
		if len(g.ServerURLs) != 0 && len(g.ServerURLs) != g.Servers {
			bad("worker_grid.server_urls", "has %d URLs for %d servers", len(g.ServerURLs), g.Servers)
		}
		for _, u := range g.ServerURLs {
			if err := checkURL(u); err != nil {
				bad("worker_grid.server_urls", "%v", err)
			}
		}
	}
	if c.Mode != ModeRouted && c.Mode != ModeAuto && (len(c.Workers) > 1 || c.Grid.Servers*max(c.Grid.Generators, 1) > 1) {
		bad("mode", "several workers are configured but mode is %q; routing needs mode = \"routed\" (or \"auto\")", c.Mode)
	}
	if c.Prompt.Suffix == "" {
		bad("prompt.suffix", "must not be empty: every prompt ends with the analysis instruction")
	}
	switch c.Prompt.Format {
	case FormatTokens, FormatText, FormatAuto:
	default:
		bad("prompt.format", "unknown format %q (want \"tokens\", \"text\" or \"auto\")", c.Prompt.Format)
	}
	if c.Warmup.Retries < 0 {
		bad("warmup.retries", "must be ≥ 0, got %d", c.Warmup.Retries)
	}
	// A list, not a map: the errors come in the same order every time (the file's order).
	for _, d := range []struct {
		key string
		d   Duration
	}{{"warmup.retry_delay", c.Warmup.RetryDelay}, {"timeouts.connect", c.Timeouts.Connect},
		{"timeouts.first_token", c.Timeouts.FirstToken}, {"timeouts.total", c.Timeouts.Total},
		{"timeouts.stall_min", c.Timeouts.StallMin}, {"timeouts.stall", c.Timeouts.Stall}, {"plugins.call_timeout", c.Plugins.CallTimeout}} {
		if d.d.Duration < 0 {
			bad(d.key, "must be ≥ 0, got %v", d.d.Duration)
		}
	}
	if c.Timeouts.StallSteps < 0 {
		bad("timeouts.stall_steps", "must be ≥ 0 steps (0 disables the rule), got %d", c.Timeouts.StallSteps)
	}
	if c.Plugins.MemoryLimitMiB < 1 || c.Plugins.MemoryLimitMiB > 4096 {
		bad("plugins.memory_limit_mib", "must be in [1, 4096] MiB, got %d", c.Plugins.MemoryLimitMiB)
	}
	for _, k := range sortedKeys(c.Labels) {
		switch v := c.Labels[k].(type) {
		case string, int64:
		case float64: // a stored config read back from a results file's JSON
			if v != math.Trunc(v) || math.IsInf(v, 0) {
				bad("labels."+k, "must be a string or an integer, got %v", v)
			}
		default:
			bad("labels."+k, "must be a string or an integer, got %T %v", v, v)
		}
		if !labelKeyRe.MatchString(k) {
			bad("labels."+k, "key must be letters, digits, '_', '-' or '.'")
		}
	}
	if c.Engine.TimeScale < 0 {
		bad("engine.time_scale", "must be ≥ 0, got %g", c.Engine.TimeScale)
	}
	if len(errs) == 0 {
		return nil
	}
	return exitcode.With(exitcode.InvalidConfig, errors.Join(errs...))
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("bad URL %q: %v", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("bad URL %q: scheme must be http or https", s)
	}
	if u.Host == "" {
		return fmt.Errorf("bad URL %q: no host", s)
	}
	return nil
}

func sortedHeaders(h map[string]string) []string {
	out := make([]string, 0, len(h))
	for k, v := range h {
		out = append(out, strings.ToLower(k)+"="+v)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// ResolvedWorkers returns the routing workers: [[workers]] as given, the [worker_grid]
// expanded server-first, or one worker at target. Empty URLs are replaced by target. c must
// have passed Validate.
func (c *Config) ResolvedWorkers(target string) []Worker {
	var ws []Worker
	switch {
	case len(c.Workers) > 0:
		ws = append(ws, c.Workers...)
	case c.Grid.Servers > 0:
		g := c.Grid
		for gen := 0; gen < g.Generators; gen++ {
			for s := 0; s < g.Servers; s++ {
				w := Worker{Name: fmt.Sprintf("s%d-g%d", s, gen), Headers: map[string]string{
					g.ServerHeader: fmt.Sprint(s), g.GeneratorHeader: fmt.Sprint(gen)}}
				if len(g.ServerURLs) > 0 {
					w.URL = g.ServerURLs[s]
				}
				ws = append(ws, w)
			}
		}
	default:
		ws = []Worker{{Name: "w0"}}
	}
	for i := range ws {
		if ws[i].URL == "" {
			ws[i].URL = target
		}
		if ws[i].Name == "" {
			ws[i].Name = fmt.Sprintf("w%d", i)
		}
	}
	return ws
}

// sortedKeys returns m's keys in ascending order (for messages in a stable order).
func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
