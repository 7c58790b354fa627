package engine

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/genload/genload/host/internal/jsonenc"
)

// MaxClientBatchSize is the most prompts a TGI-dialect request may carry (TGI's
// --max-client-batch-size default).
const MaxClientBatchSize = 4

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
	nPrompt, nCtx   int // llama.cpp context overflow extras
	contextOverflow bool
}

// handleCompletions serves POST /v1/completions.
func (e *Engine) handleCompletions(w http.ResponseWriter, r *http.Request) {
	arrival := time.Now()
	rid := e.requestID(r)
	w.Header().Set("X-Request-Id", rid)
	if e.cfg.Dialect == DialectLlamaCpp {
		w.Header().Set("Server", "llama.cpp")
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
	if e.cfg.Quirks.StringsOnly && req.promptOK && !(req.isText && len(req.texts) == 1) {
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
	if a.contextOverflow && e.cfg.Dialect == DialectLlamaCpp {
		b := []byte(`{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":`)
		b = strconv.AppendInt(b, int64(a.nPrompt), 10)
		b = append(b, `,"n_ctx":`...)
		b = strconv.AppendInt(b, int64(a.nCtx), 10)
		b = append(b, "}}"...)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(b)
		return
	}
	e.writeError(w, a.status, a.typ, a.msg, a.param)
}

// validate checks req and resolves defaults per dialect.
func (e *Engine) validate(req *completionRequest, rid string) (completionSpec, *apiError) {
	d := e.cfg.Dialect
	bad := func(m, p string) (completionSpec, *apiError) {
		a := &apiError{status: http.StatusBadRequest, typ: "BadRequestError", msg: m, param: p}
		switch d {
		case DialectLlamaCpp:
			a.typ = "invalid_request_error"
		case DialectTGI:
			a.status, a.typ = http.StatusUnprocessableEntity, "validation"
		}
		return completionSpec{}, a
	}
	rf := req.rest
	q := e.cfg.Quirks
	var spec completionSpec
	spec.rid = rid
	spec.model = e.cfg.ModelName
	switch d {
	case DialectVLLM:
		if rf.Model != nil && *rf.Model != e.cfg.ModelName {
			return completionSpec{}, &apiError{status: http.StatusNotFound, typ: "NotFoundError",
				msg: fmt.Sprintf("The model `%s` does not exist.", *rf.Model), param: "model"}
		}
		spec.id = "cmpl-" + rid
	case DialectSGLang:
		spec.model = "default"
		if rf.Model != nil {
			spec.model = *rf.Model
		}
		spec.id = rid
	case DialectLlamaCpp:
		spec.id = "chatcmpl-" + rid
		if rf.Echo != nil && *rf.Echo {
			return bad("Only no echo is supported", "echo")
		}
	case DialectTGI:
		spec.id = ""
	}
	if !req.promptOK {
		return bad("Field required: prompt", "prompt")
	}
	spec.n = 1
	if rf.N != nil && d != DialectTGI && !q.IgnoreN {
		spec.n = *rf.N
	}
	if spec.n < 1 {
		return bad(fmt.Sprintf("n must be at least 1, got %d.", spec.n), "n")
	}
	spec.stream = rf.Stream != nil && *rf.Stream
	so := rf.StreamOptions
	if d == DialectTGI {
		so = nil // silently ignored
	}
	if so != nil && !spec.stream && d == DialectVLLM {
		return bad("Stream options can only be defined when `stream=True`.", "stream_options")
	}
	if spec.stream {
		switch {
		case e.cfg.ForceIncludeUsage, d == DialectLlamaCpp, d == DialectTGI:
			spec.includeUsage = true // llama.cpp: usage always on the final chunk; TGI: per prompt
		case so == nil:
			spec.includeUsage = false
		case so.IncludeUsage == nil:
			spec.includeUsage = d == DialectVLLM // vLLM: {} enables usage; SGLang defaults to false
		default:
			spec.includeUsage = *so.IncludeUsage
		}
		spec.continuous = spec.includeUsage && so != nil && so.ContinuousUsageStats != nil &&
			*so.ContinuousUsageStats && (d == DialectVLLM || d == DialectSGLang)
		switch {
		case q.NoUsage:
			spec.includeUsage, spec.continuous = false, false
		case q.ZeroUsage: // zeros on every chunk, the real usage in a final choices:[] chunk
			spec.includeUsage, spec.continuous = true, false
		}
	}
	spec.streamInterval = e.cfg.StreamInterval
	if rf.StreamInterval != nil && *rf.StreamInterval >= 1 {
		spec.streamInterval = *rf.StreamInterval
	}
	if d == DialectLlamaCpp || d == DialectTGI {
		spec.streamInterval = 1 // one chunk per sampled token
	}
	if q.TokensPerChunk > 0 {
		spec.streamInterval = q.TokensPerChunk
	}
	spec.logprobs = -1
	if lp := strings.TrimSpace(string(rf.Logprobs)); lp != "" && lp != "null" && lp != "false" && d != DialectTGI {
		k, err := strconv.Atoi(lp)
		if lp == "true" {
			k, err = 1, nil
		}
		if err != nil || k < 0 || k > 20 {
			return bad(fmt.Sprintf("logprobs must be an integer in [0, 20], got %s.", lp), "logprobs")
		}
		spec.logprobs = k
	}
	spec.perfMetrics = rf.PerfMetricsInResponse != nil && *rf.PerfMetricsInResponse
	spec.temperature = 1
	if rf.Temperature != nil {
		spec.temperature = *rf.Temperature
	}
	if spec.temperature < 0 {
		return bad(fmt.Sprintf("temperature must be non-negative, got %v.", spec.temperature), "temperature")
	}
	spec.seed = uint64(e.cfg.Seed)
	if rf.Seed != nil {
		spec.seed = uint64(*rf.Seed)
	}
	spec.ignoreEOS = rf.IgnoreEOS != nil && *rf.IgnoreEOS && d != DialectTGI
	if rf.MinTokens != nil && d != DialectTGI && d != DialectLlamaCpp {
		spec.minTokens = *rf.MinTokens
	}
	maxTok := -1
	if rf.MaxTokens != nil {
		maxTok = *rf.MaxTokens
	} else if rf.MaxNewTokens != nil {
		maxTok = *rf.MaxNewTokens
	}
	spec.asked = max(maxTok, 0)
	if rf.MaxTokens != nil && maxTok < 1 && !(d == DialectLlamaCpp && maxTok == -1) {
		return bad(fmt.Sprintf("max_tokens must be at least 1, got %d.", maxTok), "max_tokens")
	}
	if req.isText {
		for _, t := range req.texts {
			spec.inputChars += len([]rune(t))
			ids := e.tok.Encode(t)
			if q.ServerTemplate { // the server's own chat template around the client's text
				ids = append(append(e.tok.Encode(serverTemplatePre), ids...), e.tok.Encode(serverTemplatePost)...)
			}
			if q.AddBOS {
				ids = append([]int32{e.bosID()}, ids...)
			}
			req.prompts = append(req.prompts, ids)
		}
	} else if d == DialectTGI {
		return bad("Failed to deserialize the JSON body into the target type: prompt: data did not match any variant of untagged enum Prompt", "prompt")
	}
	if len(req.prompts) == 0 {
		return bad("Prompt cannot be empty.", "prompt")
	}
	if d == DialectTGI && len(req.prompts) > MaxClientBatchSize {
		return bad(fmt.Sprintf("Number of prompts exceeds the maximum allowed batch size of %d", MaxClientBatchSize), "prompt")
	}
	L := e.cfg.MaxModelLen
	spec.maxTokens = make([]int, len(req.prompts))
	kvTokens := e.cfg.KVCacheTokens / e.cfg.BlockSize * e.cfg.BlockSize
	for i, p := range req.prompts {
		if len(p) == 0 {
			return bad("Prompt cannot be empty.", "prompt")
		}
		for _, id := range p {
			if id < 0 || int(id) >= e.cfg.VocabSize {
				return bad(fmt.Sprintf("Token id %d is out of vocabulary", id), "prompt")
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
			a := &apiError{status: http.StatusBadRequest, typ: "BadRequestError", param: "input_tokens",
				msg: fmt.Sprintf("You passed %d input tokens and requested %d output tokens. However, the model's context length is only %d tokens, resulting in a maximum input length of %d tokens. Please reduce the length of the input prompt. (parameter=input_tokens, value=%d)",
					P, M, L, L-M, P),
				nPrompt: P, nCtx: L, contextOverflow: true}
			switch d {
			case DialectSGLang:
				a.msg = fmt.Sprintf("Requested token count exceeds the model's maximum context length of %d tokens. You requested a total of %d tokens: %d tokens from the input messages and %d tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.", L, P+M, P, M)
				a.param = ""
			case DialectTGI:
				a.status, a.typ, a.param = http.StatusUnprocessableEntity, "validation", ""
				a.msg = fmt.Sprintf("`inputs` tokens + `max_new_tokens` must be <= %d. Given: %d `inputs` tokens and %d `max_new_tokens`", L, P, M)
			}
			return completionSpec{}, a
		}
		if maxTok < 0 {
			switch d {
			case DialectLlamaCpp, DialectTGI:
				M = L - P // until EOS or the context is full
			default:
				M = min(16, L-P)
			}
		}
		if q.IgnoreMaxTokens > 0 && maxTok >= 0 { // a server that does not honour max_tokens
			M = max(1, min(int(math.Round(q.IgnoreMaxTokens*float64(M))), L-P))
		}
		if (P+M+e.cfg.BlockSize-1)/e.cfg.BlockSize*e.cfg.BlockSize > kvTokens {
			return bad(fmt.Sprintf("prompt of %d tokens plus %d output tokens does not fit the KV cache of %d tokens", P, M, kvTokens), "input_tokens")
		}
		spec.maxTokens[i] = M
	}
	if rf.Echo != nil && *rf.Echo && (d == DialectVLLM || d == DialectSGLang) {
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
				return bad(fmt.Sprintf("min_tokens must be less than or equal to max_tokens=%d, got %d.", m, spec.minTokens), "min_tokens")
			}
		}
	}
	return spec, nil
}

// newRequest builds the scheduler sequences of spec: prompt i, choice c has index i·n + c.
// Prompt hashing (O(prompt)) happens here, in the handler goroutine, not in the scheduler.
func (e *Engine) newRequest(spec completionSpec, arrival time.Time) *request {
	r := &request{id: spec.id, arrival: arrival, notify: make(chan struct{}, 1), num: e.reqNum.Add(1), asked: spec.asked}
	r.seqs = make([]*seq, 0, len(spec.prompts)*spec.n)
	q := e.cfg.Quirks
	counts := spec.maxTokens[0] >= 2 // ZeroToken and EarlyStop leave one-token warmups alone
	stopAt := 0
	if q.EarlyStop > 0 && spec.maxTokens[0] > q.EarlyStop {
		if k := e.quirkEarly.Add(1); k%uint64(max(q.EarlyStopEvery, 1)) == 0 {
			stopAt = q.EarlyStop
		}
	}
	for i, p := range spec.prompts {
		hashes, whole := hashBlocks(p, e.cfg.BlockSize)
		for c := 0; c < spec.n; c++ {
			gs := mix64(spec.seed ^ mix64(whole))
			if spec.temperature > 0 {
				gs = mix64(gs ^ uint64(c+1)*0xd6e8feb86659fd93)
			}
			sq := &seq{
				req: r, choice: int32(i*spec.n + c),
				promptLen: len(p), hashes: hashes, lastTok: p[len(p)-1], genSeed: gs,
				maxTokens: spec.maxTokens[i], minTokens: spec.minTokens, ignoreEOS: spec.ignoreEOS,
			}
			if q.ZeroToken > 0 && counts {
				sq.zeroToken = seqPicked(e.quirkSeqs.Add(1), q.ZeroToken)
			}
			if len(r.seqs) == 0 {
				sq.stopAt = stopAt
			}
			r.seqs = append(r.seqs, sq)
		}
	}
	return r
}

// choiceState accumulates one choice's output in the handler.
type choiceState struct {
	text            []byte // pending (stream) or whole (non-stream) text
	lastText        []byte // text of the last token (TGI final chunk)
	tokens          int
	pending         int // tokens not yet sent
	fin             uint8
	promptLen       int
	firstAt, lastAt int64
	toks            []int32 // vocabulary index (−1 EOS) of each token in text (logprobs)
	textOff         int     // characters of this choice already sent (logprobs text_offset)
	// Quirks.LateFirstChunk: the choice's chunks are held until holdUntil after its first
	held      []byte
	holdUntil time.Time
	started   bool
}

func (e *Engine) finishString(f uint8) string {
	if e.cfg.Dialect == DialectTGI && f == finStop {
		return "eos_token"
	}
	switch f {
	case finLength:
		return "length"
	case finStop:
		return "stop"
	case finAbort:
		return "abort"
	}
	return ""
}

// usage returns prompt tokens (each prompt once), completion tokens and cached prompt tokens
// (of each prompt's first choice, as vLLM sums num_cached_tokens per prompt).
func (e *Engine) usage(spec completionSpec, cr *request, st []choiceState) (prompt, completion, cached int) {
	for i, n := range spec.promptLens {
		prompt += n
		cached += cr.seqs[i*spec.n].cached
	}
	for _, c := range st {
		completion += c.tokens
	}
	return
}

func (e *Engine) appendUsage(b []byte, prompt, completion, cached int, details bool) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+completion), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	if details && e.cfg.Dialect != DialectTGI {
		if e.cfg.HidePromptTokensDetails && e.cfg.Dialect != DialectLlamaCpp {
			if e.cfg.Dialect != DialectVLLM {
				b = append(b, `,"prompt_tokens_details":null`...)
			}
		} else {
			b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
			b = strconv.AppendInt(b, int64(cached), 10)
			b = append(b, '}')
		}
	}
	if e.cfg.Dialect == DialectSGLang {
		b = append(b, `,"reasoning_tokens":0`...)
	}
	return append(b, '}')
}

