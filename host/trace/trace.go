// Package trace reads request logs: one record per request served in production, with its
// arrival time, prompt (input) length, output length, prefix blocks and group. It is the first
// stage of the traffic loop — host/lengthfit fits the lengths, host/replay sends the requests
// again — and reads two formats:
//
//   - JSON Lines: one object per line, fields named by [Fields] (blank lines skipped). The
//     default names are those of the Mooncake trace format ("timestamp" in ms, "input_length",
//     "output_length", "hash_ids"), so such a file is read with no option.
//   - CSV: a header row naming the columns, then one row per request (RFC 4180, via
//     encoding/csv). Prefix blocks, when a column holds them, are integers separated by
//     spaces, commas or semicolons, optionally in brackets ("[0, 1, 2]").
//
// A records file of genload (host/records, schema genload.records/v1: what genload replay and
// genload run --records write) is JSON Lines too: it is recognised by its header line, which
// is skipped, and its fields are then the defaults: prompt_tokens (the prompt sent),
// max_tokens (the output asked for), and the arrival time scheduled_ms of a replay's records
// or sent_ms of a run's (milliseconds from the file's origin); it has no prefix blocks. A
// field named explicitly keeps its name.
//
// Every value is checked where it is read: an error names the file, the line and the field
// (`trace.csv:12: column "input_length": want an integer number of tokens ≥ 1, got "abc"`),
// and a missing field the command-line flag that names another (--input, --output, --time,
// --group: genload lengths fit and genload replay call them so). Nothing is skipped silently;
// a file with no request is an error.
package trace

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/genload/genload/host/records"
)

// Request is one request of a log. Lengths are in tokens.
type Request struct {
	// Src is where the record is: "file:line" (1-based; a CSV row's line).
	Src string
	// Arrival is the request's arrival time from the log's origin (its time field, scaled by
	// Fields.TimeUnit); 0 when the log has no time field.
	Arrival time.Duration
	// Input is the prompt length (≥ 1).
	Input int
	// Output is the generated length (≥ 0; 0 when the log has no output field).
	Output int
	// Hashes are the prompt's prefix blocks, in order, each standing for BlockTokens tokens
	// (the last block may be partial): two requests whose first j hashes are equal share their
	// first j blocks of prompt. Nil when the log has no such field.
	Hashes []int64
	// Group is the value of the group field ("" when there is none), e.g. a deployment or a
	// model name.
	Group string
}

// BlockTokens is the size of a prefix block of Request.Hashes in tokens (the Mooncake trace's).
const BlockTokens = 512

// Fields names the fields (JSON Lines) or columns (CSV) read. An empty name takes the
// default; "-" means the log has no such field.
type Fields struct {
	// Input is the prompt length's field. Default "input_length". Required.
	Input string
	// Output is the output length's field. Default "output_length"; optional (absent: 0).
	Output string
	// Time is the arrival time's field. Default "timestamp"; optional (absent: 0).
	Time string
	// TimeUnit is the unit of the time field. Default time.Millisecond.
	TimeUnit time.Duration
	// Hashes is the prefix blocks' field. Default "hash_ids"; optional.
	Hashes string
	// Group is the group field. Default "" (no group); when named it is required, and not
	// empty, in every record.
	Group string
	// RequireTime and RequireOutput make the time and output fields required in every record
	// (a replay needs both): a log without one is an error naming the first record's
	// file:line and the field, not a log of arrivals at 0 or of empty outputs.
	RequireTime, RequireOutput bool
}

func (f Fields) withDefaults() Fields {
	def := func(s *string, d string) {
		if *s == "" {
			*s = d
		}
	}
	def(&f.Input, "input_length")
	def(&f.Output, "output_length")
	def(&f.Time, "timestamp")
	def(&f.Hashes, "hash_ids")
	if f.TimeUnit <= 0 {
		f.TimeUnit = time.Millisecond
	}
	return f
}

// withRecordDefaults is f with the defaults of a records file (see the package
// documentation) for the fields f leaves unnamed; source is the header's ("replay", "run").
func (f Fields) withRecordDefaults(source string) Fields {
	def := func(s *string, d string) {
		if *s == "" {
			*s = d
		}
	}
	if f.Time == "" {
		f.TimeUnit = time.Millisecond
	}
	def(&f.Input, "prompt_tokens")
	def(&f.Output, "max_tokens")
	if source == "replay" {
		def(&f.Time, "scheduled_ms")
	} else {
		def(&f.Time, "sent_ms")
	}
	def(&f.Hashes, "-")
	return f.withDefaults()
}

