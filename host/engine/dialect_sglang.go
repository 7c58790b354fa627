package engine

import (
	"fmt"
	"strconv"

	"github.com/genload/genload/host/internal/jsonenc"
)

// sglangDialect reproduces SGLang's OpenAI server on /v1/completions
// (python/sglang/srt/entrypoints/openai/{protocol,serving_completions,serving_base,
// serving_tokenize}.py, metrics/collector.py):
//   - the id is the engine request id, and in streams each choice's chunks carry its
//     sub-request's id ("<id>-<choice>"); model defaults to "default" and is echoed as given,
//     never checked; max_tokens defaults to 16; echo, n, min_tokens, ignore_eos honoured;
//   - include_usage defaults to false ({} does not enable usage), continuous_usage_stats is
//     honoured; chunks carry every field, "usage":null and "matched_stop":null included; the
//     usage chunk has choices:[]; usage adds reasoning_tokens, and prompt_tokens_details is
//     null without --enable-cache-report (Config.HidePromptTokensDetails);
//   - a body adds metadata {weight_version}; errors are flat
//     {object:"error",message,type,param,code}, in-stream wrapped in {"error":…} then [DONE];
//     a full queue is 503 SERVICE_UNAVAILABLE "The request queue is full.";
//   - /tokenize {tokens, count, max_model_len}, /detokenize {text}, sglang:* metrics
//     labelled model_name.
var sglangDialect = dialect{
	name:             DialectSGLang,
	echoModel:        "default",
	echo:             true,
	continuousUsage:  true,
	logprobs:         lpCompletions,
	ignoreEOS:        true,
	minTokens:        true,
	defaultMaxTokens: 16,
	contextOverflow: func(P, M, L int) *apiError {
		a := vllmOverflow(P, M, L)
		a.msg = fmt.Sprintf("Requested token count exceeds the model's maximum context length of %d tokens. You requested a total of %d tokens: %d tokens from the input messages and %d tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.", L, P+M, P, M)
		a.param = ""
		return a
	},

	idPerChoice:    true,
	stopFinish:     "stop",
	pendingFinish:  "null",
	matchedStop:    true,
	done:           true,
	doneAfterError: true,

	usageChunk:          true,
	chunkUsageNull:      true,
	details:             detailsCached,
	streamDetails:       detailsCached,
	hiddenDetails:       detailsNull,
	hiddenStreamDetails: detailsNull,
	reasoningTokens:     true,
	usagePrefix:         `,"usage":`,
	usageSuffix:         `,"metadata":{"weight_version":"default"}`,

	badStatus: 400,
	badType:   "BadRequestError",
	statusError: func(status int, msg string) (string, string, bool) {
		if status == 503 {
			return "SERVICE_UNAVAILABLE", "The request queue is full.", true
		}
		return "", "", false
	},
	appendError: appendFlatError,
	appendStreamError: func(b []byte, status int, typ, msg string) []byte {
		b = append(b, `{"error":`...)
		b = appendFlatError(b, status, typ, msg, "")
		return append(b, '}')
	},

	owner:    "sglang",
	modelLen: true,
	tokenize: func(e *Engine, ids []int32, _ bool) any {
		return map[string]any{"tokens": ids, "count": len(ids), "max_model_len": e.cfg.MaxModelLen}
	},
	detokenizeKey: "text",

	metricLabels: func(model string) string { return `model_name="` + model + `"` },
	writeMetrics: writeSGLangMetrics,
}

// appendFlatError appends SGLang's flat error {"object":"error",message,type,param,code}
// (vLLM's shape before 0.10.1).
func appendFlatError(b []byte, status int, typ, msg, param string) []byte {
	b = append(b, `{"object":"error","message":`...)
	b = jsonenc.AppendString(b, msg)
	b = append(b, `,"type":`...)
	b = jsonenc.AppendString(b, typ)
	b = append(b, `,"param":`...)
	b = appendNullableString(b, param)
	b = append(b, `,"code":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	return append(b, '}')
}

// writeSGLangMetrics writes SGLang's scheduler gauges, token counters and latency histograms.
func writeSGLangMetrics(p *promWriter, m *metrics) {
	p.gauge("sglang:num_running_reqs", "The number of running requests.", float64(m.running))
	p.gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.", float64(m.waiting))
	p.gauge("sglang:num_used_tokens", "The number of used tokens.", float64(m.kvTokens))
	p.gauge("sglang:max_total_num_tokens", "Maximum total number of tokens.", float64(m.kvBlocks*m.blockSize))
	p.gauge("sglang:max_running_requests", "Maximum running requests.", float64(m.maxSeqs))
	p.gauge("sglang:token_usage", "The token usage.", m.kvUsed)
	p.gauge("sglang:cache_hit_rate", "The prefix cache hit rate.", ratio(float64(m.prefixHits.Load()), float64(m.prefixQueries.Load())))
	p.gauge("sglang:gen_throughput", "The generation throughput (token/s).", ratio(float64(m.genTok), m.stepWallS))
	acc := ratio(float64(m.specAccepted.Load()), float64(m.specDraftTok.Load()))
	p.gauge("sglang:spec_accept_rate", "The speculative acceptance rate.", acc)
	p.gauge("sglang:spec_accept_length", "The average acceptance length of speculative decoding.", 1+ratio(float64(m.specAccepted.Load()), float64(m.specDrafts.Load())))
	p.counter("sglang:prompt_tokens_total", "Number of prefill tokens processed.", float64(m.promptTok))
	p.counter("sglang:generation_tokens_total", "Number of generation tokens processed.", float64(m.genTok))
	p.counter("sglang:cached_tokens_total", "Number of cached prompt tokens.", float64(m.prefixHits.Load()))
	p.hist("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", m.ttft)
	p.hist("sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", m.itl)
	p.hist("sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds.", m.e2e)
	p.hist("sglang:queue_time_seconds", "Histogram of queueing time in seconds.", m.queue)
}