// waitEvents blocks until cr has events, the keep-alive interval passes (ka), the time until
// comes (due; zero until = never), or the client goes away (ok false; the request is aborted).
func (e *Engine) waitEvents(r *http.Request, cr *request, keepAlive time.Duration, until time.Time) (ok, ka, due bool) {
	var tc, uc <-chan time.Time
	if keepAlive > 0 {
		t := time.NewTimer(keepAlive)
		defer t.Stop()
		tc = t.C
	}
	if !until.IsZero() {
		t := time.NewTimer(time.Until(until))
		defer t.Stop()
		uc = t.C
	}
	select {
	case <-cr.notify:
		return true, false, false
	case <-tc:
		return true, true, false
	case <-uc:
		return true, false, true
	case <-r.Context().Done():
		e.abort(cr)
		return false, false, false
	case <-e.stop:
		cr.aborted.Store(true)
		return false, false, false
	}
}

func (e *Engine) abort(cr *request) {
	cr.aborted.Store(true)
	e.sched.poke()
}

// timing returns the generation duration (first to last token over all choices, server
// clock) and the speculative acceptance (accepted / drafted, −1 without drafts).
func timing(cr *request, st []choiceState) (gen time.Duration, acc float64) {
	var first, last int64 = -1, 0
	for _, c := range st {
		if c.tokens == 0 {
			continue
		}
		if first < 0 || c.firstAt < first {
			first = c.firstAt
		}
		last = max(last, c.lastAt)
	}
	if first >= 0 {
		gen = time.Duration(last - first)
	}
	acc = -1
	if d := cr.specDrafted.Load(); d > 0 {
		acc = float64(cr.specAccepted.Load()) / float64(d)
	}
	return
}

