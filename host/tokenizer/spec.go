package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/genload/genload/host/internal/jsonscan"
)

// UnsupportedError reports a tokenizer.json component this package does not implement, e.g.
// a WordPiece model or a Precompiled normalizer. Loading fails with it rather than encoding
// differently from Hugging Face tokenizers.
type UnsupportedError struct {
	File      string // path of the tokenizer.json (or "embedded:...")
	Component string // JSON path of the component, e.g. "pre_tokenizer.pretokenizers[1]"
	Type      string // the component's "type" value, e.g. "Metaspace"
	Detail    string // optional: which option is unsupported
}

// Error formats the error as "tokenizer: <file>: unsupported <component> [type=<type>]: <detail>".
func (e *UnsupportedError) Error() string {
	s := fmt.Sprintf("tokenizer: %s: unsupported %s [type=%q]", e.File, e.Component, e.Type)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// jPattern is a Split/Replace pattern: exactly one of Regex or String is set.
type jPattern struct {
	Regex  *string `json:"Regex"`
	String *string `json:"String"`
}

// jNode is the union of every normalizer, pre-tokenizer, post-processor and decoder node of
// tokenizer.json; only the fields of the node's "type" are meaningful.
type jNode struct {
	Type string `json:"type"`
	// Sequence
	Normalizers   []jNode `json:"normalizers"`
	Pretokenizers []jNode `json:"pretokenizers"`
	Processors    []jNode `json:"processors"`
	Decoders      []jNode `json:"decoders"`
	// Split / Replace
	Pattern  *jPattern `json:"pattern"`
	Behavior string    `json:"behavior"`
	Invert   bool      `json:"invert"`
	Content  string    `json:"content"`
	// ByteLevel
	AddPrefixSpace *bool `json:"add_prefix_space"`
	UseRegex       *bool `json:"use_regex"`
	// Metaspace
	Replacement   string `json:"replacement"`
	PrependScheme string `json:"prepend_scheme"`
	Split         *bool  `json:"split"`
	// Digits
	IndividualDigits bool `json:"individual_digits"`
	// Prepend
	Prepend string `json:"prepend"`
	// Strip normalizer / decoder
	Left  bool `json:"left"`
	Right bool `json:"right"`
	Start int  `json:"start"`
	Stop  int  `json:"stop"`
	// TemplateProcessing
	Single        []json.RawMessage `json:"single"`
	SpecialTokens map[string]struct {
		IDs []int32 `json:"ids"`
	} `json:"special_tokens"`
	// BertProcessing / RobertaProcessing: [token, id]
	Sep json.RawMessage `json:"sep"`
	Cls json.RawMessage `json:"cls"`
}

// addedToken is one entry of tokenizer.json "added_tokens".
type addedToken struct {
	ID         int32  `json:"id"`
	Content    string `json:"content"`
	Special    bool   `json:"special"`
	Normalized bool   `json:"normalized"`
	Lstrip     bool   `json:"lstrip"`
	Rstrip     bool   `json:"rstrip"`
	SingleWord bool   `json:"single_word"`
}

// bpeSpec is the parsed "model" object of a BPE tokenizer.json.
type bpeSpec struct {
	vocab        map[string]int32
	merges       [][2]string
	unk          *string
	contPrefix   string
	eowSuffix    string
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool
}

// fileSpec is a parsed tokenizer.json.
type fileSpec struct {
	added         []addedToken
	normalizer    *jNode
	preTokenizer  *jNode
	postProcessor *jNode
	decoder       *jNode
	model         bpeSpec
	// Where the values of model.vocab and model.merges are in the file ([start, end) byte
	// offsets, {0, 0} when absent or null): the rest of the file is small (prepared.go keeps it).
	vocabSpan, mergesSpan [2]int
}

// restJSON returns data, a tokenizer.json parsed into fs, with model.vocab replaced by {}
// and model.merges by []: every component but the two big tables, which the prepared-tables
// cache holds.
func (fs *fileSpec) restJSON(data []byte) []byte {
	type cut struct {
		span [2]int
		with string
	}
	cuts := []cut{{fs.vocabSpan, "{}"}, {fs.mergesSpan, "[]"}}
	if cuts[1].span[0] < cuts[0].span[0] {
		cuts[0], cuts[1] = cuts[1], cuts[0]
	}
	out := make([]byte, 0, 4096)
	at := 0
	for _, c := range cuts {
		if c.span[1] == 0 {
			continue
		}
		out = append(append(out, data[at:c.span[0]]...), c.with...)
		at = c.span[1]
	}
	return append(out, data[at:]...)
}

// parseSpec parses tokenizer.json bytes. The vocabulary and merges (the bulk of the file) are
// read in place with jsonscan; the small component objects go through encoding/json. file
// names the source in errors; a malformed file's error gives the line and byte where reading
// stopped.
func parseSpec(data []byte, file string) (*fileSpec, error) {
	p := &specParse{fs: &fileSpec{}, r: &specReader{b: data}, data: data, model: map[string][]byte{}}
	i := jsonscan.SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, fmt.Errorf("tokenizer: %s: invalid JSON: %w", file, errNotObject)
	}
	end, ok := jsonscan.Object(data, i+1, p.topKey)
	if !ok {
		return nil, fmt.Errorf("tokenizer: %s: %w", file, p.r.syntax(end))
	}
	if end = jsonscan.SkipSpace(data, end); end != len(data) {
		return nil, fmt.Errorf("tokenizer: %s: %w", file, p.r.errAt(end, "trailing data after the top-level object"))
	}
	if !p.sawModel {
		return nil, fmt.Errorf("tokenizer: %s: missing [model] object", file)
	}
	if p.modelType == "" && p.fs.model.vocab != nil && p.model["merges"] == nil {
		p.modelType = "BPE" // old files omit the type of a BPE model
	}
	if p.modelType != "BPE" {
		return nil, &UnsupportedError{File: file, Component: "model", Type: p.modelType, Detail: "only BPE models are implemented"}
	}
	if p.fs.model.vocab == nil {
		return nil, fmt.Errorf("tokenizer: %s: [model]: missing [vocab] object", file)
	}
	if err := p.fs.model.setOptions(p.model, file); err != nil {
		return nil, err
	}
	return p.fs, nil
}

