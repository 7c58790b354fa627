package engine

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// POST /v1/completions in four files: this one reads and validates a request into a
// completionSpec (the dialect's request rules, see dialect), choices.go builds its scheduler
// sequences and gathers their tokens, body.go answers without streaming and stream.go with.

// completionSpec is a validated completion request.
type completionSpec struct {
	id             string    // response id ("cmpl-…" in vLLM)
	rid            string    // request id (X-Request-Id)
	model          string    // model echoed in responses
	prompts        [][]int32 // dropped (nil) once the sequences are built
	promptLens     []int     // tokens per prompt
	echo           []string  // per prompt: its text, prepended to each choice (echo=true)
	inputChars     int       // characters of text prompts (TGI x-compute-characters)
	n              int
	maxTokens      []int // per prompt (default clamped to the context)
	minTokens      int
	ignoreEOS      bool
	temperature    float64
	seed           uint64
	stream         bool
	includeUsage   bool
	continuous     bool
	streamInterval int
	perfMetrics    bool // Fireworks perf_metrics_in_response
	faults         Faults
	logprobs       int    // the request's "logprobs": k alternatives per token; -1 = off
	hash           uint64 // of the response id: seeds Quirks.Coalesce
	asked          int    // max_tokens as the request gave it (0: none)
}

// apiError is an error response decided during validation.
type apiError struct {
	status          int
	typ, msg, param string
	body            []byte // the whole body, when the dialect has its own shape for this error
}

// handleCompletions serves POST /v1/completions.
func (e *Engine) handleCompletions(w http.ResponseWriter, r *http.Request) {
	arrival := time.Now()
	rid := e.requestID(r)
	w.Header().Set("X-Request-Id", rid)
	if e.wire.serverHeader != "" {
		w.Header().Set("Server", e.wire.serverHeader)
	}
	if lim := e.cfg.Quirks.BodyLimit; lim > 0 && r.ContentLength > lim {
		hijackClose(w, true) // a proxy's size limit: a reset before any answer
		return
	}
	faults, err := e.requestFaults(r)
	if err != nil {
		e.badRequest(w, err.Error(), "")
		return
	}
	if faults.Status != 0 {
		typ, msg := e.statusError(faults.Status)
		e.writeError(w, faults.Status, typ, msg, "")
		return
	}
	if !isJSONContentType(r.Header.Get("Content-Type")) {
		e.badRequest(w, "Unsupported Media Type: Only 'application/json' is allowed", "")
		return
	}
	buf, err := readBody(r)
	if err != nil {
		putBody(buf)
		e.badRequest(w, "error reading request body: "+err.Error(), "")
		return
	}
	if lim := e.cfg.Quirks.BodyLimit; lim > 0 && int64(buf.Len()) > lim { // a body without Content-Length
		putBody(buf)
		hijackClose(w, true)
		return
	}
	req, err := parseCompletion(buf.Bytes())
	putBody(buf)
	if err == errEmptyPrompt {
		e.badRequest(w, "Prompt cannot be empty.", "prompt")
		return
	}
	if err != nil {
		e.badRequest(w, err.Error(), "")
		return
	}
	if e.wire.stringsOnly && req.promptOK && !(req.isText && len(req.texts) == 1) {
		typ, _ := e.statusError(http.StatusBadRequest)
		e.writeError(w, http.StatusBadRequest, typ, "json: cannot unmarshal array into Go struct field CompletionRequest.prompt of type string", "prompt")
		return
	}
	spec, aerr := e.validate(req, rid)
	if aerr != nil {
		e.writeAPIError(w, aerr)
		return
	}
	spec.faults = faults
	cr := e.newRequest(spec, arrival)
	spec.prompts, req.prompts = nil, nil // the scheduler keeps only hashes: free the ids early
	e.sched.submit(cr)
	if spec.stream {
		e.stream(w, r, spec, cr)
	} else {
		e.complete(w, r, spec, cr)
	}
}

func (e *Engine) writeAPIError(w http.ResponseWriter, a *apiError) {
	if a.body != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		w.Write(a.body)
		return
	}
	e.writeError(w, a.status, a.typ, a.msg, a.param)
}

