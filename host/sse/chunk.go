package sse

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/valyala/fastjson"
)

// ErrMalformed wraps every chunk decoding error (not JSON, wrong field types, index out
// of range). Compare with errors.Is.
var ErrMalformed = errors.New("malformed chunk")

// Usage is a server's token accounting (the OpenAI `usage` object), in tokens.
type Usage struct {
	// PromptTokens is usage.prompt_tokens.
	PromptTokens int `json:"prompt_tokens"`
	// CompletionTokens is usage.completion_tokens.
	CompletionTokens int `json:"completion_tokens"`
	// TotalTokens is usage.total_tokens.
	TotalTokens int `json:"total_tokens"`
	// CachedTokens is usage.prompt_tokens_details.cached_tokens (prefix-cache hits);
	// valid only when HasCached.
	CachedTokens int `json:"cached_tokens"`
	// HasCached reports that prompt_tokens_details.cached_tokens was a number (it may be
	// missing, null or an object without it).
	HasCached bool `json:"has_cached"`
}

// Add returns the field-wise sum of u and v; HasCached is true if either has it.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + v.PromptTokens,
		CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		TotalTokens:      u.TotalTokens + v.TotalTokens,
		CachedTokens:     u.CachedTokens + v.CachedTokens,
		HasCached:        u.HasCached || v.HasCached,
	}
}

// ServerError is an error reported by the server inside a 200 stream (`{"error":...}` as
// the event's top-level key) or in an error body. It accepts the four shapes of the wire
// reference: vLLM {message,type,param,code:int}, SGLang {object,message,type,param,code},
// llama.cpp {code,message,type}, TGI {message,http_status_code} (and TGI's non-stream
// {"error":"…","error_type":…}, and the older flat {"object":"error","message":…}).
type ServerError struct {
	// Message is error.message, else the top-level message, else error when it is a
	// plain string, else the raw JSON of error.
	Message string `json:"message"`
	// Type is error.type (or TGI's top-level error_type); may be empty.
	Type string `json:"type,omitempty"`
	// Code is the numeric error.code or error.http_status_code (TGI); 0 when absent or
	// not a number.
	Code int `json:"code,omitempty"`
}

// Error returns "server error: <message>" with the type and code when known.
func (e *ServerError) Error() string {
	s := "server error: " + e.Message
	if e.Type != "" || e.Code != 0 {
		s += " ("
		if e.Type != "" {
			s += e.Type
		}
		if e.Code != 0 {
			if e.Type != "" {
				s += ", "
			}
			s += "code " + strconv.Itoa(e.Code)
		}
		s += ")"
	}
	return s
}

// Choice is one element of a chunk's choices array.
type Choice struct {
	// Index is choices[].index: prompt·n + c in vLLM, SGLang, llama.cpp and TGI.
	Index int
	// Text is the unescaped text delta (nil when text is absent or not a string); it
	// aliases the Decoder's memory and is valid until the next Decode.
	Text []byte
	// FinishReason is the finish_reason string when Finished ("stop", "length", "abort",
	// "content_filter", "eos_token", "stop_sequence", …); aliases the Decoder's memory.
	FinishReason []byte
	// Finished reports a non-null, non-empty finish_reason (TGI sends "" on ordinary
	// chunks).
	Finished bool
	// Logprobs is the number of generated tokens the choice's logprobs object lists, valid
	// when HasLogprobs: the length of logprobs.tokens (the completions shape of vLLM and
	// SGLang: one entry per token in this chunk, beside token_logprobs, top_logprobs and
	// text_offset), else of logprobs.content (llama.cpp's per-token objects). HasLogprobs
	// is false when logprobs is absent, null, not an object, or has neither array.
	Logprobs    int
	HasLogprobs bool
}

// Chunk is one decoded completions event. All slices alias the Decoder and are valid
// until its next Decode.
type Chunk struct {
	// Done reports the `[DONE]` sentinel; no other field is set then.
	Done bool
	// Err is set when the event's JSON carries a top-level `error` (or is a flat
	// {"object":"error"} body); the stream must then be treated as failed.
	Err *ServerError
	// Choices are the chunk's choices; empty for a usage-only chunk (`"choices":[]`).
	Choices []Choice
	// Usage is the chunk's usage object, valid when HasUsage (usage present and not null).
	Usage    Usage
	HasUsage bool
	// Timings is llama.cpp's "timings" object (on a task's final chunk), valid when
	// HasTimings.
	Timings    Timings
	HasTimings bool
	// Generate is ollama's own account of the sequence on the final object of its native
	// API (Decoder.DecodeGenerate), valid when HasGenerate.
	Generate    GenerateMetrics
	HasGenerate bool
}

// Timings is the server's own account of one sequence's decoding (llama.cpp's "timings":
// predicted_n tokens decoded, the first included, in predicted_ms from the first token's
// sampling to the last's).
type Timings struct {
	PredictedN  int     `json:"predicted_n"`
	PredictedMs float64 `json:"predicted_ms"`
}

