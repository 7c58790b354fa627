package engine

import (
	"strconv"
	"unicode/utf8"

	"github.com/genload/genload/host/internal/jsonenc"
)

// eosToken is the id reported for an end-of-sequence token (Qwen3 <|im_end|>).
const eosToken = 151645

// tokenLogprob is the log probability the engine reports for output token vi at output
// position pos, alternative j (0 = the sampled token): a deterministic value in (−3, 0],
// decreasing with j, so that the sampled token is always the most likely one.
func tokenLogprob(vi int32, pos, j int) float64 {
	u := float64(mix64(uint64(uint32(vi))*0x9e3779b97f4a7c15^uint64(pos)<<20^uint64(j))>>11) / (1 << 53)
	return -u - 0.5*float64(j)
}

// alternative returns the vocabulary index of alternative j ≥ 1 of token vi.
func (e *Engine) alternative(vi int32, j int) int32 {
	n := int32(len(e.vocab.ids))
	return ((max(vi, 0)+int32(j)*7919)%n + n) % n
}

func (e *Engine) tokenText(vi int32) string {
	if vi < 0 {
		return ""
	}
	return e.vocab.texts[vi]
}

func (e *Engine) tokenID(vi int32) int32 {
	if vi < 0 {
		return eosToken
	}
	return e.vocab.ids[vi]
}

// appendLogprobs appends the "logprobs" value of c's pending tokens (c.toks, the tail of
// c.text) for a request that asked for k alternatives (k < 0: null), one entry per token:
//
//	vLLM, SGLang (completions API)  {"tokens":[…],"token_logprobs":[…],"top_logprobs":[{text: lp, …}, …],"text_offset":[…]}
//	llama.cpp                       {"content":[{"id","token","bytes","logprob","top_logprobs":[{"id","token","bytes","logprob"}, …]}, …]}
//	TGI                             null (ignored)
//
// top_logprobs hold max(k, 1) entries, the sampled token first; text_offset counts
// characters from the start of the choice's text (echoed prompt included).
func (e *Engine) appendLogprobs(b []byte, k int, c *choiceState) []byte {
	if k < 0 || e.wire.logprobs == lpNone {
		return append(b, "null"...)
	}
	top := max(k, 1)
	pos0 := c.tokens - len(c.toks) // output position of the first pending token
	if e.wire.logprobs == lpChat {
		return e.appendContentLogprobs(b, top, pos0, c)
	}
	return e.appendColumnLogprobs(b, top, pos0, c)
}

// appendContentLogprobs appends llama.cpp's {"content":[…]} form of appendLogprobs: one
// entry (appendLogprobEntry) per pending token of c, the first at output position pos0, each
// with its top alternatives, the sampled token first.
func (e *Engine) appendContentLogprobs(b []byte, top, pos0 int, c *choiceState) []byte {
	b = append(b, `{"content":[`...)
	for i, vi := range c.toks {
		if i > 0 {
			b = append(b, ',')
		}
		b = e.appendLogprobEntry(b, vi, tokenLogprob(vi, pos0+i, 0))
		b = append(b, `,"top_logprobs":[`...)
		for j := 0; j < top; j++ {
			if j > 0 {
				b = append(b, ',')
			}
			alt := vi
			if j > 0 {
				alt = e.alternative(vi, j)
			}
			b = e.appendLogprobEntry(b, alt, tokenLogprob(vi, pos0+i, j))
			b = append(b, '}')
		}
		b = append(b, "]}"...)
	}
	return append(b, "]}"...)
}

// appendLogprobEntry appends the fields of one llama.cpp logprob entry, without its closing
// brace: {"id","token","bytes" (the token text's UTF-8 bytes),"logprob": lp (natural log).
func (e *Engine) appendLogprobEntry(b []byte, vi int32, lp float64) []byte {
	t := e.tokenText(vi)
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, int64(e.tokenID(vi)), 10)
	b = append(b, `,"token":`...)
	b = jsonenc.AppendString(b, t)
	b = append(b, `,"bytes":[`...)
	for i := 0; i < len(t); i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(t[i]), 10)
	}
	b = append(b, `],"logprob":`...)
	return strconv.AppendFloat(b, lp, 'g', 8, 64)
}

// appendColumnLogprobs appends the completions API's form of appendLogprobs (vLLM, SGLang):
// four parallel arrays over c's pending tokens, the first at output position pos0 — their
// texts, log probabilities, top alternatives ({text: logprob}, the sampled token first) and
// text offsets (appendTextOffsets).
func (e *Engine) appendColumnLogprobs(b []byte, top, pos0 int, c *choiceState) []byte {
	b = append(b, `{"tokens":[`...)
	for i, vi := range c.toks {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendString(b, e.tokenText(vi))
	}
	b = append(b, `],"token_logprobs":[`...)
	for i, vi := range c.toks {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, tokenLogprob(vi, pos0+i, 0), 'g', 8, 64)
	}
	b = append(b, `],"top_logprobs":[`...)
	for i, vi := range c.toks {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		for j := 0; j < top; j++ {
			if j > 0 {
				b = append(b, ',')
			}
			alt := vi
			if j > 0 {
				alt = e.alternative(vi, j)
			}
			b = jsonenc.AppendString(b, e.tokenText(alt))
			b = append(b, ':')
			b = strconv.AppendFloat(b, tokenLogprob(vi, pos0+i, j), 'g', 8, 64)
		}
		b = append(b, '}')
	}
	b = append(b, `],"text_offset":[`...)
	b = e.appendTextOffsets(b, c)
	return append(b, "]}"...)
}

// appendTextOffsets appends, comma-separated, the offset in characters of each of c's
// pending tokens from the start of the choice's text: the characters already sent
// (c.textOff) plus those of the pending text before it.
func (e *Engine) appendTextOffsets(b []byte, c *choiceState) []byte {
	off := c.textOff + utf8.RuneCount(c.text)
	for _, vi := range c.toks {
		off -= utf8.RuneCountInString(e.tokenText(vi))
	}
	for i, vi := range c.toks {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(off), 10)
		off += utf8.RuneCountInString(e.tokenText(vi))
	}
	return b
}
