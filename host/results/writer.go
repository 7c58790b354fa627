package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/measure"
)

// Writer appends a run's records to results/<run-id>.jsonl. Each record is one line, written
// and fsynced before the call returns, so a run killed at any point keeps every cell it
// finished. It is not safe for concurrent use.
type Writer struct {
	f     *os.File
	dir   string
	run   Run
	path  string
	start time.Time
	// before is the wall time of the run's earlier sessions (a resumed run), added to this
	// session's in the footer.
	before time.Duration
}

// Create makes dir if needed and creates <dir>/<h.RunID>.jsonl (failing if it exists), then
// writes the header line.
func Create(dir string, h Header) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	path := filepath.Join(dir, h.RunID+".jsonl")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	h.Type, h.Schema = "header", Schema
	if h.Labels == nil && h.Config != nil && len(h.Config.Labels) > 0 {
		h.Labels = h.Config.Labels
	}
	w := &Writer{f: f, dir: dir, path: path, start: time.Now()}
	w.run.Header = h
	if err := w.line(h); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// Path is the JSONL file's path.
func (w *Writer) Path() string { return w.path }

// Run returns what has been written so far.
func (w *Writer) Run() *Run { return &w.run }

func (w *Writer) line(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("results: encode: %w", err)
	}
	b = append(b, '\n')
	if _, err := w.f.Write(b); err != nil {
		return fmt.Errorf("results: write %s: %w", w.path, err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("results: fsync %s: %w", w.path, err)
	}
	return nil
}

// Cell appends one cell record (type "cell").
func (w *Writer) Cell(c Cell) error {
	c.Type = "cell"
	if err := w.line(c); err != nil {
		return err
	}
	w.replace(c)
	return nil
}

// Finish appends the footer, closes the JSONL file and writes <run-id>.json; it returns the
// JSON file's path. The CSV beside it has the table's columns: report.Finish writes both.
func (w *Writer) Finish(status string, runErr error) (jsonPath string, err error) {
	ft := Footer{Type: "footer", Finished: time.Now().UTC(), Elapsed: Millis(w.before + time.Since(w.start)), Status: status}
	if runErr != nil {
		ft.Error = runErr.Error()
	}
	for _, c := range w.run.Cells {
		switch c.Status {
		case StatusOK:
			ft.OK++
			if c.OKWithoutFwd() {
				ft.OKWithoutFwd++
			}
		case StatusPartial:
			ft.Partial++
		default:
			ft.Failed++
		}
	}
	w.run.Footer = &ft
	err = w.line(ft)
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	jsonPath = filepath.Join(w.dir, w.run.Header.RunID) + ".json"
	if err := WriteJSON(jsonPath, &w.run); err != nil {
		return "", err
	}
	return jsonPath, nil
}