// Decoder decodes completion chunk events, reusing its memory and Chunk: after the first
// few calls it does not allocate (except for a ServerError). Ordinary chunks go through a
// single-pass scanner that reads only the fields of Chunk and skips the rest
// (chunkscan.go); anything it is not certain of (server errors, duplicate or escaped keys,
// unusual numbers, malformed JSON) is decoded with fastjson, whose result the scanner
// reproduces exactly. A Decoder is not safe for concurrent use.
type Decoder struct {
	p     fastjson.Parser
	chunk Chunk
	// buf holds the scanner's unescaped texts and finish reasons (cap ≥ the largest event).
	buf []byte

	// one-pass key visitors (method values made once, so Visit does not allocate)
	topFn, choiceFn func([]byte, *fastjson.Value)
	ev, cv, uv, tmv *fastjson.Value
	objErr          bool
	iv, tv, fv, lv  *fastjson.Value
}

func (d *Decoder) onTop(k []byte, x *fastjson.Value) {
	switch string(k) {
	case "choices":
		if d.cv == nil {
			d.cv = x
		}
	case "usage":
		if d.uv == nil {
			d.uv = x
		}
	case "timings":
		if d.tmv == nil {
			d.tmv = x
		}
	case "error":
		if d.ev == nil {
			d.ev = x
		}
	case "object":
		if x.Type() != fastjson.TypeString {
			return
		}
		if sb, err := x.StringBytes(); err == nil && string(sb) == "error" {
			d.objErr = true
		}
	}
}

func (d *Decoder) onChoice(k []byte, x *fastjson.Value) {
	switch string(k) {
	case "index":
		if d.iv == nil {
			d.iv = x
		}
	case "text":
		if d.tv == nil {
			d.tv = x
		}
	case "finish_reason":
		if d.fv == nil {
			d.fv = x
		}
	case "logprobs":
		if d.lv == nil {
			d.lv = x
		}
	}
}

// logprobsCount returns the length of lv.tokens, else of lv.content, when lv is an
// object holding that array (Choice.Logprobs); ok is false otherwise.
func logprobsCount(lv *fastjson.Value) (n int, ok bool) {
	if lv == nil || lv.Type() != fastjson.TypeObject {
		return 0, false
	}
	for _, k := range [...]string{"tokens", "content"} {
		if a := lv.Get(k); a != nil && a.Type() == fastjson.TypeArray {
			arr, _ := a.Array()
			return len(arr), true
		}
	}
	return 0, false
}

var (
	doneSentinel = []byte("[DONE]")
)

// isDone reports the `[DONE]` sentinel, with any spaces or tabs around it: a server that
// writes `data:  [DONE]` (two spaces; the SSE field separator removes one) ends its stream
// as one that writes `data: [DONE]`.
func isDone(data []byte) bool {
	if len(data) > len(doneSentinel)+8 || len(data) < len(doneSentinel) {
		return false
	}
	return string(bytes.Trim(data, " \t")) == "[DONE]"
}

// Decode parses one event's data. It returns an error (naming the first bytes of the
// data) when the data is neither `[DONE]` nor a JSON object, or when a field has the
// wrong type (choices not an array, index not a non-negative integer). The Chunk and its
// slices are valid until the next Decode; data is not retained or modified.
func (d *Decoder) Decode(data []byte) (*Chunk, error) {
	d.resetChunk()
	if isDone(data) {
		d.chunk.Done = true
		return &d.chunk, nil
	}
	if d.scanChunk(data) {
		return &d.chunk, nil
	}
	d.resetChunk()
	return d.decodeFastjson(data)
}

func (d *Decoder) resetChunk() {
	c := &d.chunk
	c.Done, c.Err, c.HasUsage, c.HasTimings, c.HasGenerate = false, nil, false, false, false
	c.Usage, c.Timings, c.Generate = Usage{}, Timings{}, GenerateMetrics{}
	c.Choices = c.Choices[:0]
}

