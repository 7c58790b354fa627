package engine

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// completionSpec is a validated completion request.
type completionSpec struct {
	id             string // response id, "cmpl-…"
	prompts        [][]int32
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
}

// handleCompletions serves POST /v1/completions.
func (e *Engine) handleCompletions(w http.ResponseWriter, r *http.Request) {
	arrival := time.Now()
	rid := e.requestID(r)
	w.Header().Set("X-Request-Id", rid)
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
	spec, status, typ, msg, param := e.validate(req, rid)
	if status != 0 {
		e.writeError(w, status, typ, msg, param)
		return
	}
	cr := e.newRequest(spec, arrival)
	e.sched.submit(cr)
	if spec.stream {
		e.stream(w, r, spec, cr)
	} else {
		e.complete(w, r, spec, cr)
	}
}

// validate checks req and resolves defaults. A non-zero status means an error response.
func (e *Engine) validate(req *completionRequest, rid string) (spec completionSpec, status int, typ, msg, param string) {
	bad := func(m, p string) (completionSpec, int, string, string, string) {
		st, t := http.StatusBadRequest, "BadRequestError"
		switch e.cfg.Dialect {
		case DialectLlamaCpp:
			t = "invalid_request_error"
		case DialectTGI:
			st, t = http.StatusUnprocessableEntity, "validation"
		}
		return completionSpec{}, st, t, m, p
	}
	rf := req.rest
	if rf.Model != nil && *rf.Model != e.cfg.ModelName && e.cfg.Dialect == DialectVLLM {
		return completionSpec{}, http.StatusNotFound, "NotFoundError",
			fmt.Sprintf("The model `%s` does not exist.", *rf.Model), "model"
	}
	if !req.promptOK {
		return bad("Field required: prompt", "prompt")
	}
	spec.id = "cmpl-" + rid
	spec.n = 1
	if rf.N != nil {
		spec.n = *rf.N
	}
	if spec.n < 1 {
		return bad(fmt.Sprintf("n must be at least 1, got %d.", spec.n), "n")
	}
	spec.stream = rf.Stream != nil && *rf.Stream
	if rf.StreamOptions != nil && !spec.stream {
		return bad("Stream options can only be defined when `stream=True`.", "stream_options")
	}
	if spec.stream {
		so := rf.StreamOptions
		switch {
		case e.cfg.ForceIncludeUsage:
			spec.includeUsage = true
		case so == nil:
			spec.includeUsage = false
		case so.IncludeUsage == nil:
			spec.includeUsage = e.cfg.Dialect == DialectVLLM // vLLM: {} enables usage
		default:
			spec.includeUsage = *so.IncludeUsage
		}
		spec.continuous = spec.includeUsage && so != nil && so.ContinuousUsageStats != nil && *so.ContinuousUsageStats
	}
	spec.streamInterval = e.cfg.StreamInterval
	if rf.StreamInterval != nil && *rf.StreamInterval >= 1 {
		spec.streamInterval = *rf.StreamInterval
	}
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
	spec.ignoreEOS = rf.IgnoreEOS != nil && *rf.IgnoreEOS
	if rf.MinTokens != nil {
		spec.minTokens = *rf.MinTokens
	}
	maxTok := -1
	if rf.MaxTokens != nil {
		maxTok = *rf.MaxTokens
	} else if rf.MaxNewTokens != nil {
		maxTok = *rf.MaxNewTokens
	}
	if rf.MaxTokens != nil && maxTok < 1 {
		return bad(fmt.Sprintf("max_tokens must be at least 1, got %d.", maxTok), "max_tokens")
	}
	if req.isText {
		for _, t := range req.texts {
			req.prompts = append(req.prompts, e.tok.Encode(t))
		}
	}
	if len(req.prompts) == 0 {
		return bad("Prompt cannot be empty.", "prompt")
	}
	L := e.cfg.MaxModelLen
	spec.maxTokens = make([]int, len(req.prompts))
	for i, p := range req.prompts {
		if len(p) == 0 {
			return bad("Prompt cannot be empty.", "prompt")
		}
		for _, id := range p {
			if id < 0 || int(id) >= e.cfg.VocabSize {
				return bad(fmt.Sprintf("Token id %d is out of vocabulary", id), "prompt")
			}
		}
		P := len(p)
		M := maxTok
		if M < 0 {
			M = 0 // default max_tokens: checked as 0, then clamped to the context
		}
		if P+M > L || P >= L {
			return bad(fmt.Sprintf("You passed %d input tokens and requested %d output tokens. However, the model's context length is only %d tokens, resulting in a maximum input length of %d tokens. Please reduce the length of the input prompt. (parameter=input_tokens, value=%d)",
				P, M, L, L-M, P), "input_tokens")
		}
		if maxTok < 0 {
			M = min(16, L-P)
		}
		spec.maxTokens[i] = M
	}
	spec.prompts = req.prompts
	if spec.minTokens > 0 {
		for _, m := range spec.maxTokens {
			if spec.minTokens > m {
				return bad(fmt.Sprintf("min_tokens must be less than or equal to max_tokens=%d, got %d.", m, spec.minTokens), "min_tokens")
			}
		}
	}
	return spec, 0, "", "", ""
}