// newChoiceStates returns one state per choice, its text starting with the echoed prompt.
func newChoiceStates(spec completionSpec, cr *request) []choiceState {
	st := make([]choiceState, len(cr.seqs))
	for i := range st {
		st[i].promptLen = cr.seqs[i].promptLen
		if spec.echo != nil {
			st[i].text = append(st[i].text, spec.echo[i/spec.n]...)
		}
	}
	return st
}

// applyEvent adds one token event to its choice's state.
func (e *Engine) applyEvent(st []choiceState, ev event) *choiceState {
	c := &st[ev.choice]
	if ev.noToken { // Quirks.ZeroToken: a finish without a token
		c.fin = ev.fin
		return c
	}
	if c.tokens == 0 {
		c.firstAt = ev.at
	}
	c.toks = append(c.toks, ev.vi)
	c.lastAt = ev.at
	c.tokens++
	c.pending++
	c.lastText = c.lastText[:0]
	if ev.vi >= 0 {
		t := e.vocab.texts[ev.vi]
		c.text = append(c.text, t...)
		c.lastText = append(c.lastText, t...)
	}
	c.fin = ev.fin
	return c
}

// hijackClose takes over the connection and closes it: with reset, by a TCP RST (linger 0).
func hijackClose(w http.ResponseWriter, reset bool) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		tc.SetLinger(0)
	}
	conn.Close()
}

