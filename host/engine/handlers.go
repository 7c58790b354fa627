package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/genload/genload/host/internal/jsonenc"
)

var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// readBody reads the request body into a pooled buffer; the caller returns it with putBody.
func readBody(r *http.Request) (*bytes.Buffer, error) {
	buf := bodyPool.Get().(*bytes.Buffer)
	buf.Reset()
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength) + 1)
	}
	_, err := buf.ReadFrom(r.Body)
	return buf, err
}

func putBody(b *bytes.Buffer) {
	if b.Cap() > 64<<20 {
		return
	}
	bodyPool.Put(b)
}

// requestID returns the X-Request-Id to echo: the client's, or a deterministic hex id from the
// engine seed and a request counter.
func (e *Engine) requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); id != "" {
		return id
	}
	n := e.reqSeq.Add(1)
	return fmt.Sprintf("%016x%016x", mix64(uint64(e.cfg.Seed)^n), mix64(n*0x9e3779b97f4a7c15))
}

// writeError writes an error body in the dialect's shape with the given HTTP status.
// vLLM ≥ 0.10.1: {"error":{"message","type","param","code":<status>}}.
func (e *Engine) writeError(w http.ResponseWriter, status int, typ, msg, param string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(e.errorBody(status, typ, msg, param))
}

// errorBody returns the dialect's error JSON (dialect.appendError).
func (e *Engine) errorBody(status int, typ, msg, param string) []byte {
	return e.wire.appendError(nil, status, typ, msg, param)
}

func appendNullableString(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return jsonenc.AppendString(b, s)
}

func (e *Engine) badRequest(w http.ResponseWriter, msg, param string) {
	e.writeError(w, e.wire.badStatus, e.wire.badType, msg, param)
}

// handleModels serves GET /v1/models.
func (e *Engine) handleModels(w http.ResponseWriter, r *http.Request) {
	owner := e.wire.owner
	created := e.created
	if e.wire.createdZero {
		created = 0
	}
	card := map[string]any{
		"id": e.cfg.ModelName, "object": "model", "created": created, "owned_by": owner,
		"root": e.cfg.ModelName, "parent": nil, "max_model_len": e.cfg.MaxModelLen,
		"permission": []any{map[string]any{
			"id": "modelperm-" + e.cfg.ModelName, "object": "model_permission", "created": created,
			"allow_create_engine": false, "allow_sampling": true, "allow_logprobs": true,
			"allow_search_indices": false, "allow_view": true, "allow_fine_tuning": false,
			"organization": "*", "group": nil, "is_blocking": false,
		}},
	}
	if !e.wire.modelLen {
		delete(card, "max_model_len")
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{card}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// handleHealth serves GET /health: 200 with an empty body (llama.cpp: {"status":"ok"}).
func (e *Engine) handleHealth(w http.ResponseWriter, r *http.Request) {
	if e.wire.healthBody != nil {
		writeJSON(w, http.StatusOK, e.wire.healthBody)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// handleMetrics serves GET /metrics in Prometheus text format.
func (e *Engine) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if e.wire.noMetrics {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	e.metrics.write(w, &e.wire, e.cfg.ModelName, e.cfg.TimeScale, e.wire.lateHistogram, e.wire.hideTruth)
}

// handleResetPrefixCache serves POST /reset_prefix_cache.
func (e *Engine) handleResetPrefixCache(w http.ResponseWriter, r *http.Request) {
	e.ResetPrefixCache()
	w.WriteHeader(http.StatusOK)
}

// handleTokenize serves POST /tokenize: {prompt, add_special_tokens, return_token_strs} →
// {count, max_model_len, tokens, token_strs} (vLLM).
func (e *Engine) handleTokenize(w http.ResponseWriter, r *http.Request) {
	if e.wire.tokenize == nil { // a server without the endpoint (ollama)
		e.writeError(w, http.StatusNotFound, "NotFoundError", "Not Found", "")
		return
	}
	var in struct {
		Prompt          *string `json:"prompt"`
		Content         *string `json:"content"` // llama.cpp
		Inputs          *string `json:"inputs"`  // TGI
		ReturnTokenStrs bool    `json:"return_token_strs"`
		WithPieces      bool    `json:"with_pieces"`
	}
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(body, &in)
	}
	if err != nil {
		e.badRequest(w, "invalid JSON body: "+err.Error(), "")
		return
	}
	text := ""
	switch {
	case in.Prompt != nil:
		text = *in.Prompt
	case in.Content != nil:
		text = *in.Content
	case in.Inputs != nil:
		text = *in.Inputs
	default:
		e.badRequest(w, "prompt is required", "prompt")
		return
	}
	ids := e.tok.Encode(text)
	if ids == nil {
		ids = []int32{}
	}
	writeJSON(w, http.StatusOK, e.wire.tokenize(e, ids, in.ReturnTokenStrs))
}

// handleDetokenize serves POST /detokenize: {tokens} → {prompt} (SGLang {text}, llama.cpp
// {content}).
func (e *Engine) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	if e.wire.tokenize == nil {
		e.writeError(w, http.StatusNotFound, "NotFoundError", "Not Found", "")
		return
	}
	var in struct {
		Tokens []int32 `json:"tokens"`
	}
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(body, &in)
	}
	if err != nil {
		e.badRequest(w, "invalid JSON body: "+err.Error(), "")
		return
	}
	text := e.tok.Decode(in.Tokens, true)
	writeJSON(w, http.StatusOK, map[string]string{e.wire.detokenizeKey: text})
}

// isJSONContentType accepts a missing Content-Type or any JSON media type.
func isJSONContentType(ct string) bool {
	return ct == "" || strings.Contains(strings.ToLower(ct), "json")
}