// newRequest builds the scheduler sequences of spec: prompt i, choice c has index i·n + c.
// Prompt hashing (O(prompt)) happens here, in the handler goroutine, not in the scheduler.
func (e *Engine) newRequest(spec completionSpec, arrival time.Time) *request {
	r := &request{id: spec.id, arrival: arrival, notify: make(chan struct{}, 1)}
	r.seqs = make([]*seq, 0, len(spec.prompts)*spec.n)
	for i, p := range spec.prompts {
		hashes, whole := hashBlocks(p, e.cfg.BlockSize)
		for c := 0; c < spec.n; c++ {
			gs := mix64(spec.seed ^ mix64(whole))
			if spec.temperature > 0 {
				gs = mix64(gs ^ uint64(c+1)*0xd6e8feb86659fd93)
			}
			r.seqs = append(r.seqs, &seq{
				req: r, choice: int32(i*spec.n + c),
				promptLen: len(p), hashes: hashes, lastTok: p[len(p)-1], genSeed: gs,
				maxTokens: spec.maxTokens[i], minTokens: spec.minTokens, ignoreEOS: spec.ignoreEOS,
			})
		}
	}
	return r
}

// choiceState accumulates one choice's output in the handler.
type choiceState struct {
	text      []byte
	tokens    int
	pending   int // tokens not yet sent (stream_interval coalescing)
	fin       uint8
	promptLen int
}