// specParse is parseSpec's state while jsonscan walks the file: the spec so far, whether a
// [model] object was seen, its type, and its other members' raw JSON by key.
type specParse struct {
	fs        *fileSpec
	r         *specReader
	data      []byte
	sawModel  bool
	modelType string
	model     map[string][]byte
}

// topKey reads the top-level member key whose value starts at j: the added tokens, a
// component object (normalizer, pre-tokenizer, post-processor, decoder), the model; others
// are skipped.
func (p *specParse) topKey(key []byte, j int) (int, bool) {
	data, fs, r := p.data, p.fs, p.r
	var dst **jNode
	switch string(key) {
	case "added_tokens":
		end, ok := jsonscan.SkipValue(data, j, 1)
		if !ok {
			return end, false
		}
		raw := data[j:end]
		if err := json.Unmarshal(raw, &fs.added); err != nil && string(raw) != "null" {
			return r.fail(j, fmt.Errorf("[added_tokens]: %w", err))
		}
		return end, true
	case "normalizer":
		dst = &fs.normalizer
	case "pre_tokenizer":
		dst = &fs.preTokenizer
	case "post_processor":
		dst = &fs.postProcessor
	case "decoder":
		dst = &fs.decoder
	case "model":
		p.sawModel = true
		if data[j] != '{' {
			return r.fail(j, r.errAt(j, "[model]: want an object"))
		}
		return jsonscan.Object(data, j+1, p.modelKey)
	default:
		return jsonscan.SkipValue(data, j, 1)
	}
	end, ok := jsonscan.SkipValue(data, j, 1)
	if !ok || jsonscan.IsNull(data, j) {
		return end, ok
	}
	n := new(jNode)
	if err := json.Unmarshal(data[j:end], n); err != nil {
		return r.fail(j, fmt.Errorf("[%s]: %w", key, err))
	}
	*dst = n
	return end, true
}

