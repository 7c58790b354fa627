package sse

import (
	"bytes"

	"github.com/genload/genload/host/internal/jsonscan"
	"github.com/valyala/fastjson/fastfloat"
)

// The fast path of Decoder.Decode: one forward pass over the event bytes that walks the
// top-level object, skips every value it does not need without building anything, and
// extracts only choices[].{index,text,finish_reason}, the length of
// choices[].logprobs.tokens (else of choices[].logprobs.content) and usage.{prompt_tokens,
// completion_tokens,total_tokens,prompt_tokens_details.cached_tokens}, and llama.cpp's
// timings.{predicted_n,predicted_ms} (predicted_ms parsed by fastjson's own number parser).
//
// Contract: when scanChunk returns true, the Chunk it built is exactly the Chunk the
// fastjson path (decodeFastjson) builds for the same bytes. It only returns true for
// inputs that fastjson's parser accepts (package jsonscan mirrors its grammar, in places
// more strictly) and whose meaning it is certain of; on anything else — a server error (a
// non-null top-level "error" or an "object":"error"), a duplicate of a key it reads, a key
// spelt with a backslash escape where a key is read, a number it reads that is not a
// plain non-negative integer of at most 18 digits (jsonscan.Uint), NaN/Inf literals,
// nesting deeper than jsonscan.MaxDepth, or malformed JSON — it returns false and Decode
// falls back to fastjson, so rare shapes behave as before by construction. FuzzDecodeFastVsFastjson checks the
// contract.

// scanChunk is the fast path of Decode (see the contract above). It fills d.chunk (already
// reset) and returns true, or returns false leaving d.chunk partly filled for the caller
// to reset. Text and finish reasons are unescaped into d.buf, sized once to len(data)
// (unescaping never lengthens a string), so the slices stay valid until the next Decode
// and nothing is allocated after the buffer has grown to the largest event.
func (d *Decoder) scanChunk(data []byte) bool {
	b := data
	i := jsonscan.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	if cap(d.buf) < len(b) {
		d.buf = make([]byte, 0, max(len(b), 512))
	}
	d.buf = d.buf[:0]
	c := &d.chunk
	var seenChoices, seenUsage, seenTimings bool
	i, ok := jsonscan.Object(b, i+1, func(key []byte, i int) (int, bool) {
		var ok bool
		switch string(key) {
		case "choices":
			if seenChoices {
				return 0, false
			}
			seenChoices = true
			switch {
			case jsonscan.IsNull(b, i):
				return i + 4, true
			case b[i] == '[':
				return d.scanChoices(b, i+1)
			}
			return 0, false // not an array: an error for fastjson
		case "usage":
			if seenUsage {
				return 0, false
			}
			seenUsage = true
			if b[i] == '{' {
				if i, ok = scanUsage(b, i+1, &c.Usage); ok {
					c.HasUsage = true
				}
				return i, ok
			}
			return jsonscan.SkipValue(b, i, 1)
		case "error":
			if !jsonscan.IsNull(b, i) {
				return 0, false // a server error: fastjson builds the ServerError
			}
			return i + 4, true
		case "timings":
			if seenTimings {
				return 0, false
			}
			seenTimings = true
			if b[i] == '{' {
				return scanTimings(b, i+1, c)
			}
			return jsonscan.SkipValue(b, i, 1)
		case "object":
			if b[i] != '"' {
				return jsonscan.SkipValue(b, i, 1)
			}
			end, ok := jsonscan.StringEnd(b, i+1)
			if !ok {
				return 0, false
			}
			if v := b[i+1 : end-1]; string(v) == "error" || bytes.IndexByte(v, '\\') >= 0 {
				return 0, false
			}
			return end, true
		}
		return jsonscan.SkipValue(b, i, 1)
	})
	return ok && jsonscan.SkipSpace(b, i) == len(b)
}

// scanChoices reads the elements of the choices array starting at b[i] (after '[') and
// returns the index after its ']'.
func (d *Decoder) scanChoices(b []byte, i int) (int, bool) {
	c := &d.chunk
	i = jsonscan.SkipSpace(b, i)
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		i = jsonscan.SkipSpace(b, i)
		if i >= len(b) || b[i] != '{' {
			return 0, false // not an object: an error for fastjson
		}
		c.Choices = append(c.Choices, Choice{})
		var ok bool
		if i, ok = d.scanChoice(b, i+1, &c.Choices[len(c.Choices)-1]); !ok {
			return 0, false
		}
		i = jsonscan.SkipSpace(b, i)
		if i >= len(b) {
			return 0, false
		}
		if b[i] == ',' {
			i++
			continue
		}
		if b[i] == ']' {
			return i + 1, true
		}
		return 0, false
	}
}

// scanChoice reads one choice object starting at b[i] (after '{') into ch.
func (d *Decoder) scanChoice(b []byte, i int, ch *Choice) (int, bool) {
	var seenIndex, seenText, seenFinish, seenLogprobs bool
	return jsonscan.Object(b, i, func(key []byte, i int) (int, bool) {
		var ok bool
		switch string(key) {
		case "logprobs":
			if seenLogprobs {
				return 0, false
			}
			seenLogprobs = true
			if b[i] != '{' {
				return jsonscan.SkipValue(b, i, 3) // null or not an object: no count
			}
			return scanLogprobs(b, i+1, ch)
		case "index":
			if seenIndex {
				return 0, false
			}
			seenIndex = true
			// fastjson: a non-number is an error, a number is read with Int (an error when
			// negative or not an integer); only plain integers stay here.
			ch.Index, i, ok = jsonscan.Uint(b, i)
			return i, ok
		case "text", "finish_reason":
			isText := key[0] == 't'
			if isText && seenText || !isText && seenFinish {
				return 0, false
			}
			if isText {
				seenText = true
			} else {
				seenFinish = true
			}
			if b[i] != '"' {
				// not a string: Text stays nil, the choice is not finished
				return jsonscan.SkipValue(b, i, 3)
			}
			end, ok := jsonscan.StringEnd(b, i+1)
			if !ok {
				return 0, false
			}
			off := len(d.buf)
			d.buf = jsonscan.AppendUnescaped(d.buf, b[i+1:end-1])
			s := d.buf[off:len(d.buf):len(d.buf)]
			if isText {
				ch.Text = s
			} else if len(s) > 0 {
				ch.FinishReason, ch.Finished = s, true
			}
			return end, true
		}
		return jsonscan.SkipValue(b, i, 3)
	})
}

