package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
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

// errorBody returns the dialect's error JSON (also used for in-stream errors).
func (e *Engine) errorBody(status int, typ, msg, param string) []byte {
	var b []byte
	switch e.cfg.Dialect {
	case DialectSGLang:
		b = append(b, `{"object":"error","message":`...)
		b = jsonenc.AppendString(b, msg)
		b = append(b, `,"type":`...)
		b = jsonenc.AppendString(b, typ)
		b = append(b, `,"param":`...)
		b = appendNullableString(b, param)
		b = append(b, `,"code":`...)
		b = strconv.AppendInt(b, int64(status), 10)
		b = append(b, '}')
	case DialectLlamaCpp:
		b = append(b, `{"error":{"code":`...)
		b = strconv.AppendInt(b, int64(status), 10)
		b = append(b, `,"message":`...)
		b = jsonenc.AppendString(b, msg)
		b = append(b, `,"type":`...)
		b = jsonenc.AppendString(b, typ)
		b = append(b, `}}`...)
	case DialectTGI:
		b = append(b, `{"error":`...)
		b = jsonenc.AppendString(b, msg)
		b = append(b, `,"error_type":`...)
		b = jsonenc.AppendString(b, typ)
		b = append(b, '}')
	default:
		b = append(b, `{"error":{"message":`...)
		b = jsonenc.AppendString(b, msg)
		b = append(b, `,"type":`...)
		b = jsonenc.AppendString(b, typ)
		b = append(b, `,"param":`...)
		b = appendNullableString(b, param)
		b = append(b, `,"code":`...)
		b = strconv.AppendInt(b, int64(status), 10)
		b = append(b, `}}`...)
	}
	return b
}

func appendNullableString(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return jsonenc.AppendString(b, s)
}

func (e *Engine) badRequest(w http.ResponseWriter, msg, param string) {
	typ := "BadRequestError"
	switch e.cfg.Dialect {
	case DialectLlamaCpp:
		typ = "invalid_request_error"
	case DialectTGI:
		typ = "validation"
	}
	status := http.StatusBadRequest
	if e.cfg.Dialect == DialectTGI {
		status = http.StatusUnprocessableEntity
	}
	e.writeError(w, status, typ, msg, param)
}

// handleModels serves GET /v1/models.
func (e *Engine) handleModels(w http.ResponseWriter, r *http.Request) {
	owner := map[string]string{DialectVLLM: "vllm", DialectSGLang: "sglang", DialectLlamaCpp: "llamacpp", DialectTGI: "tgi"}[e.cfg.Dialect]
	created := e.created
	if e.cfg.Dialect == DialectTGI {
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
	if e.cfg.Quirks.NoModelLen {
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
	if e.cfg.Dialect == DialectLlamaCpp {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		return
	}
	w.WriteHeader(http.StatusOK)
}

// handleMetrics serves GET /metrics in Prometheus text format.
func (e *Engine) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if e.cfg.Quirks.NoMetrics {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	e.metrics.write(w, e.cfg.Dialect, e.cfg.ModelName, e.cfg.TimeScale, e.cfg.Quirks.LateHistogram, e.cfg.Quirks.HideTruth)
}

// handleResetPrefixCache serves POST /reset_prefix_cache.
func (e *Engine) handleResetPrefixCache(w http.ResponseWriter, r *http.Request) {
	e.ResetPrefixCache()
	w.WriteHeader(http.StatusOK)
}

// handleTokenize serves POST /tokenize: {prompt, add_special_tokens, return_token_strs} →
// {count, max_model_len, tokens, token_strs} (vLLM).
func (e *Engine) handleTokenize(w http.ResponseWriter, r *http.Request) {
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
	switch e.cfg.Dialect {
	case DialectLlamaCpp:
		writeJSON(w, http.StatusOK, map[string]any{"tokens": ids})
	case DialectTGI:
		out := make([]map[string]any, len(ids))
		for i, id := range ids {
			out[i] = map[string]any{"id": id, "text": e.tok.Decode([]int32{id}, false), "start": 0, "stop": 0}
		}
		writeJSON(w, http.StatusOK, out)
	case DialectSGLang:
		writeJSON(w, http.StatusOK, map[string]any{"tokens": ids, "count": len(ids), "max_model_len": e.cfg.MaxModelLen})
	default:
		var strs any
		if in.ReturnTokenStrs {
			s := make([]string, len(ids))
			for i, id := range ids {
				s[i] = e.tok.Decode([]int32{id}, false)
			}
			strs = s
		}
		writeJSON(w, http.StatusOK, map[string]any{"count": len(ids), "max_model_len": e.cfg.MaxModelLen, "tokens": ids, "token_strs": strs})
	}
}

// handleDetokenize serves POST /detokenize: {tokens} → {prompt} (SGLang {text}, llama.cpp
// {content}).
func (e *Engine) handleDetokenize(w http.ResponseWriter, r *http.Request) {
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
	key := map[string]string{DialectSGLang: "text", DialectLlamaCpp: "content"}[e.cfg.Dialect]
	if key == "" {
		key = "prompt"
	}
	writeJSON(w, http.StatusOK, map[string]string{key: text})
}

// isJSONContentType accepts a missing Content-Type or any JSON media type.
func isJSONContentType(ct string) bool {
	return ct == "" || strings.Contains(strings.ToLower(ct), "json")
}
