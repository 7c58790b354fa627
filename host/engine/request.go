package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/genload/genload/host/internal/jsonenc"
	"github.com/genload/genload/host/internal/jsonscan"
)

// completionRequest is the parsed body of POST /v1/completions.
type completionRequest struct {
	// prompts are the prompts as token ids (text prompts are tokenized after parsing).
	prompts [][]int32
	// texts are the text prompts, when the prompt was a string or a list of strings.
	texts    []string
	isText   bool
	rest     restFields
	promptOK bool // a "prompt" key was present
}

// restFields are the body fields other than "prompt", decoded with encoding/json.
type restFields struct {
	Model         *string  `json:"model"`
	N             *int     `json:"n"`
	MaxTokens     *int     `json:"max_tokens"`
	MinTokens     *int     `json:"min_tokens"`
	IgnoreEOS     *bool    `json:"ignore_eos"`
	Temperature   *float64 `json:"temperature"`
	Seed          *int64   `json:"seed"`
	Stream        *bool    `json:"stream"`
	StreamOptions *struct {
		IncludeUsage         *bool `json:"include_usage"`
		ContinuousUsageStats *bool `json:"continuous_usage_stats"`
	} `json:"stream_options"`
	StreamInterval *int  `json:"stream_interval"`
	Echo           *bool `json:"echo"` // vLLM, SGLang: prompt text prepended (max_tokens ≥ 1)
	// PerfMetricsInResponse asks for Fireworks-style perf_metrics in the last chunk.
	PerfMetricsInResponse *bool `json:"perf_metrics_in_response"`
	// TGI-style
	MaxNewTokens *int `json:"max_new_tokens"`
	// Logprobs is the completions API's "logprobs": k (an integer; true reads as 1, false
	// and null as off): per-token log probabilities with the k most likely alternatives.
	Logprobs json.RawMessage `json:"logprobs"`
}

// parseCompletion parses body. The "prompt" value is parsed by a hand-written scanner (a body
// of 64 × 64,000 token ids is 25 MB; see BenchmarkParseLargePrompt); every other field is
// collected verbatim and decoded by encoding/json. Errors describe the offending position.
func parseCompletion(body []byte) (*completionRequest, error) {
	p := &scanner{b: body}
	req := &completionRequest{}
	p.ws()
	if !p.eat('{') {
		return nil, p.errf("expected a JSON object")
	}
	rest := make([]byte, 0, 256)
	rest = append(rest, '{')
	first := true
	p.ws()
	if p.eat('}') {
		goto done
	}
	for {
		p.ws()
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		p.ws()
		if !p.eat(':') {
			return nil, p.errf("expected ':' after key %q", key)
		}
		p.ws()
		if key == "prompt" {
			if err := p.prompt(req); err != nil {
				return nil, err
			}
			req.promptOK = true
		} else {
			start := p.i
			if err := p.skip(); err != nil {
				return nil, err
			}
			if !first {
				rest = append(rest, ',')
			}
			first = false
			rest = jsonenc.AppendString(rest, key)
			rest = append(rest, ':')
			rest = append(rest, body[start:p.i]...)
		}
		p.ws()
		if p.eat(',') {
			continue
		}
		if p.eat('}') {
			break
		}
		return nil, p.errf("expected ',' or '}'")
	}
done:
	p.ws()
	if p.i != len(p.b) {
		return nil, p.errf("unexpected data after the JSON object")
	}
	rest = append(rest, '}')
	if err := json.Unmarshal(rest, &req.rest); err != nil {
		return nil, fmt.Errorf("invalid request field: %w", err)
	}
	return req, nil
}

// scanner is a minimal JSON reader over a byte slice.
type scanner struct {
	b []byte
	i int
}

func (p *scanner) errf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at byte %d: %s", p.i, fmt.Sprintf(format, args...))
}

func (p *scanner) ws() { p.i = jsonscan.SkipSpace(p.b, p.i) }

func (p *scanner) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// more consumes what follows an element of an array or object closed by closeC: true after a
// ',' (another element follows), false with a nil error after closeC, false with an error
// ("expected ',' or closeC" + where) otherwise.
func (p *scanner) more(closeC byte, where string) (bool, error) {
	p.ws()
	if p.eat(',') {
		return true, nil
	}
	if p.eat(closeC) {
		return false, nil
	}
	return false, p.errf("expected ',' or %q%s", closeC, where)
}

func (p *scanner) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