// Formats of a log.
const (
	FormatJSONL = "jsonl"
	FormatCSV   = "csv"
)

// Trace is a log read: its requests in file order.
type Trace struct {
	// Path is the file read; Format FormatJSONL or FormatCSV.
	Path, Format string
	// Fields are the names used (defaults filled in).
	Fields Fields
	// HasTime, HasOutput, HasHashes and HasGroup report which optional fields the log holds
	// (a field is held when every record has it; a field some records lack is an error).
	HasTime, HasOutput, HasHashes, HasGroup bool
	Requests                                []Request
	// Records is the header's source ("replay" or "run") when the log is a records file
	// (host/records), "" otherwise.
	Records string
	// Warmups counts the records of a run's records file left out as warmup requests
	// (phase "warmup": the prompts sent again before their cell, for one token each), which
	// are not traffic: Requests holds the measured ones.
	Warmups int
	// given are the fields as the caller named them, before the defaults.
	given Fields
}

// Read reads the log at path. format is FormatJSONL, FormatCSV or "" (by the file's extension:
// .csv is CSV, .jsonl/.json/.ndjson JSON Lines; otherwise a first non-blank byte '{' means
// JSON Lines). Errors name the file and line.
func Read(path, format string, f Fields) (*Trace, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer fh.Close()
	br := bufio.NewReaderSize(fh, 1<<16)
	if format == "" {
		switch strings.ToLower(filepath.Ext(path)) {
		case ".csv":
			format = FormatCSV
		case ".jsonl", ".json", ".ndjson":
			format = FormatJSONL
		default:
			format = FormatCSV
			for {
				b, err := br.Peek(1)
				if err != nil {
					break
				}
				if b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r' {
					_, _ = br.ReadByte()
					continue
				}
				if b[0] == '{' {
					format = FormatJSONL
				}
				break
			}
		}
	}
	return Parse(br, path, format, f)
}

// Parse reads a log from r; name stands for the file in errors. See [Read].
func Parse(r io.Reader, name, format string, f Fields) (*Trace, error) {
	t := &Trace{Path: name, Format: format, Fields: f.withDefaults(), given: f}
	for _, c := range []struct {
		need       bool
		name, what string
	}{{f.RequireTime, t.Fields.Time, "--time"}, {f.RequireOutput, t.Fields.Output, "--output"}} {
		if c.need && c.name == "-" {
			return nil, fmt.Errorf("trace %s: %s -: this command needs the field, name it", name, c.what)
		}
	}
	var err error
	switch format {
	case FormatJSONL:
		err = t.readJSONL(r)
	case FormatCSV:
		err = t.readCSV(r)
	default:
		return nil, fmt.Errorf("trace %s: format %q: want %q or %q", name, format, FormatJSONL, FormatCSV)
	}
	if err != nil {
		return nil, err
	}
	if len(t.Requests) == 0 {
		return nil, fmt.Errorf("trace %s: no requests (an empty log, or only a header)", name)
	}
	return t, nil
}

// presence tracks whether an optional field is in every record.
type presence struct {
	name      string
	seen, not int
	firstNot  string
}

func (p *presence) mark(ok bool, src string) {
	if ok {
		p.seen++
		return
	}
	if p.not == 0 {
		p.firstNot = src
	}
	p.not++
}

// held reports whether every record had the field; an error when only some did.
func (p *presence) held(file string) (bool, error) {
	if p.seen > 0 && p.not > 0 {
		return false, fmt.Errorf("%s: field %q is missing (first at %s: %d of %d records lack it), though other records have it",
			file, p.name, p.firstNot, p.not, p.seen+p.not)
	}
	return p.seen > 0, nil
}

// recordsHeader reports whether obj is the header line of a records file (host/records); an
// error for a header of another schema.
func recordsHeader(obj map[string]json.RawMessage, src string) (source string, ok bool, err error) {
	var typ, schema string
	if json.Unmarshal(obj["type"], &typ) != nil || typ != "header" {
		return "", false, nil
	}
	if json.Unmarshal(obj["schema"], &schema); schema != records.Schema {
		return "", false, fmt.Errorf("%s: a header of schema %q: genload reads records files of schema %q", src, schema, records.Schema)
	}
	_ = json.Unmarshal(obj["source"], &source)
	return source, true, nil
}

