package sse

import (
	"fmt"
	"time"

	"github.com/valyala/fastjson"
)

// ollama's native POST /api/generate streams one JSON object per line (Reader.Lines), of one
// sequence:
//
//	{"model":"m","created_at":"…","response":"The","done":false}
//	…
//	{"model":"m","created_at":"…","response":"","done":true,"done_reason":"length",
//	 "total_duration":…,"load_duration":…,"prompt_eval_count":26,"prompt_eval_duration":…,
//	 "eval_count":48,"eval_duration":…}
//
// (durations in nanoseconds: Go's time.Duration in ollama's api.Metrics), or {"error":"…"}
// when the request fails after the stream started. Its server (server/routes.go,
// GenerateHandler) copies the runner's counts: eval_count is the sequence's decoded tokens
// with the first one included (and the EOS a "stop" sampled, which is not sent), and
// eval_duration is timed from the first token's sampling to the last — as one span in older
// runners (runner/llamarunner: time.Since(startGenerationTime)), as the sum of the forward
// passes after the first in newer ones (generationDuration, the first pass counting as the
// prompt's) — so it spans eval_count − 1 forward passes either way.

// GenerateMetrics is ollama's own account of one sequence: the api.Metrics of the final
// object of POST /api/generate. Counts in tokens; durations as ollama sends them (ns).
type GenerateMetrics struct {
	// EvalCount is eval_count: the tokens decoded, the first included; EvalDuration is
	// eval_duration, over the EvalCount − 1 forward passes after the first token.
	EvalCount    int           `json:"eval_count"`
	EvalDuration time.Duration `json:"eval_duration_ns"`
	// PromptEvalCount is prompt_eval_count: the prompt's tokens as the server tokenized and
	// kept them (its own BOS included, after any truncation to its context), cached ones
	// included; PromptEvalDuration is prompt_eval_duration.
	PromptEvalCount    int           `json:"prompt_eval_count"`
	PromptEvalDuration time.Duration `json:"prompt_eval_duration_ns"`
	// TotalDuration is total_duration (from the request's arrival to its end, server clock)
	// and LoadDuration load_duration (loading the model for it, 0 when it was loaded).
	TotalDuration time.Duration `json:"total_duration_ns"`
	LoadDuration  time.Duration `json:"load_duration_ns"`
}

// PerForward returns the server's time per decode forward pass: EvalDuration over the
// EvalCount − 1 forward passes it spans (see the comment above); ok is false when the
// sequence decoded fewer than two tokens or the duration is not positive.
func (m GenerateMetrics) PerForward() (time.Duration, bool) {
	if m.EvalCount < 2 || m.EvalDuration <= 0 {
		return 0, false
	}
	return m.EvalDuration / time.Duration(m.EvalCount-1), true
}

// DecodeGenerate parses one object of ollama's /api/generate stream into the Chunk of
// choice 0: "response" (with "thinking" before it, the text a thinking model's parser split
// off) is the choice's text; "done": true finishes it with "done_reason" ("" when the server
// sends none) and, when "eval_count" is a number, carries the counts and durations
// (Chunk.Generate) and the sequence's usage (prompt_eval_count, eval_count); a non-null
// "error" is Chunk.Err. The error is ErrMalformed for data that is not a JSON object. The
// Chunk and its slices are valid until the next Decode or DecodeGenerate.
func (d *Decoder) DecodeGenerate(data []byte) (*Chunk, error) {
	d.resetChunk()
	c := &d.chunk
	v, err := d.p.ParseBytes(data)
	if err != nil {
		return nil, fmt.Errorf("sse: %w %q: %w", ErrMalformed, head(data), err)
	}
	if v.Type() != fastjson.TypeObject {
		return nil, fmt.Errorf("sse: %w %q: not a JSON object", ErrMalformed, head(data))
	}
	if ev := v.Get("error"); ev != nil && ev.Type() != fastjson.TypeNull {
		c.Err = serverError(v, ev)
		return c, nil
	}
	d.buf = d.buf[:0]
	for _, k := range [...]string{"thinking", "response"} {
		if t := v.Get(k); t != nil && t.Type() == fastjson.TypeString {
			sb, _ := t.StringBytes()
			d.buf = append(d.buf, sb...)
		}
	}
	ch := Choice{Text: d.buf}
	if len(d.buf) == 0 {
		ch.Text = nil
	}
	if dv := v.Get("done"); dv != nil && dv.Type() == fastjson.TypeTrue {
		ch.Finished = true
		if r := v.Get("done_reason"); r != nil && r.Type() == fastjson.TypeString {
			ch.FinishReason, _ = r.StringBytes()
		}
		if n := v.Get("eval_count"); n != nil && n.Type() == fastjson.TypeNumber {
			m := GenerateMetrics{
				EvalCount: n.GetInt(), EvalDuration: nsField(v, "eval_duration"),
				PromptEvalCount: v.GetInt("prompt_eval_count"), PromptEvalDuration: nsField(v, "prompt_eval_duration"),
				TotalDuration: nsField(v, "total_duration"), LoadDuration: nsField(v, "load_duration"),
			}
			c.Generate, c.HasGenerate = m, true
			c.Usage = Usage{PromptTokens: m.PromptEvalCount, CompletionTokens: m.EvalCount, TotalTokens: m.PromptEvalCount + m.EvalCount}
			c.HasUsage = true
		}
	}
	c.Choices = append(c.Choices, ch)
	return c, nil
}

// nsField returns key as a duration in nanoseconds when it is a JSON number, else 0.
func nsField(v *fastjson.Value, key string) time.Duration {
	f := v.Get(key)
	if f == nil || f.Type() != fastjson.TypeNumber {
		return 0
	}
	return time.Duration(f.GetInt64())
}
