package engine

import (
	"net/http"
	"strconv"

	"github.com/genload/genload/host/internal/jsonenc"
)

// dialect is one server's wire behaviour as data: what the completion handler, the stream
// writer, the error writers, the side endpoints and /metrics read instead of branching on the
// server's name. Each server is one value in its own file (dialect_vllm.go, dialect_sglang.go,
// dialect_llamacpp.go, dialect_tgi.go); wireFor applies the Config switches and the Quirks
// that are wire behaviour (see withQuirks) as changes to that value.
//
// Fields are grouped as the request travels: request validation, response ids, chunking,
// finish reasons, usage, errors, side endpoints, metrics.
type dialect struct {
	name string // Config.Dialect

	// --- request ---

	// checkModel answers a request naming another model 404 NotFoundError (vLLM).
	checkModel bool
	// echoModel, when not "", echoes the request's model, this value when it names none
	// (SGLang's "default"); "" reports Config.ModelName.
	echoModel string
	// idPrefix is prepended to the request id to form the response id; emptyID sends ""
	// instead (TGI).
	idPrefix string
	emptyID  bool
	// echo honours echo=true (the prompt's text before each choice); rejectEcho answers it
	// 400 "Only no echo is supported" (llama.cpp); neither ignores it (TGI).
	echo, rejectEcho bool
	// ignoreN serves one choice per prompt whatever n says (TGI; Quirks.IgnoreN).
	ignoreN bool
	// ignoreStreamOptions drops stream_options silently (TGI); streamOptionsNeedStream
	// answers stream_options without stream=true 400 (vLLM).
	ignoreStreamOptions, streamOptionsNeedStream bool
	// usageAlways puts usage in every stream whatever stream_options say (llama.cpp's final
	// chunk, TGI's per-prompt finish chunks, vLLM --enable-force-include-usage);
	// usageOnEmptyOptions makes stream_options {} enable usage (vLLM: include_usage defaults
	// to true); continuousUsage honours continuous_usage_stats (vLLM, SGLang).
	usageAlways, usageOnEmptyOptions, continuousUsage bool
	// logprobs is the shape of a choice's "logprobs"; lpNone ignores the request's (TGI).
	logprobs logprobsShape
	// ignoreEOS and minTokens honour ignore_eos and min_tokens (TGI ignores both, llama.cpp
	// min_tokens).
	ignoreEOS, minTokens bool
	// maxTokensMinusOne accepts max_tokens = -1 as "until EOS or the context is full"
	// (llama.cpp's n_predict).
	maxTokensMinusOne bool
	// defaultMaxTokens is max_tokens when the request gives none, clamped to the context;
	// 0 fills the context (llama.cpp n_predict -1, TGI max_total_tokens − input).
	defaultMaxTokens int
	// textOnly rejects token-id prompts with TGI's untagged-enum message; stringsOnly
	// rejects everything but one string with the Go decoder's message (Quirks.StringsOnly).
	textOnly, stringsOnly bool
	// maxPrompts caps the prompts of one request (TGI --max-client-batch-size); 0 = none.
	maxPrompts int
	// addBOS and serverTemplate change the tokens of text prompts: a BOS first
	// (Quirks.AddBOS), the server's chat template around (Quirks.ServerTemplate).
	addBOS, serverTemplate bool
	// contextOverflow returns the error for a prompt of P tokens asking M output tokens
	// beyond a context of L tokens.
	contextOverflow func(P, M, L int) *apiError

	// --- responses and chunks ---

	// serverHeader is the Server response header of completions ("" = Go's none).
	serverHeader string
	// objectFirst puts "object" before "id" in a non-streaming body (TGI's field order).
	objectFirst bool
	// fingerprint is the top-level system_fingerprint of streams and bodies ("" = absent;
	// vLLM's non-streaming null lives in usagePrefix).
	fingerprint string
	// idPerChoice suffixes the id of each stream chunk with "-<choice>" (SGLang's
	// per-sub-request ids).
	idPerChoice bool
	// streamHeaders sets extra headers on a stream's response (TGI x-compute-*), or nil.
	streamHeaders func(h http.Header, spec completionSpec)
	// bodyHeaders sets TGI's x-* timing headers on a non-streaming response, or nil.
	bodyHeaders bool
	// perTokenChunks sends one chunk per sampled token: tokens of one choice sampled in the
	// same step still travel apart (llama.cpp, TGI).
	perTokenChunks bool
	// chunkTokens fixes the tokens per chunk of every choice whatever stream_interval says
	// (1 for llama.cpp and TGI; Quirks.TokensPerChunk); 0 = the request's stream_interval.
	chunkTokens int
	// chunkMix sends 1–3 tokens per chunk, drawn per chunk (chunkMixTarget; ollama).
	chunkMix bool
	// emptyFirstChunk opens each stream with one empty chunk per choice
	// (Quirks.EmptyFirstChunk).
	emptyFirstChunk bool
	// stopFinish is finish_reason for an EOS ("stop"; TGI "eos_token"); pendingFinish is the
	// finish_reason of a non-final chunk ("null"; TGI `""`), as JSON.
	stopFinish, pendingFinish string
	// streamChoiceTail and choiceTail are appended after finish_reason inside a stream
	// chunk's and a body's choice (vLLM's stop_reason and nulls); matchedStop adds SGLang's
	// "matched_stop" (the EOS id, or null).
	streamChoiceTail, choiceTail string
	matchedStop                  bool
	// separateFinish sends the finish reason on a chunk of its own after the last token's
	// (llama.cpp; Quirks.SeparateFinish); finalChunk makes that chunk llama.cpp's, with the
	// task's usage and timings.
	separateFinish, finalChunk bool
	// done ends a stream with "data: [DONE]" (not with Quirks.NoDone); doneAfterError also
	// after an in-stream error (all but llama.cpp).
	done, doneAfterError bool

	// --- usage ---

	// usage is what usage objects carry: the real counts, zeros on every chunk (with the
	// real usage in a trailing choices:[] chunk, Quirks.ZeroUsage) or none (Quirks.NoUsage).
	usage usageMode
	// usageChunk ends a stream with a choices:[] usage chunk when usage is on (vLLM, SGLang).
	usageChunk bool
	// chunkUsageNull writes "usage":null on chunks without usage (SGLang).
	chunkUsageNull bool
	// usageOnFinishChunk puts its choice's usage on the finish chunk (TGI, per prompt).
	usageOnFinishChunk bool
	// usageEveryChunk puts the request's running totals on every chunk when usage is on
	// (Quirks.UsageEveryChunk).
	usageEveryChunk bool
	// details and streamDetails are prompt_tokens_details of non-streaming and streaming
	// usage; hiddenDetails and hiddenStreamDetails replace them under
	// Config.HidePromptTokensDetails.
	details, streamDetails, hiddenDetails, hiddenStreamDetails detailsMode
	// reasoningTokens adds "reasoning_tokens":0 to every usage object (SGLang).
	reasoningTokens bool
	// usagePrefix opens a body's usage (`,"usage":` or vLLM's with service_tier and
	// system_fingerprint nulls before it); usageSuffix follows it.
	usagePrefix, usageSuffix string
	// usageFirstTask reports the usage of prompt 0's first choice only in a body
	// (llama.cpp's multi-prompt quirk); timings appends llama.cpp's "timings" of that task.
	usageFirstTask, timings bool

	// --- errors ---

	// badStatus and badType are the status and error type of a validation error.
	badStatus int
	badType   string
	// statusError names an injected status's error type and message; ok false falls back
	// to the OpenAI names (BadRequestError, NotFoundError, …).
	statusError func(status int, msg string) (typ, m string, ok bool)
	// appendError appends the error body; appendStreamError the in-stream error event's
	// JSON (without "data: ").
	appendError       func(b []byte, status int, typ, msg, param string) []byte
	appendStreamError func(b []byte, status int, typ, msg string) []byte
	// loadingModels serves /v1/models while loading (llama.cpp).
	loadingModels bool

	// --- side endpoints ---

	// owner is /v1/models' owned_by; createdZero reports created 0 (TGI); modelLen reports
	// max_model_len (not with Quirks.NoModelLen).
	owner       string
	createdZero bool
	modelLen    bool
	// healthBody is GET /health's JSON body (nil: empty).
	healthBody any
	// tokenize renders POST /tokenize's answer for ids; detokenizeKey names the text field
	// of POST /detokenize's.
	tokenize      func(e *Engine, ids []int32, tokenStrs bool) any
	detokenizeKey string
	// native serves ollama's native API beside /v1 (GET /api/version, POST /api/generate:
	// native.go); not with Quirks.NoNativeAPI.
	native bool

	// --- metrics ---

	// metricLabels returns the labels of the dialect's series for a model ("" = none);
	// writeMetrics writes the dialect's series.
	metricLabels func(model string) string
	writeMetrics func(p *promWriter, m *metrics)
	// noMetrics answers /metrics 404 (Quirks.NoMetrics); lateHistogram omits histograms
	// without observations (Quirks.LateHistogram); hideTruth omits genload_engine_*
	// (Quirks.HideTruth).
	noMetrics, lateHistogram, hideTruth bool
}

