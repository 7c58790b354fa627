package measure

import (
	"fmt"
	"strconv"

	"github.com/genload/genload/host/recording"
)

// PromptCheck compares, request by request, the server's usage.prompt_tokens with the tokens
// genload sent: the sum of Options.PromptLengths over the request's prompts (ModeN: its one
// prompt, sent once with n = B). Deviation = server count − sent. Per request, so that +3 on
// one request and −3 on another are two deviations, not zero.
//
// With token-id prompts the server must count exactly what was sent: a request counted below
// it was truncated by the server (its context is smaller than genload's), which makes the
// cell an error unless Options.TruncationWarns. With text prompts a deviation is the
// re-tokenization drift, unless the server counted more than 5 % (and 8 tokens) fewer than
// sent: no tokenizer drifts that far (the text was fitted to the length the server counts, or
// built with its tokenizer), so that too is truncation.
type PromptCheck struct {
	// Requests is the number of requests compared (succeeded, with usage, and with known
	// prompt lengths); Deviating how many of them deviate; MaxAbs the largest |deviation|
	// and Sum the deviations' sum.
	Requests  int `json:"requests"`
	Deviating int `json:"deviating"`
	MaxAbs    int `json:"max_abs_deviation"`
	Sum       int `json:"sum_deviation"`
	// Text reports text prompts (small deviations are drift).
	Text bool `json:"text"`
	// Truncated counts requests counted below what was sent (text prompts: by more than
	// 5 % and 8 tokens).
	Truncated int `json:"truncated"`
	// Worst is the request with the largest |deviation| (the most truncated one when any
	// was), nil when none deviates.
	Worst *PromptDeviation `json:"worst,omitempty"`
	// TruncationError is the cell's error when a request was truncated and
	// Options.TruncationWarns is false; "" otherwise.
	TruncationError string `json:"truncation_error,omitempty"`
}

// PromptDeviation is one request's prompt-token count: Sent by genload (in Prompts prompts)
// and Counted by the server.
type PromptDeviation struct {
	Request int `json:"request"`
	Prompts int `json:"prompts"`
	Sent    int `json:"sent"`
	Counted int `json:"counted"`
}

// Message says what the deviations are, in one sentence: truncation (with the worst
// request's numbers, e.g. "the server counted 4,096 of the 6,000 prompt tokens sent"), or
// drift. "" when nothing deviates.
func (p *PromptCheck) Message() string {
	if p == nil || p.Deviating == 0 || p.Worst == nil {
		return ""
	}
	w := p.Worst
	in := ""
	if w.Prompts > 1 {
		in = fmt.Sprintf(" in %d prompts", w.Prompts)
	}
	if p.Truncated > 0 {
		return fmt.Sprintf("prompts truncated by the server: %d of %d requests counted fewer prompt tokens than sent (worst: request %d, the server counted %s of the %s prompt tokens sent%s); its context is smaller than genload's — set context to the server's",
			p.Truncated, p.Requests, w.Request, thousands(w.Counted), thousands(w.Sent), in)
	}
	kind := "token-id prompts: the server adds tokens of its own (a BOS, or a template)"
	if p.Text {
		kind = "text prompts: the server's tokenization of the text differs from genload's"
	}
	return fmt.Sprintf("prompt tokens deviate on %d of %d requests (max |deviation| %d, sum %+d; worst: request %d, the server counted %s of %s sent%s): %s",
		p.Deviating, p.Requests, p.MaxAbs, p.Sum, w.Request, thousands(w.Counted), thousands(w.Sent), in, kind)
}

// checkPrompts builds the PromptCheck of res (nil without prompt lengths or usage).
func checkPrompts(res *recording.Result, o Options) *PromptCheck {
	if len(o.PromptLengths) == 0 {
		return nil
	}
	p := &PromptCheck{Text: o.TextPrompts}
	worstTrunc := false
	for i := range res.Requests {
		r := &res.Requests[i]
		if r.Err != nil || !r.HasUsage || len(r.Prompts) == 0 {
			continue
		}
		ids := r.Prompts
		if res.Mode == recording.ModeN {
			ids = ids[:1]
		}
		sent, known := 0, true
		for _, k := range ids {
			if k < 0 || k >= len(o.PromptLengths) {
				known = false
				break
			}
			sent += o.PromptLengths[k]
		}
		if !known {
			continue
		}
		p.Requests++
		dev := r.Usage.PromptTokens - sent
		if dev == 0 {
			continue
		}
		p.Deviating++
		p.Sum += dev
		trunc := dev < 0 && (!o.TextPrompts || -dev > max(8, sent/20))
		if trunc {
			p.Truncated++
		}
		abs := max(dev, -dev)
		p.MaxAbs = max(p.MaxAbs, abs)
		if p.Worst == nil || (trunc && !worstTrunc) || (trunc == worstTrunc && abs > max(p.Worst.Counted-p.Worst.Sent, p.Worst.Sent-p.Worst.Counted)) {
			p.Worst, worstTrunc = &PromptDeviation{Request: i, Prompts: len(ids), Sent: sent, Counted: r.Usage.PromptTokens}, trunc
		}
	}
	if p.Requests == 0 {
		return nil
	}
	if p.Truncated > 0 && !o.TruncationWarns {
		p.TruncationError = p.Message()
	}
	return p
}

// thousands formats n with a comma every three digits (4096 → "4,096").
func thousands(n int) string {
	s := strconv.Itoa(max(n, -n))
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if n < 0 {
		s = "-" + s
	}
	return s
}
