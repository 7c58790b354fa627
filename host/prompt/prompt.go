// Package prompt turns corpus rows into token-id prompts of exact lengths.
//
// A prompt of target length n tokens is
//
//	prefix ‖ body ‖ tail
//	prefix = Encode(template text before the user content)          e.g. "<|im_start|>user\n"
//	body   = (row ‖ sep ‖ row ‖ sep ‖ …) cut at token n − |prefix| − |tail|
//	tail   = Encode(sep + suffix + template text after the content)  e.g. "\n\nSummarize and analyse the text above.<|im_end|>\n<|im_start|>assistant\n"
//
// where row is the corpus row's token ids (tokenized once) and sep the separator's. The
// suffix is never cut, the chat template is applied once, and |prompt| = n exactly: the ids
// are sent as ids, so the server counts exactly n prompt tokens.
package prompt

import (
	"fmt"
	"strings"
)

// Encoder turns text into token ids, recognising special tokens in the text
// (add_special_tokens = false). host/tokenizer's *Tokenizer satisfies it.
type Encoder interface {
	Encode(text string) []int32
}

// Template renders one user message whose content is content, with the generation prompt
// (add_generation_prompt = true). A nil Template means no chat template (raw completion).
type Template func(content string) (string, error)

// Options are the text parts of every prompt.
type Options struct {
	// Suffix is the analysis instruction ending every body, e.g.
	// "Summarize and analyse the text above.". Required.
	Suffix string
	// Separator joins repeats of a row and precedes the suffix. Default "\n\n".
	Separator string
	// MinBody is the smallest body in tokens that [Builder.MinLen] allows. Default 32, so that
	// any two prompts built from distinct rows differ (the corpus test checks that the first 32
	// tokens of the rows are pairwise distinct).
	MinBody int
}

// Builder builds prompts; it is immutable after [New] and safe for concurrent use.
type Builder struct {
	prefix, tail []int32
	units        [][]int32 // per row: row ids ‖ separator ids
	minBody      int
}

// sentinel stands for the user content while the template is rendered; it is split out of
// the rendered text, so it must not be touched by the template (no escaping in chat templates).
const sentinel = "\uE000genload-body\uE001"

// New tokenizes every row once and the template parts once. It fails when the template does
// not render, renders the content other than exactly once, or a row tokenizes to nothing.
func New(enc Encoder, tmpl Template, rows []string, opt Options) (*Builder, error) {
	if opt.Suffix == "" {
		return nil, fmt.Errorf("prompt: empty suffix")
	}
	if opt.Separator == "" {
		opt.Separator = "\n\n"
	}
	if opt.MinBody == 0 {
		opt.MinBody = 32
	}
	pre, post := "", ""
	if tmpl != nil {
		out, err := tmpl(sentinel)
		if err != nil {
			return nil, fmt.Errorf("prompt: chat template: %w", err)
		}
		if c := strings.Count(out, sentinel); c != 1 {
			return nil, fmt.Errorf("prompt: chat template rendered the user content %d times, want exactly once", c)
		}
		pre, post, _ = strings.Cut(out, sentinel)
	}
	b := &Builder{minBody: opt.MinBody}
	if pre != "" {
		b.prefix = enc.Encode(pre)
	}
	b.tail = enc.Encode(opt.Separator + opt.Suffix + post)
	sep := enc.Encode(opt.Separator)
	b.units = make([][]int32, len(rows))
	for i, r := range rows {
		ids := enc.Encode(r)
		if len(ids) == 0 {
			return nil, fmt.Errorf("prompt: corpus row %d tokenizes to no tokens", i)
		}
		u := make([]int32, 0, len(ids)+len(sep))
		b.units[i] = append(append(u, ids...), sep...)
	}
	return b, nil
}

// Overhead is the number of tokens every prompt spends outside its body: chat template,
// separator and suffix.
func (b *Builder) Overhead() int { return len(b.prefix) + len(b.tail) }

// MinLen is the shortest prompt in tokens: Overhead + MinBody.
func (b *Builder) MinLen() int { return b.Overhead() + b.minBody }

// Rows is the number of corpus rows.
func (b *Builder) Rows() int { return len(b.units) }

// Prefix and Tail return copies of the token ids around the body.
func (b *Builder) Prefix() []int32 { return append([]int32(nil), b.prefix...) }

// Tail returns a copy of the token ids after the body (separator, suffix, template end).
func (b *Builder) Tail() []int32 { return append([]int32(nil), b.tail...) }

// Build returns one prompt per length: prompt i uses corpus row (firstRow + i) mod Rows and has
// exactly lengths[i] tokens. It fails when a length is below Overhead + 1.
func (b *Builder) Build(firstRow int, lengths []int) ([][]int32, error) {
	out := make([][]int32, len(lengths))
	for i, n := range lengths {
		p, err := b.One((firstRow+i)%len(b.units), n)
		if err != nil {
			return nil, fmt.Errorf("prompt %d: %w", i, err)
		}
		out[i] = p
	}
	return out, nil
}

// One returns the prompt of exactly n tokens built from corpus row row.
func (b *Builder) One(row, n int) ([]int32, error) {
	body := n - b.Overhead()
	if body < 1 {
		return nil, fmt.Errorf("length %d tokens is below the %d tokens of chat template and suffix plus one body token", n, b.Overhead())
	}
	p := make([]int32, 0, n)
	p = append(p, b.prefix...)
	u := b.units[row]
	for body > 0 {
		k := min(body, len(u))
		p = append(p, u[:k]...)
		body -= k
	}
	return append(p, b.tail...), nil
}