// validate checks req and resolves defaults by the dialect's request rules (e.wire). It
// runs the steps below in order and returns the first one's error, so that a request with
// several faults gets the same error as from the server the dialect reproduces: the model
// and response id, the prompt's presence and n, the streaming options, the sampling
// fields, the prompts' tokens, each prompt's max_tokens against the context and the KV
// cache, and last the derived fields (echo, prompt lengths, hash, min_tokens).
func (e *Engine) validate(req *completionRequest, rid string) (completionSpec, *apiError) {
	rf := &req.rest
	spec := completionSpec{rid: rid}
	if aerr := e.resolveModel(&spec, rf); aerr != nil {
		return completionSpec{}, aerr
	}
	if aerr := e.resolveChoices(&spec, req); aerr != nil {
		return completionSpec{}, aerr
	}
	if aerr := e.resolveStreaming(&spec, rf); aerr != nil {
		return completionSpec{}, aerr
	}
	maxTok, aerr := e.resolveSampling(&spec, rf)
	if aerr != nil {
		return completionSpec{}, aerr
	}
	if aerr := e.encodePrompts(&spec, req); aerr != nil {
		return completionSpec{}, aerr
	}
	if aerr := e.resolveMaxTokens(&spec, req, maxTok); aerr != nil {
		return completionSpec{}, aerr
	}
	if aerr := e.finishSpec(&spec, req); aerr != nil {
		return completionSpec{}, aerr
	}
	return spec, nil
}

// invalid is the dialect's error for an invalid field: its status (400, or TGI's 422)
// and type, with message m naming the field p.
func (e *Engine) invalid(m, p string) *apiError {
	return &apiError{status: e.wire.badStatus, typ: e.wire.badType, msg: m, param: p}
}

// resolveModel sets the model echoed in responses and the response id: a model other than
// Config.ModelName is a 404 where the dialect checks it (vLLM).
func (e *Engine) resolveModel(spec *completionSpec, rf *restFields) *apiError {
	d := &e.wire
	spec.model = e.cfg.ModelName
	if d.checkModel && rf.Model != nil && *rf.Model != e.cfg.ModelName {
		return &apiError{status: http.StatusNotFound, typ: "NotFoundError",
			msg: fmt.Sprintf("The model `%s` does not exist.", *rf.Model), param: "model"}
	}
	if d.echoModel != "" {
		spec.model = d.echoModel
		if rf.Model != nil {
			spec.model = *rf.Model
		}
	}
	if !d.emptyID {
		spec.id = d.idPrefix + spec.rid
	}
	return nil
}

// resolveChoices checks that the request has a prompt (and no echo where the dialect
// refuses it) and sets n, the choices per prompt (default 1, at least 1).
func (e *Engine) resolveChoices(spec *completionSpec, req *completionRequest) *apiError {
	d, rf := &e.wire, &req.rest
	if d.rejectEcho && rf.Echo != nil && *rf.Echo {
		return e.invalid("Only no echo is supported", "echo")
	}
	if !req.promptOK {
		return e.invalid("Field required: prompt", "prompt")
	}
	spec.n = 1
	if rf.N != nil && !d.ignoreN {
		spec.n = *rf.N
	}
	if spec.n < 1 {
		return e.invalid(fmt.Sprintf("n must be at least 1, got %d.", spec.n), "n")
	}
	return nil
}

// resolveStreaming sets stream, the usage the stream carries (includeUsage: a usage chunk;
// continuous: usage on every chunk) from stream_options and the dialect's usage rules, and
// streamInterval, the tokens per chunk (Config.StreamInterval, the request's
// stream_interval ≥ 1, or the dialect's fixed chunking).
func (e *Engine) resolveStreaming(spec *completionSpec, rf *restFields) *apiError {
	d := &e.wire
	spec.stream = rf.Stream != nil && *rf.Stream
	so := rf.StreamOptions
	if d.ignoreStreamOptions {
		so = nil
	}
	if so != nil && !spec.stream && d.streamOptionsNeedStream {
		return e.invalid("Stream options can only be defined when `stream=True`.", "stream_options")
	}
	if spec.stream {
		switch {
		case d.usageAlways:
			spec.includeUsage = true
		case so == nil:
			spec.includeUsage = false
		case so.IncludeUsage == nil:
			spec.includeUsage = d.usageOnEmptyOptions
		default:
			spec.includeUsage = *so.IncludeUsage
		}
		spec.continuous = spec.includeUsage && so != nil && so.ContinuousUsageStats != nil &&
			*so.ContinuousUsageStats && d.continuousUsage
		switch d.usage {
		case usageNone:
			spec.includeUsage, spec.continuous = false, false
		case usageZero: // zeros on every chunk, the real usage in a final choices:[] chunk
			spec.includeUsage, spec.continuous = true, false
		}
	}
	spec.streamInterval = e.cfg.StreamInterval
	if rf.StreamInterval != nil && *rf.StreamInterval >= 1 {
		spec.streamInterval = *rf.StreamInterval
	}
	if d.chunkTokens > 0 {
		spec.streamInterval = d.chunkTokens
	}
	return nil
}

