package engine

import (
	"net/http"
	"strconv"

	"github.com/genload/genload/host/internal/jsonenc"
)

// llamaCppDialect reproduces llama.cpp's server on /v1/completions
// (tools/server/{server-common,server-task,server-context,server-http}.cpp):
//   - id "chatcmpl-…", the model is ignored, echo is 400 "Only no echo is supported",
//     max_tokens is n_predict (-1 or absent: until EOS or the context is full), no
//     min_tokens; header "Server: llama.cpp"; system_fingerprint is the build string;
//   - one chunk per sampled token, finish_reason null on the last token's chunk, then a final
//     chunk with empty text, the finish reason, the task's usage (always sent; include_usage
//     has no effect) and its "timings";
//   - a body's usage and timings cover only the first task (choice 0: the multi-prompt
//     quirk); prompt_tokens_details.cached_tokens is always reported; logprobs are
//     chat-shaped {content:[{id,token,bytes,logprob,top_logprobs}]};
//   - errors {"error":{code,message,type}} with llama.cpp's type names; a context overflow is
//     exceed_context_size_error with n_prompt_tokens and n_ctx; an in-stream error ends the
//     stream without [DONE]; while loading every route but /v1/models is 503 "Loading model";
//   - /health {"status":"ok"}, /tokenize {tokens}, /detokenize {content}, llamacpp:*
//     metrics without labels.
var llamaCppDialect = dialect{
	name:              DialectLlamaCpp,
	idPrefix:          "chatcmpl-",
	rejectEcho:        true,
	usageAlways:       true,
	logprobs:          lpChat,
	ignoreEOS:         true,
	maxTokensMinusOne: true,
	contextOverflow: func(P, M, L int) *apiError {
		a := vllmOverflow(P, M, L)
		b := []byte(`{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":`)
		b = strconv.AppendInt(b, int64(P), 10)
		b = append(b, `,"n_ctx":`...)
		b = strconv.AppendInt(b, int64(L), 10)
		a.body = append(b, "}}"...)
		return a
	},

	serverHeader:   "llama.cpp",
	fingerprint:    "b6000-genload",
	perTokenChunks: true,
	chunkTokens:    1,
	stopFinish:     "stop",
	pendingFinish:  "null",
	separateFinish: true,
	finalChunk:     true,
	done:           true,

	details:             detailsCached,
	streamDetails:       detailsCached,
	hiddenDetails:       detailsCached, // newer builds always report cached_tokens
	hiddenStreamDetails: detailsCached,
	usagePrefix:         `,"usage":`,
	usageFirstTask:      true,
	timings:             true,

	badStatus: http.StatusBadRequest,
	badType:   "invalid_request_error",
	statusError: func(status int, msg string) (string, string, bool) {
		switch status {
		case 400:
			return "invalid_request_error", msg, true
		case 401:
			return "authentication_error", msg, true
		case 404:
			return "not_found_error", msg, true
		case 501:
			return "not_supported_error", msg, true
		case 503:
			return "unavailable_error", "Loading model", true
		}
		return "server_error", msg, true
	},
	appendError: appendLlamaCppError,
	appendStreamError: func(b []byte, status int, typ, msg string) []byte {
		return appendLlamaCppError(b, status, typ, msg, "")
	},
	loadingModels: true,

	owner:         "llamacpp",
	modelLen:      true,
	healthBody:    map[string]string{"status": "ok"},
	tokenize:      func(_ *Engine, ids []int32, _ bool) any { return map[string]any{"tokens": ids} },
	detokenizeKey: "content",

	metricLabels: func(string) string { return "" },
	writeMetrics: writeLlamaCppMetrics,
}

// appendLlamaCppError appends llama.cpp's {"error":{"code","message","type"}} (no param).
func appendLlamaCppError(b []byte, status int, typ, msg, _ string) []byte {
	b = append(b, `{"error":{"code":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, `,"message":`...)
	b = jsonenc.AppendString(b, msg)
	b = append(b, `,"type":`...)
	b = jsonenc.AppendString(b, typ)
	return append(b, `}}`...)
}

// writeLlamaCppMetrics writes llama.cpp's --metrics series (server-context.cpp).
func writeLlamaCppMetrics(p *promWriter, m *metrics) {
	p.counter("llamacpp:prompt_tokens_total", "Number of prompt tokens processed.", float64(m.promptTok))
	p.counter("llamacpp:prompt_seconds_total", "Prompt process time", m.promptS)
	p.counter("llamacpp:tokens_predicted_total", "Number of generation tokens processed.", float64(m.genTok))
	p.counter("llamacpp:tokens_predicted_seconds_total", "Predict process time", m.genS)
	p.counter("llamacpp:n_decode_total", "Total number of llama_decode() calls", float64(m.steps))
	p.gauge("llamacpp:n_busy_slots_per_decode", "Average number of busy slots per llama_decode() call", ratio(float64(m.busySeqs), float64(m.steps)))
	p.counter("llamacpp:n_tokens_max", "Largest observed n_tokens.", float64(m.maxTokens))
	p.gauge("llamacpp:prompt_tokens_seconds", "Average prompt throughput in tokens/s.", ratio(float64(m.promptTok), m.promptS))
	p.gauge("llamacpp:predicted_tokens_seconds", "Average generation throughput in tokens/s.", ratio(float64(m.genTok), m.genS))
	p.gauge("llamacpp:kv_cache_usage_ratio", "KV-cache usage. 1 means 100 percent usage.", m.kvUsed)
	p.gauge("llamacpp:kv_cache_tokens", "KV-cache tokens.", float64(m.kvTokens))
	p.gauge("llamacpp:requests_processing", "Number of requests processing.", float64(m.running))
	p.gauge("llamacpp:requests_deferred", "Number of requests deferred.", float64(m.waiting))
}
