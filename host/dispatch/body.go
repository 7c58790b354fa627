package dispatch

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"

	"github.com/genload/genload/host/internal/jsonenc"
	"github.com/genload/genload/host/plan"
)

// call is one HTTP request of a plan, with its body.
type call struct {
	worker  int
	prompts []int
	n       int
	body    []byte
	// stream, when not nil, replaces body: a large body generated as it is sent.
	stream *bodyStream
	// seqs are the request's records in Result.Sequences (set by Do, filled by do).
	seqs []Sequence
	// small: the Do has at least smallReaderStreams requests, its streams read through
	// small SSE buffers (stream.go).
	small bool
}

// bodyBytes is the size of the request body.
func (p *call) bodyBytes() int {
	if p.stream != nil {
		return p.stream.size
	}
	return len(p.body)
}

// want is the number of sequences the request yields: n per prompt.
func (p *call) want() int { return len(p.prompts) * p.n }

// calls checks plan p's prompts and builds the body of every request of it (in buffers from
// the Client's pool: give them back with putBufs).
func (c *Client) calls(p *plan.Plan) ([]call, error) {
	prompts, err := promptsOf(p)
	if err != nil {
		return nil, err
	}
	if len(p.Requests) == 0 {
		return nil, errors.New("dispatch: the plan has no requests")
	}
	if _, ids := prompts.(idPrompts); c.ollama() && ids {
		return nil, errors.New(`dispatch: ollama's native API takes text prompts only (prompt.format = "text")`)
	}
	ps := make([]call, len(p.Requests))
	for i, r := range p.Requests {
		switch {
		case r.Worker < 0 || r.Worker >= len(c.workers):
			c.putBufs(ps[:i])
			return nil, fmt.Errorf("dispatch: request %d goes to worker %d, want [0, %d)", i, r.Worker, len(c.workers))
		case len(r.Prompts) == 0 || r.N < 1 || !r.Array && len(r.Prompts) != 1:
			c.putBufs(ps[:i])
			return nil, fmt.Errorf("dispatch: request %d has %d prompts and n = %d, want at least one (one unless sent as an array) and n ≥ 1", i, len(r.Prompts), r.N)
		case c.ollama() && (r.Array || r.N != 1):
			c.putBufs(ps[:i])
			return nil, fmt.Errorf(`dispatch: request %d: ollama's native API takes one prompt per request and n = 1 (mode = "routed"), got %d prompts as an array, n = %d`, i, len(r.Prompts), r.N)
		}
		for _, k := range r.Prompts {
			if k < 0 || k >= prompts.Len() {
				c.putBufs(ps[:i])
				return nil, fmt.Errorf("dispatch: request %d carries prompt %d of %d", i, k, prompts.Len())
			}
		}
		size := bodySize(prompts, r.Prompts)
		ids, isIDs := prompts.(idPrompts)
		if isIDs && size > streamBodyOver {
			ps[i] = call{worker: r.Worker, prompts: r.Prompts, n: r.N, stream: newBodyStream(c.tmpl, ids, r.Prompts, r.Array, r.N, p.MaxTokens)}
			continue
		}
		if isIDs && len(p.Requests) >= exactBodies {
			size = exactBodySize(ids, r.Prompts)
		}
		b := c.getBuf(size)
		ps[i] = call{worker: r.Worker, prompts: r.Prompts, n: r.N, body: c.tmpl.appendBody(b, prompts, r.Prompts, r.Array, r.N, p.MaxTokens)}
	}
	return ps, nil
}

// exactBodies is the number of requests of a plan from which their bodies' buffers are sized
// exactly (exactBodySize) rather than by the bound of 7 bytes an id: every body of a Do is
// alive until its stream begins, and a routed cell of 4,096 prompts of 1,000 tokens held 34 MB
// of buffers for 19 MB of bodies. Sizing costs one more pass over the ids (about 1 ns an id,
// 4 ms for that cell) and appendIDs a second, so a plan of few requests keeps the bound.
const exactBodies = 64

// exactBodySize is bodySize for token-id prompts with each prompt's exact JSON length
// (idsJSONLen) and the 8 bytes appendIDs' last store writes past it.
func exactBodySize(ps idPrompts, idx []int) int {
	n := 512
	for _, i := range idx {
		n += idsJSONLen(ps[i]) + 8 + 16
	}
	return n
}