// resolveSampling sets logprobs (k in [0, 20], −1 off), perf_metrics_in_response,
// temperature (default 1, non-negative), seed (default Config.Seed), ignore_eos and
// min_tokens where the dialect reads them, and asked; it returns max_tokens as the request
// gave it (max_tokens, else TGI's max_new_tokens; −1 when absent), which must be at least 1
// (or −1 where the dialect reads −1 as "no limit").
func (e *Engine) resolveSampling(spec *completionSpec, rf *restFields) (maxTok int, aerr *apiError) {
	d := &e.wire
	spec.logprobs = -1
	if lp := strings.TrimSpace(string(rf.Logprobs)); lp != "" && lp != "null" && lp != "false" && d.logprobs != lpNone {
		k, err := strconv.Atoi(lp)
		if lp == "true" {
			k, err = 1, nil
		}
		if err != nil || k < 0 || k > 20 {
			return 0, e.invalid(fmt.Sprintf("logprobs must be an integer in [0, 20], got %s.", lp), "logprobs")
		}
		spec.logprobs = k
	}
	spec.perfMetrics = rf.PerfMetricsInResponse != nil && *rf.PerfMetricsInResponse
	spec.temperature = 1
	if rf.Temperature != nil {
		spec.temperature = *rf.Temperature
	}
	if spec.temperature < 0 {
		return 0, e.invalid(fmt.Sprintf("temperature must be non-negative, got %v.", spec.temperature), "temperature")
	}
	spec.seed = uint64(e.cfg.Seed)
	if rf.Seed != nil {
		spec.seed = uint64(*rf.Seed)
	}
	spec.ignoreEOS = rf.IgnoreEOS != nil && *rf.IgnoreEOS && d.ignoreEOS
	if rf.MinTokens != nil && d.minTokens {
		spec.minTokens = *rf.MinTokens
	}
	maxTok = -1
	if rf.MaxTokens != nil {
		maxTok = *rf.MaxTokens
	} else if rf.MaxNewTokens != nil {
		maxTok = *rf.MaxNewTokens
	}
	spec.asked = max(maxTok, 0)
	if rf.MaxTokens != nil && maxTok < 1 && !(d.maxTokensMinusOne && maxTok == -1) {
		return 0, e.invalid(fmt.Sprintf("max_tokens must be at least 1, got %d.", maxTok), "max_tokens")
	}
	return maxTok, nil
}

// encodePrompts tokenizes text prompts into req.prompts (with the dialect's server template
// and BOS) and counts their characters into spec.inputChars; it rejects token-id prompts
// where the dialect takes text only (TGI), no prompt at all, and more prompts than the
// dialect's batch limit.
func (e *Engine) encodePrompts(spec *completionSpec, req *completionRequest) *apiError {
	d := &e.wire
	if req.isText {
		for _, t := range req.texts {
			spec.inputChars += len([]rune(t))
			ids := e.tok.Encode(t)
			if d.serverTemplate { // the server's own chat template around the client's text
				ids = append(append(e.tok.Encode(serverTemplatePre), ids...), e.tok.Encode(serverTemplatePost)...)
			}
			if d.addBOS {
				ids = append([]int32{e.bosID()}, ids...)
			}
			req.prompts = append(req.prompts, ids)
		}
	} else if d.textOnly {
		return e.invalid("Failed to deserialize the JSON body into the target type: prompt: data did not match any variant of untagged enum Prompt", "prompt")
	}
	if len(req.prompts) == 0 {
		return e.invalid("Prompt cannot be empty.", "prompt")
	}
	if d.maxPrompts > 0 && len(req.prompts) > d.maxPrompts {
		return e.invalid(fmt.Sprintf("Number of prompts exceeds the maximum allowed batch size of %d", d.maxPrompts), "prompt")
	}
	return nil
}

