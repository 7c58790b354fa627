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
// Every value is checked where it is read: an error names the file, the line and the field
// (`trace.csv:12: column "input_length": want an integer number of tokens ≥ 1, got "abc"`).
// Nothing is skipped silently; a file with no request is an error.
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
	// Group is the group field. Default "" (no group); when named it is required in every
	// record.
	Group string
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
	f = f.withDefaults()
	t := &Trace{Path: name, Format: format, Fields: f}
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

func (t *Trace) readJSONL(r io.Reader) error {
	f := t.Fields
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 64<<20)
	pOut, pTime, pHash, pGroup := presence{name: f.Output}, presence{name: f.Time}, presence{name: f.Hashes}, presence{name: f.Group}
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		src := fmt.Sprintf("%s:%d", t.Path, line)
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b, &obj); err != nil {
			return fmt.Errorf("%s: not a JSON object: %v", src, err)
		}
		q := Request{Src: src}
		raw, ok := obj[f.Input]
		if !ok {
			return fmt.Errorf("%s: no field %q (the prompt length; name another with the input field option)", src, f.Input)
		}
		n, err := jsonInt(raw)
		if err == nil {
			err = atLeast(n, 1)
		}
		if err != nil {
			return fmt.Errorf("%s: field %q: %w", src, f.Input, err)
		}
		q.Input = n
		if raw, ok := field(obj, f.Output); ok {
			n, err := jsonInt(raw)
			if err == nil {
				err = atLeast(n, 0)
			}
			if err != nil {
				return fmt.Errorf("%s: field %q: %w", src, f.Output, err)
			}
			q.Output = n
			pOut.mark(true, src)
		} else {
			pOut.mark(false, src)
		}
		if raw, ok := field(obj, f.Time); ok {
			v, err := jsonNumber(raw)
			if err == nil {
				q.Arrival, err = arrival(v, f.TimeUnit)
			}
			if err != nil {
				return fmt.Errorf("%s: field %q: %w", src, f.Time, err)
			}
			pTime.mark(true, src)
		} else {
			pTime.mark(false, src)
		}
		if raw, ok := field(obj, f.Hashes); ok {
			var hs []int64
			if err := json.Unmarshal(raw, &hs); err != nil {
				return fmt.Errorf("%s: field %q: want an array of integers, got %s", src, f.Hashes, clip(string(raw)))
			}
			if hs == nil {
				hs = []int64{}
			}
			q.Hashes = hs
			pHash.mark(true, src)
		} else {
			pHash.mark(false, src)
		}
		if f.Group != "" && f.Group != "-" {
			raw, ok := obj[f.Group]
			if !ok {
				return fmt.Errorf("%s: no field %q (the group field named)", src, f.Group)
			}
			var s string
			if json.Unmarshal(raw, &s) != nil {
				s = strings.TrimSpace(string(raw)) // a number or a literal stands for itself
			}
			q.Group = s
			pGroup.mark(true, src)
		}
		t.Requests = append(t.Requests, q)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("trace %s: line %d: %w", t.Path, line+1, err)
	}
	return t.settle(&pOut, &pTime, &pHash, &pGroup)
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
	f := t.Fields
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
	in, err := index(f.Input, true, "the prompt length; name another with the input field option")
	if err != nil {
		return err
	}
	out, _ := index(f.Output, false, "")
	tm, _ := index(f.Time, false, "")
	hs, _ := index(f.Hashes, false, "")
	grp := -1
	if f.Group != "" && f.Group != "-" {
		if grp, err = index(f.Group, true, "the group column named"); err != nil {
			return err
		}
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
		q := Request{Src: src}
		n, err := textInt(rec[in])
		if err == nil {
			err = atLeast(n, 1)
		}
		if err != nil {
			return fmt.Errorf("%s: column %q: %w", src, f.Input, err)
		}
		q.Input = n
		if out >= 0 {
			n, err := textInt(rec[out])
			if err == nil {
				err = atLeast(n, 0)
			}
			if err != nil {
				return fmt.Errorf("%s: column %q: %w", src, f.Output, err)
			}
			q.Output = n
		}
		if tm >= 0 {
			v, err := strconv.ParseFloat(strings.TrimSpace(rec[tm]), 64)
			if err != nil {
				err = fmt.Errorf("want a number, got %q", rec[tm])
			} else {
				q.Arrival, err = arrival(v, f.TimeUnit)
			}
			if err != nil {
				return fmt.Errorf("%s: column %q: %w", src, f.Time, err)
			}
		}
		if hs >= 0 {
			if q.Hashes, err = textHashes(rec[hs]); err != nil {
				return fmt.Errorf("%s: column %q: %w", src, f.Hashes, err)
			}
		}
		if grp >= 0 {
			q.Group = strings.TrimSpace(rec[grp])
		}
		t.Requests = append(t.Requests, q)
	}
	t.HasOutput, t.HasTime, t.HasHashes, t.HasGroup = out >= 0, tm >= 0, hs >= 0, grp >= 0
	return nil
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