// readJSONL reads a JSON Lines log: one object per non-blank line, the first possibly a
// records file's header (which sets the records' field names), each other one request
// (jsonRequest). It fails at the first bad line, naming file:line and the field.
func (t *Trace) readJSONL(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 64<<20)
	var ps jsonPresence
	ps.name(&t.Fields)
	line, first := 0, true
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		src := fmt.Sprintf("%s:%d", t.Path, line)
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b, &obj); err != nil {
			if first && (string(b) == "{" || string(b) == "[") {
				return fmt.Errorf("%s: %q alone: a JSON document over several lines, not JSON Lines (one request per line) — a genload run's results .json is not a request log: give the run's --records file, or a replay's records", src, b)
			}
			return fmt.Errorf("%s: not a JSON object: %v", src, err)
		}
		if first {
			first = false
			source, ok, err := recordsHeader(obj, src)
			if err != nil {
				return err
			}
			if ok {
				t.Records = source
				t.Fields = t.given.withRecordDefaults(source)
				ps.name(&t.Fields)
				continue
			}
		}
		if t.Records != "" && warmupRecord(obj) {
			t.Warmups++
			continue
		}
		q, err := t.jsonRequest(obj, src, &ps)
		if err != nil {
			return err
		}
		t.Requests = append(t.Requests, q)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("trace %s: line %d: %w", t.Path, line+1, err)
	}
	return t.settle(&ps.out, &ps.time, &ps.hash, &ps.group)
}

// warmupRecord reports whether the records-file record obj is of a warmup request (phase
// "warmup", host/records.Record.Phase).
func warmupRecord(obj map[string]json.RawMessage) bool {
	var phase string
	return json.Unmarshal(obj["phase"], &phase) == nil && phase == "warmup"
}

// jsonPresence tracks, over a JSON Lines log, which records hold each optional field.
type jsonPresence struct{ out, time, hash, group presence }

// name names the tracked fields by f, for the errors of presence.held.
func (ps *jsonPresence) name(f *Fields) {
	ps.out.name, ps.time.name, ps.hash.name, ps.group.name = f.Output, f.Time, f.Hashes, f.Group
}

// jsonRequest reads the request of one JSON Lines record obj, at src (file:line), by
// t.Fields: the prompt length (an integer ≥ 1, required), then the optional output length,
// arrival time, prefix hashes and group, marking in ps which of them it holds.
func (t *Trace) jsonRequest(obj map[string]json.RawMessage, src string, ps *jsonPresence) (Request, error) {
	f := &t.Fields
	q := Request{Src: src}
	raw, ok := obj[f.Input]
	if !ok {
		return q, fmt.Errorf("%s: no field %q (the prompt length; name another with --input)", src, f.Input)
	}
	n, err := jsonInt(raw)
	if err == nil {
		err = atLeast(n, 1)
	}
	if err != nil {
		return q, fmt.Errorf("%s: field %q: %w", src, f.Input, err)
	}
	q.Input = n
	if err := jsonOutput(&q, obj, f, ps); err != nil {
		return q, err
	}
	if err := jsonTime(&q, obj, f, ps); err != nil {
		return q, err
	}
	if err := jsonHashes(&q, obj, f, ps); err != nil {
		return q, err
	}
	return q, jsonGroup(&q, obj, f, ps)
}

// jsonOutput reads q's output length (an integer ≥ 0, in tokens) from obj's field f.Output,
// an error when absent and f.RequireOutput.
func jsonOutput(q *Request, obj map[string]json.RawMessage, f *Fields, ps *jsonPresence) error {
	raw, ok := field(obj, f.Output)
	switch {
	case ok:
		n, err := jsonInt(raw)
		if err == nil {
			err = atLeast(n, 0)
		}
		if err != nil {
			return fmt.Errorf("%s: field %q: %w", q.Src, f.Output, err)
		}
		q.Output = n
		ps.out.mark(true, q.Src)
	case f.RequireOutput:
		return fmt.Errorf("%s: no field %q (the output length, which max_tokens is set to; name another with --output)", q.Src, f.Output)
	default:
		ps.out.mark(false, q.Src)
	}
	return nil
}

// jsonTime reads q's arrival from obj's field f.Time, a number in f.TimeUnit; an error when
// absent and f.RequireTime.
func jsonTime(q *Request, obj map[string]json.RawMessage, f *Fields, ps *jsonPresence) error {
	raw, ok := field(obj, f.Time)
	switch {
	case ok:
		v, err := jsonNumber(raw)
		if err == nil {
			q.Arrival, err = arrival(v, f.TimeUnit)
		}
		if err != nil {
			return fmt.Errorf("%s: field %q: %w", q.Src, f.Time, err)
		}
		ps.time.mark(true, q.Src)
	case f.RequireTime:
		return fmt.Errorf("%s: no field %q (the arrival time, which the schedule is made of; name another with --time, and its unit with --time-unit)", q.Src, f.Time)
	default:
		ps.time.mark(false, q.Src)
	}
	return nil
}

