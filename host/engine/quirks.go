package engine

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Quirks are behaviours of real OpenAI-compatible servers that a client must survive, each
// reproduced on demand so that a client's figures can be checked against the engine's truth
// (its step log and genload_engine_* metrics, which no quirk changes). The zero value is no
// quirk. Every field is also a `--quirk name[=value]` entry (a comma-separated list; see
// ParseQuirks and QuirkNames); the name is given first in each field's doc.
//
// ZeroToken counts the sequences of requests whose max_tokens is at least 2, EarlyStop the
// requests whose max_tokens exceeds K — so a client's one-token warmups are left alone —
// over the engine's lifetime, in arrival order.
type Quirks struct {
	// ZeroUsage ("zero-usage"): every stream chunk carries "usage" with all counts 0, and the
	// real usage arrives only in a final `"choices": []` chunk before [DONE], whatever
	// stream_options say (OpenAI layers derived from llama.cpp's server do this).
	// Continuous usage is never sent. Default false.
	ZeroUsage bool
	// UsageTotalOnly ("usage-total-only"): continuous_usage_stats and logprobs are ignored,
	// so that a stream's only count is its usage chunk (the request's total, over all its
	// choices in one request of several prompts). Default false.
	UsageTotalOnly bool
	// NoUsage ("no-usage"): no usage anywhere — no usage chunk, no per-chunk usage, none on
	// the finish chunk (llama.cpp, TGI dialects) nor in non-streaming responses — whatever
	// stream_options say. Default false.
	NoUsage bool
	// UsageEveryChunk ("usage-every-chunk"): when usage is asked for (include_usage), every
	// chunk also carries a usage object holding the request's running totals over all its
	// choices, not the chunk's choice (vLLM 0.5.x attached usage to every chunk once
	// include_usage was set). Default false.
	UsageEveryChunk bool
	// TokensPerChunk ("tokens-per-chunk=N"): every chunk carries N tokens of its choice
	// (the last chunk of a sequence fewer), whatever stream_interval the request asks and in
	// every dialect, like a server with a fixed detokenizer flush interval. Tokens. 0 = off
	// (default); the engine's --stream-interval is the per-request-overridable form.
	TokensPerChunk int
	// Coalesce ("coalesce=P"): each chunk is merged with the next chunk of its choice with
	// probability P in [0, 1) (a server whose output loop falls behind the engine), decided
	// by a hash of the engine seed, the request id, the choice and the token count, so runs
	// are reproducible. Mean tokens per chunk 1/(1−P). 0 = off (default).
	Coalesce float64
	// LateFirstChunk ("late-first-chunk=D"): the first chunk of each sequence reaches the
	// client D after it was produced, and that sequence's chunks produced meanwhile come with
	// it; later chunks are on time (Nagle's algorithm with a delayed ACK on a server without
	// TCP_NODELAY, or a server that flushes its first chunk late). Wall time. 0 = off
	// (default). The fault --fault-first-token-delay holds the whole stream instead.
	LateFirstChunk time.Duration
	// LateFirstSteps ("late-first-steps=F"): like LateFirstChunk, by F decode steps — F times
	// the wall duration of the engine's last decode step without prefill (of its last step
	// when none has run yet) when the first chunk is produced — so that a client can be
	// checked on a first chunk late by a fraction of a step (Nagle's algorithm with a delayed
	// ACK on slow steps). Steps ≥ 0. 0 = off (default).
	LateFirstSteps float64
	// BunchFirst ("bunch-first=K"): each sequence's first K chunks are held and written
	// together with the K-th (a late first flush, a proxy that buffers the start of a
	// stream); later chunks are on time. A sequence that finishes first releases them with
	// its last. Chunks ≥ 0. 0 = off (default).
	BunchFirst int
	// ZeroToken ("zero-token=F"): a fraction F in [0, 1] of sequences finish with
	// finish_reason "stop", empty text and no token (completion_tokens 0): sequence k
	// (1-based) when ⌊k·F⌋ > ⌊(k−1)·F⌋. 0 = off (default).
	ZeroToken float64
	// EarlyStop ("early-stop=K"): the first sequence (choice 0) of every EarlyStopEvery-th
	// request whose max_tokens exceeds K finishes with "stop" after K tokens although
	// ignore_eos was sent. Tokens. 0 = off (default).
	EarlyStop int
	// EarlyStopEvery ("early-stop-every=M"): which requests EarlyStop hits: requests M, 2M, …
	// (routed clients send one sequence per request, so every Mth sequence). 0 or 1 = every
	// request (default 0).
	EarlyStopEvery int
	// IgnoreMaxTokens ("ignore-max-tokens=X"): a request's max_tokens M is read as X·M
	// (rounded, at most the context), finishing with "length" there (a server that does not
	// honour max_tokens). Factor. 0 = off (default).
	IgnoreMaxTokens float64
	// Truncate ("truncate=C"): the server's real context is C tokens: a prompt longer than
	// C − max_tokens is silently cut to its last C − max_tokens tokens (usage reports the cut
	// count), while /v1/models still advertises Config.MaxModelLen. Tokens. 0 = off (default).
	Truncate int
	// NoModelLen ("no-model-len"): /v1/models omits max_model_len (llama.cpp, TGI and many
	// proxies do). Default false.
	NoModelLen bool
	// AddBOS ("add-bos"): the server prepends a BOS token to every text prompt, so it counts
	// one token more than the client's tokenizer (llama.cpp adds BOS by default). Default false.
	AddBOS bool
	// ServerTemplate ("server-template"): the server wraps every text prompt of
	// /v1/completions in its own chat template — "<|im_start|>user\n" before and
	// "<|im_end|>\n<|im_start|>assistant\n" after, each encoded on its own (8 tokens with the
	// Qwen3 tokenizer) — as servers that template completions prompts do. Default false.
	ServerTemplate bool
	// StringsOnly ("strings-only"): any prompt that is not one string (a list of strings,
	// token ids, lists of token ids) is answered 400 with the Go decoder's message
	// `json: cannot unmarshal array into Go struct field CompletionRequest.prompt of type
	// string` (Go servers with a string-typed prompt field). Default false.
	StringsOnly bool
	// NoMetrics ("no-metrics"): GET /metrics answers 404 (the truth stays in the step log and
	// Engine.WriteMetrics). Default false.
	NoMetrics bool
	// LateHistogram ("late-histogram"): the dialect's histogram series (TTFT, ITL, TPOT, E2E,
	// queue, step and batch histograms) appear in /metrics only after their first
	// observation, as labelled Prometheus client histograms do; the genload_engine_* truth
	// is always present. Default false.
	LateHistogram bool
	// Stall ("stall=N"): after N tokens of a request (all choices) the stream stops — no
	// further bytes, generation aborted — and the connection stays open until the client
	// closes it (a hung server). Tokens ≥ 1. 0 = off (default). The --fault-stall-after/-for
	// faults pause and then resume instead.
	Stall int
	// BodyLimit ("body-limit=BYTES"): a completion request whose body exceeds BYTES is
	// answered by a TCP reset before any response (a proxy's body-size limit). Bytes.
	// 0 = off (default).
	BodyLimit int64
	// EmptyFirstChunk ("empty-first-chunk"): each stream starts with one chunk per choice with
	// empty text and no finish reason, sent before any token is generated (llama.cpp's
	// completions stream opens with an empty chunk; chat servers send a role-only chunk).
	// Default false.
	EmptyFirstChunk bool
	// SeparateFinish ("separate-finish"): the finish reason arrives on an extra chunk of its
	// choice with empty text after the last token's chunk (OpenAI's chat stream and
	// llama.cpp do this; the llama.cpp dialect always does). Default false.
	SeparateFinish bool
	// NoDone ("no-done"): the stream ends without "data: [DONE]" (llama.cpp forks' chat
	// endpoints ended the stream with the chunked terminator only). Default false.
	NoDone bool
	// IgnoreN ("ignore-n"): n is ignored: one choice per prompt (TGI does so silently).
	// Default false.
	IgnoreN bool
	// ConstantITL ("constant-itl=D"): the dialect's inter-token latency histogram (vLLM's
	// and SGLang's inter_token_latency_seconds) observes D for every token instead of the
	// interval measured, whatever the load — as a simulator that reports its configured
	// latency does. Wall time. 0 = off (default).
	ConstantITL time.Duration
	// HideTruth ("hide-truth"): /metrics leaves out the genload_engine_* truth series, as
	// every server but this one does, so that a client is checked on what real servers
	// offer; the step log, Config.SeqLog and Engine.WriteMetrics keep it. Default false.
	HideTruth bool
	// NoNativeAPI ("no-native-api"): the ollama dialect answers only its OpenAI-compatible
	// endpoints: GET /api/version and POST /api/generate answer 404 (a proxy in front of
	// ollama that passes /v1 alone). Default false.
	NoNativeAPI bool
}