// WriteJSON writes run as one indented JSON document.
func WriteJSON(path string, run *Run) error {
	b, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return fmt.Errorf("results: encode: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}

// ReadFile reads a run from a .jsonl file (as written by [Writer]; a partial last line from a
// killed run is ignored) or a .json file (as written by [WriteJSON]).
func ReadFile(path string) (*Run, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	if filepath.Ext(path) == ".json" {
		var probe struct {
			Schema string          `json:"schema"`
			Header json.RawMessage `json:"header"`
			// the keys of genload ab --json's document
			A     *string `json:"a"`
			B     *string `json:"b"`
			Pairs *int    `json:"pairs"`
		}
		if json.Unmarshal(b, &probe) == nil && probe.Header == nil {
			switch {
			case probe.Schema != "":
				return nil, notResults(path, fmt.Errorf("its schema is %q, a results file's header says %q", probe.Schema, Schema))
			case probe.A != nil && probe.B != nil && probe.Pairs != nil:
				return nil, notResults(path, fmt.Errorf("it is the A/B comparison genload ab --json writes (%d pairs of %s and %s), not a run: genload report RUN… --ab %s reads it beside runs", *probe.Pairs, *probe.A, *probe.B, path))
			}
		}
		r := Run{Header: Header{Config: storedConfig()}}
		if err := json.Unmarshal(b, &r); err != nil {
			if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
				return nil, notResults(path, err)
			}
			return nil, fmt.Errorf("results: %s: %w%s", path, inCell(b, err), cutShort(b, err, path))
		}
		if probe.Header == nil {
			return nil, notResults(path, errors.New(`no "header"`))
		}
		return &r, nil
	}
	r := Run{Header: Header{Config: storedConfig()}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		var probe struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(line, &probe); err != nil {
			if !bytes.HasSuffix(b, []byte("\n")) && n > 1 && len(bytes.TrimSpace(line)) > 0 {
				break // the last line of a killed run
			}
			if n == 1 {
				return nil, notResults(path, fmt.Errorf("line 1: %w", err))
			}
			return nil, fmt.Errorf("results: %s:%d: %w", path, n, err)
		}
		switch probe.Type {
		case "header":
			err = json.Unmarshal(line, &r.Header)
		case "cell":
			var c Cell
			if err = json.Unmarshal(line, &c); err == nil {
				r.Cells = append(r.Cells, c)
			} else {
				err = cellError(line, err)
			}
		case "footer":
			r.Footer = new(Footer)
			err = json.Unmarshal(line, r.Footer)
		default:
			err = fmt.Errorf("unknown record type %q", probe.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("results: %s:%d: %w", path, n, err)
		}
	}
	r.Cells = Latest(r.Cells)
	if r.Header.Schema == "" {
		return nil, errors.New("results: " + path + ": no header line")
	}
	return &r, nil
}

// cutShort is, for a .json document that ends before it closes (err from decoding all of
// b: unexpected end of input), where it ends and what to read instead: the run's .jsonl
// beside it, written a cell at a time; "" otherwise.
func cutShort(b []byte, err error, path string) string {
	if !errors.Is(err, io.ErrUnexpectedEOF) && err.Error() != "unexpected end of JSON input" {
		return ""
	}
	return fmt.Sprintf(" (the document ends after %d bytes, line %d, before it closes: a copy cut short? the run's %s beside it is written a cell at a time and is read as well)",
		len(b), bytes.Count(b, []byte("\n"))+1, strings.TrimSuffix(filepath.Base(path), ".json")+".jsonl")
}

// notResults is the error for a file that is not JSON of a run at all (a CSV table, a
// plot): it names the file and the files genload run writes, err saying what was read.
func notResults(path string, err error) error {
	hint := ""
	if filepath.Ext(path) == ".csv" {
		hint = "; the .csv beside them is the run's table, for spreadsheets"
	}
	return fmt.Errorf("results: %s: %w (want the <run-id>.json or .jsonl genload run writes%s): %w", path, ErrNotResults, hint, err)
}

// ErrNotResults is wrapped by ReadFile's error for a file that is not JSON of a run.
var ErrNotResults = errors.New("not a results file")

// inCell returns err, from decoding the results document b, with the cell it is in named
// ("cell 4 of 15, L=2000,B=8, figures.per_forward: …") when a cell fails to decode on its
// own; err unchanged otherwise.
func inCell(b []byte, err error) error {
	var doc struct {
		Cells []json.RawMessage `json:"cells"`
	}
	if json.Unmarshal(b, &doc) != nil {
		return err
	}
	for i, raw := range doc.Cells {
		var c Cell
		if cerr := json.Unmarshal(raw, &c); cerr != nil {
			return fmt.Errorf("cell %d of %d, %w", i+1, len(doc.Cells), cellError(raw, cerr))
		}
	}
	return err
}

// cellError names, in err from decoding the cell record raw, the cell (its L and B) and the
// first figure summary in it that does not decode ("L=2000,B=8, figures.per_forward: …").
func cellError(raw []byte, err error) error {
	var key struct {
		Cell struct {
			SeqLen int `json:"seq_len"`
			Batch  int `json:"batch"`
		} `json:"cell"`
	}
	if json.Unmarshal(raw, &key) != nil {
		return err
	}
	where := fmt.Sprintf("L=%d,B=%d", key.Cell.SeqLen, key.Cell.Batch)
	var tree any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&tree) == nil {
		if p := badSummary(tree, ""); p != "" {
			where += ", " + p
		}
	}
	return fmt.Errorf("%s: %w", where, err)
}

// badSummary returns the dotted path, below prefix, of the first object in v that has the
// keys of a figure summary ("mean_ms") and does not decode as one (measure.Summary), "" for
// none.
func badSummary(v any, prefix string) string {
	obj, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	if _, ok := obj["mean_ms"]; ok {
		b, _ := json.Marshal(obj)
		var s measure.Summary
		if json.Unmarshal(b, &s) != nil {
			return prefix
		}
		return ""
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		if q := badSummary(obj[k], p); q != "" {
			return q
		}
	}
	return ""
}

// storedConfig is what a results header's config is decoded over: the defaults, so that a
// key written by a later genload than the file's takes its default (the schema's
// compatibility rule: keys are only ever added, and a missing key means its default). The
// plugins' own tables are not defaulted: they are the plugin's, whole, as written.
func storedConfig() *config.Config {
	c := config.Default()
	c.Lengths.Config, c.Router.Config = nil, nil
	return c
}

func formatMs(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64)
}

