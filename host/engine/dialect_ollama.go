package engine

// ollamaDialect reproduces ollama's OpenAI-compatible /v1/completions as measured on ollama
// 0.6.8 (its openai compatibility layer in front of the llama.cpp-based runner):
//   - the prompt is one string (a Go string field: a list or token ids are 400 with the Go
//     decoder's message); ignore_eos, logprobs, n, echo, min_tokens and
//     continuous_usage_stats are not read (unknown fields are ignored); max_tokens is
//     num_predict;
//   - id "cmpl-<n>", system_fingerprint "fp_ollama"; each chunk carries 1–3 tokens of its
//     choice (the runner's pieces, held back while they could still be the start of a stop
//     sequence or of a character: 1.10–1.25 on average measured, 1.2 here, decided by a hash
//     of the request and the token index so that runs repeat); finish_reason "stop" or
//     "length" on the last token's chunk;
//   - usage only in a final choices:[] chunk, with stream_options.include_usage — the
//     request's total, which routed requests of one prompt make each sequence's;
//   - no /metrics, no /tokenize, /v1/models without max_model_len;
//   - its native API beside /v1: GET /api/version and POST /api/generate, streamed as
//     newline-delimited JSON whose final object carries ollama's eval_count and
//     eval_duration (native.go).
var ollamaDialect = dialect{
	name:             DialectOllama,
	idPrefix:         "cmpl-",
	stringsOnly:      true,
	logprobs:         lpNone,
	defaultMaxTokens: 0,
	contextOverflow:  vllmOverflow,

	fingerprint:    "fp_ollama",
	chunkMix:       true,
	stopFinish:     "stop",
	pendingFinish:  "null",
	done:           true,
	doneAfterError: true,

	usageChunk:  true,
	usagePrefix: `,"usage":`,

	badStatus:         400,
	badType:           "invalid_request_error",
	statusError:       func(int, string) (string, string, bool) { return "", "", false },
	appendError:       appendNestedError,
	appendStreamError: func(b []byte, status int, typ, msg string) []byte { return appendNestedError(b, status, typ, msg, "") },

	owner:  "library",
	native: true,

	metricLabels: func(string) string { return "" },
	writeMetrics: writeVLLMMetrics,
	noMetrics:    true,
}

// chunkMixTarget is the tokens of the chunk of choice whose first token has index from, for
// a dialect with chunkMix: 1, 2 or 3 with probabilities 0.84, 0.12 and 0.04 (mean 1.2).
func chunkMixTarget(spec *completionSpec, choice int32, from int) int {
	u := float64(mix64(spec.hash^0x011a3a^uint64(choice)<<32^uint64(from))>>11) / (1 << 53)
	switch {
	case u < 0.04:
		return 3
	case u < 0.16:
		return 2
	}
	return 1
}
