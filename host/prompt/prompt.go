// Package prompt turns corpus rows into token-id prompts of exact lengths.
//
// A prompt of target length n tokens is the canonical tokenization of its own text
//
//	text = pre ‖ body ‖ joint ‖ suffix ‖ post
//	pre, post = the chat template around the user content   e.g. "<|im_start|>user\n", "<|im_end|>\n<|im_start|>assistant\n"
//	body  = (row ‖ sep ‖ row ‖ sep ‖ …) cut at a character boundary
//	joint = sep, or (where sep cannot reach n) " " ‖ sep, "… " ‖ sep, " ", "\n" or nothing
//	ids   = Encode(text), with len(ids) = n exactly and Encode(Decode(ids)) = ids
//
// so a server that receives the ids and one that re-tokenizes the decoded text count the same
// n prompt tokens. The suffix is never cut and the chat template is applied once. Over the
// default matrix's 1,456 prompts (embedded Qwen3) the joint is the separator in 1,179, " \n\n"
// in 231, "… \n\n" in 43 and " " in 3.
//
// Encoding every prompt whole would cost a tokenization of every token sent (26 M tokens for
// the default matrix), so the builder finds once per row — when a prompt first uses it — the
// period of Encode(pre ‖ u⁴), u = row ‖ sep:
// head ‖ unit ‖ unit ‖ …, where the unit's text is u or a rotation of it (gpt-oss tokenizes
// the junction "}\n\n//" of two code rows as one token), and restart points in the unit from
// which the rest tokenizes on its own after a few tokens of left context. A prompt is then
// head ‖ unit^m ‖ unit[:at] ‖ Encode(context ‖ the rest of the body ‖ joint ‖ suffix ‖ post)
// minus the context, so only about restartEvery body tokens and the tail are tokenized per
// try. The cut is moved a token at a time, and the joints tried, until the prompt has exactly
// n tokens. A row without a period is built by tokenizing the whole text.
package prompt

import (
	"fmt"
	"strings"
	"sync"
)

// Codec turns text into token ids, recognising special tokens written in the text
// (add_special_tokens = false), and ids back into text. It must be safe for concurrent use
// (New plans rows in parallel). host/tokenizer's *Tokenizer satisfies it.
type Codec interface {
	Encode(text string) []int32
	Decode(ids []int32, skipSpecial bool) string
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
	codec        Codec
	pre, tailTxt string  // template text before the content; separator ‖ suffix ‖ template after
	sep          string  // separator
	prefix, tail []int32 // Encode(pre), Encode(tailTxt)
	end          []int32 // Encode(suffix ‖ template after): every prompt's ids end with it
	tmplTokens   int     // tokens of the chat template's own text: Encode(pre) + Encode(post)
	joints       []joint // text between the body and the suffix, tried in order
	anchors      []anchor
	rows         []rowSlot
	minBody      int
	texts        []string // the corpus rows
	starts       []start  // the rotations' start points (distinct.go), made on first use
	startsOnce   sync.Once
	vars         variants // plans of the sources beyond the rows, made on first use
}

// sentinel stands for the user content while the template is rendered; it is split out of
// the rendered text, so it must not be touched by the template (no escaping in chat templates).
const sentinel = "\uE000genload-body\uE001"

// New renders the chat template and tokenizes its parts; each row is planned (its repeats
// tokenized and their period found, see the package comment) when a prompt first uses it, so
// a run pays for the rows its cells use, once. It fails when the template does not render or
// renders the content other than exactly once; a row that tokenizes to nothing fails the
// prompts built from it.
func New(codec Codec, tmpl Template, rows []string, opt Options) (*Builder, error) {
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
	b := &Builder{codec: codec, pre: pre, sep: opt.Separator, tailTxt: opt.Separator + opt.Suffix + post, minBody: opt.MinBody,
		texts: append([]string(nil), rows...)}
	if pre != "" {
		b.prefix = codec.Encode(pre)
	}
	b.tail = codec.Encode(b.tailTxt)
	if post != "" {
		b.tmplTokens = len(b.prefix) + len(codec.Encode(post))
	} else {
		b.tmplTokens = len(b.prefix)
	}
	b.end = codec.Encode(opt.Suffix + post)
	if !endsWith(b.tail, b.end) {
		b.end = b.tail
	}
	rest := opt.Suffix + post
	b.joints = []joint{{b.tailTxt, true}, {" " + b.tailTxt, true}, {"\u2026 " + b.tailTxt, true},
		{" " + rest, false}, {"\n" + rest, false}, {rest, false}}
	b.anchors = []anchor{{}, {text: opt.Separator, ids: codec.Encode(opt.Separator)}}
	b.rows = make([]rowSlot, len(rows))
	return b, nil
}

// Overhead is the number of tokens every prompt spends outside its body: chat template,
// separator and suffix.
func (b *Builder) Overhead() int { return len(b.prefix) + len(b.tail) }

// TemplateTokens is the number of tokens of the chat template's own text around the user
// content (Encode(before) + Encode(after)), 0 without a template: what a server that applies
// the same template to a completions prompt adds to it.
func (b *Builder) TemplateTokens() int { return b.tmplTokens }

// MinLen is the shortest prompt in tokens: Overhead + MinBody.
func (b *Builder) MinLen() int { return b.Overhead() + b.minBody }

// Rows is the number of corpus rows (the first Rows sources; see [Builder.Source]).
func (b *Builder) Rows() int { return len(b.rows) }

// Prefix and Tail return copies of the token ids around the body.
func (b *Builder) Prefix() []int32 { return append([]int32(nil), b.prefix...) }

// Tail returns a copy of the token ids after the body with the separator as the joint
// (separator, suffix, template end): Encode(sep ‖ suffix ‖ post). A prompt ends with them
// unless its body's last token merges with the separator; its text always ends with
// suffix ‖ post.
func (b *Builder) Tail() []int32 { return append([]int32(nil), b.tail...) }
