package run

import (
	"context"
	"fmt"
	"io"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/dispatch"
	"github.com/genload/genload/host/prompt"
	"github.com/genload/genload/host/tokenizer"
)

// textMode is what a run with prompt.format = "text" needs beyond the id prompts: the
// builder rendered as the server will see it, the fitter that makes each text prompt the
// target length as the server counts it, and the clamp bound after the margin for what the
// server cannot confirm.
type textMode struct {
	builder *prompt.Builder
	fitter  *prompt.TextFitter
	maxLen  int
}

// newTextMode prepares text prompts for a server, in three steps:
//
//  1. The chat template is rendered without the BOS text the server's tokenizer adds
//     itself (tokenizer.TextSpecials), so that the server sees one BOS, not two.
//  2. One probe prompt of each of two lengths is sent with max_tokens = 1 and its
//     usage.prompt_tokens held against the expected count (prompt.DetectTemplating): a
//     constant excess of ≥ 3 tokens is a server that applies its own chat template to
//     completions prompts; then the content is sent untemplated and the excess is counted
//     as the server's template. An excess of 1 or 2 is special tokens the server adds that
//     the local tokenizer does not (its own add_bos_token): counted in each length, and a
//     BOS the chat template writes is then left out of the text (tokenizer.TemplateBOS), so
//     that the server reads one BOS, its own.
//  3. Without a tokenize endpoint (counter nil), maxLen shrinks by prompt.UnverifiedMargin,
//     so that a prompt the server counts a little longer still fits the context.
//
// rows are the corpus texts; newBuilder makes a builder for a template (nil: untemplated).
// Progress lines go to stderr. Errors are the probe's request failures and the builder's.
func newTextMode(ctx context.Context, cfg *config.Config, tok *tokenizer.Tokenizer, b *prompt.Builder,
	newBuilder func(prompt.Template) (*prompt.Builder, error), counter prompt.Counter, opts dispatch.Options,
	minLen, maxLen int, stderr io.Writer) (*textMode, error) {
	sp := tok.TextSpecials()
	added := len(sp.Before) + len(sp.After)
	if tok.HasChatTemplate() && len(sp.Before) > 0 {
		var err error
		b, err = newBuilder(func(content string) (string, error) {
			return tok.ApplyChatTemplateText([]tokenizer.Message{{Role: "user", Content: content}}, true)
		})
		if err != nil {
			return nil, err
		}
	}
	tm := &textMode{builder: b, maxLen: maxLen}
	tm.fitter = prompt.NewTextFitter(b, tok, prompt.TextOptions{Added: added, Counter: counter})

	// Server-side templating: two probe prompts, one near the shortest length and one longer,
	// so a constant excess can be told from a proportional one.
	t, err := probeTemplating(ctx, tm.fitter, b, opts, minLen, maxLen)
	switch {
	case err != nil:
		return nil, fmt.Errorf("templating probe: %w", err) // the cells would fail alike
	case t == nil:
		fmt.Fprintln(stderr, "text prompts: the server sent no usage for the probe; server-side templating cannot be checked")
	case t.Templates:
		fmt.Fprintf(stderr, "text prompts: the server templates completions prompts (+%d tokens): the content is sent untemplated, and the server's template counted in each length\n", t.Extra)
		ub, err := newBuilder(nil)
		if err != nil {
			return nil, err
		}
		tm.builder = ub
		tm.fitter = prompt.NewTextFitter(ub, tok, prompt.TextOptions{Added: added, Counter: counter, Extra: t.Extra})
	case t.Consistent && t.Extra > 0:
		// Special tokens the local tokenizer does not add (a server reading its own
		// add_bos_token): counted in each length. When the chat template writes a BOS of its
		// own, the server would read two: the text goes without it.
		if bos := tok.TemplateBOS(); bos != "" {
			nb, err := newBuilder(func(content string) (string, error) {
				return tok.ApplyChatTemplateNoBOS([]tokenizer.Message{{Role: "user", Content: content}}, true)
			})
			if err != nil {
				return nil, err
			}
			tm.builder, b = nb, nb
			fmt.Fprintf(stderr, "text prompts: %s: the chat template's own %q is not sent (the server's BOS takes its place)\n", t.Message, bos)
		}
		fmt.Fprintf(stderr, "text prompts: %s: counted in each length\n", t.Message)
		tm.fitter = prompt.NewTextFitter(b, tok, prompt.TextOptions{Added: added, Counter: counter, Extra: t.Extra})
	case t.Extra != 0 || !t.Consistent:
		fmt.Fprintf(stderr, "text prompts: %s\n", t.Message)
	}
	if counter == nil {
		m := prompt.UnverifiedMargin(maxLen, tm.builder.TemplateTokens())
		tm.maxLen = max(minLen, maxLen-m)
		fmt.Fprintf(stderr, "text prompts: the server has no tokenize endpoint: lengths are the local tokenizer's, and prompts stay %d tokens under the context (max length %d)\n", m, tm.maxLen)
	}
	return tm, nil
}

// probeTemplating sends two probe prompts (one request each, max_tokens 1) and compares the
// server's usage.prompt_tokens with the fitter's count of each. It returns nil when the server
// sent no usage.
func probeTemplating(ctx context.Context, f *prompt.TextFitter, b *prompt.Builder, opts dispatch.Options, minLen, maxLen int) (*prompt.Templating, error) {
	client, err := probeClient(opts)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	var probes []prompt.Probe
	for i, n := range []int{minLen + 16, min(maxLen, minLen+400)} {
		tp, err := f.One(ctx, i%b.Rows(), n)
		if err != nil {
			return nil, err
		}
		res, err := client.SendText(ctx, dispatch.ModeRouted, []string{tp.Text}, 1)
		if err == nil {
			err = res.Err()
		}
		if err != nil {
			return nil, err
		}
		q := res.Requests[0]
		if !q.HasUsage || q.Usage.PromptTokens == 0 {
			return nil, nil
		}
		probes = append(probes, prompt.Probe{Server: q.Usage.PromptTokens, Local: tp.Tokens})
	}
	t := prompt.DetectTemplating(b.TemplateTokens(), probes...)
	return &t, nil
}
