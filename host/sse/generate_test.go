package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// In line mode every non-empty line is an event stamped with the read that delivered its
// newline: a line split over reads takes the later read's stamp, lines of one read share
// it, blank lines and "\r" go, ":" starts no comment.
func TestReaderLinesStamps(t *testing.T) {
	base := time.Unix(1000, 0)
	src := split(`{"a":1}`+"\n"+`{"b"`, `:2}`+"\r\n\n"+`{"c":3}`+"\n"+`:x`+"\n", `{"d":4}`+"\n")
	rd := NewReader(src, 0)
	rd.Lines, rd.Now = true, stepClock(base)
	type ev struct {
		data string
		ms   int
	}
	want := []ev{{`{"a":1}`, 1}, {`{"b":2}`, 2}, {`{"c":3}`, 2}, {`:x`, 2}, {`{"d":4}`, 3}}
	var got []ev
	for {
		e, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev{string(e.Data), int(e.At.Sub(base) / time.Millisecond)})
	}
	if len(got) != len(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d: %v, want %v", i, got[i], want[i])
		}
	}
}

// An unterminated last line is an event when it is JSON (a server that leaves out the last
// newline), a truncation otherwise.
func TestReaderLinesEnd(t *testing.T) {
	rd := NewReader(split(`{"a":1}`+"\n"+`{"done":true}`), 0)
	rd.Lines = true
	got, err := events(t, rd)
	if !errors.Is(err, io.EOF) || strings.Join(got, "|") != `{"a":1}|{"done":true}` {
		t.Errorf("unterminated JSON line: %q, %v", got, err)
	}
	rd = NewReader(split(`{"a":1}`+"\n"+`{"done":tr`), 0)
	rd.Lines = true
	got, err = events(t, rd)
	if !errors.Is(err, ErrTruncated) || len(got) != 1 {
		t.Errorf("cut line: %q, %v; want one event and ErrTruncated", got, err)
	}
}

// DecodeGenerate reads ollama's content objects, the final one with its metrics and usage,
// thinking text, and errors.
func TestDecodeGenerate(t *testing.T) {
	var d Decoder
	c, err := d.DecodeGenerate([]byte(`{"model":"m","created_at":"2025-01-01T00:00:00Z","response":" the \"x\"","done":false}`))
	if err != nil || len(c.Choices) != 1 || string(c.Choices[0].Text) != ` the "x"` || c.Choices[0].Finished || c.HasUsage || c.HasGenerate {
		t.Fatalf("content: %+v, %v", c, err)
	}
	c, err = d.DecodeGenerate([]byte(`{"model":"m","response":"","done":true,"done_reason":"length","total_duration":900000000,"load_duration":1000,` +
		`"prompt_eval_count":26,"prompt_eval_duration":130000000,"eval_count":48,"eval_duration":376000000}`))
	if err != nil {
		t.Fatal(err)
	}
	ch := c.Choices[0]
	want := GenerateMetrics{EvalCount: 48, EvalDuration: 376 * time.Millisecond, PromptEvalCount: 26, PromptEvalDuration: 130 * time.Millisecond,
		TotalDuration: 900 * time.Millisecond, LoadDuration: 1000}
	if ch.Text != nil || !ch.Finished || string(ch.FinishReason) != "length" || !c.HasGenerate || c.Generate != want {
		t.Errorf("final: %+v %+v", ch, c.Generate)
	}
	if !c.HasUsage || c.Usage != (Usage{PromptTokens: 26, CompletionTokens: 48, TotalTokens: 74}) {
		t.Errorf("final usage %+v", c.Usage)
	}
	if per, ok := c.Generate.PerForward(); !ok || per != 8*time.Millisecond {
		t.Errorf("per forward %v %v, want 376 ms / 47 = 8 ms", per, ok)
	}
	c, _ = d.DecodeGenerate([]byte(`{"response":"","thinking":"hmm","done":false}`))
	if string(c.Choices[0].Text) != "hmm" {
		t.Errorf("thinking text %q", c.Choices[0].Text)
	}
	c, err = d.DecodeGenerate([]byte(`{"error":"model \"x\" not found"}`))
	if err != nil || c.Err == nil || c.Err.Message != `model "x" not found` {
		t.Errorf("error object: %+v, %v", c.Err, err)
	}
	if _, err := d.DecodeGenerate([]byte(`[1]`)); !errors.Is(err, ErrMalformed) {
		t.Errorf("an array: %v", err)
	}
	if _, ok := (GenerateMetrics{EvalCount: 1, EvalDuration: time.Second}).PerForward(); ok {
		t.Error("one token spans no forward pass")
	}
}

