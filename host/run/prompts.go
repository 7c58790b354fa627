package run

import (
	"context"

	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/plan"
	"github.com/genload/genload/host/prompt"
)

// prompter is the prompts stage of a cell's plan: token-id prompts from the builder, or — in
// text mode — texts fitted to the lengths as the server counts them.
type prompter struct {
	builder *prompt.Builder
	text    *textMode // nil unless prompt.format = "text"
}

var _ plan.Prompter = prompter{}

// Prompts builds a cell's prompts for its lengths (clamped already, in tokens); built is the
// length of each prompt as the server should count it, for the per-request prompt-token check.
// one (the legacy n shape) builds the single prompt of length lens[0] from the cell's first
// corpus row, which the server continues B times.
func (p prompter) Prompts(ctx context.Context, c matrix.Cell, lens []int, one bool) (ids [][]int32, texts []string, built []int, err error) {
	row := c.FirstRow % p.builder.Rows()
	if p.text != nil {
		var tps []prompt.TextPrompt
		if one {
			tp, err := p.text.fitter.One(ctx, row, lens[0])
			if err != nil {
				return nil, nil, nil, err
			}
			tps = []prompt.TextPrompt{tp}
		} else if tps, err = p.text.fitter.Build(ctx, c.FirstRow, lens); err != nil {
			return nil, nil, nil, err
		}
		texts, built = make([]string, len(tps)), make([]int, len(tps))
		for i, tp := range tps {
			texts[i], built[i] = tp.Text, tp.Tokens
		}
		return nil, texts, built, nil
	}
	if one {
		pr, err := p.builder.One(row, lens[0])
		if err != nil {
			return nil, nil, nil, err
		}
		ids = [][]int32{pr}
	} else if ids, err = p.builder.Build(c.FirstRow, lens); err != nil {
		return nil, nil, nil, err
	}
	built = make([]int, len(ids))
	for i, pr := range ids {
		built[i] = len(pr)
	}
	return ids, nil, built, nil
}
