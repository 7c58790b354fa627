package dispatch

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
)

// idTableSize is the number of token ids whose decimal text is precomputed (ids 0 to
// 262,143: every vocabulary in the tokenizer reference fits). Larger or negative ids fall
// back to strconv.AppendInt.
const idTableSize = 1 << 18

// idTable[id] packs "<decimal id>," in its low bytes (little-endian) and the length of
// that text (2..7) in its top byte, so an id is written with one 8-byte store.
var idTable = sync.OnceValue(func() []uint64 {
	t := make([]uint64, idTableSize)
	var b [16]byte
	for id := range t {
		s := strconv.AppendInt(b[:0], int64(id), 10)
		s = append(s, ',')
		var v uint64
		for i, c := range s {
			v |= uint64(c) << (8 * i)
		}
		t[id] = v | uint64(len(s))<<56
	}
	return t
})

// appendIDs appends ids as a JSON array of integers ("[1,2,3]"). Cost: one 8-byte store
// and an add per id below idTableSize; at most one growth of dst per call.
func appendIDs(dst []byte, ids []int32) []byte {
	if len(ids) == 0 {
		return append(dst, '[', ']')
	}
	dst = append(dst, '[')
	dst = slices.Grow(dst, 8*len(ids)+16)
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
		if need := pos + 8*(len(ids)-k) + 24; need > len(b) {
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

// bodyTemplate holds the precomputed parts of a /v1/completions body.
type bodyTemplate struct {
	model       []byte // `"model":"…",` or empty
	temperature []byte // `,"temperature":0` or empty when ExtraBody overrides it
	seed        []byte
	streamOpts  []byte
	extra       []byte // `,"k":v` pairs of ExtraBody, keys sorted
	skip        map[string]bool
}

// fixedKeys are the body fields genload writes itself; ExtraBody may override any of them.
var fixedKeys = []string{"model", "prompt", "n", "max_tokens", "temperature", "ignore_eos", "stream", "stream_options", "seed"}

func newBodyTemplate(o *Options) (*bodyTemplate, error) {
	t := &bodyTemplate{skip: map[string]bool{}}
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
		if slices.Contains(fixedKeys, k) {
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
//	 "stream":true,"stream_options":{"include_usage":true}[,"seed":S][,extra…]}
//
// P is [[ids…],…] when array, else the single id list prompts[0]. Same inputs → same
// bytes (extra keys are sorted).
func (t *bodyTemplate) appendBody(dst []byte, prompts [][]int32, array bool, n, maxTokens int) []byte {
	dst = append(dst, '{')
	dst = append(dst, t.model...)
	dst = append(dst, `"prompt":`...)
	if array {
		dst = append(dst, '[')
		for i, p := range prompts {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendIDs(dst, p)
		}
		dst = append(dst, ']')
	} else {
		dst = appendIDs(dst, prompts[0])
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
	dst = append(dst, t.extra...)
	return append(dst, '}')
}

// bodySize returns an upper bound of the body length, so one buffer growth suffices.
func bodySize(prompts [][]int32) int {
	n := 512
	for _, p := range prompts {
		n += 8*len(p) + 32
	}
	return n
}
