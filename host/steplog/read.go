package steplog

import (
	"bufio"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Record is one record of a step log.
type Record struct {
	// Time is when the line says the record happened (see ParseTime); Res is the
	// timestamp's resolution (time.Second for whole seconds, 0 when finer than 1 ms).
	Time time.Time
	Res  time.Duration
	// Active is the sequences in the forward pass (or running, for a sample).
	Active int
	// Decode is how many of them decode; -1 when the format has no decode group.
	Decode int
	// FwdMs is the forward-pass duration in ms; NaN when the format has no fwd_ms group.
	FwdMs float64
	// Src is where the record was read, "file:line".
	Src string
}

// Forward reports whether the record counts as a forward pass: every record, except those
// with a decode group equal to 0 (prefill-only steps, e.g. a warmup's max_tokens = 1).
func (r Record) Forward() bool { return r.Decode != 0 }

// LineError is a line that holds a record the format could not read.
type LineError struct {
	// Src is "file:line"; Text the line (cut to 200 bytes); Err what was wrong.
	Src  string
	Text string
	Err  error
	// at is how many records had been read when the line was (its place among them), file
	// the source without its line number: Parser.Lost brackets the lost record's time.
	at   int
	file string
}

func (e *LineError) Error() string { return fmt.Sprintf("%s: %v: %q", e.Src, e.Err, e.Text) }

func (e *LineError) Unwrap() error { return e.Err }

// Stats counts what a Parser read: Lines in all, Records found, Malformed records (each a
// LineError), Other lines (no record, no marker: the server's other output), Truncations
// and Replacements of a followed file, CutLines (a partial last line lost to a truncation,
// each also a LineError), and Duplicates: records of a line read before, byte for byte (the
// same log given twice, rotated parts that overlap), counted once — they are not in
// Records, and Parser.Duplicates says where.
type Stats struct {
	Lines, Records, Malformed, Other int
	Truncations, Replacements        int
	CutLines                         int
	Duplicates, DuplicateLines       int
}

// Parser turns lines into Records with a Format. The zero value is not usable; use
// NewParser.
type Parser struct {
	f    Format
	opt  Options
	recs []Record
	errs []error
	st   Stats
	// seen maps the FNV-1a hash of every line that held a record to where it was first read
	// and how many records it held; dups are the first repeats found, "src repeats first".
	seen map[uint64]seenLine
	dups []string

	iTime, iActive, iFwd, iDecode int
}

// Options tune how timestamps are read.
type Options struct {
	// Location is the zone of timestamps without one (SGLang, vLLM log local time). Defaults
	// to UTC (nil).
	Location *time.Location
	// Reference is a time near the log's (the run's start): it supplies the year of
	// timestamps without one (vLLM's "%m-%d"), choosing the year that puts the time nearest
	// to Reference. Defaults to the zero time (then such timestamps are errors).
	Reference time.Time
}

// NewParser returns a Parser of f.
func NewParser(f Format, o Options) *Parser {
	if o.Location == nil {
		o.Location = time.UTC
	}
	return &Parser{f: f, opt: o,
		iTime: f.Re.SubexpIndex(GroupTime), iActive: f.Re.SubexpIndex(GroupActive),
		iFwd: f.Re.SubexpIndex(GroupFwdMs), iDecode: f.Re.SubexpIndex(GroupDecode)}
}

// seenLine is where a line holding records was first read, and how many it held.
type seenLine struct {
	src     string
	records int
}

// maxDupExamples is how many repeated lines Duplicates names.
const maxDupExamples = 5

// Line parses one line (without its newline) read at src ("file:line"). A line that holds
// records and repeats, byte for byte, one read before is a duplicate (Stats.Duplicates):
// records carry timestamps of ms or finer resolution, or other changing fields (token
// counts, throughput), so a server does not write the same record line twice, while a log
// given twice or rotated parts that overlap repeat every line.
func (p *Parser) Line(src, line string) {
	p.st.Lines++
	h := fnv.New64a()
	h.Write([]byte(line))
	key := h.Sum64()
	if first, ok := p.seen[key]; ok {
		p.st.Duplicates += first.records
		p.st.DuplicateLines++
		if len(p.dups) < maxDupExamples {
			p.dups = append(p.dups, fmt.Sprintf("%s repeats %s", src, first.src))
		}
		return
	}
	found, bad := 0, 0
	defer func() {
		if found > 0 {
			if p.seen == nil {
				p.seen = map[uint64]seenLine{}
			}
			p.seen[key] = seenLine{src, found}
		}
	}()
	rest := line
	for rest != "" {
		m := p.f.Re.FindStringSubmatchIndex(rest)
		if m == nil {
			break
		}
		text := rest[m[0]:m[1]]
		// A match spanning two markers joined a cut record to the next one (writers
		// interleaved): the first is malformed, and the search resumes at the second.
		if k := p.secondMarker(text); k > 0 {
			p.fail(src, line, errors.New("a record cut short by the next one (interleaved writes)"))
			bad++
			rest = rest[m[0]+k:]
			continue
		}
		r, err := p.record(rest, m)
		if err != nil {
			p.fail(src, line, err)
			bad++
		} else {
			r.Src = src
			p.recs = append(p.recs, r)
			p.st.Records++
			found++
		}
		rest = rest[m[1]:]
	}
	if p.f.Marker != "" {
		n := strings.Count(line, p.f.Marker)
		if extra := n - found - bad; extra > 0 {
			for range extra { // one error per record lost, so that Stats.Malformed counts them
				p.fail(src, line, fmt.Errorf("holds %q %d times but %d records parse: a record is malformed or cut short by another (interleaved writes)", p.f.Marker, n, found))
			}
			bad += extra
		}
	}
	if found == 0 && bad == 0 {
		p.st.Other++
	}
}

// secondMarker returns the offset of a second marker in a match, or 0.
func (p *Parser) secondMarker(text string) int {
	if p.f.Marker == "" {
		return 0
	}
	i := strings.Index(text, p.f.Marker)
	if i < 0 {
		return 0
	}
	j := strings.Index(text[i+len(p.f.Marker):], p.f.Marker)
	if j < 0 {
		return 0
	}
	// the second record starts where its own match would: back up to the start of the
	// text the expression puts before the marker, found by searching from there
	at := i + len(p.f.Marker) + j
	for s := at; s > i; s-- {
		if mm := p.f.Re.FindStringIndex(text[s:]); mm != nil && mm[0] == 0 {
			return s
		}
	}
	return at
}

func (p *Parser) fail(src, line string, err error) {
	if len(line) > 200 {
		line = line[:200] + "…"
	}
	p.errs = append(p.errs, &LineError{Src: src, Text: line, Err: err, at: len(p.recs), file: srcFile(src)})
	p.st.Malformed++
}

func (p *Parser) record(s string, m []int) (Record, error) {
	g := func(i int) string {
		if i < 0 || m[2*i] < 0 {
			return ""
		}
		return s[m[2*i]:m[2*i+1]]
	}
	r := Record{Decode: -1, FwdMs: math.NaN()}
	var err error
	if r.Time, r.Res, err = ParseTime(g(p.iTime), p.opt.Location, p.opt.Reference); err != nil {
		return r, err
	}
	if r.Active, err = strconv.Atoi(g(p.iActive)); err != nil || r.Active < 0 {
		return r, fmt.Errorf("active %q: not a count", g(p.iActive))
	}
	if p.iDecode >= 0 {
		if r.Decode, err = strconv.Atoi(g(p.iDecode)); err != nil || r.Decode < 0 {
			return r, fmt.Errorf("decode %q: not a count", g(p.iDecode))
		}
	}
	if p.iFwd >= 0 {
		if r.FwdMs, err = strconv.ParseFloat(g(p.iFwd), 64); err != nil || !(r.FwdMs >= 0) || math.IsInf(r.FwdMs, 0) {
			return r, fmt.Errorf("fwd_ms %q: not a duration in ms", g(p.iFwd))
		}
	}
	return r, nil
}

// Records returns the records read so far, sorted by time (stable: records of one time keep
// their reading order), so that logs of several writers or files interleave correctly.
func (p *Parser) Records() []Record {
	out := append([]Record(nil), p.recs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// Duplicates returns where the first repeated lines were read (at most 5), each "src repeats
// first-src"; Stats.DuplicateLines counts them all.
func (p *Parser) Duplicates() []string { return p.dups }

// Lost is a record lost to a malformed line: where (Src, "file:line"), and the bracket of its
// time, [From, To], the times of the records read just before and after it from the same
// file (a log is written in time order); a zero bound is unknown (no such record).
type Lost struct {
	Src      string
	From, To time.Time
}

// Lost returns every malformed record with the bracket of its time, in reading order.
func (p *Parser) Lost() []Lost {
	out := make([]Lost, 0, len(p.errs))
	for _, e := range p.errs {
		le, ok := e.(*LineError)
		if !ok {
			continue
		}
		l := Lost{Src: le.Src}
		if k := le.at - 1; k >= 0 && k < len(p.recs) && srcFile(p.recs[k].Src) == le.file {
			l.From = p.recs[k].Time
		}
		if k := le.at; k < len(p.recs) && srcFile(p.recs[k].Src) == le.file {
			l.To = p.recs[k].Time
		}
		out = append(out, l)
	}
	return out
}

// srcFile is src ("file:line") without its line number.
func srcFile(src string) string {
	if i := strings.LastIndexByte(src, ':'); i > 0 {
		return src[:i]
	}
	return src
}

// Errors returns every LineError so far, in reading order.
func (p *Parser) Errors() []error { return p.errs }

// Stats returns the counts so far.
func (p *Parser) Stats() Stats { return p.st }

// Read parses every line of r, named name in errors ("name:line"). It fails only when r
// does; bad lines are in p.Errors.
func (p *Parser) Read(r io.Reader, name string) error {
	br := bufio.NewReaderSize(r, 64<<10)
	n := 0
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			n++
			p.Line(fmt.Sprintf("%s:%d", name, n), strings.TrimRight(line, "\r\n"))
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %w", name, n+1, err)
		}
	}
}

// ParseTime reads a record's timestamp and returns it with its resolution (time.Second for
// whole seconds, time.Millisecond for ms, 0 for finer). Accepted, in this order:
//
//	RFC 3339 with or without fraction ("2026-12-01T10:00:00.123456Z", "…+01:00")
//	"2006-01-02 15:04:05" with an optional ".fff" or ",fff" fraction, in loc
//	"01-02 15:04:05" with an optional fraction, in loc, the year taken from ref
//	Unix seconds with an optional fraction ("1764583200.125")
//
// Errors quote the value.
func ParseTime(v string, loc *time.Location, ref time.Time) (time.Time, time.Duration, error) {
	if loc == nil {
		loc = time.UTC
	}
	res := resolution(v)
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, res, nil
	}
	norm := strings.Replace(v, ",", ".", 1)
	if t, err := time.ParseInLocation("2006-01-02 15:04:05.999999999", norm, loc); err == nil {
		return t, res, nil
	}
	if t, err := time.ParseInLocation("2006-01-02T15:04:05.999999999", norm, loc); err == nil {
		return t, res, nil
	}
	if t, err := time.ParseInLocation("01-02 15:04:05.999999999", norm, loc); err == nil {
		if ref.IsZero() {
			return time.Time{}, 0, fmt.Errorf("time %q has no year and no reference time was given", v)
		}
		best := time.Time{}
		for _, y := range []int{ref.Year() - 1, ref.Year(), ref.Year() + 1} {
			c := time.Date(y, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), loc)
			if best.IsZero() || absDur(c.Sub(ref)) < absDur(best.Sub(ref)) {
				best = c
			}
		}
		return best, res, nil
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f > 1e8 && f < 1e11 {
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(math.Round(frac*1e9))).UTC(), res, nil
	}
	return time.Time{}, 0, fmt.Errorf("time %q: not RFC 3339, \"2006-01-02 15:04:05\", \"01-02 15:04:05\" or Unix seconds", v)
}

// resolution is the unit of the last digit of a timestamp's seconds.
func resolution(v string) time.Duration {
	i := strings.LastIndexAny(v, ".,")
	if i < 0 || i+1 >= len(v) || v[i+1] < '0' || v[i+1] > '9' {
		return time.Second
	}
	n := 0
	for _, c := range v[i+1:] {
		if c < '0' || c > '9' {
			break
		}
		n++
	}
	switch {
	case n >= 4:
		return 0
	case n == 3:
		return time.Millisecond
	case n == 2:
		return 10 * time.Millisecond
	default:
		return 100 * time.Millisecond
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
