// Package records is genload's per-request records file: one JSON Lines file per replay
// (genload replay) or run (genload run --records FILE.jsonl), with every request's send time,
// the arrival time and token count of every chunk, its token counts and its status — what a
// notebook loads to look at single requests.
//
// # Format (schema genload.records/v1)
//
// The first line is the header, every later line one record; lines are appended as requests
// finish (not in send order), each written whole with one write, so an interrupted or killed
// process leaves every record it finished. A reader skips nothing silently: a line that does
// not parse is an error with its line number.
//
//	{"type":"header","schema":"genload.records/v1","source":"replay","id":"…","genload":"…",
//	 "started":"2026-12-01T10:00:00.123456Z","target":"http://…","model":"…", …}
//	{"type":"request","index":7,"src":"trace.jsonl:8","scheduled_ms":1250.0,"sent_ms":1250.21,
//	 "lag_ms":0.21,"prompt_tokens":6758,"max_tokens":500,"status":200,"finish_reason":"length",
//	 "completion_tokens":500,"token_source":"usage","ttft_ms":41.3,"e2e_ms":2210.5,
//	 "chunks":[[1291.51,1],[1295.02,1],…]}
//
// Every time is in milliseconds (µs resolution) from the header's "started", the wall-clock
// time of the file's origin, taken with the monotonic clock in between: a record's sent_ms is
// when its request was written to the connection, each chunk [at_ms, tokens] when the chunk's
// bytes arrived and how many tokens it carried (−1 when the stream did not say: no per-chunk
// usage or logprobs), ttft_ms = first chunk − sent, e2e_ms = end of the stream − sent. A
// replay also gives scheduled_ms (when the schedule said to send) and lag_ms = sent − scheduled,
// the client's lag behind its schedule. A run gives, instead, the cell ("L=…,B=…"), the phase
// ("warmup", "measured", or "remeasured": an attempt of the measured requests that was sent
// again because the built-in engine ran off its plan), the request index within the cell's
// plan and the choice index within the request (array and n shapes carry several sequences
// per request: one record per sequence). The schema name changes when a field changes meaning; fields may be added.
package records

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"time"

	"github.com/genload/genload/host/recording"
)

// Schema names the records format.
const Schema = "genload.records/v1"

// Header is the first line of a records file.
type Header struct {
	Type   string `json:"type"` // "header"
	Schema string `json:"schema"`
	// Source is "replay" or "run"; ID the replay's or run's id.
	Source string `json:"source"`
	ID     string `json:"id"`
	// Genload is the version that wrote the file.
	Genload string `json:"genload"`
	// Started is the wall-clock time of the origin of every *_ms of the records.
	Started time.Time `json:"started"`
	// Target and Model are where the requests went.
	Target string `json:"target"`
	Model  string `json:"model,omitempty"`
	// Extra holds what the writer adds about itself (a replay's trace, window and speed).
	Extra map[string]any `json:"extra,omitempty"`
}

// Chunk is one token-bearing chunk: its arrival in ms from the origin and its tokens (−1:
// unknown).
type Chunk [2]float64

// Record is one request's sequence.
type Record struct {
	Type string `json:"type"` // "request"
	// Index numbers the records of a replay by their place in its schedule (0-based); a run's
	// by its order in the file.
	Index int `json:"index"`
	// Src is the trace record replayed ("file:line"); Cell, Phase, Request and Choice place a
	// run's sequence.
	Src     string `json:"src,omitempty"`
	Cell    string `json:"cell,omitempty"`
	Phase   string `json:"phase,omitempty"`
	Request int    `json:"request"`
	Choice  int    `json:"choice"`
	// ScheduledMs and LagMs are a replay's (nil in a run).
	ScheduledMs *float64 `json:"scheduled_ms,omitempty"`
	SentMs      float64  `json:"sent_ms"`
	LagMs       *float64 `json:"lag_ms,omitempty"`
	// ConnectMs is how long the request waited, after SentMs, for a new TCP connection to
	// open (nil when it went out on one already open).
	ConnectMs *float64 `json:"connect_ms,omitempty"`
	// PromptTokens is the prompt's length as sent; UsagePromptTokens and CachedTokens the
	// server's usage (nil when it sent none).
	PromptTokens      int  `json:"prompt_tokens"`
	UsagePromptTokens *int `json:"usage_prompt_tokens,omitempty"`
	CachedTokens      *int `json:"cached_tokens,omitempty"`
	// MaxTokens is the max_tokens sent (with ignore_eos).
	MaxTokens int `json:"max_tokens"`
	// Status is the HTTP status (0 when none arrived); Error the failure, "" on success.
	Status int    `json:"status"`
	Error  string `json:"error,omitempty"`
	// FinishReason, CompletionTokens and TokenSource are the sequence's (host/sse).
	FinishReason     string `json:"finish_reason,omitempty"`
	CompletionTokens int    `json:"completion_tokens"`
	TokenSource      string `json:"token_source,omitempty"`
	// TTFTMs and E2EMs: first chunk − sent, end of stream − sent (nil without a chunk / end).
	TTFTMs *float64 `json:"ttft_ms,omitempty"`
	E2EMs  *float64 `json:"e2e_ms,omitempty"`
	Chunks []Chunk  `json:"chunks"`
}

