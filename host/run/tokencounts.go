package run

import (
	"context"
	"fmt"
	"strings"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/dispatch"
	"github.com/genload/genload/host/sse"
	"github.com/genload/genload/host/tokenizer"
)

// tokenCountMaxTokens is the max_tokens of the token-count probe: enough chunks to see whether
// they carry one token each and whether per-chunk usage grows.
const tokenCountMaxTokens = 8

// resolveTokenCounts resolves token_counts = "auto" to "usage" or "logprobs" and returns cfg
// with it resolved (a copy, the choice and its reason in Chosen["token_counts"]) and a line
// saying why ("" when usage is enough). Two probe prompts (in the run's request shape and
// prompt format, max_tokens 8) are sent as the cells will send them: when every sequence's
// count is exact (sse.TokenSource.Exact: usage attributable to it) and its chunks are known
// to carry one token each or their deltas are known, usage is enough; otherwise the probe is
// repeated with logprobs, and logprobs are asked for when they make the counts exact. A
// server that gives neither leaves the cells' counts unverified, and the line says so. With
// draft_tokens set, forward passes are counted in chunks and nothing is probed.
func resolveTokenCounts(ctx context.Context, cfg *config.Config, opts dispatch.Options, tok *tokenizer.Tokenizer) (*config.Config, string, error) {
	if cfg.TokenCounts != config.TokenCountsAuto {
		return cfg, "", nil
	}
	choose := func(v, why string) *config.Config {
		c2 := *cfg
		c2.TokenCounts = v
		c2.Chosen = map[string]string{"token_counts": v + ": " + why}
		for k, x := range cfg.Chosen {
			c2.Chosen[k] = x
		}
		return &c2
	}
	if cfg.DraftTokens > 0 {
		return choose(config.TokenCountsUsage, "draft_tokens is set: forward passes are counted in chunks"), "", nil
	}
	// Every distinct server of the run is probed: routed workers may be different servers,
	// and one that needs logprobs needs them for the whole run.
	var servers []dispatch.Options
	seen := map[string]bool{}
	for _, w := range opts.Workers {
		if b := strings.TrimSuffix(strings.TrimSuffix(w.URL, "/"), "/v1"); !seen[b] {
			seen[b] = true
			o := opts
			o.Workers = []dispatch.Worker{w}
			servers = append(servers, o)
		}
	}
	if len(servers) == 0 {
		servers = []dispatch.Options{opts}
	}
	try := func(logprobs int) (exact bool, note string, err error) {
		for _, o := range servers {
			o.Logprobs = logprobs
			if exact, note, err := tryServer(ctx, cfg, o, tok); err != nil || !exact {
				if len(servers) > 1 && note != "" {
					note = o.Workers[0].URL + ": " + note
				}
				return false, note, err
			}
		}
		return true, "", nil
	}
	exact, note, err := try(0)
	if err != nil {
		return nil, "", fmt.Errorf("token-count probe: %w", err)
	}
	if exact {
		return choose(config.TokenCountsUsage, "the server's usage gives exact counts"), "", nil
	}
	why := "the server's usage does not give exact per-chunk token counts"
	if note != "" {
		why += " (" + note + ")"
	}
	if exact, _, err = try(1); err == nil && exact {
		return choose(config.TokenCountsLogprobs, why), fmt.Sprintf("token counts: %s; asking for one logprobs entry per token (token_counts = \"auto\")", why), nil
	}
	why += ", nor do logprobs"
	return choose(config.TokenCountsUsage, why), fmt.Sprintf("token counts: %s: per-forward figures need counts the server confirms, and cells without them say so", why), nil
}

// tryServer sends the token-count probe to the one server of opts and reports whether every
// sequence's count is exact and exact per chunk; note says why not (sse's token note). Two
// prompts in the run's request shape: a server that rejects the shape is told about now,
// with the hint naming the settings, rather than at the first cell; and a request of two
// sequences shows usage that is the request's, not each sequence's.
func tryServer(ctx context.Context, cfg *config.Config, opts dispatch.Options, tok *tokenizer.Tokenizer) (exact bool, note string, err error) {
	client, err := dispatch.New(opts)
	if err != nil {
		return false, "", err
	}
	defer client.Close()
	ids := [][]int32{tok.Encode(probeTexts[0]), tok.Encode(probeTexts[1])}
	mode := dispatch.Mode(cfg.Mode)
	var res *dispatch.Result
	if cfg.Prompt.Format == config.FormatText {
		texts := []string{tok.Decode(ids[0], false), tok.Decode(ids[1], false)}
		res, err = client.SendText(ctx, mode, texts, tokenCountMaxTokens)
	} else {
		res, err = client.Send(ctx, mode, ids, tokenCountMaxTokens)
	}
	if err == nil {
		err = res.Err()
	}
	if err != nil {
		return false, "", err
	}
	for i := range res.Sequences {
		s := &res.Sequences[i]
		perChunk := s.Marks.Len() == s.CompletionTokens // one token each
		for k := 0; k < s.Marks.Len() && !perChunk; k++ {
			if s.Marks.Get(k).Tokens < 0 {
				break
			}
			perChunk = k == s.Marks.Len()-1 // every delta known
		}
		if !s.TokenSource.Exact() || !perChunk {
			return false, s.TokenNote, nil
		}
		switch s.TokenSource {
		case sse.TokensEvenSplit:
			// Exact only while every sequence runs max_tokens: one early stop in a cell
			// would leave the whole request's counts unverified.
			return false, "only the request's usage, split evenly over its sequences", nil
		case sse.TokensUsageChunks:
			// Exact only while every chunk carries one token: one coalesced chunk in a
			// cell would leave the whole request's counts unverified.
			return false, "only the request's usage, equal to its chunks with text", nil
		}
	}
	return true, "", nil
}