// quirkField describes one Quirks field for parsing and printing.
type quirkField struct {
	name  string
	value string // "" for a switch, else the value's unit
	ptr   any    // *bool, *int, *int64, *float64 or *time.Duration
}

func (q *Quirks) fields() []quirkField {
	return []quirkField{
		{"zero-usage", "", &q.ZeroUsage},
		{"no-usage", "", &q.NoUsage},
		{"usage-total-only", "", &q.UsageTotalOnly},
		{"usage-every-chunk", "", &q.UsageEveryChunk},
		{"tokens-per-chunk", "N tokens", &q.TokensPerChunk},
		{"coalesce", "P probability", &q.Coalesce},
		{"late-first-chunk", "D duration", &q.LateFirstChunk},
		{"late-first-steps", "F steps", &q.LateFirstSteps},
		{"bunch-first", "K chunks", &q.BunchFirst},
		{"zero-token", "F fraction", &q.ZeroToken},
		{"early-stop", "K tokens", &q.EarlyStop},
		{"early-stop-every", "M requests", &q.EarlyStopEvery},
		{"ignore-max-tokens", "X factor", &q.IgnoreMaxTokens},
		{"truncate", "C tokens", &q.Truncate},
		{"no-model-len", "", &q.NoModelLen},
		{"add-bos", "", &q.AddBOS},
		{"server-template", "", &q.ServerTemplate},
		{"strings-only", "", &q.StringsOnly},
		{"no-metrics", "", &q.NoMetrics},
		{"late-histogram", "", &q.LateHistogram},
		{"stall", "N tokens", &q.Stall},
		{"body-limit", "BYTES", &q.BodyLimit},
		{"empty-first-chunk", "", &q.EmptyFirstChunk},
		{"separate-finish", "", &q.SeparateFinish},
		{"no-done", "", &q.NoDone},
		{"ignore-n", "", &q.IgnoreN},
		{"constant-itl", "D duration", &q.ConstantITL},
		{"hide-truth", "", &q.HideTruth},
		{"no-native-api", "", &q.NoNativeAPI},
	}
}