// complete serves a non-streaming completion: it waits for every choice to finish.
func (e *Engine) complete(w http.ResponseWriter, r *http.Request, spec completionSpec, cr *request) {
	st := newChoiceStates(spec, cr)
	var evs []event
	seen := 0
	f := spec.faults
	for {
		ok, _, _ := e.waitEvents(r, cr, 0, time.Time{})
		if !ok {
			return
		}
		var all bool
		evs, all = cr.take(evs)
		for _, ev := range evs {
			e.applyEvent(st, ev)
		}
		seen += len(evs)
		if f.ErrorAfter >= 0 && seen >= f.ErrorAfter {
			e.abort(cr)
			typ, msg := e.statusError(500)
			e.writeError(w, 500, typ, "injected generation failure after "+strconv.Itoa(f.ErrorAfter)+" tokens: "+msg, "")
			return
		}
		if f.ResetAfter >= 0 && seen >= f.ResetAfter {
			e.abort(cr)
			hijackClose(w, true)
			return
		}
		if all {
			break
		}
	}
	prompt, completion, cached := e.usage(spec, cr, st)
	now := time.Now()
	d := e.cfg.Dialect
	b := make([]byte, 0, 256+len(st)*128)
	b = append(b, '{')
	if d == DialectTGI {
		b = append(b, `"object":"text_completion","id":"","created":`...)
	} else {
		b = append(b, `"id":`...)
		b = jsonenc.AppendString(b, spec.id)
		b = append(b, `,"object":"text_completion","created":`...)
	}
	b = strconv.AppendInt(b, now.Unix(), 10)
	b = append(b, `,"model":`...)
	b = jsonenc.AppendString(b, spec.model)
	switch d {
	case DialectLlamaCpp:
		b = append(b, `,"system_fingerprint":"b6000-genload"`...)
	case DialectTGI:
		b = append(b, `,"system_fingerprint":"3.3.6-native"`...)
	}
	b = append(b, `,"choices":[`...)
	for i, c := range st {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"text":`...)
		b = jsonenc.AppendString(b, string(c.text))
		b = append(b, `,"logprobs":`...)
		b = e.appendLogprobs(b, spec.logprobs, &st[i])
		b = append(b, `,"finish_reason":`...)
		b = jsonenc.AppendString(b, e.finishString(c.fin))
		switch d {
		case DialectVLLM:
			b = append(b, `,"stop_reason":null,"token_ids":null,"prompt_logprobs":null,"prompt_token_ids":null`...)
		case DialectSGLang:
			b = append(b, `,"matched_stop":`...)
			b = appendMatchedStop(b, c.fin)
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	switch {
	case e.cfg.Quirks.NoUsage:
		if d == DialectLlamaCpp {
			b = append(b, `,"timings":`...)
			b = e.appendTimings(b, cr, &st[0], spec.promptLens[0], cr.seqs[0].cached)
		}
	case d == DialectVLLM:
		b = append(b, `,"service_tier":null,"system_fingerprint":null,"usage":`...)
		b = e.appendUsage(b, prompt, completion, cached, true)
		if e.cfg.HidePromptTokensDetails { // non-streaming vLLM keeps the null
			b = append(b[:len(b)-1], `,"prompt_tokens_details":null}`...)
		}
		b = append(b, `,"kv_transfer_params":null`...)
	case d == DialectSGLang:
		b = append(b, `,"usage":`...)
		b = e.appendUsage(b, prompt, completion, cached, true)
		b = append(b, `,"metadata":{"weight_version":"default"}`...)
	case d == DialectLlamaCpp:
		// llama.cpp quirk: usage (and timings) cover only the first task (choice 0)
		b = append(b, `,"usage":`...)
		b = e.appendUsage(b, spec.promptLens[0], st[0].tokens, cr.seqs[0].cached, true)
		b = append(b, `,"timings":`...)
		b = e.appendTimings(b, cr, &st[0], spec.promptLens[0], cr.seqs[0].cached)
	case d == DialectTGI:
		b = append(b, `,"usage":`...)
		b = e.appendUsage(b, prompt, completion, cached, false)
	}
	b = append(b, '}')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	gen, acc := timing(cr, st)
	if e.cfg.TimingHeaders {
		h.Set("Generation-Duration", strconv.FormatFloat(gen.Seconds(), 'f', 6, 64))
		if acc >= 0 {
			h.Set("Speculation-Acceptance", strconv.FormatFloat(acc, 'f', 4, 64))
		}
	}
	if d == DialectTGI {
		e.setTGIHeaders(h, spec, cr, st, prompt, completion, now)
	}
	if f.CutAfter >= 0 {
		e.abort(cr)
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(http.StatusOK)
		w.Write(b[:len(b)/2])
		http.NewResponseController(w).Flush()
		hijackClose(w, false)
		return
	}
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

func appendMatchedStop(b []byte, fin uint8) []byte {
	if fin == finStop {
		return append(b, `151645`...) // the EOS token id (Qwen3 <|im_end|>)
	}
	return append(b, "null"...)
}

// appendTimings appends a llama.cpp "timings" object for one task.
func (e *Engine) appendTimings(b []byte, cr *request, c *choiceState, promptLen, cached int) []byte {
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	admitted := cr.admittedAt.Load()
	promptMs := ms(c.firstAt - admitted)
	predMs := ms(c.lastAt - c.firstAt)
	promptN := promptLen - cached
	per := func(n int, t float64) (float64, float64) {
		if n == 0 || t <= 0 {
			return 0, 0
		}
		return t / float64(n), 1e3 * float64(n) / t
	}
	ppt, pps := per(promptN, promptMs)
	dpt, dps := per(c.tokens, predMs)
	b = fmt.Appendf(b, `{"cache_n":%d,"prompt_n":%d,"prompt_ms":%.3f,"prompt_per_token_ms":%.6f,"prompt_per_second":%.3f,"predicted_n":%d,"predicted_ms":%.3f,"predicted_per_token_ms":%.6f,"predicted_per_second":%.3f`,
		cached, promptN, promptMs, ppt, pps, c.tokens, predMs, dpt, dps)
	if d := cr.specDrafted.Load(); d > 0 {
		b = fmt.Appendf(b, `,"draft_n":%d,"draft_n_accepted":%d`, d, cr.specAccepted.Load())
	}
	return append(b, '}')
}

// setTGIHeaders sets TGI's x-* timing headers (milliseconds) on a non-streaming response.
func (e *Engine) setTGIHeaders(h http.Header, spec completionSpec, cr *request, st []choiceState, prompt, completion int, now time.Time) {
	total := now.Sub(cr.arrival)
	queue := time.Duration(cr.admittedAt.Load()) - cr.arrival.Sub(e.startedAt)
	if queue < 0 {
		queue = 0
	}
	inf := total - queue
	perTok := time.Duration(0)
	if completion > 0 {
		perTok = inf / time.Duration(completion)
	}
	h.Set("x-compute-type", "gpu+optimized")
	h.Set("x-compute-characters", strconv.Itoa(spec.inputChars))
	h.Set("x-total-time", strconv.FormatInt(total.Milliseconds(), 10))
	h.Set("x-validation-time", "0")
	h.Set("x-queue-time", strconv.FormatInt(queue.Milliseconds(), 10))
	h.Set("x-inference-time", strconv.FormatInt(inf.Milliseconds(), 10))
	h.Set("x-time-per-token", strconv.FormatInt(perTok.Milliseconds(), 10))
	h.Set("x-prompt-tokens", strconv.Itoa(prompt))
	h.Set("x-generated-tokens", strconv.Itoa(completion))
}

// streamFrames formats one request's SSE frames in the engine's dialect.
type streamFrames struct {
	e       *Engine
	spec    completionSpec
	created int64
	pre     []byte // `data: {"id":…,"object":…,"created":…,"model":…,"choices":[`
	// promptTotal and reqTokens are the request's prompt tokens and its tokens streamed so
	// far over all choices (Quirks.UsageEveryChunk).
	promptTotal, reqTokens int
	// choicePre caches SGLang's per-choice prefixes (the id varies per sub-request).
	choicePre map[int32][]byte
}

func newStreamFrames(e *Engine, spec completionSpec) *streamFrames {
	f := &streamFrames{e: e, spec: spec, created: time.Now().Unix()}
	for _, n := range spec.promptLens {
		f.promptTotal += n
	}
	p := []byte(`data: {`)
	switch e.cfg.Dialect {
	case DialectTGI:
		p = append(p, `"id":"","object":"text_completion","created":`...)
	default:
		p = append(p, `"id":`...)
		p = jsonenc.AppendString(p, spec.id)
		p = append(p, `,"object":"text_completion","created":`...)
	}
	p = strconv.AppendInt(p, f.created, 10)
	p = append(p, `,"model":`...)
	p = jsonenc.AppendString(p, spec.model)
	switch e.cfg.Dialect {
	case DialectLlamaCpp:
		p = append(p, `,"system_fingerprint":"b6000-genload"`...)
	case DialectTGI:
		p = append(p, `,"system_fingerprint":"3.3.6-native"`...)
	}
	p = append(p, `,"choices":[`...)
	f.pre = p
	return f
}

// token appends the chunks carrying choice's pending text: one chunk, final when c.fin is set
// and the dialect puts the finish reason on the last-token chunk; with a separate finish
// (llama.cpp, Quirks.SeparateFinish) the finish reason follows on a chunk of its own.
func (f *streamFrames) token(b []byte, choice int32, c *choiceState, cr *request) []byte {
	d := f.e.cfg.Dialect
	sep := d == DialectLlamaCpp || f.e.cfg.Quirks.SeparateFinish
	fin := c.fin
	if sep {
		fin = finNone
	}
	b = f.chunk(b, choice, c.text, fin, c, true)
	if !sep || c.fin == finNone {
		return b
	}
	if d != DialectLlamaCpp {
		return f.chunk(b, choice, nil, c.fin, c, false)
	}
	// llama.cpp final chunk: empty text, finish reason, usage and timings of this task
	seq := cr.seqs[choice]
	b = append(b, f.pre...)
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(choice), 10)
	b = append(b, `,"text":"","logprobs":null,"finish_reason":`...)
	b = jsonenc.AppendString(b, f.e.finishString(c.fin))
	b = append(b, `}]`...)
	switch q := f.e.cfg.Quirks; {
	case q.ZeroUsage:
		b = append(b, `,"usage":`...)
		b = f.e.appendUsage(b, 0, 0, 0, false)
	case !q.NoUsage:
		b = append(b, `,"usage":`...)
		b = f.e.appendUsage(b, c.promptLen, c.tokens, seq.cached, true)
	}
	b = append(b, `,"timings":`...)
	b = f.e.appendTimings(b, cr, c, c.promptLen, seq.cached)
	return append(b, "}\n\n"...)
}

// chunk appends one chunk event of choice with text and finish reason fin in the dialect's
// shape, with the usage the request and the quirks ask for, and the logprobs of c's pending
// tokens when withLogprobs and the request asked for them.
func (f *streamFrames) chunk(b []byte, choice int32, text []byte, fin uint8, c *choiceState, withLogprobs bool) []byte {
	d := f.e.cfg.Dialect
	q := f.e.cfg.Quirks
	pre := f.pre
	if d == DialectSGLang { // SGLang: the id varies per sub-request (choice)
		if pre = f.choicePre[choice]; pre == nil {
			pre = []byte(strings.Replace(string(f.pre), `"id":`+string(jsonenc.AppendString(nil, f.spec.id)),
				`"id":`+string(jsonenc.AppendString(nil, f.spec.id+"-"+strconv.Itoa(int(choice)))), 1))
			if f.choicePre == nil {
				f.choicePre = map[int32][]byte{}
			}
			f.choicePre[choice] = pre
		}
	}
	b = append(b, pre...)
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(choice), 10)
	b = append(b, `,"text":`...)
	b = jsonenc.AppendString(b, string(text))
	b = append(b, `,"logprobs":`...)
	if withLogprobs {
		b = f.e.appendLogprobs(b, f.spec.logprobs, c)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"finish_reason":`...)
	switch {
	case fin != finNone:
		b = jsonenc.AppendString(b, f.e.finishString(fin))
	case d == DialectTGI:
		b = append(b, `""`...)
	default:
		b = append(b, "null"...)
	}
	switch d {
	case DialectVLLM:
		b = append(b, `,"stop_reason":null}]`...)
	case DialectSGLang:
		b = append(b, `,"matched_stop":`...)
		b = appendMatchedStop(b, fin)
		b = append(b, `}]`...)
	default:
		b = append(b, `}]`...)
	}
	switch {
	case q.ZeroUsage:
		b = append(b, `,"usage":`...)
		b = f.e.appendUsage(b, 0, 0, 0, false)
	case q.NoUsage:
		if d == DialectSGLang {
			b = append(b, `,"usage":null`...)
		}
	case q.UsageEveryChunk && f.spec.includeUsage:
		// the request's running totals over all choices, on every chunk
		b = append(b, `,"usage":`...)
		b = f.e.appendUsage(b, f.promptTotal, f.reqTokens, 0, false)
	case f.spec.continuous:
		b = append(b, `,"usage":`...)
		b = f.e.appendUsage(b, c.promptLen, c.tokens, 0, false)
	case d == DialectSGLang:
		b = append(b, `,"usage":null`...)
	case d == DialectTGI && fin != finNone:
		b = append(b, `,"usage":`...)
		b = f.e.appendUsage(b, c.promptLen, c.tokens, 0, false)
	}
	return append(b, "}\n\n"...)
}

// usageChunk appends the trailing choices:[] usage chunk (vLLM, SGLang).
func (f *streamFrames) usageChunk(b []byte, prompt, completion, cached int, gen time.Duration, acc float64) []byte {
	b = append(b, f.pre...)
	b = append(b, `],"usage":`...)
	b = f.e.appendUsage(b, prompt, completion, cached, true)
	if f.spec.perfMetrics {
		b = f.appendPerf(b, gen, acc)
	}
	return append(b, "}\n\n"...)
}

// appendPerf appends Fireworks-style "perf_metrics".
func (f *streamFrames) appendPerf(b []byte, gen time.Duration, acc float64) []byte {
	b = append(b, `,"perf_metrics":{"generation-duration":`...)
	b = strconv.AppendFloat(b, gen.Seconds(), 'f', 6, 64)
	if acc >= 0 {
		b = append(b, `,"speculation-acceptance":`...)
		b = strconv.AppendFloat(b, acc, 'f', 4, 64)
	}
	return append(b, '}')
}

// errorEvent appends an in-stream error event and, where the dialect does, [DONE].
func (f *streamFrames) errorEvent(b []byte, status int, msg string) []byte {
	typ, _ := f.e.statusError(status)
	b = append(b, "data: "...)
	switch f.e.cfg.Dialect {
	case DialectTGI:
		b = append(b, `{"error":{"message":`...)
		b = jsonenc.AppendString(b, msg)
		b = append(b, `,"http_status_code":`...)
		b = strconv.AppendInt(b, int64(status), 10)
		b = append(b, "}}\n\n"...)
	case DialectSGLang:
		b = append(b, `{"error":`...)
		b = append(b, f.e.errorBody(status, typ, msg, "")...)
		b = append(b, "}\n\n"...)
	default: // vLLM and llama.cpp: the nested shape
		b = append(b, f.e.errorBody(status, typ, msg, "")...)
		b = append(b, "\n\n"...)
	}
	if f.e.cfg.Dialect != DialectLlamaCpp {
		b = append(b, "data: [DONE]\n\n"...)
	}
	return b
}

// stream serves a streaming completion: one chunk per choice per engine step (or per
// stream_interval tokens), the finish reason on the last-token chunk, the usage chunk when
// requested, then "data: [DONE]" — each in the dialect's shape — with the faults of spec and
// the engine's quirks.
func (e *Engine) stream(w http.ResponseWriter, r *http.Request, spec completionSpec, cr *request) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	if e.cfg.Dialect == DialectTGI {
		h.Set("x-compute-type", "gpu+optimized")
		h.Set("x-compute-characters", strconv.Itoa(spec.inputChars))
		h.Set("x-accel-buffering", "no")
	}
	if e.cfg.TimingHeaders {
		tr := "Generation-Duration"
		if e.cfg.SpecTokens > 0 {
			tr += ", Speculation-Acceptance"
		}
		h.Set("Trailer", tr)
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	rc.Flush()
	frames := newStreamFrames(e, spec)
	flt := spec.faults
	q := e.cfg.Quirks
	st := newChoiceStates(spec, cr)
	var evs []event
	b := make([]byte, 0, 4096)
	seen := 0 // tokens taken from the scheduler
	first := true
	write := func() bool {
		if len(b) == 0 {
			return true
		}
		_, err := w.Write(b)
		b = b[:0]
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			e.abort(cr)
			return false
		}
		return true
	}
	// emit appends choice's chunks (built by add) to the stream, or holds them while the
	// choice's first chunk is late (Quirks.LateFirstChunk); held chunks always go first.
	emit := func(c *choiceState, add func([]byte) []byte) {
		if q.LateFirstChunk <= 0 {
			b = add(b)
			return
		}
		now := time.Now()
		if !c.started {
			c.started, c.holdUntil = true, now.Add(q.LateFirstChunk)
		}
		if now.Before(c.holdUntil) {
			c.held = add(c.held)
			return
		}
		b = append(b, c.held...)
		c.held = c.held[:0]
		b = add(b)
	}
	// release moves held chunks whose time has come (all of them with all) to the stream
	// and returns the earliest time a chunk is still held until (zero when none is).
	release := func(all bool) time.Time {
		var next time.Time
		now := time.Now()
		for i := range st {
			c := &st[i]
			if len(c.held) == 0 {
				continue
			}
			if all || !now.Before(c.holdUntil) {
				b = append(b, c.held...)
				c.held = c.held[:0]
				continue
			}
			if next.IsZero() || c.holdUntil.Before(next) {
				next = c.holdUntil
			}
		}
		return next
	}
	if q.EmptyFirstChunk {
		for i := range st {
			emit(&st[i], func(b []byte) []byte { return frames.chunk(b, int32(i), nil, finNone, &st[i], false) })
		}
		if !write() {
			return
		}
	}
	perToken := e.cfg.Dialect == DialectLlamaCpp || e.cfg.Dialect == DialectTGI
	var until time.Time // the earliest held chunk's release
	for {
		ok, ka, due := e.waitEvents(r, cr, flt.KeepAlive, until)
		if !ok {
			return
		}
		if due {
			until = release(false)
			if !write() {
				return
			}
			continue
		}
		if ka {
			b = append(b, ": keep-alive\n\n"...)
			if !write() {
				return
			}
			continue
		}
		if first && flt.FirstTokenDelay > 0 {
			time.Sleep(flt.FirstTokenDelay)
		}
		first = false
		until = release(false)
		var all bool
		evs, all = cr.take(evs)
		for i, ev := range evs {
			switch seen {
			case flt.ErrorAfter:
				release(true)
				b = frames.errorEvent(b, 500, "injected error after "+strconv.Itoa(seen)+" tokens")
				write()
				e.abort(cr)
				return
			case flt.ResetAfter:
				write()
				e.abort(cr)
				hijackClose(w, true)
				return
			case flt.CutAfter:
				c := e.applyEvent(st, ev)
				half := frames.token(nil, ev.choice, c, cr)
				b = append(b, half[:len(half)/2]...)
				write()
				e.abort(cr)
				hijackClose(w, false)
				return
			}
			if q.Stall > 0 && seen == q.Stall && !ev.noToken {
				// a hung server: nothing more is sent, the connection stays open
				write()
				e.abort(cr)
				select {
				case <-r.Context().Done():
				case <-e.stop:
				}
				return
			}
			if flt.StallFor > 0 && seen == flt.StallAfter {
				if !write() {
					return
				}
				time.Sleep(flt.StallFor)
			}
			if !ev.noToken {
				seen++
				frames.reqTokens++
			}
			c := e.applyEvent(st, ev)
			sameStepNext := !perToken && i+1 < len(evs) && evs[i+1].choice == ev.choice && evs[i+1].step == ev.step
			if c.fin == finNone && (c.pending < spec.streamInterval || sameStepNext) {
				continue
			}
			if c.fin == finNone && q.Coalesce > 0 &&
				float64(mix64(spec.hash^uint64(ev.choice)<<32^uint64(c.tokens))>>11)/(1<<53) < q.Coalesce {
				continue // merged with the choice's next chunk
			}
			emit(c, func(b []byte) []byte { return frames.token(b, ev.choice, c, cr) })
			c.textOff += utf8.RuneCount(c.text)
			c.text = c.text[:0]
			c.toks = c.toks[:0]
			c.pending = 0
		}
		if all {
			// late first chunks still held leave when due, then the end of the stream
			for next := release(false); !next.IsZero(); next = release(false) {
				if !write() {
					return
				}
				if ok, _, _ := e.waitEvents(r, cr, 0, next); !ok {
					return
				}
			}
			prompt, completion, cached := e.usage(spec, cr, st)
			gen, acc := timing(cr, st)
			if spec.includeUsage && (e.cfg.Dialect == DialectVLLM || e.cfg.Dialect == DialectSGLang || q.ZeroUsage) {
				b = frames.usageChunk(b, prompt, completion, cached, gen, acc)
			}
			if !q.NoDone {
				b = append(b, "data: [DONE]\n\n"...)
			}
			if !write() {
				return
			}
			if e.cfg.TimingHeaders {
				h.Set("Generation-Duration", strconv.FormatFloat(gen.Seconds(), 'f', 6, 64))
				if acc >= 0 {
					h.Set("Speculation-Acceptance", strconv.FormatFloat(acc, 'f', 4, 64))
				}
			}
			return
		}
		if !write() {
			return
		}
	}
}