// promptsOf returns the plan's prompts as the body writer reads them, after checking there are
// some and none is empty.
func promptsOf(p *plan.Plan) (promptSet, error) {
	var ps promptSet = idPrompts(p.IDs)
	if p.Texts != nil {
		ps = textPrompts(p.Texts)
	}
	if ps.Len() == 0 {
		return nil, errors.New("dispatch: no prompts")
	}
	for i := range ps.Len() {
		if ps.Empty(i) {
			return nil, fmt.Errorf("dispatch: prompt %d is empty", i)
		}
	}
	return ps, nil
}

// promptSet is the plan's prompts as token-id arrays or as strings.
type promptSet interface {
	// Len is the number of prompts.
	Len() int
	// Size is an upper bound of prompt i's JSON length in bytes.
	Size(i int) int
	// Append appends prompt i as a JSON value.
	Append(dst []byte, i int) []byte
	// Empty reports an empty prompt i.
	Empty(i int) bool
}

// idPrompts are token-id prompts, sent as arrays of integers.
type idPrompts [][]int32

// Len is the number of prompts.
func (p idPrompts) Len() int { return len(p) }

// Size is appendIDs' bound for prompt i: 7 bytes an id, 24 spare and the '['.
func (p idPrompts) Size(i int) int { return 7*len(p[i]) + 25 }

// Append appends prompt i as a JSON array of integers (appendIDs).
func (p idPrompts) Append(dst []byte, i int) []byte { return appendIDs(dst, p[i]) }

// Empty reports a prompt i of no token.
func (p idPrompts) Empty(i int) bool { return len(p[i]) == 0 }

// textPrompts are string prompts (TGI accepts only these), sent as JSON strings.
type textPrompts []string

// Len is the number of prompts.
func (p textPrompts) Len() int { return len(p) }

// Size bounds prompt i's JSON string: 6 bytes a byte (\u00XX, the longest escape) and the
// quotes.
func (p textPrompts) Size(i int) int { return 6*len(p[i]) + 2 }

// Append appends prompt i as a JSON string (jsonenc.AppendString).
func (p textPrompts) Append(dst []byte, i int) []byte { return jsonenc.AppendString(dst, p[i]) }

// Empty reports an empty prompt i.
func (p textPrompts) Empty(i int) bool { return p[i] == "" }

// bodySize returns an upper bound of the body length for prompts idx, so that one
// buffer growth suffices.
func bodySize(ps promptSet, idx []int) int {
	n := 512
	for _, i := range idx {
		n += ps.Size(i) + 16
	}
	return n
}

// streamBodyOver is the body size (bodySize's bound, bytes) above which a request of token-id
// prompts is not built before it is sent but generated as it is written (bodyStream): a cell
// of 256 prompts of 128k tokens would otherwise hold a 150 MB body beside its 130 MB of ids.
const streamBodyOver = 16 << 20

// bodyStream is a request body of token-id prompts generated as it is read, one prompt at a
// time, byte for byte what appendBody builds; Size is its exact length (the Content-Length).
type bodyStream struct {
	t         *bodyTemplate
	ps        idPrompts
	idx       []int
	array     bool
	n, max    int
	size      int
	buf       []byte // generated and not yet read: buf[off:]
	off, next int    // next: the next part, 0 = head, 1+k = prompt k, 1+len(parts) = tail, beyond = done
	parts     int
}

// newBodyStream returns the streamed body of prompts idx of ps (all of them when array, else
// idx[0]) with n and maxTokens, and computes its exact size.
func newBodyStream(t *bodyTemplate, ps idPrompts, idx []int, array bool, n, maxTokens int) *bodyStream {
	s := &bodyStream{t: t, ps: ps, idx: idx, array: array, n: n, max: maxTokens, parts: len(idx)}
	if !array {
		s.parts = 1
	}
	s.size = len(t.appendHead(nil, array)) + len(t.appendTail(nil, array, n, maxTokens))
	for k := range s.parts {
		s.size += idsLen(ps[idx[k]])
		if array && k > 0 {
			s.size++
		}
	}
	return s
}

// idsLen is the length of appendIDs(nil, ids).
func idsLen(ids []int32) int {
	if len(ids) == 0 {
		return 2
	}
	tab := idTable()
	n := 1 // '[', and each id's comma, the last one being the ']'
	for _, id := range ids {
		if uint32(id) < idTableSize {
			n += int(tab[id] >> 56)
			continue
		}
		n += len(strconv.AppendInt(nil, int64(id), 10)) + 1
	}
	return n
}