// resolveMaxTokens checks each prompt (non-empty, ids in the vocabulary, Quirks.Truncate
// applied) and sets spec.maxTokens[i], the tokens it may generate: maxTok (the request's,
// −1 absent) or, absent, the dialect's default or the rest of the context L =
// Config.MaxModelLen; scaled by Quirks.IgnoreMaxTokens. A prompt of P tokens with P + M > L
// is the dialect's context overflow; one whose P + M tokens, rounded up to whole blocks,
// exceed the KV cache (Config.KVCacheTokens in whole blocks) could never run.
func (e *Engine) resolveMaxTokens(spec *completionSpec, req *completionRequest, maxTok int) *apiError {
	d, q := &e.wire, &e.cfg.Quirks
	L := e.cfg.MaxModelLen
	spec.maxTokens = make([]int, len(req.prompts))
	kvTokens := e.cfg.KVCacheTokens / e.cfg.BlockSize * e.cfg.BlockSize
	for i, p := range req.prompts {
		if len(p) == 0 {
			return e.invalid("Prompt cannot be empty.", "prompt")
		}
		for _, id := range p {
			if id < 0 || int(id) >= e.cfg.VocabSize {
				return e.invalid(fmt.Sprintf("Token id %d is out of vocabulary", id), "prompt")
			}
		}
		if C := q.Truncate; C > 0 {
			// the server's real context is C: keep the last C − max_tokens tokens
			if keep := C - max(maxTok, 0); keep >= 1 && len(p) > keep {
				p = p[len(p)-keep:]
				req.prompts[i] = p
			}
		}
		P := len(p)
		M := maxTok
		if M < 0 {
			M = 0 // default max_tokens: checked as 0, then clamped to the context
		}
		if P+M > L || P >= L {
			return d.contextOverflow(P, M, L)
		}
		if maxTok < 0 {
			if d.defaultMaxTokens > 0 {
				M = min(d.defaultMaxTokens, L-P)
			} else {
				M = L - P // until EOS or the context is full
			}
		}
		if q.IgnoreMaxTokens > 0 && maxTok >= 0 { // a server that does not honour max_tokens
			M = max(1, min(int(math.Round(q.IgnoreMaxTokens*float64(M))), L-P))
		}
		if (P+M+e.cfg.BlockSize-1)/e.cfg.BlockSize*e.cfg.BlockSize > kvTokens {
			return e.invalid(fmt.Sprintf("prompt of %d tokens plus %d output tokens does not fit the KV cache of %d tokens", P, M, kvTokens), "input_tokens")
		}
		spec.maxTokens[i] = M
	}
	return nil
}

// finishSpec sets the fields derived from the final prompts: the echoed text of each
// (echo=true where the dialect echoes), the prompts and their lengths in tokens, and the
// response id's hash (Quirks.Coalesce); it checks min_tokens ≤ each prompt's max_tokens.
func (e *Engine) finishSpec(spec *completionSpec, req *completionRequest) *apiError {
	rf := &req.rest
	if rf.Echo != nil && *rf.Echo && e.wire.echo {
		spec.echo = make([]string, len(req.prompts))
		for i, p := range req.prompts {
			if req.isText {
				spec.echo[i] = req.texts[i]
			} else {
				spec.echo[i] = e.tok.Decode(p, false)
			}
		}
	}
	spec.prompts = req.prompts
	spec.hash = mix64(hashString(spec.id) ^ uint64(e.cfg.Seed))
	spec.promptLens = make([]int, len(req.prompts))
	for i, p := range req.prompts {
		spec.promptLens[i] = len(p)
	}
	if spec.minTokens > 0 {
		for _, m := range spec.maxTokens {
			if spec.minTokens > m {
				return e.invalid(fmt.Sprintf("min_tokens must be less than or equal to max_tokens=%d, got %d.", m, spec.minTokens), "min_tokens")
			}
		}
	}
	return nil
}
