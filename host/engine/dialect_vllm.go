package engine

// vllmDialect reproduces vLLM ≥ 0.10.1's OpenAI server on /v1/completions
// (vllm/entrypoints/openai/completion/{protocol,serving}.py, renderers/params.py for the
// context-length message, serve/exception_handling for the nested error shape of PR #22099,
// v1/metrics/loggers.py for the metric names):
//   - id "cmpl-<X-Request-Id>"; an unknown model is 404 "The model `X` does not exist.";
//     max_tokens defaults to 16, clamped to the context; echo, n, min_tokens, ignore_eos
//     honoured;
//   - stream_options needs stream=true, and {} enables usage (include_usage defaults to
//     true); continuous_usage_stats counts the chunk's choice so far; usage arrives in a final
//     choices:[] chunk; --enable-force-include-usage is Config.ForceIncludeUsage;
//   - choices carry stop_reason (and, in a body, null token_ids, prompt_logprobs,
//     prompt_token_ids); a body adds service_tier, system_fingerprint and kv_transfer_params
//     nulls; prompt_tokens_details is null without --enable-prompt-tokens-details
//     (Config.HidePromptTokensDetails), dropped in streams;
//   - errors {"error":{message,type,param,code}}, also in-stream, followed by [DONE];
//   - /tokenize {count, max_model_len, tokens, token_strs}, /detokenize {prompt},
//     vllm:* metrics labelled model_name and engine.
var vllmDialect = dialect{
	name:                    DialectVLLM,
	checkModel:              true,
	idPrefix:                "cmpl-",
	echo:                    true,
	streamOptionsNeedStream: true,
	usageOnEmptyOptions:     true,
	continuousUsage:         true,
	logprobs:                lpCompletions,
	ignoreEOS:               true,
	minTokens:               true,
	defaultMaxTokens:        16,
	contextOverflow:         vllmOverflow,

	stopFinish:       "stop",
	pendingFinish:    "null",
	streamChoiceTail: `,"stop_reason":null`,
	choiceTail:       `,"stop_reason":null,"token_ids":null,"prompt_logprobs":null,"prompt_token_ids":null`,
	done:             true,
	doneAfterError:   true,

	usageChunk:          true,
	details:             detailsCached,
	streamDetails:       detailsCached,
	hiddenDetails:       detailsNull,
	hiddenStreamDetails: detailsNone,
	usagePrefix:         `,"service_tier":null,"system_fingerprint":null,"usage":`,
	usageSuffix:         `,"kv_transfer_params":null`,

	badStatus:         400,
	badType:           "BadRequestError",
	statusError:       func(int, string) (string, string, bool) { return "", "", false },
	appendError:       appendNestedError,
	appendStreamError: func(b []byte, status int, typ, msg string) []byte { return appendNestedError(b, status, typ, msg, "") },

	owner:         "vllm",
	modelLen:      true,
	tokenize:      tokenizeVLLM,
	detokenizeKey: "prompt",

	metricLabels: func(model string) string { return `model_name="` + model + `",engine="0"` },
	writeMetrics: writeVLLMMetrics,
}

// tokenizeVLLM is vLLM's /tokenize answer: {count, max_model_len, tokens, token_strs}, the
// token strings only when return_token_strs was asked.
func tokenizeVLLM(e *Engine, ids []int32, tokenStrs bool) any {
	var strs any
	if tokenStrs {
		s := make([]string, len(ids))
		for i, id := range ids {
			s[i] = e.tok.Decode([]int32{id}, false)
		}
		strs = s
	}
	return map[string]any{"count": len(ids), "max_model_len": e.cfg.MaxModelLen, "tokens": ids, "token_strs": strs}
}

// writeVLLMMetrics writes vLLM v1's gauges, counters and histograms.
func writeVLLMMetrics(p *promWriter, m *metrics) {
	p.gauge("vllm:num_requests_running", "Number of requests in model execution batches.", float64(m.running))
	p.gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", float64(m.waiting))
	p.gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", m.kvUsed)
	p.typed("vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig")
	caching := "False"
	if m.prefixCaching {
		caching = "True"
	}
	p.printf("vllm:cache_config_info{block_size=\"%d\",enable_prefix_caching=\"%s\",num_gpu_blocks=\"%d\"} 1\n", m.blockSize, caching, m.kvBlocks)
	p.counter("vllm:num_preemptions_total", "Cumulative number of preemptions from the engine.", float64(m.preemptions.Load()))
	p.counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", float64(m.promptTok))
	p.counter("vllm:generation_tokens_total", "Number of generation tokens processed.", float64(m.genTok))
	p.counter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.", float64(m.prefixQueries.Load()))
	p.counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", float64(m.prefixHits.Load()))
	p.counter("vllm:prompt_tokens_cached_total", "Number of cached prompt tokens (local prefix cache hits).", float64(m.prefixHits.Load()))
	p.typed("vllm:request_success_total", "counter", "Count of successfully processed requests.")
	for _, r := range []string{"length", "stop"} {
		p.printf("vllm:request_success_total{%s,finished_reason=%q} %d\n", p.labels, r, m.success[r])
	}
	p.hist("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", m.iterTok)
	p.hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", m.ttft)
	p.hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", m.itl)
	p.hist("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", m.tpot)
	p.hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", m.e2e)
	p.hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", m.queue)
	p.counter("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts.", float64(m.specDrafts.Load()))
	p.counter("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.", float64(m.specDraftTok.Load()))
	p.counter("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.", float64(m.specAccepted.Load()))
}