// jsonHashes reads q's prefix block hashes, an array of integers, from obj's field f.Hashes
// (an empty array when the field is [] or null).
func jsonHashes(q *Request, obj map[string]json.RawMessage, f *Fields, ps *jsonPresence) error {
	raw, ok := field(obj, f.Hashes)
	if !ok {
		ps.hash.mark(false, q.Src)
		return nil
	}
	var hs []int64
	if err := json.Unmarshal(raw, &hs); err != nil {
		return fmt.Errorf("%s: field %q: want an array of integers, got %s", q.Src, f.Hashes, clip(string(raw)))
	}
	if hs == nil {
		hs = []int64{}
	}
	q.Hashes = hs
	ps.hash.mark(true, q.Src)
	return nil
}

// jsonGroup reads q's group from obj's field f.Group when --group names one: a string, or a
// number or literal standing for itself; every record needs a non-empty one.
func jsonGroup(q *Request, obj map[string]json.RawMessage, f *Fields, ps *jsonPresence) error {
	if f.Group == "" || f.Group == "-" {
		return nil
	}
	raw, ok := obj[f.Group]
	if !ok {
		return fmt.Errorf("%s: no field %q (the group field --group names)", q.Src, f.Group)
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		s = strings.TrimSpace(string(raw)) // a number or a literal stands for itself
	}
	if s = strings.TrimSpace(s); s == "" || s == "null" {
		return fmt.Errorf("%s: field %q (the group field --group names) is empty: every request needs a group", q.Src, f.Group)
	}
	q.Group = s
	ps.group.mark(true, q.Src)
	return nil
}

// settle records which optional fields the log holds.
func (t *Trace) settle(out, tm, hash, group *presence) error {
	var err error
	if t.HasOutput, err = out.held(t.Path); err != nil {
		return err
	}
	if t.HasTime, err = tm.held(t.Path); err != nil {
		return err
	}
	if t.HasHashes, err = hash.held(t.Path); err != nil {
		return err
	}
	t.HasGroup = group.seen > 0
	return nil
}

// field returns obj[name] unless name is "-" (no such field) or the value is null.
func field(obj map[string]json.RawMessage, name string) (json.RawMessage, bool) {
	if name == "-" {
		return nil, false
	}
	raw, ok := obj[name]
	if !ok || string(raw) == "null" {
		return nil, false
	}
	return raw, true
}

func (t *Trace) readCSV(r io.Reader) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = 0 // every row as long as the header
	cr.TrimLeadingSpace = true
	head, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil // Parse reports the empty log
	}
	if err != nil {
		return fmt.Errorf("trace %s: %w", t.Path, err)
	}
	cols, err := t.csvColumns(head)
	if err != nil {
		return err
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := cr.FieldPos(0)
		src := fmt.Sprintf("%s:%d", t.Path, line)
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return fmt.Errorf("%s:%d: %v", t.Path, pe.Line, pe.Err)
			}
			return fmt.Errorf("%s: %w", src, err)
		}
		q, err := t.csvRequest(rec, cols, src)
		if err != nil {
			return err
		}
		t.Requests = append(t.Requests, q)
	}
	t.HasOutput, t.HasTime, t.HasHashes, t.HasGroup = cols.out >= 0, cols.time >= 0, cols.hashes >= 0, cols.group >= 0
	return nil
}

// csvCols are the indexes of a CSV log's columns of the fields read, −1 for one absent.
type csvCols struct{ in, out, time, hashes, group int }

