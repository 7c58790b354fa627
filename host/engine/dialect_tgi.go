package engine

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/genload/genload/host/internal/jsonenc"
)

// MaxClientBatchSize is the most prompts a TGI-dialect request may carry (TGI's
// --max-client-batch-size default).
const MaxClientBatchSize = 4

// tgiDialect reproduces Hugging Face TGI's /v1/completions (router/src/server.rs
// completions, router/src/lib.rs Prompt/Completion/Chunk/FinishReason, router/src/
// validation.rs, router/src/infer/mod.rs):
//   - prompts are strings only (token ids fail the untagged Prompt enum), at most
//     MaxClientBatchSize of them; n, echo, logprobs, min_tokens, ignore_eos and
//     stream_options are silently ignored; max_tokens defaults to the rest of the context;
//   - id "" always, "object" first in a body, system_fingerprint "<version>-native";
//   - one event per token, finish_reason "" until each prompt's final chunk, which carries
//     its last token, the raw finish reason ("eos_token" for an EOS) and that prompt's usage
//     (never prompt_tokens_details); [DONE] after all prompts;
//   - validation errors are 422 {"error","error_type":"validation"}, in-stream errors
//     {"error":{message,http_status_code}}; x-compute-* headers on every response and x-*
//     timing headers (ms) on bodies;
//   - /tokenize [{id,text,start,stop}], /v1/models created 0, tgi_* metrics without labels.
var tgiDialect = dialect{
	name:                DialectTGI,
	emptyID:             true,
	ignoreN:             true,
	ignoreStreamOptions: true,
	usageAlways:         true,
	logprobs:            lpNone,
	textOnly:            true,
	maxPrompts:          MaxClientBatchSize,
	contextOverflow: func(P, M, L int) *apiError {
		a := vllmOverflow(P, M, L)
		a.status, a.typ, a.param = http.StatusUnprocessableEntity, "validation", ""
		a.msg = fmt.Sprintf("`inputs` tokens + `max_new_tokens` must be <= %d. Given: %d `inputs` tokens and %d `max_new_tokens`", L, P, M)
		return a
	},

	objectFirst: true,
	fingerprint: "3.3.6-native",
	streamHeaders: func(h http.Header, spec completionSpec) {
		setComputeHeaders(h, spec)
		h.Set("x-accel-buffering", "no")
	},
	bodyHeaders:        true,
	perTokenChunks:     true,
	chunkTokens:        1,
	stopFinish:         "eos_token",
	pendingFinish:      `""`,
	done:               true,
	doneAfterError:     true,
	usageOnFinishChunk: true,
	usagePrefix:        `,"usage":`,

	badStatus: http.StatusUnprocessableEntity,
	badType:   "validation",
	statusError: func(status int, msg string) (string, string, bool) {
		switch status {
		case 429:
			return "overloaded", "Model is overloaded", true
		case 422, 400:
			return "validation", msg, true
		case 424:
			return "generation", "Request failed during generation", true
		case 503:
			return "unhealthy", "unhealthy", true
		}
		return "incomplete_generation", msg, true
	},
	appendError: func(b []byte, _ int, typ, msg, _ string) []byte {
		b = append(b, `{"error":`...)
		b = jsonenc.AppendString(b, msg)
		b = append(b, `,"error_type":`...)
		b = jsonenc.AppendString(b, typ)
		return append(b, '}')
	},
	appendStreamError: func(b []byte, status int, _, msg string) []byte {
		b = append(b, `{"error":{"message":`...)
		b = jsonenc.AppendString(b, msg)
		b = append(b, `,"http_status_code":`...)
		b = strconv.AppendInt(b, int64(status), 10)
		return append(b, "}}"...)
	},

	owner:       "tgi",
	createdZero: true,
	modelLen:    true,
	tokenize: func(e *Engine, ids []int32, _ bool) any {
		out := make([]map[string]any, len(ids))
		for i, id := range ids {
			out[i] = map[string]any{"id": id, "text": e.tok.Decode([]int32{id}, false), "start": 0, "stop": 0}
		}
		return out
	},
	detokenizeKey: "prompt",

	metricLabels: func(string) string { return "" },
	writeMetrics: writeTGIMetrics,
}

// writeTGIMetrics writes TGI's router series (tgi_batch_*, tgi_queue_size, tgi_request_*).
func writeTGIMetrics(p *promWriter, m *metrics) {
	p.gauge("tgi_batch_current_size", "Current batch size", float64(m.running))
	p.gauge("tgi_queue_size", "Current queue size", float64(m.waiting))
	p.gauge("tgi_batch_current_max_tokens", "Maximum tokens for the current batch", float64(m.kvTokens))
	p.counter("tgi_request_generated_tokens_total", "Generated tokens", float64(m.genTok))
	p.typed("tgi_batch_forward_duration", "histogram", "Batch forward duration in seconds")
	p.sub(m.preWall, "tgi_batch_forward_duration", `method="prefill"`)
	p.sub(m.decWall, "tgi_batch_forward_duration", `method="decode"`)
	p.typed("tgi_batch_decode_duration", "histogram", "Batch decode duration in seconds")
	p.sub(m.decWall, "tgi_batch_decode_duration", `method="decode"`)
	p.hist("tgi_batch_next_size", "Batch size of the next forward", m.batchSize)
	p.hist("tgi_request_queue_duration", "Request queue duration in seconds", m.queue)
	p.hist("tgi_request_inference_duration", "Request inference duration in seconds", m.e2e)
	p.hist("tgi_request_mean_time_per_token_duration", "Mean time per token per request in seconds", m.tpot)
}