// logprobsShape is the JSON shape of a choice's logprobs (see appendLogprobs).
type logprobsShape uint8

const (
	lpNone        logprobsShape = iota // always null
	lpCompletions                      // {tokens, token_logprobs, top_logprobs, text_offset}
	lpChat                             // {content: [{id, token, bytes, logprob, top_logprobs}]}
)

// usageMode is what usage objects carry.
type usageMode uint8

const (
	usageReal usageMode = iota
	usageZero           // zeros on chunks, the real usage in the choices:[] chunk
	usageNone           // none anywhere
)

// detailsMode is the shape of usage.prompt_tokens_details.
type detailsMode uint8

const (
	detailsNone   detailsMode = iota // absent
	detailsCached                    // {"cached_tokens":N}
	detailsNull                      // null
)

// dialects are the servers Config.Dialect names.
var dialects = map[string]*dialect{
	DialectVLLM:     &vllmDialect,
	DialectSGLang:   &sglangDialect,
	DialectLlamaCpp: &llamaCppDialect,
	DialectTGI:      &tgiDialect,
	DialectOllama:   &ollamaDialect,
}

// wireFor returns the wire behaviour of cfg: its dialect's value changed by the Config
// switches and the quirks that are wire behaviour. cfg.Dialect must be valid.
func wireFor(cfg Config) dialect {
	d := *dialects[cfg.Dialect]
	if cfg.ForceIncludeUsage {
		d.usageAlways = true
	}
	if cfg.HidePromptTokensDetails {
		d.details, d.streamDetails = d.hiddenDetails, d.hiddenStreamDetails
	}
	return d.withQuirks(cfg.Quirks)
}