// decodeFastjson is Decode's reference path for a non-[DONE] event (reset chunk): fastjson
// parses the whole event, then the fields of Chunk are read from it.
func (d *Decoder) decodeFastjson(data []byte) (*Chunk, error) {
	c := &d.chunk
	v, err := d.p.ParseBytes(data)
	if err != nil {
		return nil, fmt.Errorf("sse: %w %q: %w", ErrMalformed, head(data), err)
	}
	o, err := v.Object()
	if err != nil {
		return nil, fmt.Errorf("sse: %w %q: not a JSON object", ErrMalformed, head(data))
	}
	if d.topFn == nil {
		d.topFn, d.choiceFn = d.onTop, d.onChoice
	}
	d.ev, d.cv, d.uv, d.tmv, d.objErr = nil, nil, nil, nil, false
	// One pass over the keys (first occurrence wins, as with Get).
	o.Visit(d.topFn)
	ev, cv, uv, objErr := d.ev, d.cv, d.uv, d.objErr
	if ev != nil && ev.Type() != fastjson.TypeNull {
		c.Err = serverError(v, ev)
		return c, nil
	}
	if objErr {
		c.Err = serverError(v, nil)
		return c, nil
	}
	if cv != nil && cv.Type() != fastjson.TypeNull {
		arr, err := cv.Array()
		if err != nil {
			return nil, fmt.Errorf("sse: %w %q: choices: %w", ErrMalformed, head(data), err)
		}
		for _, ch := range arr {
			co, err := ch.Object()
			if err != nil {
				return nil, fmt.Errorf("sse: %w %q: choices[] is not an object", ErrMalformed, head(data))
			}
			d.iv, d.tv, d.fv, d.lv = nil, nil, nil, nil
			co.Visit(d.choiceFn)
			iv, tv, fv := d.iv, d.tv, d.fv
			var choice Choice
			if iv != nil {
				if iv.Type() != fastjson.TypeNumber {
					return nil, fmt.Errorf("sse: %w %q: choices[].index is not a number", ErrMalformed, head(data))
				}
				choice.Index, err = iv.Int()
				if err != nil || choice.Index < 0 {
					return nil, fmt.Errorf("sse: %w %q: choices[].index is not a non-negative integer", ErrMalformed, head(data))
				}
			}
			if tv != nil && tv.Type() == fastjson.TypeString {
				choice.Text, _ = tv.StringBytes()
			}
			if fv != nil && fv.Type() == fastjson.TypeString {
				if fr, _ := fv.StringBytes(); len(fr) > 0 {
					choice.FinishReason, choice.Finished = fr, true
				}
			}
			choice.Logprobs, choice.HasLogprobs = logprobsCount(d.lv)
			c.Choices = append(c.Choices, choice)
		}
	}
	if uv != nil && uv.Type() == fastjson.TypeObject {
		c.HasUsage = true
		c.Usage = Usage{
			PromptTokens:     uv.GetInt("prompt_tokens"),
			CompletionTokens: uv.GetInt("completion_tokens"),
			TotalTokens:      uv.GetInt("total_tokens"),
		}
		if ct := uv.Get("prompt_tokens_details", "cached_tokens"); ct != nil && ct.Type() == fastjson.TypeNumber {
			c.Usage.CachedTokens, c.Usage.HasCached = ct.GetInt(), true
		}
	}
	if tm := d.tmv; tm != nil && tm.Type() == fastjson.TypeObject {
		if n, ms := tm.Get("predicted_n"), tm.Get("predicted_ms"); n != nil && ms != nil && n.Type() == fastjson.TypeNumber && ms.Type() == fastjson.TypeNumber {
			c.Timings, c.HasTimings = Timings{PredictedN: n.GetInt(), PredictedMs: ms.GetFloat64()}, true
		}
	}
	return c, nil
}

// ParseError extracts a ServerError from an HTTP error body (any of the shapes accepted
// by Decode, or plain text). It returns the body itself (trimmed to 512 bytes) as the
// message when the body is not JSON or names no message.
func ParseError(body []byte) *ServerError {
	var p fastjson.Parser
	v, err := p.ParseBytes(body)
	if err == nil && v.Type() == fastjson.TypeObject {
		if e := serverError(v, v.Get("error")); e.Message != "" {
			return e
		}
	}
	return &ServerError{Message: string(head512(body))}
}

// serverError reads the message in the order error.message, message, error (string).
func serverError(top, ev *fastjson.Value) *ServerError {
	e := &ServerError{}
	if ev != nil && ev.Type() == fastjson.TypeObject {
		e.Message = string(ev.GetStringBytes("message"))
		e.Type = string(ev.GetStringBytes("type"))
		e.Code = intField(ev, "code")
		if e.Code == 0 {
			e.Code = intField(ev, "http_status_code")
		}
	}
	if e.Message == "" {
		e.Message = string(top.GetStringBytes("message"))
	}
	if e.Message == "" && ev != nil && ev.Type() == fastjson.TypeString {
		e.Message = string(ev.GetStringBytes())
	}
	if e.Type == "" {
		e.Type = string(top.GetStringBytes("error_type"))
		if e.Type == "" {
			e.Type = string(top.GetStringBytes("type"))
		}
	}
	if e.Code == 0 {
		e.Code = intField(top, "code")
	}
	if e.Message == "" && ev != nil {
		e.Message = ev.String()
	}
	return e
}

// intField returns key as an int when it is a JSON number or a numeric string, else 0.
func intField(v *fastjson.Value, key string) int {
	f := v.Get(key)
	if f == nil {
		return 0
	}
	switch f.Type() {
	case fastjson.TypeNumber:
		return f.GetInt()
	case fastjson.TypeString:
		n, _ := strconv.Atoi(string(f.GetStringBytes()))
		return n
	}
	return 0
}

func head(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

func head512(b []byte) []byte {
	if len(b) > 512 {
		return b[:512]
	}
	return b
}