// QuirkNames returns every quirk as "name" or "name=VALUE unit", in documentation order.
func QuirkNames() []string {
	var q Quirks
	var out []string
	for _, f := range q.fields() {
		if f.value == "" {
			out = append(out, f.name)
		} else {
			out = append(out, f.name+"="+f.value)
		}
	}
	return out
}

// ParseQuirks parses a comma-separated list of quirks ("zero-usage,tokens-per-chunk=2") over
// the zero Quirks; see Quirks.Set.
func ParseQuirks(list string) (Quirks, error) {
	var q Quirks
	err := q.Set(list)
	return q, err
}

// Set applies a comma-separated list of "name" or "name=value" entries to q: a switch takes
// no value or a boolean, a number its unit (durations as Go durations, "40ms"). Errors name
// the entry and what was expected; Set also validates the result.
func (q *Quirks) Set(list string) error {
	var errs []error
	for _, ent := range strings.Split(list, ",") {
		ent = strings.TrimSpace(ent)
		if ent == "" {
			continue
		}
		name, val, hasVal := strings.Cut(ent, "=")
		var f *quirkField
		for _, c := range q.fields() {
			if c.name == name {
				f = &c
				break
			}
		}
		if f == nil {
			errs = append(errs, fmt.Errorf("[quirk] unknown %q (known: %s)", name, strings.Join(QuirkNames(), ", ")))
			continue
		}
		if f.value != "" && !hasVal {
			errs = append(errs, fmt.Errorf("[quirk] %s needs a value: %s=%s", name, name, f.value))
			continue
		}
		var err error
		switch p := f.ptr.(type) {
		case *bool:
			*p = true
			if hasVal {
				*p, err = strconv.ParseBool(val)
			}
		case *int:
			*p, err = strconv.Atoi(val)
		case *int64:
			*p, err = strconv.ParseInt(val, 10, 64)
		case *float64:
			*p, err = strconv.ParseFloat(val, 64)
		case *time.Duration:
			*p, err = time.ParseDuration(val)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("[quirk] %s=%s: want %s: %v", name, val, f.value, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return q.validate()
}

// String returns the active quirks as a list ParseQuirks reads back ("" for none).
func (q Quirks) String() string {
	var out []string
	for _, f := range q.fields() {
		switch p := f.ptr.(type) {
		case *bool:
			if *p {
				out = append(out, f.name)
			}
		case *int:
			if *p != 0 {
				out = append(out, f.name+"="+strconv.Itoa(*p))
			}
		case *int64:
			if *p != 0 {
				out = append(out, f.name+"="+strconv.FormatInt(*p, 10))
			}
		case *float64:
			if *p != 0 {
				out = append(out, f.name+"="+strconv.FormatFloat(*p, 'g', -1, 64))
			}
		case *time.Duration:
			if *p != 0 {
				out = append(out, f.name+"="+p.String())
			}
		}
	}
	return strings.Join(out, ",")
}

// validate reports every out-of-range quirk value, naming the quirk in brackets.
func (q Quirks) validate() error {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("[quirk %s] "+format, append([]any{name}, args...)...))
	}
	if q.TokensPerChunk < 0 {
		bad("tokens-per-chunk", "must be >= 0, got %d", q.TokensPerChunk)
	}
	if !(q.Coalesce >= 0 && q.Coalesce < 1) {
		bad("coalesce", "must be in [0, 1), got %v", q.Coalesce)
	}
	if q.ConstantITL < 0 {
		bad("constant-itl", "must be >= 0, got %v", q.ConstantITL)
	}
	if q.LateFirstChunk < 0 {
		bad("late-first-chunk", "must be >= 0, got %v", q.LateFirstChunk)
	}
	if !(q.LateFirstSteps >= 0) || math.IsInf(q.LateFirstSteps, 1) {
		bad("late-first-steps", "must be a finite number of steps >= 0, got %v", q.LateFirstSteps)
	}
	if q.BunchFirst < 0 {
		bad("bunch-first", "must be >= 0 chunks, got %d", q.BunchFirst)
	}
	if q.BunchFirst > 0 && (q.LateFirstChunk > 0 || q.LateFirstSteps > 0) {
		bad("bunch-first", "and late-first-chunk / late-first-steps exclude each other")
	}
	if !(q.ZeroToken >= 0 && q.ZeroToken <= 1) {
		bad("zero-token", "must be in [0, 1], got %v", q.ZeroToken)
	}
	if q.EarlyStop < 0 || q.EarlyStopEvery < 0 {
		bad("early-stop", "K and M must be >= 0, got %d and %d", q.EarlyStop, q.EarlyStopEvery)
	}
	if !(q.IgnoreMaxTokens >= 0) || math.IsInf(q.IgnoreMaxTokens, 1) {
		bad("ignore-max-tokens", "must be a finite factor >= 0, got %v", q.IgnoreMaxTokens)
	}
	if q.Truncate < 0 || q.Truncate == 1 {
		bad("truncate", "must be 0 (off) or >= 2 tokens, got %d", q.Truncate)
	}
	if q.Stall < 0 {
		bad("stall", "must be >= 1 token (0 = off), got %d", q.Stall)
	}
	if q.BodyLimit < 0 {
		bad("body-limit", "must be >= 0 bytes, got %d", q.BodyLimit)
	}
	if q.ZeroUsage && q.NoUsage {
		bad("zero-usage", "and no-usage exclude each other")
	}
	return errors.Join(errs...)
}

// quirkFlag is the flag.Value of --quirk: each use adds its list to the Quirks.
type quirkFlag struct{ q *Quirks }

func (f quirkFlag) String() string {
	if f.q == nil {
		return ""
	}
	return f.q.String()
}

func (f quirkFlag) Set(v string) error { return f.q.Set(v) }

// quirkHelp is the --quirk flag's usage text.
func quirkHelp() string {
	names := QuirkNames()
	sort.Strings(names)
	return "server behaviours to reproduce, a comma-separated list (repeatable): " + strings.Join(names, ", ")
}

// seqPicked reports whether sequence k (1-based) is among a fraction f of sequences spread
// evenly: ⌊k·f⌋ > ⌊(k−1)·f⌋.
func seqPicked(k uint64, f float64) bool {
	return math.Floor(float64(k)*f) > math.Floor(float64(k-1)*f)
}

// The chat template Quirks.ServerTemplate wraps text prompts in (Qwen's ChatML, one user turn
// and the generation prompt).
const (
	serverTemplatePre  = "<|im_start|>user\n"
	serverTemplatePost = "<|im_end|>\n<|im_start|>assistant\n"
)

// bosToken is the id Quirks.AddBOS prepends: Qwen's <|endoftext|>, or 1 under a smaller
// vocabulary.
const bosToken = 151643

func (e *Engine) bosID() int32 {
	if e.cfg.VocabSize > bosToken {
		return bosToken
	}
	return min(1, int32(e.cfg.VocabSize-1))
}

// hashString is FNV-1a over s.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