func parseMs(b []byte) (time.Duration, error) {
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(b)), 64)
	if err != nil {
		return 0, fmt.Errorf("milliseconds: %w", err)
	}
	return time.Duration(f * 1e6), nil
}

// Resume opens an existing run's JSONL file for appending. The returned Writer's Run holds
// the header and, per cell index, the last record written (so a cell measured again after a
// failure supersedes its failed record); the old footer is dropped and Finish writes a new one.
func Resume(path string) (*Writer, error) {
	r, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	if filepath.Ext(path) != ".jsonl" {
		return nil, fmt.Errorf("results: resume needs the run's .jsonl file, got %s", path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	w := &Writer{f: f, dir: filepath.Dir(path), path: path, start: time.Now(), before: sessionsElapsed(r)}
	w.run.Header = r.Header
	w.run.Cells = Latest(r.Cells)
	// A torn last line (killed mid-write) must not glue itself to the next record.
	if b, err := os.ReadFile(path); err == nil && len(b) > 0 && b[len(b)-1] != '\n' {
		if _, err := f.Write([]byte("\n")); err != nil {
			f.Close()
			return nil, fmt.Errorf("results: %w", err)
		}
	}
	return w, nil
}

// sessionsElapsed is the wall time of r's sessions so far: its last footer's Elapsed (which
// includes every session before it), plus, for a later session killed before it wrote a footer,
// the span from the first to the end of the last cell record after that footer; with no footer
// at all, the span from the header's start to the end of the last cell record. The killed
// session's part is a lower bound (its setup before the first cell, and anything after its
// last record, are not on disk).
func sessionsElapsed(r *Run) time.Duration {
	var before time.Duration
	from := r.Header.Started
	if r.Footer != nil {
		before, from = time.Duration(r.Footer.Elapsed), time.Time{}
	}
	var first, last time.Time
	for _, c := range r.Cells {
		if r.Footer != nil && !c.Started.After(r.Footer.Finished) {
			continue
		}
		if first.IsZero() || c.Started.Before(first) {
			first = c.Started
		}
		if end := c.Started.Add(time.Duration(c.Elapsed)); end.After(last) {
			last = end
		}
	}
	if from.IsZero() {
		from = first
	}
	if !from.IsZero() && last.After(from) {
		before += last.Sub(from)
	}
	return before
}

// recordKey identifies a record: its cell index and repeat (0 in a run without repeats).
type recordKey struct{ index, repeat int }

func keyOfRecord(c *Cell) recordKey { return recordKey{c.Cell.Index, c.Repeat} }

// ByIndexRepeat orders records by cell index, then repeat (a comparison for slices.SortFunc:
// negative when a comes first).
func ByIndexRepeat(a, b Cell) int {
	if a.Cell.Index != b.Cell.Index {
		return a.Cell.Index - b.Cell.Index
	}
	return a.Repeat - b.Repeat
}

// Latest keeps, for each (cell index, repeat), the last record in cells, ordered by index
// then repeat.
func Latest(cells []Cell) []Cell {
	last := map[recordKey]Cell{}
	for _, c := range cells {
		last[keyOfRecord(&c)] = c
	}
	out := make([]Cell, 0, len(last))
	for _, c := range last {
		out = append(out, c)
	}
	slices.SortFunc(out, ByIndexRepeat)
	return out
}

// replace makes c the current record of its (cell index, repeat).
func (w *Writer) replace(c Cell) {
	for i := range w.run.Cells {
		if keyOfRecord(&w.run.Cells[i]) == keyOfRecord(&c) {
			w.run.Cells[i] = c
			return
		}
	}
	w.run.Cells = append(w.run.Cells, c)
	slices.SortFunc(w.run.Cells, ByIndexRepeat)
}

// HasRepeats reports whether run holds repeated cells (records with a Repeat).
func (r *Run) HasRepeats() bool {
	for i := range r.Cells {
		if r.Cells[i].Repeat > 0 {
			return true
		}
	}
	return false
}
