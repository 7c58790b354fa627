// Package corpus holds genload's prompt corpus: 256 distinct, self-contained texts of 120–400
// tokens (Qwen3 tokenizer) in many genres, registers and languages, written for this project.
// Each prompt of a cell takes its own row, so a batch carries distinct content (distinct
// content is what makes a batch activate many experts in MoE models).
//
// prompts.jsonl has one JSON object per line: {"id", "genre", "lang", "text"}.
package corpus

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

//go:embed prompts.jsonl
var embedded []byte

// Row is one corpus text.
type Row struct {
	ID    string `json:"id"`    // stable identifier, e.g. "a-07"
	Genre string `json:"genre"` // short genre tag, e.g. "legal", "poetry", "go"
	Lang  string `json:"lang"`  // BCP-47 language code of the text, e.g. "en", "zh"
	Text  string `json:"text"`  // the text itself (UTF-8)
}

// EmbeddedName is how the embedded corpus is named in messages and results.
const EmbeddedName = "corpus/prompts.jsonl (embedded)"

// Default returns the embedded corpus.
func Default() ([]Row, error) { return Parse(EmbeddedName, embedded) }

// Load reads a JSONL corpus from path. Errors as for [Parse], plus the read error.
func Load(path string) ([]Row, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("corpus: %w", err)
	}
	return Parse(path, b)
}

// Parse decodes a JSONL corpus named name. Every problem is reported at once with name:line:
// invalid JSON, unknown keys, an empty "text", a text containing a chat-template marker "<|",
// and a text that repeats an earlier row. An empty file is an error.
func Parse(name string, data []byte) ([]Row, error) {
	var rows []Row
	var errs []error
	first := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var r Row
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: invalid JSON line: %v", name, n, err))
			continue
		}
		switch {
		case strings.TrimSpace(r.Text) == "":
			errs = append(errs, fmt.Errorf("%s:%d: empty \"text\"", name, n))
			continue
		case strings.Contains(r.Text, "<|"):
			errs = append(errs, fmt.Errorf("%s:%d: \"text\" contains \"<|\", which chat templates treat as a special token", name, n))
			continue
		}
		if p, dup := first[r.Text]; dup {
			errs = append(errs, fmt.Errorf("%s:%d: duplicate of line %d (rows must be distinct)", name, n, p))
			continue
		}
		first[r.Text] = n
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no rows", name)
	}
	return rows, nil
}