// withQuirks returns d changed by the quirks that are wire behaviour: usage placement
// (zero-usage, no-usage, usage-every-chunk), chunking (tokens-per-chunk, empty-first-chunk,
// separate-finish, no-done), request reading (ignore-n, strings-only, add-bos,
// server-template, usage-total-only) and the side endpoints (no-model-len, no-metrics, late-histogram,
// hide-truth, no-native-api). The other quirks change timing or generation (coalesce, late-first-chunk,
// zero-token, early-stop, ignore-max-tokens, truncate, stall, body-limit) and are read
// from Quirks where they act.
func (d dialect) withQuirks(q Quirks) dialect {
	switch {
	case q.ZeroUsage:
		d.usage, d.usageChunk = usageZero, true
	case q.NoUsage:
		d.usage = usageNone
	}
	d.usageEveryChunk = d.usageEveryChunk || q.UsageEveryChunk
	if q.TokensPerChunk > 0 {
		d.chunkTokens = q.TokensPerChunk
	}
	d.emptyFirstChunk = d.emptyFirstChunk || q.EmptyFirstChunk
	d.separateFinish = d.separateFinish || q.SeparateFinish
	d.done = d.done && !q.NoDone
	d.ignoreN = d.ignoreN || q.IgnoreN
	d.stringsOnly = d.stringsOnly || q.StringsOnly
	d.addBOS = d.addBOS || q.AddBOS
	d.serverTemplate = d.serverTemplate || q.ServerTemplate
	d.modelLen = d.modelLen && !q.NoModelLen
	d.noMetrics = d.noMetrics || q.NoMetrics
	d.lateHistogram = d.lateHistogram || q.LateHistogram
	d.hideTruth = d.hideTruth || q.HideTruth
	d.native = d.native && !q.NoNativeAPI
	if q.UsageTotalOnly {
		d.continuousUsage, d.logprobs = false, lpNone
	}
	return d
}

// finishString returns the finish_reason of f ("" for finNone).
func (d *dialect) finishString(f uint8) string {
	switch f {
	case finLength:
		return "length"
	case finStop:
		return d.stopFinish
	case finAbort:
		return "abort"
	}
	return ""
}

// openAIStatusError names an injected status in OpenAI's (and vLLM's) error types.
func openAIStatusError(status int, msg string) (typ, m string) {
	switch status {
	case 400:
		return "BadRequestError", msg
	case 404:
		return "NotFoundError", msg
	case 429:
		return "RateLimitError", msg
	case 501:
		return "NotImplementedError", msg
	case 503:
		return "ServiceUnavailableError", msg
	}
	return "InternalServerError", msg
}

// appendNestedError appends OpenAI's nested error object
// {"error":{"message","type","param","code":<status>}} (vLLM ≥ 0.10.1).
func appendNestedError(b []byte, status int, typ, msg, param string) []byte {
	b = append(b, `{"error":{"message":`...)
	b = jsonenc.AppendString(b, msg)
	b = append(b, `,"type":`...)
	b = jsonenc.AppendString(b, typ)
	b = append(b, `,"param":`...)
	b = appendNullableString(b, param)
	b = append(b, `,"code":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	return append(b, `}}`...)
}

// vllmOverflow is vLLM's context-length error (renderers/params.py), also the message other
// dialects start from.
func vllmOverflow(P, M, L int) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "BadRequestError", param: "input_tokens",
		msg: "You passed " + strconv.Itoa(P) + " input tokens and requested " + strconv.Itoa(M) +
			" output tokens. However, the model's context length is only " + strconv.Itoa(L) +
			" tokens, resulting in a maximum input length of " + strconv.Itoa(L-M) +
			" tokens. Please reduce the length of the input prompt. (parameter=input_tokens, value=" +
			strconv.Itoa(P) + ")"}
}

// setComputeHeaders sets TGI's x-compute-* headers of a response.
func setComputeHeaders(h http.Header, spec completionSpec) {
	h.Set("x-compute-type", "gpu+optimized")
	h.Set("x-compute-characters", strconv.Itoa(spec.inputChars))
}
