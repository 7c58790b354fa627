package engine

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/genload/genload/host/internal/jsonenc"
)

// ollama's native API, served by the ollama dialect beside its /v1 layer (dialect.native; not
// with Quirks.NoNativeAPI), as ollama's server/routes.go serves it:
//   - GET /api/version → {"version":"0.6.8"};
//   - POST /api/generate {"model","prompt","raw","stream","options":{"num_predict",
//     "temperature","seed"}} (unknown fields ignored; "stream" defaults to true; without
//     "raw" the prompt is wrapped in the model's template, here the engine's server
//     template): newline-delimited JSON objects {"model","created_at","response","done":false}
//     of 1–3 tokens each (chunkMix), then the final {"done":true,"done_reason",
//     "total_duration","load_duration","prompt_eval_count","prompt_eval_duration",
//     "eval_count","eval_duration"} with ollama's metrics computed from the engine's own
//     step times (nativeDone); errors are {"error":"…"}, in the body of a non-200 status or
//     as a line of the stream.
//
// The quirks of the stream (bunch-first, late-first-chunk, coalesce, stall, the faults)
// act on it as on /v1/completions: it is the same stream writer in its ndjson form.

// ollamaVersion is the version GET /api/version reports: the ollama release the dialect
// reproduces.
const ollamaVersion = "0.6.8"

// generateRequest is the body of POST /api/generate.
type generateRequest struct {
	Model   *string `json:"model"`
	Prompt  *string `json:"prompt"`
	Raw     bool    `json:"raw"`
	Stream  *bool   `json:"stream"`
	Options struct {
		NumPredict  *int     `json:"num_predict"`
		Temperature *float64 `json:"temperature"`
		Seed        *int64   `json:"seed"`
	} `json:"options"`
}

// nativeError writes ollama's error body {"error": msg} with status.
func nativeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(append(jsonenc.AppendString([]byte(`{"error":`), msg), '}'))
}

// handleVersion serves GET /api/version.
func (e *Engine) handleVersion(w http.ResponseWriter, r *http.Request) {
	if !e.wire.native {
		e.writeError(w, http.StatusNotFound, "NotFoundError", "Not Found", "")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"version": ollamaVersion})
}

// handleGenerate serves POST /api/generate: the request is read into the completion spec of
// one text prompt (the dialect's validation, max_tokens = num_predict) and streamed by the
// completions stream writer in its ndjson form.
func (e *Engine) handleGenerate(w http.ResponseWriter, r *http.Request) {
	if !e.wire.native {
		e.writeError(w, http.StatusNotFound, "NotFoundError", "Not Found", "")
		return
	}
	arrival := time.Now()
	rid := e.requestID(r)
	if lim := e.cfg.Quirks.BodyLimit; lim > 0 && r.ContentLength > lim {
		hijackClose(w, true)
		return
	}
	faults, err := e.requestFaults(r)
	if err != nil {
		nativeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if faults.Status != 0 {
		nativeError(w, faults.Status, http.StatusText(faults.Status))
		return
	}
	buf, err := readBody(r)
	if err != nil {
		putBody(buf)
		nativeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var g generateRequest
	err = json.Unmarshal(buf.Bytes(), &g)
	putBody(buf)
	if err != nil {
		nativeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if g.Model == nil || *g.Model == "" {
		nativeError(w, http.StatusBadRequest, "model is required")
		return
	}
	if *g.Model != e.cfg.ModelName {
		nativeError(w, http.StatusNotFound, "model '"+*g.Model+"' not found")
		return
	}
	stream := g.Stream == nil || *g.Stream
	if g.Prompt == nil || *g.Prompt == "" {
		// ollama loads the model and answers at once
		b := e.nativeHead(nil, *g.Model)
		b = append(b, `"response":"","done":true,"done_reason":"load"}`+"\n"...)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Write(b)
		return
	}
	text := *g.Prompt
	if !g.Raw { // the model's template around the prompt
		text = serverTemplatePre + text + serverTemplatePost
	}
	req := &completionRequest{texts: []string{text}, isText: true, promptOK: true}
	req.rest.Model = g.Model
	req.rest.MaxTokens = g.Options.NumPredict
	req.rest.Temperature = g.Options.Temperature
	req.rest.Seed = g.Options.Seed
	req.rest.Stream = &stream
	if g.Options.Temperature == nil {
		t := 0.8 // ollama's default
		req.rest.Temperature = &t
	}
	spec, aerr := e.validate(req, rid)
	if aerr != nil {
		nativeError(w, aerr.status, aerr.msg)
		return
	}
	spec.faults = faults
	cr := e.newRequest(spec, arrival)
	spec.prompts, req.prompts = nil, nil
	e.sched.submit(cr)
	if stream {
		e.streamNative(w, r, spec, cr)
		return
	}
	e.completeNative(w, r, spec, cr)
}

// nativeHead appends the start of an ollama object: {"model":M,"created_at":"<now>",
func (e *Engine) nativeHead(b []byte, model string) []byte {
	b = append(b, `{"model":`...)
	b = jsonenc.AppendString(b, model)
	b = append(b, `,"created_at":"`...)
	b = time.Now().UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, `",`...)
}

// nativeDone appends the final object of choice c of cr (one sequence): response text
// (empty when streamed), done_reason, and ollama's metrics from the engine's own times —
// eval_count is the tokens generated (the first included), eval_duration the time from the
// step that produced the first token to the step that produced the last (the eval_count − 1
// forward passes after the first, as ollama times them), prompt_eval_count the prompt's
// tokens, prompt_eval_duration from admission to the first token, total_duration from the
// request's arrival; load_duration 0 (the model is loaded).
func (e *Engine) nativeDone(b []byte, model string, c *choiceState, cr *request, text []byte) []byte {
	b = e.nativeHead(b, model)
	b = append(b, `"response":`...)
	b = jsonenc.AppendString(b, string(text))
	b = append(b, `,"done":true,"done_reason":`...)
	b = jsonenc.AppendString(b, e.wire.finishString(c.fin))
	var evalDur, promptDur int64
	if c.tokens > 0 {
		evalDur = c.lastAt - c.firstAt
		promptDur = max(c.firstAt-cr.admittedAt.Load(), 0)
	}
	b = append(b, `,"total_duration":`...)
	b = strconv.AppendInt(b, int64(time.Since(cr.arrival)), 10)
	b = append(b, `,"load_duration":0,"prompt_eval_count":`...)
	b = strconv.AppendInt(b, int64(c.promptLen), 10)
	b = append(b, `,"prompt_eval_duration":`...)
	b = strconv.AppendInt(b, promptDur, 10)
	b = append(b, `,"eval_count":`...)
	b = strconv.AppendInt(b, int64(c.tokens), 10)
	b = append(b, `,"eval_duration":`...)
	b = strconv.AppendInt(b, evalDur, 10)
	return append(b, "}\n"...)
}

// completeNative serves "stream": false: one final object with the whole text.
func (e *Engine) completeNative(w http.ResponseWriter, r *http.Request, spec completionSpec, cr *request) {
	st := newChoiceStates(spec, cr)
	var evs []event
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
		if all {
			break
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Write(e.nativeDone(nil, spec.model, &st[0], cr, st[0].text))
}
