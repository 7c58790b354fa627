package engine

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/genload/genload/host/internal/jsonenc"
)

// complete serves a non-streaming completion: it waits for every choice to finish
// (awaitChoices), then writes one body in the dialect's shape (e.wire, appendCompletion)
// with the timing headers, or half of it when Faults.CutAfter cuts the response.
func (e *Engine) complete(w http.ResponseWriter, r *http.Request, spec completionSpec, cr *request) {
	st, ok := e.awaitChoices(w, r, spec, cr)
	if !ok {
		return
	}
	prompt, completion, cached := e.usage(spec, cr, st)
	now := time.Now()
	b := make([]byte, 0, 256+len(st)*128)
	b = e.appendCompletion(b, spec, cr, st, prompt, completion, cached, now)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	gen, acc := timing(cr, st)
	if e.cfg.TimingHeaders {
		h.Set("Generation-Duration", strconv.FormatFloat(gen.Seconds(), 'f', 6, 64))
		if acc >= 0 {
			h.Set("Speculation-Acceptance", strconv.FormatFloat(acc, 'f', 4, 64))
		}
	}
	if e.wire.bodyHeaders {
		e.setTGIHeaders(h, spec, cr, st, prompt, completion, now)
	}
	if spec.faults.CutAfter >= 0 {
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

// awaitChoices gathers the scheduler's events into one state per choice until every
// sequence has finished (ok). It returns ok false when the client left, or when an injected
// fault ended the response once that many tokens were generated: Faults.ErrorAfter (a 500
// error body) or ResetAfter (a TCP RST).
func (e *Engine) awaitChoices(w http.ResponseWriter, r *http.Request, spec completionSpec, cr *request) (st []choiceState, ok bool) {
	st = newChoiceStates(spec, cr)
	var evs []event
	seen := 0
	f := &spec.faults
	for {
		if ok, _, _ := e.waitEvents(r, cr, 0, time.Time{}); !ok {
			return nil, false
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
			return nil, false
		}
		if f.ResetAfter >= 0 && seen >= f.ResetAfter {
			e.abort(cr)
			hijackClose(w, true)
			return nil, false
		}
		if all {
			return st, true
		}
	}
}

// appendCompletion appends the non-streaming body {id, object, created (Unix s of now),
// model, choices [{index, text, logprobs, finish_reason, …}], usage, timings} in the
// dialect's field order and shape; prompt, completion and cached are the request's usage in
// tokens (e.usage).
func (e *Engine) appendCompletion(b []byte, spec completionSpec, cr *request, st []choiceState, prompt, completion, cached int, now time.Time) []byte {
	d := &e.wire
	b = append(b, '{')
	if d.objectFirst {
		b = append(b, `"object":"text_completion","id":`...)
		b = jsonenc.AppendString(b, spec.id)
		b = append(b, `,"created":`...)
	} else {
		b = append(b, `"id":`...)
		b = jsonenc.AppendString(b, spec.id)
		b = append(b, `,"object":"text_completion","created":`...)
	}
	b = strconv.AppendInt(b, now.Unix(), 10)
	b = append(b, `,"model":`...)
	b = jsonenc.AppendString(b, spec.model)
	b = d.appendFingerprint(b)
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
		b = jsonenc.AppendString(b, d.finishString(c.fin))
		b = append(b, d.choiceTail...)
		if d.matchedStop {
			b = append(b, `,"matched_stop":`...)
			b = appendMatchedStop(b, c.fin)
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	if d.usage != usageNone {
		b = append(b, d.usagePrefix...)
		if d.usageFirstTask { // llama.cpp: usage (and timings) cover only the first task (choice 0)
			b = d.appendUsage(b, spec.promptLens[0], st[0].tokens, cr.seqs[0].cached, d.details)
		} else {
			b = d.appendUsage(b, prompt, completion, cached, d.details)
		}
		b = append(b, d.usageSuffix...)
	}
	if d.timings {
		b = append(b, `,"timings":`...)
		b = e.appendTimings(b, cr, &st[0], spec.promptLens[0], cr.seqs[0].cached)
	}
	return append(b, '}')
}

// appendFingerprint appends the top-level system_fingerprint, when the dialect has one.
func (d *dialect) appendFingerprint(b []byte) []byte {
	if d.fingerprint == "" {
		return b
	}
	b = append(b, `,"system_fingerprint":`...)
	return jsonenc.AppendString(b, d.fingerprint)
}

// appendUsage appends a usage object {prompt_tokens, total_tokens, completion_tokens} with
// prompt_tokens_details in shape details and the dialect's extras (SGLang reasoning_tokens).
func (d *dialect) appendUsage(b []byte, prompt, completion, cached int, details detailsMode) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+completion), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	switch details {
	case detailsNull:
		b = append(b, `,"prompt_tokens_details":null`...)
	case detailsCached:
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, int64(cached), 10)
		b = append(b, '}')
	}
	if d.reasoningTokens {
		b = append(b, `,"reasoning_tokens":0`...)
	}
	return append(b, '}')
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