// OK reports a sequence that succeeded and generated exactly its max_tokens.
func (r *Record) OK() bool {
	return r.Error == "" && r.Status == 200 && r.CompletionTokens == r.MaxTokens
}

// Ms converts a duration to float milliseconds rounded to the µs.
func Ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

func msPtr(d time.Duration) *float64 { v := Ms(d); return &v }

// FromResult returns one record per sequence of res (a recording of dispatch), with times from
// origin. prompts are the prompts' lengths as sent (by prompt index); place fills each
// record's Index, Src, Cell, Phase and replay fields (it may be nil).
func FromResult(res *recording.Result, origin time.Time, prompts []int, place func(r *Record)) []Record {
	base := res.Start.Sub(origin)
	out := make([]Record, 0, len(res.Sequences))
	for _, s := range res.Sequences {
		q := &res.Requests[s.Request]
		r := Record{Type: "request", Request: s.Request, Choice: s.Index, MaxTokens: res.MaxTokens,
			SentMs: Ms(base + q.Sent), Status: q.Status, Error: q.Error,
			FinishReason: s.FinishReason, CompletionTokens: s.CompletionTokens, TokenSource: string(s.TokenSource)}
		if q.Err != nil && r.Error == "" {
			r.Error = q.Err.Error()
		}
		if s.Prompt >= 0 && s.Prompt < len(prompts) {
			r.PromptTokens = prompts[s.Prompt]
		}
		if q.HasUsage {
			p := q.Usage.PromptTokens
			r.UsagePromptTokens = &p
			if q.Usage.HasCached {
				c := q.Usage.CachedTokens
				r.CachedTokens = &c
			}
		}
		marks := s.Marks.Slice()
		r.Chunks = make([]Chunk, len(marks))
		for i, m := range marks {
			r.Chunks[i] = Chunk{Ms(base + m.At), float64(m.Tokens)}
		}
		if len(marks) > 0 {
			r.TTFTMs = msPtr(marks[0].At - q.Sent)
		}
		if q.End > 0 {
			r.E2EMs = msPtr(q.End - q.Sent)
		}
		if q.Connect > 0 {
			r.ConnectMs = msPtr(q.Connect)
		}
		if place != nil {
			place(&r)
		}
		out = append(out, r)
	}
	return out
}

// Writer appends records to a records file. It is safe for concurrent use: each record is
// one write(2) of one line under a lock; the file is fsynced at most once a second and at
// Close, so a killed process loses no finished record and a crashed machine at most the last
// second's.
type Writer struct {
	mu       sync.Mutex
	f        *os.File
	path     string
	lastSync time.Time
	n        int
	err      error
}

// Create creates path (failing if it exists: a records file is never overwritten) and writes
// the header (Type and Schema are set here).
func Create(path string, h Header) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("records: %w", err)
	}
	h.Type, h.Schema = "header", Schema
	w := &Writer{f: f, path: path, lastSync: time.Now()}
	if err := w.line(h); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// Path is the file written.
func (w *Writer) Path() string { return w.path }

// Count is the records written.
func (w *Writer) Count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

func (w *Writer) line(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("records: encode: %w", err)
	}
	b = append(b, '\n')
	if _, err := w.f.Write(b); err != nil {
		return fmt.Errorf("records: write %s: %w", w.path, err)
	}
	return nil
}

// Write appends records (Type set here). The first error is kept and returned by every later
// call and by Close.
func (w *Writer) Write(rs ...Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	for i := range rs {
		rs[i].Type = "request"
		if err := w.line(rs[i]); err != nil {
			w.err = err
			return err
		}
		w.n++
	}
	if time.Since(w.lastSync) > time.Second {
		w.lastSync = time.Now()
		if err := w.f.Sync(); err != nil {
			w.err = fmt.Errorf("records: fsync %s: %w", w.path, err)
		}
	}
	return w.err
}

// Close fsyncs and closes the file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return w.err
	}
	err := w.f.Sync()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.f = nil
	if w.err == nil && err != nil {
		w.err = fmt.Errorf("records: close %s: %w", w.path, err)
	}
	return w.err
}

// File is a records file read back.
type File struct {
	Header  Header
	Records []Record
}

// Read reads a records file. Errors name the file and line: no header, another schema, a line
// that does not parse. A last line cut short (a process killed mid-write) is an error too.
func Read(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("records: %w", err)
	}
	defer f.Close()
	return Parse(f, path)
}

// Parse reads a records file from r; name stands for it in errors.
func Parse(r io.Reader, name string) (*File, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 256<<20)
	out := &File{}
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if line == 1 {
			if err := json.Unmarshal(b, &out.Header); err != nil || out.Header.Type != "header" {
				return nil, fmt.Errorf("%s:1: not a records header (want {\"type\":\"header\",\"schema\":%q,…})", name, Schema)
			}
			if out.Header.Schema != Schema {
				return nil, fmt.Errorf("%s:1: schema %q, want %q", name, out.Header.Schema, Schema)
			}
			continue
		}
		var rec Record
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, line, err)
		}
		if rec.Type != "request" {
			return nil, fmt.Errorf("%s:%d: record type %q, want \"request\"", name, line, rec.Type)
		}
		out.Records = append(out.Records, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	if line == 0 {
		return nil, errors.New(name + ": empty records file")
	}
	return out, nil
}
