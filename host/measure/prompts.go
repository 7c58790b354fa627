package measure

import (
	"fmt"
	"slices"
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
// cell an error unless Options.TruncationWarns — except when every request counted short is
// short by one same amount per prompt of at most FixedShortMax tokens (FewerPerPrompt): a
// fixed difference (special tokens the server drops or leaves out of its count), a deviation. With text prompts a deviation is the
// re-tokenization drift, unless the server counted more than 5 % (and 8 tokens) fewer than
// sent. Then it is truncation when the requests so counted were all cut to one count (the
// server's context less max_tokens), or one request was counted under 60 % of what was sent
// (beyond any two tokenizers' difference); it is another tokenizer than genload's when
// several were counted short by different amounts (Mismatch); one request short by 5–40 %
// cannot tell the two apart (Ambiguous), and is said so, without an error.
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
	// Mismatch counts text requests counted short beyond drift by different amounts: the
	// server's tokenizer is not genload's (they are not in Truncated). Ambiguous reports a
	// single such request, which could be either.
	Mismatch  int  `json:"tokenizer_mismatch,omitempty"`
	Ambiguous bool `json:"ambiguous,omitempty"`
	// FewerPerPrompt is, for token-id prompts, the tokens every request counted short was
	// short by per prompt when that is one same small amount (≤ FixedShortMax): a fixed
	// difference — the server drops special tokens (a BOS) or counts without them — not a
	// cut (they are not in Truncated); 0 otherwise.
	FewerPerPrompt int `json:"fewer_per_prompt,omitempty"`
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
	if p.Mismatch > 0 {
		return fmt.Sprintf("text prompts: the server counts fewer tokens than genload's tokenizer on %d of %d requests (worst: request %d, %s of the %s prompt tokens sent%s, %.0f %%), each by another amount: its tokenizer is not genload's (a context that cut them would leave every one at the same count) — set [tokenizer] path to the model's tokenizer",
			p.Mismatch, p.Requests, w.Request, thousands(w.Counted), thousands(w.Sent), in, 100*float64(w.Counted-w.Sent)/float64(w.Sent))
	}
	if p.Ambiguous {
		return fmt.Sprintf("text prompts: the server counted %s of the %s prompt tokens sent to request %d%s (%.0f %%): a context smaller than genload's (set context to the server's) or a tokenizer other than the model's (set [tokenizer] path); one request cannot tell them apart",
			thousands(w.Counted), thousands(w.Sent), w.Request, in, 100*float64(w.Counted-w.Sent)/float64(w.Sent))
	}
	if p.FewerPerPrompt > 0 {
		return fmt.Sprintf("prompt tokens deviate on %d of %d requests (worst: request %d, the server counted %s of the %s prompt tokens sent%s): %s per prompt on every request counted short, a fixed difference — the server drops special tokens (a BOS) of the prompts, or counts without them; not a context cut, which leaves the longest prompts at one count whatever their length (unless every prompt ends within %s of the server's context)",
			p.Deviating, p.Requests, w.Request, thousands(w.Counted), thousands(w.Sent), in, plural(p.FewerPerPrompt, "fewer token", "fewer tokens"), plural(p.FewerPerPrompt, "token", "tokens"))
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
	if o.TextPrompts && p.Truncated > 0 {
		textShort(p, res, o)
	}
	if !o.TextPrompts && p.Truncated > 0 {
		idsShort(p, res, o)
	}
	if p.Truncated > 0 && !o.TruncationWarns {
		p.TruncationError = p.Message()
	}
	return p
}

// textShort decides, for text prompts, whether the requests counted short beyond drift
// (p.Truncated of them) were truncated or tokenized differently (see PromptCheck): several
// cut to one count (within a token) are truncation, several of different counts another
// tokenizer; one alone is truncation under 60 % of what was sent, else ambiguous.
func textShort(p *PromptCheck, res *recording.Result, o Options) {
	var counted []int
	var sentOne int
	for i := range res.Requests {
		r := &res.Requests[i]
		if r.Err != nil || !r.HasUsage || len(r.Prompts) == 0 {
			continue
		}
		ids := r.Prompts
		if res.Mode == recording.ModeN {
			ids = ids[:1]
		}
		sent := 0
		for _, k := range ids {
			if k < 0 || k >= len(o.PromptLengths) {
				sent = -1
				break
			}
			sent += o.PromptLengths[k]
		}
		if dev := r.Usage.PromptTokens - sent; sent > 0 && dev < 0 && -dev > max(8, sent/20) {
			counted = append(counted, r.Usage.PromptTokens)
			sentOne = sent
		}
	}
	switch {
	case len(counted) >= 2:
		lo, hi := slices.Min(counted), slices.Max(counted)
		if hi-lo > 1 {
			p.Mismatch, p.Truncated = p.Truncated, 0
		}
	case len(counted) == 1 && 10*counted[0] >= 6*sentOne:
		p.Ambiguous, p.Truncated = true, 0
	}
}

// FixedShortMax is the most tokens per prompt a server may count short of token-id prompts for
// the shortfall to be read as a fixed difference (special tokens: a BOS, an EOS, a template's
// few markers) rather than a cut: the 8 tokens text prompts' drift is allowed too.
const FixedShortMax = 8

// idsShort decides, for token-id prompts, whether the requests counted short (p.Truncated of
// them) were each short by one same amount per prompt of at most FixedShortMax: then it is a
// fixed difference (p.FewerPerPrompt), not truncation.
func idsShort(p *PromptCheck, res *recording.Result, o Options) {
	per := 0
	for i := range res.Requests {
		r := &res.Requests[i]
		if r.Err != nil || !r.HasUsage || len(r.Prompts) == 0 {
			continue
		}
		ids := r.Prompts
		if res.Mode == recording.ModeN {
			ids = ids[:1]
		}
		sent := 0
		for _, k := range ids {
			if k < 0 || k >= len(o.PromptLengths) {
				sent = -1
				break
			}
			sent += o.PromptLengths[k]
		}
		short := sent - r.Usage.PromptTokens
		if sent <= 0 || short <= 0 {
			continue
		}
		if short%len(ids) != 0 || short/len(ids) > FixedShortMax || (per != 0 && short/len(ids) != per) {
			return
		}
		per = short / len(ids)
	}
	if per > 0 {
		p.FewerPerPrompt, p.Truncated = per, 0
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
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
