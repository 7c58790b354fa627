package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
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
}

// parseSpec parses tokenizer.json bytes. The vocabulary and merges (the bulk of the file) are
// read with jscan; the small component objects go through encoding/json. file names the
// source in errors.
func parseSpec(data []byte, file string) (*fileSpec, error) {
	fs := &fileSpec{}
	sc := &jscan{b: data}
	if sc.peek() != '{' {
		return nil, fmt.Errorf("tokenizer: %s: invalid JSON: %w", file, errNotObject)
	}
	var sawModel bool
	var modelType string
	model := map[string][]byte{}
	err := sc.object(func(key string) error {
		var dst **jNode
		switch key {
		case "added_tokens":
			raw, err := sc.skip()
			if err != nil {
				return err
			}
			if err := json.Unmarshal(raw, &fs.added); err != nil && string(raw) != "null" {
				return fmt.Errorf("[added_tokens]: %w", err)
			}
			return nil
		case "normalizer":
			dst = &fs.normalizer
		case "pre_tokenizer":
			dst = &fs.preTokenizer
		case "post_processor":
			dst = &fs.postProcessor
		case "decoder":
			dst = &fs.decoder
		case "model":
			sawModel = true
			return sc.object(func(mk string) error {
				switch mk {
				case "vocab":
					return parseVocab(sc, &fs.model)
				case "merges":
					return parseMerges(sc, &fs.model)
				}
				raw, err := sc.skip()
				if err != nil {
					return err
				}
				if mk == "type" {
					if err := json.Unmarshal(raw, &modelType); err != nil {
						return fmt.Errorf("[model.type]: %w", err)
					}
				}
				model[mk] = raw
				return nil
			})
		default:
			_, err := sc.skip()
			return err
		}
		raw, err := sc.skip()
		if err != nil {
			return err
		}
		if string(raw) == "null" {
			return nil
		}
		n := new(jNode)
		if err := json.Unmarshal(raw, n); err != nil {
			return fmt.Errorf("[%s]: %w", key, err)
		}
		*dst = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", file, err)
	}
	if sc.peek() != 0 {
		return nil, fmt.Errorf("tokenizer: %s: %w", file, sc.errf("trailing data after the top-level object"))
	}
	if !sawModel {
		return nil, fmt.Errorf("tokenizer: %s: missing [model] object", file)
	}
	if modelType == "" && fs.model.vocab != nil && model["merges"] == nil {
		modelType = "BPE" // old files omit the type of a BPE model
	}
	if modelType != "BPE" {
		return nil, &UnsupportedError{File: file, Component: "model", Type: modelType, Detail: "only BPE models are implemented"}
	}
	if fs.model.vocab == nil {
		return nil, fmt.Errorf("tokenizer: %s: [model]: missing [vocab] object", file)
	}
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
				return nil, fmt.Errorf("tokenizer: %s: [model.%s]: %w", file, k, err)
			}
		}
	}
	if opts.Dropout != nil && *opts.Dropout > 0 {
		return nil, &UnsupportedError{File: file, Component: "model", Type: modelType, Detail: "BPE dropout > 0 is random, cannot be exact"}
	}
	b := &fs.model
	b.unk = opts.UnkToken
	if opts.ContinuingSubwordPrefix != nil {
		b.contPrefix = *opts.ContinuingSubwordPrefix
	}
	if opts.EndOfWordSuffix != nil {
		b.eowSuffix = *opts.EndOfWordSuffix
	}
	b.fuseUnk, b.byteFallback, b.ignoreMerges = opts.FuseUnk, opts.ByteFallback, opts.IgnoreMerges
	return fs, nil
}

func parseVocab(sc *jscan, b *bpeSpec) error {
	b.vocab = make(map[string]int32, 1<<17)
	return sc.object(func(tok string) error {
		id, err := sc.integer()
		if err != nil {
			return fmt.Errorf("[model.vocab] %q: %w", tok, err)
		}
		if id < 0 || id > 1<<30 {
			return fmt.Errorf("[model.vocab] %q: id %d out of range", tok, id)
		}
		b.vocab[tok] = int32(id)
		return nil
	})
}

func parseMerges(sc *jscan, b *bpeSpec) error {
	if sc.peek() == 'n' {
		_, err := sc.skip()
		return err
	}
	b.merges = make([][2]string, 0, 1<<17)
	return sc.array(func(i int) error {
		switch sc.peek() {
		case '"': // "a b" (older files)
			s, err := sc.str()
			if err != nil {
				return err
			}
			l, r, ok := strings.Cut(s, " ")
			if !ok {
				return fmt.Errorf("[model.merges][%d] %q: no space separator", i, s)
			}
			b.merges = append(b.merges, [2]string{l, r})
		case '[': // ["a", "b"] (tokenizers >= 0.20)
			var p [2]string
			n := 0
			err := sc.array(func(k int) error {
				s, err := sc.str()
				if k < 2 {
					p[k] = s
				}
				n++
				return err
			})
			if err != nil {
				return fmt.Errorf("[model.merges][%d]: %w", i, err)
			}
			if n != 2 {
				return fmt.Errorf("[model.merges][%d]: want a pair of strings, got %d", i, n)
			}
			b.merges = append(b.merges, p)
		default:
			return fmt.Errorf("[model.merges][%d]: %w", i, sc.errf("want a string or a pair"))
		}
		return nil
	})
}