// Read generates the next part when the previous one has been read.
func (s *bodyStream) Read(p []byte) (int, error) {
	for s.off == len(s.buf) {
		s.buf, s.off = s.buf[:0], 0
		switch {
		case s.next == 0:
			s.buf = s.t.appendHead(s.buf, s.array)
		case s.next <= s.parts:
			k := s.next - 1
			s.buf = appendPrompt(s.buf, s.ps, k, s.idx[k], s.array)
		case s.next == s.parts+1:
			s.buf = s.t.appendTail(s.buf, s.array, s.n, s.max)
		default:
			return 0, io.EOF
		}
		s.next++
	}
	n := copy(p, s.buf[s.off:])
	s.off += n
	return n, nil
}

// rewind makes the stream start again (a request sent again).
func (s *bodyStream) rewind() { s.buf, s.off, s.next = s.buf[:0], 0, 0 }

// getBuf returns an empty buffer for a body of up to size bytes: the smallest pooled one that
// holds size, else the most recently given back (which appendBody then grows once), else a new
// one.
func (c *Client) getBuf(size int) []byte {
	c.bufMu.Lock()
	defer c.bufMu.Unlock()
	best := -1
	for i, b := range c.bufs {
		if cap(b) >= size && (best < 0 || cap(b) < cap(c.bufs[best])) {
			best = i
		}
	}
	if best < 0 {
		if len(c.bufs) == 0 {
			return make([]byte, 0, size)
		}
		best = len(c.bufs) - 1
	}
	b := c.bufs[best]
	c.bufs = append(c.bufs[:best], c.bufs[best+1:]...)
	return b[:0]
}

// putBufs gives the bodies of ps back to the Client's pool for the next Do; the pool keeps the
// last 1024.
func (c *Client) putBufs(ps []call) {
	c.bufMu.Lock()
	defer c.bufMu.Unlock()
	for _, p := range ps {
		if p.body != nil {
			c.bufs = append(c.bufs, p.body[:0])
		}
	}
	// keep at most 1024 buffers
	if len(c.bufs) > 1024 {
		c.bufs = c.bufs[len(c.bufs)-1024:]
	}
}

// bodyTemplate holds the precomputed parts of a /v1/completions body (or of ollama's
// /api/generate body).
type bodyTemplate struct {
	model       []byte // `"model":"…",` or empty
	temperature []byte // `,"temperature":0` or empty when ExtraBody overrides it
	seed        []byte
	logprobs    []byte // `,"logprobs":N` or empty
	streamOpts  []byte
	extra       []byte // `,"k":v` pairs of ExtraBody, keys sorted
	skip        map[string]bool
	// ollama writes ollama's native /api/generate body instead (appendGenerate).
	ollama bool
}

// fixedKeys are the body fields genload writes itself; ExtraBody may override any of them.
var fixedKeys = []string{"model", "prompt", "n", "max_tokens", "temperature", "ignore_eos", "stream", "stream_options", "seed", "logprobs"}

// ollamaKeys are the top-level fields of ollama's native body that genload writes; ExtraBody
// may override any of them ("options" replaces genload's whole options object).
var ollamaKeys = []string{"model", "prompt", "raw", "stream", "options"}