// modelKey reads a member of [model]: the vocabulary and merges in place, the type, and the
// raw JSON of the others for setOptions.
func (p *specParse) modelKey(mk []byte, j int) (int, bool) {
	switch string(mk) {
	case "vocab":
		end, ok := p.r.vocab(j, &p.fs.model)
		p.fs.vocabSpan = [2]int{j, end}
		return end, ok
	case "merges":
		end, ok := p.r.merges(j, &p.fs.model)
		if p.fs.model.merges != nil {
			p.fs.mergesSpan = [2]int{j, end}
		}
		return end, ok
	}
	end, ok := jsonscan.SkipValue(p.data, j, 2)
	if !ok {
		return end, false
	}
	raw := p.data[j:end]
	if string(mk) == "type" {
		if err := json.Unmarshal(raw, &p.modelType); err != nil {
			return p.r.fail(j, fmt.Errorf("[model.type]: %w", err))
		}
	}
	p.model[string(mk)] = raw
	return end, true
}

// setOptions sets the BPE model's options from [model]'s members (raw JSON by key): unknown
// token, continuing-subword prefix, end-of-word suffix, fuse_unk, byte_fallback,
// ignore_merges. A dropout above 0 is random and refused (UnsupportedError); file names the
// source in errors.
func (b *bpeSpec) setOptions(model map[string][]byte, file string) error {
	var opts struct {
		Dropout                 *float64 `json:"dropout"`
		UnkToken                *string  `json:"unk_token"`
		ContinuingSubwordPrefix *string  `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string  `json:"end_of_word_suffix"`
		FuseUnk                 bool     `json:"fuse_unk"`
		ByteFallback            bool     `json:"byte_fallback"`
		IgnoreMerges            bool     `json:"ignore_merges"`
	}
	for k, dst := range map[string]any{
		"dropout": &opts.Dropout, "unk_token": &opts.UnkToken, "continuing_subword_prefix": &opts.ContinuingSubwordPrefix,
		"end_of_word_suffix": &opts.EndOfWordSuffix, "fuse_unk": &opts.FuseUnk, "byte_fallback": &opts.ByteFallback,
		"ignore_merges": &opts.IgnoreMerges,
	} {
		if raw, ok := model[k]; ok {
			if err := json.Unmarshal(raw, dst); err != nil {
				return fmt.Errorf("tokenizer: %s: [model.%s]: %w", file, k, err)
			}
		}
	}
	if opts.Dropout != nil && *opts.Dropout > 0 {
		return &UnsupportedError{File: file, Component: "model", Type: "BPE", Detail: "BPE dropout > 0 is random, cannot be exact"}
	}
	b.unk = opts.UnkToken
	if opts.ContinuingSubwordPrefix != nil {
		b.contPrefix = *opts.ContinuingSubwordPrefix
	}
	if opts.EndOfWordSuffix != nil {
		b.eowSuffix = *opts.EndOfWordSuffix
	}
	b.fuseUnk, b.byteFallback, b.ignoreMerges = opts.FuseUnk, opts.ByteFallback, opts.IgnoreMerges
	return nil
}

// specReader holds what parseSpec's jsonscan callbacks need to report an error: jsonscan says
// only where reading stopped, so a callback that rejects a value for a reason of its own
// records it here first.
type specReader struct {
	b   []byte
	err error // the first error recorded by fail
}

var errNotObject = errors.New("want a JSON object")

// errAt returns an error at b[i]: "json line <line> (byte <i>): <message>", lines counted
// from 1.
func (r *specReader) errAt(i int, format string, a ...any) error {
	line := 1 + bytes.Count(r.b[:min(i, len(r.b))], []byte{'\n'})
	return fmt.Errorf("json line %d (byte %d): %s", line, i, fmt.Sprintf(format, a...))
}

// fail records err (the first one stays) and returns i, false for a jsonscan callback.
func (r *specReader) fail(i int, err error) (int, bool) {
	if r.err == nil {
		r.err = err
	}
	return i, false
}

// syntax returns the error of a scan that stopped at b[i]: the recorded one, else malformed
// JSON at i.
func (r *specReader) syntax(i int) error {
	switch {
	case r.err != nil:
		return r.err
	case i >= len(r.b):
		return r.errAt(i, "unexpected end of JSON")
	}
	return r.errAt(i, "invalid JSON at %q", r.b[i])
}

// unquote returns the value of the JSON string content s (the bytes between its quotes):
// s itself when it holds no escape (bytes as written, as encoding/json would keep valid
// UTF-8), else encoding/json's decoding, which rejects escapes JSON does not define.
func unquote(s []byte, escaped bool) (string, error) {
	if !escaped {
		return string(s), nil
	}
	var v string
	q := make([]byte, 0, len(s)+2)
	q = append(append(append(q, '"'), s...), '"')
	err := json.Unmarshal(q, &v)
	return v, err
}

// str reads the string value at b[i], the element of model.merges[n] or part of it, and
// returns it and the index after it.
func (r *specReader) str(i, n int) (string, int, bool) {
	where := func() string { return fmt.Sprintf("[model.merges][%d]", n) }
	if i >= len(r.b) || r.b[i] != '"' {
		e, _ := r.fail(i, r.errAt(i, "%s: want a string", where()))
		return "", e, false
	}
	end, ok := jsonscan.StringEnd(r.b, i+1)
	if !ok {
		e, _ := r.fail(end, r.errAt(i, "%s: unterminated string", where()))
		return "", e, false
	}
	s := r.b[i+1 : end-1]
	v, err := unquote(s, bytes.IndexByte(s, '\\') >= 0)
	if err != nil {
		e, _ := r.fail(i, r.errAt(i, "%s: %v", where(), err))
		return "", e, false
	}
	return v, end, true
}

// vocab reads model.vocab, the object of token → id at b[i], into b.vocab; ids are integers
// in [0, 2^30].
func (r *specReader) vocab(i int, b *bpeSpec) (int, bool) {
	if r.b[i] != '{' {
		return r.fail(i, r.errAt(i, "[model.vocab]: want an object"))
	}
	b.vocab = make(map[string]int32, sizeHint(len(r.b)-i))
	return jsonscan.Members(r.b, i+1, func(key []byte, escaped bool, j int) (int, bool) {
		tok, err := unquote(key, escaped)
		if err != nil {
			return r.fail(j, r.errAt(j, "[model.vocab] key %q: %v", key, err))
		}
		id, end, ok := jsonscan.Uint(r.b, j)
		if !ok {
			return r.fail(j, r.errAt(j, "[model.vocab] %q: want a non-negative integer id", tok))
		}
		if id > 1<<30 {
			return r.fail(j, r.errAt(j, "[model.vocab] %q: id %d out of range", tok, id))
		}
		b.vocab[tok] = int32(id)
		return end, true
	})
}

// sizeHint is the number of entries to reserve for a vocabulary or merge list read from n
// bytes of JSON: 131,072 for a large file (an entry takes at least 8 bytes), fewer for a small
// one such as the prepared cache's rest of a file, whose tables are empty.
func sizeHint(n int) int { return min(1<<17, n/8) }

// merges reads model.merges at b[i] into b.merges: null, or an array whose elements are
// "left right" strings (older files) or ["left", "right"] pairs (tokenizers >= 0.20).
func (r *specReader) merges(i int, b *bpeSpec) (int, bool) {
	switch r.b[i] {
	case 'n':
		return jsonscan.SkipValue(r.b, i, 2)
	case '[':
	default:
		return r.fail(i, r.errAt(i, "[model.merges]: want an array"))
	}
	b.merges = make([][2]string, 0, sizeHint(len(r.b)-i))
	n := 0
	return jsonscan.Array(r.b, i+1, func(j int) (int, bool) {
		m := n
		n++
		switch r.b[j] {
		case '"':
			s, end, ok := r.str(j, m)
			if !ok {
				return end, false
			}
			left, right, ok := strings.Cut(s, " ")
			if !ok {
				return r.fail(j, r.errAt(j, "[model.merges][%d] %q: no space separator", m, s))
			}
			b.merges = append(b.merges, [2]string{left, right})
			return end, true
		case '[':
			var p [2]string
			k := 0
			end, ok := jsonscan.Array(r.b, j+1, func(e int) (int, bool) {
				s, end, ok := r.str(e, m)
				if k < 2 {
					p[k] = s
				}
				k++
				return end, ok
			})
			if !ok {
				return end, false
			}
			if k != 2 {
				return r.fail(j, r.errAt(j, "[model.merges][%d]: want a pair of strings, got %d", m, k))
			}
			b.merges = append(b.merges, p)
			return end, true
		}
		return r.fail(j, r.errAt(j, "[model.merges][%d]: want a string or a pair", m))
	})
}