// csvColumns finds the fields' columns in the header row head (a byte-order mark and spaces
// trimmed; the first of duplicate names): the input column and a group column named must be
// there, the others may be absent.
func (t *Trace) csvColumns(head []string) (csvCols, error) {
	f := t.Fields
	col := map[string]int{}
	for i, h := range head {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if _, dup := col[h]; !dup {
			col[h] = i
		}
	}
	index := func(name string, required bool, what string) (int, error) {
		if name == "-" {
			return -1, nil
		}
		i, ok := col[name]
		if !ok && required {
			return -1, fmt.Errorf("%s:1: no column %q (%s) in the header %q", t.Path, name, what, strings.Join(head, ","))
		}
		if !ok {
			return -1, nil
		}
		return i, nil
	}
	c := csvCols{group: -1}
	var err error
	if c.in, err = index(f.Input, true, "the prompt length; name another with --input"); err != nil {
		return c, err
	}
	if c.out, err = index(f.Output, f.RequireOutput, "the output length, which max_tokens is set to; name another with --output"); err != nil {
		return c, err
	}
	if c.time, err = index(f.Time, f.RequireTime, "the arrival time, which the schedule is made of; name another with --time"); err != nil {
		return c, err
	}
	c.hashes, _ = index(f.Hashes, false, "")
	if f.Group != "" && f.Group != "-" {
		if c.group, err = index(f.Group, true, "the group column --group names"); err != nil {
			return c, err
		}
	}
	return c, nil
}

// csvRequest reads the request of one CSV row rec (at src, "FILE:LINE") from the columns cols.
func (t *Trace) csvRequest(rec []string, cols csvCols, src string) (Request, error) {
	f := t.Fields
	q := Request{Src: src}
	n, err := textInt(rec[cols.in])
	if err == nil {
		err = atLeast(n, 1)
	}
	if err != nil {
		return q, fmt.Errorf("%s: column %q: %w", src, f.Input, err)
	}
	q.Input = n
	if cols.out >= 0 {
		n, err := textInt(rec[cols.out])
		if err == nil {
			err = atLeast(n, 0)
		}
		if err != nil {
			return q, fmt.Errorf("%s: column %q: %w", src, f.Output, err)
		}
		q.Output = n
	}
	if cols.time >= 0 {
		v, err := strconv.ParseFloat(strings.TrimSpace(rec[cols.time]), 64)
		if err != nil {
			err = fmt.Errorf("want a number, got %q", rec[cols.time])
		} else {
			q.Arrival, err = arrival(v, f.TimeUnit)
		}
		if err != nil {
			return q, fmt.Errorf("%s: column %q: %w", src, f.Time, err)
		}
	}
	if cols.hashes >= 0 {
		if q.Hashes, err = textHashes(rec[cols.hashes]); err != nil {
			return q, fmt.Errorf("%s: column %q: %w", src, f.Hashes, err)
		}
	}
	if cols.group >= 0 {
		if q.Group = strings.TrimSpace(rec[cols.group]); q.Group == "" {
			return q, fmt.Errorf("%s: column %q (the group column --group names) is empty: every request needs a group", src, f.Group)
		}
	}
	return q, nil
}

// jsonInt reads a JSON number that is an integer (123 or 123.0).
func jsonInt(raw json.RawMessage) (int, error) {
	v, err := jsonNumber(raw)
	if err != nil {
		return 0, err
	}
	return integral(v, string(raw))
}

func jsonNumber(raw json.RawMessage) (float64, error) {
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil {
		var s string
		if json.Unmarshal(raw, &s) == nil { // a number written as a string
			if v, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
				return v, nil
			}
		}
		return 0, fmt.Errorf("want a number, got %s", clip(string(raw)))
	}
	return v, nil
}

func textInt(s string) (int, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("want an integer number of tokens, got %q", clip(s))
	}
	return integral(v, s)
}

func integral(v float64, text string) (int, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) || v != math.Trunc(v) || math.Abs(v) > math.MaxInt32 {
		return 0, fmt.Errorf("want an integer number of tokens, got %s", clip(strings.TrimSpace(text)))
	}
	return int(v), nil
}

func atLeast(n, lo int) error {
	if n < 0 {
		return fmt.Errorf("negative length %d tokens", n)
	}
	if n < lo {
		return fmt.Errorf("length %d tokens: want at least %d", n, lo)
	}
	return nil
}

func arrival(v float64, unit time.Duration) (time.Duration, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("arrival time %v: want a finite time ≥ 0", v)
	}
	d := v * float64(unit)
	if d > float64(math.MaxInt64) {
		return 0, fmt.Errorf("arrival time %v is out of range", v)
	}
	return time.Duration(math.Round(d)), nil
}

// textHashes reads "1 2 3", "1,2,3", "1;2;3" or "[1, 2, 3]" (an empty cell: no blocks).
func textHashes(s string) ([]int64, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	parts := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\t' })
	out := make([]int64, 0, len(parts))
	for _, p := range parts {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("prefix block %q is not an integer", clip(p))
		}
		out = append(out, v)
	}
	return out, nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:37] + "…"
	}
	return s
}