// newBodyTemplate encodes once the parts of every body that o fixes (model, temperature, seed,
// logprobs, stream_options and the ExtraBody fields, keys sorted) and notes which of
// genload's own fields ExtraBody overrides. Errors: a negative Logprobs, an ExtraBody
// "prompt" or a value that does not encode as JSON, each naming the option or key.
func newBodyTemplate(o *Options) (*bodyTemplate, error) {
	if o.Logprobs < 0 {
		return nil, fmt.Errorf("dispatch: logprobs %d: must be 0 (not asked) or more", o.Logprobs)
	}
	t := &bodyTemplate{skip: map[string]bool{}, ollama: o.API == APIOllama}
	fixed := fixedKeys
	if t.ollama {
		fixed = ollamaKeys
	}
	keys := make([]string, 0, len(o.ExtraBody))
	for k := range o.ExtraBody {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k == "prompt" {
			return nil, fmt.Errorf("dispatch: extra_body key %q is set by genload and cannot be overridden", k)
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(o.ExtraBody[k])
		if err != nil {
			return nil, fmt.Errorf("dispatch: extra_body key %q: %w", k, err)
		}
		t.extra = append(append(append(append(t.extra, ','), kb...), ':'), vb...)
		if slices.Contains(fixed, k) {
			t.skip[k] = true
		}
	}
	if o.Model != "" && !t.skip["model"] {
		mb, _ := json.Marshal(o.Model)
		t.model = append(append([]byte(`"model":`), mb...), ',')
	}
	if !t.skip["temperature"] {
		t.temperature = strconv.AppendFloat([]byte(`,"temperature":`), o.Temperature, 'g', -1, 64)
	}
	if o.Seed != nil && !t.skip["seed"] {
		t.seed = strconv.AppendInt([]byte(`,"seed":`), *o.Seed, 10)
	}
	if o.Logprobs > 0 && !t.skip["logprobs"] {
		t.logprobs = strconv.AppendInt([]byte(`,"logprobs":`), int64(o.Logprobs), 10)
	}
	if !t.skip["stream_options"] {
		t.streamOpts = []byte(`,"stream_options":{"include_usage":true}`)
		if o.ContinuousUsage {
			t.streamOpts = []byte(`,"stream_options":{"include_usage":true,"continuous_usage_stats":true}`)
		}
	}
	return t, nil
}

// appendBody appends one request body to dst:
//
//	{"model":M,"prompt":P,"n":N,"max_tokens":T,"temperature":X,"ignore_eos":true,
//	 "stream":true,"stream_options":{"include_usage":true}[,"seed":S][,"logprobs":L][,extra…]}
//
// P is the JSON array of the prompts idx when array, else the single prompt idx[0]. Same
// inputs → same bytes (extra keys are sorted). For ollama's native API it is appendGenerate
// of prompt idx[0]. It is appendHead, then appendPrompt for each
// prompt, then appendTail (a bodyStream writes the same parts as it is read).
func (t *bodyTemplate) appendBody(dst []byte, ps promptSet, idx []int, array bool, n, maxTokens int) []byte {
	if t.ollama {
		return t.appendGenerate(dst, ps, idx[0], maxTokens)
	}
	dst = t.appendHead(dst, array)
	for k, i := range idx {
		dst = appendPrompt(dst, ps, k, i, array)
		if !array {
			break
		}
	}
	return t.appendTail(dst, array, n, maxTokens)
}

// appendGenerate appends the body of ollama's native POST /api/generate for text prompt i
// of ps:
//
//	{"model":M,"prompt":P,"raw":true,"stream":true,
//	 "options":{"num_predict":T,"temperature":X[,"seed":S]}[,extra…]}
//
// "raw" sends the prompt as it is, without the model's template (genload's prompt is
// already rendered in the tokenizer's chat template; ollama's /v1/completions applies the
// model's template to it again); num_predict is max_tokens. ollama has no ignore_eos: a
// sequence that samples EOS stops early, and measure leaves it out of the per-forward
// figures. Same inputs → same bytes.
func (t *bodyTemplate) appendGenerate(dst []byte, ps promptSet, i, maxTokens int) []byte {
	dst = append(dst, '{')
	dst = append(dst, t.model...)
	dst = append(dst, `"prompt":`...)
	dst = ps.Append(dst, i)
	if !t.skip["raw"] {
		dst = append(dst, `,"raw":true`...)
	}
	if !t.skip["stream"] {
		dst = append(dst, `,"stream":true`...)
	}
	if !t.skip["options"] {
		dst = strconv.AppendInt(append(dst, `,"options":{"num_predict":`...), int64(maxTokens), 10)
		if len(t.temperature) > 0 {
			dst = append(dst, t.temperature...)
		}
		dst = append(dst, t.seed...)
		dst = append(dst, '}')
	}
	dst = append(dst, t.extra...)
	return append(dst, '}')
}

// appendHead appends the body up to its first prompt.
func (t *bodyTemplate) appendHead(dst []byte, array bool) []byte {
	dst = append(dst, '{')
	dst = append(dst, t.model...)
	dst = append(dst, `"prompt":`...)
	if array {
		dst = append(dst, '[')
	}
	return dst
}

// appendPrompt appends prompt i, the k-th of the request (after a comma in an array).
func appendPrompt(dst []byte, ps promptSet, k, i int, array bool) []byte {
	if array && k > 0 {
		dst = append(dst, ',')
	}
	return ps.Append(dst, i)
}

// appendTail appends the body after its last prompt.
func (t *bodyTemplate) appendTail(dst []byte, array bool, n, maxTokens int) []byte {
	if array {
		dst = append(dst, ']')
	}
	if !t.skip["n"] {
		dst = strconv.AppendInt(append(dst, `,"n":`...), int64(n), 10)
	}
	if !t.skip["max_tokens"] {
		dst = strconv.AppendInt(append(dst, `,"max_tokens":`...), int64(maxTokens), 10)
	}
	dst = append(dst, t.temperature...)
	if !t.skip["ignore_eos"] {
		dst = append(dst, `,"ignore_eos":true`...)
	}
	if !t.skip["stream"] {
		dst = append(dst, `,"stream":true`...)
	}
	dst = append(dst, t.streamOpts...)
	dst = append(dst, t.seed...)
	dst = append(dst, t.logprobs...)
	dst = append(dst, t.extra...)
	return append(dst, '}')
}

// appendIDs appends ids as a JSON array of integers ("[1,2,3]"). Cost: one 8-byte store
// and an add per id below idTableSize; at most one growth of dst per call. An id of the
// table takes at most 7 bytes ("262143,"), so room for 7 bytes an id and the last store's
// spare byte (idPrompts.Size) is enough. English text under Qwen3 averages 4.8 bytes an id,
// so the bound is 1.45 times the body (it was 8 bytes an id, 1.65 times); computing the
// exact length first would read the table twice and double the cost of a body.
func appendIDs(dst []byte, ids []int32) []byte {
	if len(ids) == 0 {
		return append(dst, '[', ']')
	}
	if cap(dst)-len(dst) < 7*len(ids)+25 {
		// A buffer sized exactly (exactBodySize) holds the array and the 8 bytes the last
		// store writes; grow only one that does not.
		if need := idsJSONLen(ids) + 8; cap(dst)-len(dst) < need {
			dst = slices.Grow(dst, 7*len(ids)+25)
		}
	}
	dst = append(dst, '[')
	tab := idTable()
	b := dst[:cap(dst)]
	pos := len(dst)
	for k, id := range ids {
		if uint32(id) < idTableSize {
			v := tab[id]
			binary.LittleEndian.PutUint64(b[pos:], v)
			pos += int(v >> 56)
			continue
		}
		if need := pos + 7*(len(ids)-k) + 24; need > len(b) {
			b = slices.Grow(b[:pos], need-pos)
			b = b[:cap(b)]
		}
		s := strconv.AppendInt(b[pos:pos], int64(id), 10)
		pos += len(s)
		b[pos] = ','
		pos++
	}
	b[pos-1] = ']' // replaces the trailing comma
	return b[:pos]
}

// idsJSONLen is the length in bytes of ids written as a JSON array by appendIDs: the '[', each
// id's decimal text and its comma (the last one the ']'); 2 for no id.
func idsJSONLen(ids []int32) int {
	if len(ids) == 0 {
		return 2
	}
	tab := idTable()
	n := 1
	var scratch [24]byte
	for _, id := range ids {
		if uint32(id) < idTableSize {
			n += int(tab[id] >> 56)
			continue
		}
		n += len(strconv.AppendInt(scratch[:0], int64(id), 10)) + 1
	}
	return n
}

// idTableSize is the number of token ids whose decimal text is precomputed (ids 0 to
// 262,143: every vocabulary in the tokenizer reference fits). Larger or negative ids fall
// back to strconv.AppendInt.
const idTableSize = 1 << 18

// idTable[id] packs "<decimal id>," in its low bytes (little-endian) and the length of
// that text (2..7) in its top byte, so an id is written with one 8-byte store. It is built on
// first use from the texts of 0 … 999 (an id is its thousands' text, then its last three
// digits zero-padded), about 1 ns an entry: strconv per entry cost 8 ms of every run's start.
var idTable = sync.OnceValue(func() []uint64 {
	var small, pad3 [1000]uint64 // "n" (length in the top byte), "nnn"
	var b [4]byte
	for n := range small {
		s := strconv.AppendInt(b[:0], int64(n), 10)
		for i, c := range s {
			small[n] |= uint64(c) << (8 * i)
		}
		small[n] |= uint64(len(s)) << 56
		pad3[n] = uint64('0'+n/100) | uint64('0'+n/10%10)<<8 | uint64('0'+n%10)<<16
	}
	t := make([]uint64, idTableSize)
	for id := range t {
		hi, lo := id/1000, id%1000
		if hi == 0 {
			l := small[lo] >> 56
			t[id] = small[lo]&(1<<(8*l)-1) | uint64(',')<<(8*l) | (l+1)<<56
			continue
		}
		l := small[hi] >> 56
		t[id] = small[hi]&(1<<(8*l)-1) | pad3[lo]<<(8*l) | uint64(',')<<(8*(l+3)) | (l+4)<<56
	}
	return t
})