// scanLogprobs reads the logprobs object of a choice starting at b[i] (after '{'): the
// number of elements of its "tokens" array, else of its "content" array, into ch.Logprobs
// (the fastjson path's logprobsCount). Other members, and the elements themselves, are
// skipped.
func scanLogprobs(b []byte, i int, ch *Choice) (int, bool) {
	var seenTokens, seenContent bool
	tokens, content := -1, -1
	end, ok := jsonscan.Object(b, i, func(key []byte, i int) (int, bool) {
		switch string(key) {
		case "tokens", "content":
			isTokens := key[0] == 't'
			if isTokens && seenTokens || !isTokens && seenContent {
				return 0, false
			}
			if isTokens {
				seenTokens = true
			} else {
				seenContent = true
			}
			if b[i] != '[' {
				return jsonscan.SkipValue(b, i, 4)
			}
			n, end, ok := jsonscan.Count(b, i+1, 5)
			if isTokens {
				tokens = n
			} else {
				content = n
			}
			return end, ok
		}
		return jsonscan.SkipValue(b, i, 4)
	})
	switch {
	case tokens >= 0:
		ch.Logprobs, ch.HasLogprobs = tokens, true
	case content >= 0:
		ch.Logprobs, ch.HasLogprobs = content, true
	}
	return end, ok
}

// scanTimings reads llama.cpp's timings object starting at b[i] (after '{') into c: both
// predicted_n (a plain integer) and predicted_ms (any number, parsed as fastjson parses it)
// make Timings valid, as in decodeFastjson.
func scanTimings(b []byte, i int, c *Chunk) (int, bool) {
	var seenN, seenMs, isN, isMs bool
	end, ok := jsonscan.Object(b, i, func(key []byte, i int) (int, bool) {
		switch string(key) {
		case "predicted_n":
			if seenN {
				return 0, false
			}
			seenN = true
			if b[i] == '-' || jsonscan.IsNumByte(b[i]) {
				v, end, ok := jsonscan.Uint(b, i)
				if !ok {
					return 0, false // not a plain integer: fastjson decides
				}
				c.Timings.PredictedN, isN = v, true
				return end, true
			}
		case "predicted_ms":
			if seenMs {
				return 0, false
			}
			seenMs = true
			if b[i] == '-' || jsonscan.IsNumByte(b[i]) {
				end, ok := jsonscan.SkipValue(b, i, 2)
				if !ok {
					return 0, false
				}
				c.Timings.PredictedMs, isMs = fastfloat.ParseBestEffort(string(b[i:end])), true
				return end, true
			}
		}
		return jsonscan.SkipValue(b, i, 2)
	})
	if c.HasTimings = ok && isN && isMs; !c.HasTimings {
		c.Timings = Timings{}
	}
	return end, ok
}

// scanUsage reads the usage object starting at b[i] (after '{') into u.
func scanUsage(b []byte, i int, u *Usage) (int, bool) {
	var seen [4]bool // prompt, completion, total, details
	return jsonscan.Object(b, i, func(key []byte, i int) (int, bool) {
		var f *int
		k := -1
		switch string(key) {
		case "prompt_tokens":
			f, k = &u.PromptTokens, 0
		case "completion_tokens":
			f, k = &u.CompletionTokens, 1
		case "total_tokens":
			f, k = &u.TotalTokens, 2
		case "prompt_tokens_details":
			k = 3
		}
		var ok bool
		switch {
		case k >= 0 && seen[k]:
			return 0, false
		case f != nil:
			seen[k] = true
			*f, _, i, ok = scanNumberOrSkip(b, i, 2)
			return i, ok
		case k == 3:
			seen[k] = true
			if b[i] == '{' {
				return scanDetails(b, i+1, u)
			}
		}
		return jsonscan.SkipValue(b, i, 2)
	})
}

// scanDetails reads usage.prompt_tokens_details starting at b[i] (after '{').
func scanDetails(b []byte, i int, u *Usage) (int, bool) {
	seen := false
	return jsonscan.Object(b, i, func(key []byte, i int) (int, bool) {
		if string(key) != "cached_tokens" {
			return jsonscan.SkipValue(b, i, 3)
		}
		if seen {
			return 0, false
		}
		seen = true
		var ok bool
		u.CachedTokens, u.HasCached, i, ok = scanNumberOrSkip(b, i, 3)
		return i, ok
	})
}

// scanNumberOrSkip reads an integer field that fastjson reads with GetInt: a value that
// fastjson parses as a number (anything not starting with { [ " t f n) must be one
// jsonscan.Uint accepts (else fall back); any other value counts as absent (0, false).
func scanNumberOrSkip(b []byte, i, depth int) (v int, isNum bool, end int, ok bool) {
	switch b[i] {
	case '{', '[', '"', 't', 'f', 'n':
		end, ok = jsonscan.SkipValue(b, i, depth)
		return 0, false, end, ok
	}
	v, end, ok = jsonscan.Uint(b, i)
	return v, ok, end, ok
}
