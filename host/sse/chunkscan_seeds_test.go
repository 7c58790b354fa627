package sse

// engineChunks are events captured from the built-in engine (host/engine, TimeScale 0) in
// its four dialects — vLLM (continuous usage, n=2 interleaving, usage chunk, nested error),
// SGLang (usage:null, reasoning_tokens, error with "object":"error"), llama.cpp
// (system_fingerprint, final text:"" with usage and timings, error with code first) and TGI
// (id:"", finish_reason:"" on ordinary chunks, string error with error_type).
var engineChunks = []string{
	`{"id":"cmpl-5692161d100b05e5e220a8397b1dcdaf","object":"text_completion","created":1796038752,"model":"genload-sim","choices":[{"index":0,"text":"d","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":{"prompt_tokens":3,"total_tokens":4,"completion_tokens":1}}`,
	`{"id":"cmpl-5692161d100b05e5e220a8397b1dcdaf","object":"text_completion","created":1796038752,"model":"genload-sim","choices":[],"usage":{"prompt_tokens":3,"total_tokens":6,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":0}}}`,
	`{"id":"cmpl-dbd238973a2b148a6e789e6aa1b965f4","object":"text_completion","created":1796038752,"model":"genload-sim","choices":[{"index":0,"text":"d","logprobs":null,"finish_reason":null,"stop_reason":null}]}`,
	`{"id":"cmpl-dbd238973a2b148a6e789e6aa1b965f4","object":"text_completion","created":1796038752,"model":"genload-sim","choices":[{"index":1,"text":"r","logprobs":null,"finish_reason":null,"stop_reason":null}]}`,
	`{"error":{"message":"injected error after 1 tokens","type":"InternalServerError","param":null,"code":500}}`,
	`{"id":"5692161d100b05e5e220a8397b1dcdaf-0","object":"text_completion","created":1796038752,"model":"default","choices":[{"index":0,"text":"d","logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":{"prompt_tokens":3,"total_tokens":4,"completion_tokens":1,"reasoning_tokens":0}}`,
	`{"id":"5692161d100b05e5e220a8397b1dcdaf-0","object":"text_completion","created":1796038752,"model":"default","choices":[{"index":0,"text":"h","logprobs":null,"finish_reason":"length","matched_stop":null}],"usage":{"prompt_tokens":3,"total_tokens":6,"completion_tokens":3,"reasoning_tokens":0}}`,
	`{"id":"5692161d100b05e5e220a8397b1dcdaf","object":"text_completion","created":1796038752,"model":"default","choices":[],"usage":{"prompt_tokens":3,"total_tokens":6,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":0},"reasoning_tokens":0}}`,
	`{"error":{"object":"error","message":"injected error after 1 tokens","type":"InternalServerError","param":null,"code":500}}`,
	`{"id":"chatcmpl-5692161d100b05e5e220a8397b1dcdaf","object":"text_completion","created":1796038752,"model":"genload-sim","system_fingerprint":"b6000-genload","choices":[{"index":0,"text":"d","logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-5692161d100b05e5e220a8397b1dcdaf","object":"text_completion","created":1796038752,"model":"genload-sim","system_fingerprint":"b6000-genload","choices":[{"index":0,"text":"","logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":3,"total_tokens":6,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":0}},"timings":{"cache_n":0,"prompt_n":3,"prompt_ms":0.001,"prompt_per_token_ms":0.000368,"prompt_per_second":2717391.304,"predicted_n":3,"predicted_ms":0.006,"predicted_per_token_ms":0.001858,"predicted_per_second":538309.708}}`,
	`{"error":{"code":500,"message":"injected error after 1 tokens","type":"server_error"}}`,
	`{"error":"Failed to deserialize the JSON body into the target type: prompt: data did not match any variant of untagged enum Prompt","error_type":"validation"}`,
	`{"id":"","object":"text_completion","created":1796038752,"model":"genload-sim","system_fingerprint":"3.3.6-native","choices":[{"index":0,"text":"v","logprobs":null,"finish_reason":""}]}`,
	`{"id":"","object":"text_completion","created":1796038752,"model":"genload-sim","system_fingerprint":"3.3.6-native","choices":[{"index":0,"text":"r","logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":3,"total_tokens":5,"completion_tokens":2}}`,
}

// logprobsChunks are token chunks of a request with "logprobs":1, in the shape of each
// server that answers it: vLLM and SGLang (the completions object: tokens, token_logprobs,
// top_logprobs, text_offset, one entry per token of the chunk; a stripped EOS has text ""
// and one entry), llama.cpp (a "content" array of per-token objects, one per chunk; null
// on the final chunk) and TGI (which ignores the field: null).
var logprobsChunks = []string{
	`{"id":"cmpl-9f2c","object":"text_completion","created":1767000000,"model":"m","choices":[{"index":0,"text":" tok17","logprobs":{"text_offset":[412],"token_logprobs":[-0.31326162815093994],"tokens":[" tok17"],"top_logprobs":[{" tok17":-0.31326162815093994}]},"finish_reason":null,"stop_reason":null}]}`,
	`{"id":"cmpl-9f2c","object":"text_completion","created":1767000000,"model":"m","choices":[{"index":1,"text":" is blue","logprobs":{"text_offset":[3,6],"token_logprobs":[-0.0021,-1.5e-05],"tokens":[" is"," blue"],"top_logprobs":[{" is":-0.0021},{" blue":-1.5e-05," Blue":-11.2}]},"finish_reason":null,"stop_reason":null}]}`,
	`{"id":"cmpl-9f2c","object":"text_completion","created":1767000000,"model":"m","choices":[{"index":0,"text":"","logprobs":{"text_offset":[418],"token_logprobs":[-0.9],"tokens":["</s>"],"top_logprobs":[{"</s>":-0.9}]},"finish_reason":"stop","stop_reason":null}]}`,
	`{"id":"5692161d100b05e5e220a8397b1dcdaf-0","object":"text_completion","created":1796038752,"model":"default","choices":[{"index":0,"text":"d","logprobs":{"text_offset":[0],"token_logprobs":[-0.5],"tokens":["d"],"top_logprobs":[{"d":-0.5}]},"finish_reason":null,"matched_stop":null}],"usage":null}`,
	`{"choices":[{"text":" tok","index":0,"logprobs":{"content":[{"id":1234,"token":" tok","bytes":[32,116,111,107],"logprob":-0.31,"top_logprobs":[{"id":1234,"token":" tok","bytes":[32,116,111,107],"logprob":-0.31}]}]},"finish_reason":null}],"created":1796038752,"model":"genload-sim","system_fingerprint":"b6000-genload","object":"text_completion","id":"chatcmpl-5692161d100b05e5e220a8397b1dcdaf"}`,
	`{"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"length"}],"created":1796038752,"model":"genload-sim","system_fingerprint":"b6000-genload","object":"text_completion","usage":{"completion_tokens":3,"prompt_tokens":3,"total_tokens":6,"prompt_tokens_details":{"cached_tokens":0}},"id":"chatcmpl-5692161d100b05e5e220a8397b1dcdaf"}`,
	`{"id":"","object":"text_completion","created":1796038752,"model":"genload-sim","system_fingerprint":"3.3.6-native","choices":[{"index":0,"text":"v","logprobs":null,"finish_reason":""}]}`,
}
