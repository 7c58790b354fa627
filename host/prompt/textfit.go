package prompt

import (
	"context"
	"fmt"
	"strings"
)

// Counter measures the length a server sees for a text prompt: the number of prompt tokens it
// counts for text sent as a string prompt of /v1/completions, the special tokens its tokenizer
// adds included. A server's tokenize endpoint gives it: vLLM and SGLang POST /tokenize
// {"prompt": text, "add_special_tokens": true} → "count"; llama.cpp POST /tokenize
// {"content": text, "add_special": true} → len("tokens"); TGI POST /tokenize {"inputs": text}
// → len. Errors should name the URL and the status.
type Counter interface {
	Count(ctx context.Context, text string) (int, error)
}

// TextOptions says how the server counts a text prompt.
type TextOptions struct {
	// Added is the number of special tokens the server's tokenizer adds around the text
	// (len(Before) + len(After) of host/tokenizer's TextSpecials); used without a Counter.
	Added int
	// Counter is the server's tokenize endpoint. Nil: the length is the local tokenizer's
	// count of the text plus Added, which the server does not confirm.
	Counter Counter
	// Recheck re-encodes every text with the local tokenizer when there is no Counter. It
	// costs a tokenization of every prompt (about 8 s for the 26 M tokens of the default
	// matrix); without it the length of the prompt's ids stands for the re-encoding, which
	// is the same since the ids are the canonical tokenization of the text
	// (TestPromptsAreCanonical checks it for every row and tokenizer genload is tested with).
	Recheck bool
	// Extra is what the server counts beyond what Counter (or the local re-encoding) says:
	// the tokens of its own chat template when it templates completions prompts
	// ([DetectTemplating]'s Extra), else 0.
	Extra int
	// MaxTries bounds the prompts built and measured per target length. Default 4.
	MaxTries int
}

// TextPrompt is a text prompt and the length the server sees.
type TextPrompt struct {
	Text string
	// Tokens is the length the server sees in tokens: Counter's count + Extra when Verified,
	// else the local count + Added + Extra.
	Tokens int
	// Verified is true when Tokens comes from the server's tokenize endpoint.
	Verified bool
	// Tries is the number of prompts built and measured (1 when the first was exact).
	Tries int
}

// TextFitter builds text prompts whose length, as the server counts it, is the target. The
// Builder must have been made with the template the server will see (host/tokenizer's
// ApplyChatTemplateText: no BOS text where the server adds BOS). Safe for concurrent use
// when the Counter is.
type TextFitter struct {
	b     *Builder
	codec Codec
	opt   TextOptions
}

// NewTextFitter returns a TextFitter over b, whose texts codec decodes.
func NewTextFitter(b *Builder, codec Codec, opt TextOptions) *TextFitter {
	if opt.MaxTries <= 0 {
		opt.MaxTries = 4
	}
	return &TextFitter{b: b, codec: codec, opt: opt}
}

// Build fits one text prompt per length: prompt i uses source Builder.Source(firstRow, i).
func (f *TextFitter) Build(ctx context.Context, firstRow int, lengths []int) ([]TextPrompt, error) {
	f.b.prepare(firstRow, len(lengths))
	out := make([]TextPrompt, len(lengths))
	for i, n := range lengths {
		p, err := f.One(ctx, f.b.Source(firstRow, i), n)
		if err != nil {
			return nil, fmt.Errorf("prompt %d: %w", i, err)
		}
		out[i] = p
	}
	return out, nil
}

// One fits the text prompt of source row (a corpus row below Rows) whose length as the server sees it is n tokens: it builds
// the prompt of m = n − Added − Extra ids (canonical, so the local re-encoding of its text is
// exactly m), measures it (Counter, or locally: m, or the re-encoding with Recheck), and while the measure differs
// from n rebuilds with m moved by the difference, at most MaxTries times. Errors: a Counter
// error (wrapped); no fit after MaxTries, with the lengths built and measured; n too short for
// the template and the suffix; a server that counts the first prompt more than 5 % (and 8
// tokens) off the target, whose tokenizer is another than genload's.
func (f *TextFitter) One(ctx context.Context, row, n int) (TextPrompt, error) {
	m := n - f.opt.Added - f.opt.Extra
	var seen []string
	for try := 1; try <= f.opt.MaxTries; try++ {
		ids, err := f.b.One(row, m)
		if err != nil {
			return TextPrompt{}, err
		}
		text := f.codec.Decode(ids, false)
		got, verified := 0, f.opt.Counter != nil
		if verified {
			c, err := f.opt.Counter.Count(ctx, text)
			if err != nil {
				return TextPrompt{}, fmt.Errorf("measuring a prompt of %d tokens: %w", n, err)
			}
			got = c + f.opt.Extra
		} else if f.opt.Recheck {
			got = len(f.codec.Encode(text)) + f.opt.Added + f.opt.Extra
		} else {
			got = len(ids) + f.opt.Added + f.opt.Extra
		}
		if got == n {
			return TextPrompt{Text: text, Tokens: got, Verified: verified, Tries: try}, nil
		}
		if d := got - n; verified && try == 1 && (d > max(8, n/20) || -d > max(8, n/20)) {
			// Far more than special tokens or a template: another tokenizer altogether.
			return TextPrompt{}, fmt.Errorf("%s: the server counts a text prompt of %d tokens (genload's tokenizer, with the specials the server adds) as %d (%+.0f %%): the server's tokenizer is not genload's; set [tokenizer] path to the server model's directory",
				f.b.describe(row), n, got, 100*float64(d)/float64(n))
		}
		seen = append(seen, fmt.Sprintf("built %d → %d", m, got))
		m += n - got
	}
	who := "the local tokenizer's re-encoding"
	if f.opt.Counter != nil {
		who = "the server"
	}
	return TextPrompt{}, fmt.Errorf("%s: no text prompt of %d tokens as %s counts it after %d tries (%s)",
		f.b.describe(row), n, who, f.opt.MaxTries, strings.Join(seen, ", "))
}