func finishString(f uint8) string {
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
	for i, p := range spec.prompts {
		prompt += len(p)
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
	if details {
		if e.cfg.HidePromptTokensDetails {
			b = append(b, `,"prompt_tokens_details":null`...)
		} else {
			b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
			b = strconv.AppendInt(b, int64(cached), 10)
			b = append(b, '}')
		}
	}
	return append(b, '}')
}

// waitEvents blocks until cr has events or the client goes away; it reports false on abort.
func (e *Engine) waitEvents(r *http.Request, cr *request) bool {
	select {
	case <-cr.notify:
		return true
	case <-r.Context().Done():
		cr.aborted.Store(true)
		e.metrics.forget(cr)
		e.sched.poke() // wake the scheduler so it drops the sequences
		return false
	case <-e.stop:
		cr.aborted.Store(true)
		return false
	}
}

// complete serves a non-streaming completion: it waits for every choice to finish.
func (e *Engine) complete(w http.ResponseWriter, r *http.Request, spec completionSpec, cr *request) {
	st := make([]choiceState, len(cr.seqs))
	var evs []event
	for {
		if !e.waitEvents(r, cr) {
			return
		}
		var all bool
		evs, all = cr.take(evs)
		for _, ev := range evs {
			c := &st[ev.choice]
			c.tokens++
			if ev.vi >= 0 {
				c.text = append(c.text, e.vocab.texts[ev.vi]...)
			}
			c.fin = ev.fin
		}
		if all {
			break
		}
	}
	prompt, completion, cached := e.usage(spec, cr, st)
	b := make([]byte, 0, 256+len(st)*128)
	b = append(b, `{"id":`...)
	b = appendJSONString(b, spec.id)
	b = append(b, `,"object":"text_completion","created":`...)
	b = strconv.AppendInt(b, time.Now().Unix(), 10)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, e.cfg.ModelName)
	b = append(b, `,"choices":[`...)
	for i, c := range st {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"text":`...)
		b = appendJSONString(b, string(c.text))
		b = append(b, `,"logprobs":null,"finish_reason":`...)
		b = appendJSONString(b, finishString(c.fin))
		b = append(b, `,"stop_reason":null,"token_ids":null,"prompt_logprobs":null,"prompt_token_ids":null}`...)
	}
	b = append(b, `],"service_tier":null,"system_fingerprint":null,"usage":`...)
	b = e.appendUsage(b, prompt, completion, cached, true)
	b = append(b, `,"kv_transfer_params":null}`...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// stream serves a streaming completion: one chunk per choice per engine step (or per
// stream_interval tokens), the finish reason on the last-token chunk, then the usage chunk
// (when requested) and "data: [DONE]".
func (e *Engine) stream(w http.ResponseWriter, r *http.Request, spec completionSpec, cr *request) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	if fl != nil {
		fl.Flush()
	}
	created := time.Now().Unix()
	// chunk prefix shared by every chunk: data: {"id":…,"object":…,"created":…,"model":…,"choices":[
	pre := []byte(`data: {"id":`)
	pre = appendJSONString(pre, spec.id)
	pre = append(pre, `,"object":"text_completion","created":`...)
	pre = strconv.AppendInt(pre, created, 10)
	pre = append(pre, `,"model":`...)
	pre = appendJSONString(pre, e.cfg.ModelName)
	pre = append(pre, `,"choices":[`...)

	st := make([]choiceState, len(cr.seqs))
	for i := range st {
		st[i].promptLen = cr.seqs[i].promptLen
	}
	var evs []event
	b := make([]byte, 0, 4096)
	for {
		if !e.waitEvents(r, cr) {
			return
		}
		var all bool
		evs, all = cr.take(evs)
		b = b[:0]
		for _, ev := range evs {
			c := &st[ev.choice]
			c.tokens++
			c.pending++
			if ev.vi >= 0 {
				c.text = append(c.text, e.vocab.texts[ev.vi]...)
			}
			c.fin = ev.fin
			if c.fin == finNone && c.pending < spec.streamInterval {
				continue
			}
			b = append(b, pre...)
			b = append(b, `{"index":`...)
			b = strconv.AppendInt(b, int64(ev.choice), 10)
			b = append(b, `,"text":`...)
			b = appendJSONString(b, string(c.text))
			b = append(b, `,"logprobs":null,"finish_reason":`...)
			if c.fin == finNone {
				b = append(b, "null"...)
			} else {
				b = appendJSONString(b, finishString(c.fin))
			}
			b = append(b, `,"stop_reason":null}]`...)
			if spec.continuous {
				b = append(b, `,"usage":`...)
				b = e.appendUsage(b, c.promptLen, c.tokens, 0, false)
			}
			b = append(b, "}\n\n"...)
			c.text = c.text[:0]
			c.pending = 0
		}
		if all {
			if spec.includeUsage {
				prompt, completion, cached := e.usage(spec, cr, st)
				b = append(b, pre...)
				b = append(b, `],"usage":`...)
				b = e.appendUsage(b, prompt, completion, cached, true)
				b = append(b, "}\n\n"...)
			}
			b = append(b, "data: [DONE]\n\n"...)
		}
		if len(b) > 0 {
			if _, err := w.Write(b); err != nil {
				cr.aborted.Store(true)
				e.sched.poke()
				return
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if all {
			return
		}
	}
}
