package engine

import (
	"strings"
	"unicode/utf8"
)

// Tokenizer turns text into token ids and back. host/tokenizer's *Tokenizer satisfies it; a nil
// Tokenizer passed to New selects a byte-level fallback (one token per UTF-8 byte).
type Tokenizer interface {
	// Encode returns the token ids of text, without special tokens added.
	Encode(text string) []int32
	// Decode returns the text of ids; skipSpecial drops special tokens.
	Decode(ids []int32, skipSpecial bool) string
}

// byteTokenizer is the fallback Tokenizer: token id = byte value.
type byteTokenizer struct{}

var _ Tokenizer = byteTokenizer{}

func (byteTokenizer) Encode(text string) []int32 {
	ids := make([]int32, len(text))
	for i := 0; i < len(text); i++ {
		ids[i] = int32(text[i])
	}
	return ids
}

func (byteTokenizer) Decode(ids []int32, _ bool) string {
	b := make([]byte, 0, len(ids))
	for _, id := range ids {
		if id >= 0 && id < 256 {
			b = append(b, byte(id))
		}
	}
	return string(b)
}

// outputWords is the text from which the generated-token vocabulary is drawn: generated tokens
// are these words' token ids, so that completions decode to clean text under any tokenizer.
const outputWords = ` the of and to in is was for that with as on by at from his her they this
which be are or an it had not but one all were we when there can their has been more would
who will into time two may first than other like then these its only new some could made
over such after also most years through state many where before must well between each good
world under water light small long little great found high every place people city river
stone field paper music number system market table garden window morning evening history
island winter summer letter station engine signal memory bridge harbor forest mountain
silver copper orange purple yellow simple careful quiet bright gentle sudden distant`

// vocab is the generated-token vocabulary: token ids and their texts.
type vocab struct {
	ids   []int32
	texts []string
}

// buildVocab encodes outputWords word by word with tok and keeps every distinct id whose
// single-token decode is valid, non-empty UTF-8 text.
func buildVocab(tok Tokenizer) vocab {
	var v vocab
	seen := map[int32]bool{}
	for _, w := range strings.Fields(outputWords) {
		for _, id := range tok.Encode(" " + w) {
			if seen[id] {
				continue
			}
			seen[id] = true
			t := tok.Decode([]int32{id}, true)
			if t == "" || !utf8.ValidString(t) {
				continue
			}
			v.ids = append(v.ids, id)
			v.texts = append(v.texts, t)
		}
	}
	if len(v.ids) == 0 { // a tokenizer that yields nothing usable: fall back to bytes
		return buildVocab(byteTokenizer{})
	}
	return v
}

// mix64 is the splitmix64 finalizer: a bijective 64-bit mix with good avalanche.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// hashBlocks returns the chained hashes of the full blockSize-token blocks of ids
// (h_i = H(h_{i−1}, ids[i·bs:(i+1)·bs])) and a hash of the whole prompt (all tokens, including
// a trailing partial block, and the length).
func hashBlocks(ids []int32, blockSize int) (blocks []uint64, whole uint64) {
	n := len(ids) / blockSize
	blocks = make([]uint64, n)
	h := uint64(0x9e3779b97f4a7c15)
	for i := 0; i < n; i++ {
		for _, t := range ids[i*blockSize : (i+1)*blockSize] {
			h = (h ^ uint64(uint32(t))) * 0x100000001b3
			h ^= h >> 29
		}
		h = mix64(h)
		blocks[i] = h
	}
	for _, t := range ids[n*blockSize:] {
		h = (h ^ uint64(uint32(t))) * 0x100000001b3
		h ^= h >> 29
	}
	return blocks, mix64(h ^ uint64(len(ids)))
}