// UnverifiedMargin is the number of tokens to keep free under the context for text prompts
// whose length the server did not measure (no tokenize endpoint): the longest prompt is then
// context − max_tokens − UnverifiedMargin(context − max_tokens, templateTokens), so that a
// prompt the server counts longer than genload does still fits and the run does not end on a
// 400. The margin covers what cannot be checked without the server:
//   - 2 tokens: a BOS and an EOS the server's tokenizer adds or not (a server that reads its
//     own add_bos_token, such as llama.cpp from GGUF metadata, may differ from the local
//     tokenizer_config.json);
//   - templateTokens: the chat template applied once more by a server that templates
//     completions prompts, when the probe could not tell;
//   - 0.5 % of maxLen, rounded up: a server tokenizer of another version or vocabulary. With
//     canonical ids the same tokenizer counts exactly; the 0.23 % seen from non-canonical ids
//     at repeat boundaries, doubled, bounds the drift of a near-identical one.
func UnverifiedMargin(maxLen, templateTokens int) int {
	return 2 + templateTokens + (maxLen+199)/200
}

// Probe is one prompt's length two ways: Server is the server's count for it (usage
// prompt_tokens of a /v1/completions request), Local the count expected of it (the server's
// tokenize endpoint, or the local tokenizer with the special tokens the server adds).
type Probe struct {
	Server, Local int
}

// Templating is what [DetectTemplating] concludes about a server's count of completions
// prompts.
type Templating struct {
	// Extra is Server − Local, the same for every probe (0 when they disagree).
	Extra int
	// Templates is true when the server applies a chat template to completions prompts:
	// every probe is counted the same number of tokens (≥ 3) too long.
	Templates bool
	// Consistent is false when the probes' differences disagree (another tokenizer, or
	// truncation): no constant correction exists.
	Consistent bool
	// Message says it in one line, e.g. "the server templates completions prompts (+9 tokens)".
	Message string
}

// DetectTemplating compares the server's counts of probe prompts with the counts expected;
// templateTokens is the local chat template's own tokens ([Builder.TemplateTokens]). A
// constant difference of 3 tokens or more is server-side templating (the smallest chat
// template, a role header and an end marker, takes more than a BOS and an EOS); 1 or 2 are
// special tokens the server adds; a negative or varying one is truncation or another
// tokenizer. Two probes of different lengths tell a constant difference from a proportional
// one; one probe is accepted.
func DetectTemplating(templateTokens int, probes ...Probe) Templating {
	if len(probes) == 0 {
		return Templating{Consistent: true, Message: "no probe"}
	}
	d := probes[0].Server - probes[0].Local
	for _, p := range probes[1:] {
		if p.Server-p.Local != d {
			var ds []string
			for _, q := range probes {
				ds = append(ds, fmt.Sprintf("%+d of %d", q.Server-q.Local, q.Local))
			}
			return Templating{Message: fmt.Sprintf("the server counts prompts differently from the expected count by %s tokens: another tokenizer or truncation, no constant correction",
				strings.Join(ds, ", "))}
		}
	}
	t := Templating{Extra: d, Consistent: true}
	switch {
	case d == 0:
		t.Message = "the server counts completions prompts as sent"
	case d >= 3:
		t.Templates = true
		t.Message = fmt.Sprintf("the server templates completions prompts (+%d tokens)", d)
		if d == templateTokens {
			t.Message += fmt.Sprintf(", as many as the chat template's own %d: send the content untemplated", templateTokens)
		}
	case d > 0:
		t.Message = fmt.Sprintf("the server adds %d special token(s) of its own to completions prompts (a BOS, or BOS and EOS)", d)
	default:
		t.Message = fmt.Sprintf("the server counts completions prompts %d tokens shorter than sent: truncation or another tokenizer", -d)
	}
	return t
}