// str reads a JSON string strictly: no raw control characters, and escapes as
// encoding/json decodes them.
func (p *scanner) str() (string, error) {
	if !p.eat('"') {
		return "", p.errf("expected a string")
	}
	start := p.i
	end, ok := jsonscan.StringEnd(p.b, start)
	escaped, ctl := false, -1
	if ok {
		escaped, ctl = jsonscan.Check(p.b[start : end-1])
	} else {
		_, ctl = jsonscan.Check(p.b[start:])
	}
	if ctl >= 0 {
		p.i = start + ctl
		return "", p.errf("control character in string")
	}
	if !ok {
		p.i = len(p.b)
		return "", p.errf("unterminated string")
	}
	p.i = end
	if !escaped {
		return string(p.b[start : end-1]), nil
	}
	var s string
	if err := json.Unmarshal(p.b[start-1:end], &s); err != nil {
		return "", p.errf("bad string: %v", err)
	}
	return s, nil
}

// skip advances over one JSON value (jsonscan's grammar; validated later by encoding/json).
func (p *scanner) skip() error {
	if p.i >= len(p.b) {
		return p.errf("unexpected end of input")
	}
	end, ok := jsonscan.SkipValue(p.b, p.i, 0)
	if !ok {
		return p.errf("expected a JSON value")
	}
	p.i = end
	return nil
}

var errEmptyPrompt = errors.New("empty prompt")

// prompt parses the four prompt forms: "text", ["text", ...], [id, ...], [[id, ...], ...].
func (p *scanner) prompt(req *completionRequest) error {
	switch p.peek() {
	case '"':
		s, err := p.str()
		if err != nil {
			return err
		}
		req.isText, req.texts = true, []string{s}
		return nil
	case '[':
	default:
		return p.errf("prompt must be a string, a list of strings, a list of token ids or a list of lists of token ids")
	}
	p.i++
	p.ws()
	if p.eat(']') {
		return errEmptyPrompt
	}
	switch c := p.peek(); {
	case c == '"':
		req.isText = true
		for {
			p.ws()
			s, err := p.str()
			if err != nil {
				return err
			}
			req.texts = append(req.texts, s)
			if more, err := p.more(']', " in prompt list"); !more {
				return err
			}
		}
	case c == '[':
		for {
			p.ws()
			if !p.eat('[') {
				return p.errf("expected a token id list")
			}
			ids, err := p.ids()
			if err != nil {
				return err
			}
			req.prompts = append(req.prompts, ids)
			if more, err := p.more(']', " in prompt list"); !more {
				return err
			}
		}
	default:
		ids, err := p.ids()
		if err != nil {
			return err
		}
		req.prompts = [][]int32{ids}
		return nil
	}
}

// ids parses the rest of a token-id list after its '['. Ids must be integers in int32 range;
// the slice is sized exactly by counting commas up to the closing ']' (a vectorized scan).
func (p *scanner) ids() ([]int32, error) {
	end := bytes.IndexByte(p.b[p.i:], ']')
	if end < 0 {
		return nil, p.errf("unterminated token id list")
	}
	ids := make([]int32, 0, bytes.Count(p.b[p.i:p.i+end], []byte{','})+1)
	b := p.b
	i := p.i
	for {
		i = jsonscan.SkipSpace(b, i)
		if i < len(b) && b[i] == ']' && len(ids) == 0 {
			p.i = i + 1
			return ids, nil
		}
		neg := false
		if i < len(b) && b[i] == '-' {
			neg = true
			i++
		}
		start := i
		var v int64
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			v = v*10 + int64(b[i]-'0')
			if v > math.MaxInt32+1 {
				p.i = start
				return nil, p.errf("token id out of range")
			}
			i++
		}
		if i == start {
			p.i = i
			return nil, p.errf("expected a token id")
		}
		if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
			// slow path: a number with a fraction or exponent is accepted when it is an
			// integer (as pydantic's lax int does for 1.0), e.g. 0E0 or 2.0
			j := i
			for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j] == '+' || b[j] == '-') {
				j++
			}
			numStart := start
			if neg {
				numStart--
			}
			f, err := strconv.ParseFloat(string(b[numStart:j]), 64)
			if err != nil || f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 || !jsonscan.ValidNumber(b[numStart:j]) {
				p.i = start
				return nil, p.errf("token id must be an integer")
			}
			ids = append(ids, int32(f))
			i = j
			goto next
		}
		if neg {
			v = -v
		}
		if v > math.MaxInt32 {
			p.i = start
			return nil, p.errf("token id out of range")
		}
		ids = append(ids, int32(v))
	next:
		i = jsonscan.SkipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i++
			continue
		}
		if i < len(b) && b[i] == ']' {
			p.i = i + 1
			return ids, nil
		}
		p.i = i
		return nil, p.errf("expected ',' or ']' in token id list")
	}
}