// A whole /api/generate stream through the Demux: one sequence, a mark per content object
// at its line's arrival, the final object's eval_count as its exact count (per-choice
// usage, no per-chunk deltas), its metrics, and Done.
func TestDemuxGenerate(t *testing.T) {
	base := time.Unix(1000, 0)
	lines := []string{
		`{"model":"m","response":"Hel","done":false}`,
		`{"model":"m","response":"lo wor","done":false}`,
		`{"model":"m","response":"ld","done":false}`,
		`{"model":"m","response":"","done":true,"done_reason":"length","prompt_eval_count":7,"eval_count":4,"eval_duration":30000000}`,
	}
	rd := NewReader(split(lines[0]+"\n", lines[1]+"\n", lines[2]+"\n"+lines[3]+"\n"), 0)
	rd.Lines, rd.Now = true, stepClock(base)
	var d Demux
	d.Reset(base, 1)
	d.Generate, d.KeepText = true, true
	if err := d.Run(rd); err != nil {
		t.Fatal(err)
	}
	seqs := d.Finalize(4)
	if len(seqs) != 1 || !d.Done {
		t.Fatalf("%d sequences, done %v", len(seqs), d.Done)
	}
	s := seqs[0]
	if s.Marks.Len() != 3 || s.Marks.Get(0).At != time.Millisecond || s.Marks.Get(2).At != 3*time.Millisecond || s.Marks.Get(1).Tokens != -1 {
		t.Errorf("marks %+v", s.Marks)
	}
	if s.CompletionTokens != 4 || s.TokenSource != TokensChoiceUsage || string(s.Text) != "Hello world" || !s.Finished || s.FinishReason != "length" {
		t.Errorf("sequence %+v", s)
	}
	if !s.HasGenerate || s.Generate.EvalDuration != 30*time.Millisecond || s.Generate.PromptEvalCount != 7 {
		t.Errorf("metrics %+v", s.Generate)
	}
	if u, ok := d.RequestUsage(); !ok || u.PromptTokens != 7 || u.CompletionTokens != 4 {
		t.Errorf("request usage %+v %v", u, ok)
	}
	// EOS sampled at once: the final object alone, one token counted, no mark (its count is
	// a total, not a chunk's delta)
	rd = NewReader(split(`{"response":"","done":true,"done_reason":"stop","eval_count":1,"eval_duration":0}`+"\n"), 0)
	rd.Lines = true
	d.Reset(base, 1)
	if err := d.Run(rd); err != nil {
		t.Fatal(err)
	}
	if s := d.Finalize(4)[0]; s.Marks.Len() != 0 || s.CompletionTokens != 1 || s.FinishReason != "stop" {
		t.Errorf("EOS at once: %d marks, %d tokens, finish %q", s.Marks.Len(), s.CompletionTokens, s.FinishReason)
	}
	// no final object: unfinished
	rd = NewReader(split(lines[0]+"\n"+lines[1]+"\n"), 0)
	rd.Lines = true
	d.Reset(base, 1)
	if err := d.Run(rd); !errors.Is(err, ErrUnfinished) {
		t.Errorf("a stream without its final object: %v", err)
	}
}
