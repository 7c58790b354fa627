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
// server whose counts are exact but not per chunk (neither continuous usage nor logprobs), or
// per chunk only because the probe's chunks each carried one token, has the cells' per-chunk
// counts derived from the model's tokenizer (Chosen[ChunkCountsKey]: the client keeps the
// text, measure re-encodes it), kept where they sum to the server's count; a server that
// gives neither leaves the cells' counts unverified, and the line says so. With draft_tokens
// set, forward passes are counted in chunks and nothing is probed.
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
	try := func(logprobs int) (exact, deltas bool, note string, err error) {
		deltas = true
		for _, o := range servers {
			o.Logprobs = logprobs
			exact, d, note, err := tryServer(ctx, cfg, o, tok)
			if err != nil || !exact {
				if len(servers) > 1 && note != "" {
					note = o.Workers[0].URL + ": " + note
				}
				return false, false, note, err
			}
			deltas = deltas && d
		}
		return true, deltas, "", nil
	}
	exact, deltas, note, err := try(0)
	if err != nil {
		err, _ = dispatch.NotOpenAIAnswer(err) // an HTML page on one line
		return nil, "", fmt.Errorf("token-count probe: %w", tokenPromptHint(err, cfg.Prompt.Format))
	}
	// Without per-chunk counts from the server, the model's tokenizer gives them where its
	// re-encoding of the text agrees with the server's count (measure.Options.Tokenizer).
	chooseTok := func(v, why string) *config.Config {
		c := choose(v, why)
		c.Chosen[ChunkCountsKey] = ChunkCountsTokenizer + ": the server gives no per-chunk token counts; they come from re-encoding the generated text with " + tok.Name() + ", kept for a sequence where they sum to the server's count"
		return c
	}
	if exact && !deltas {
		// exact because each chunk of the probe carried one token: a cell's longer streams
		// may coalesce some
		return chooseTok(config.TokenCountsUsage, "the server's usage gives exact counts"), "", nil
	}
	if exact {
		return choose(config.TokenCountsUsage, "the server's usage gives exact counts"), "", nil
	}
	why := "the server's usage does not give exact per-chunk token counts"
	if note != "" {
		why += " (" + note + ")"
	}
	if exact, _, _, err = try(1); err == nil && exact {
		return choose(config.TokenCountsLogprobs, why), fmt.Sprintf("token counts: %s; asking for one logprobs entry per token (token_counts = \"auto\")", why), nil
	}
	why += ", nor do logprobs"
	return chooseTok(config.TokenCountsUsage, why), fmt.Sprintf("token counts: %s: per-chunk counts come from re-encoding the generated text with the model's tokenizer (%s) where they sum to the server's count; cells without counts the server confirms say so", why, tok.Name()), nil
}

// ChunkCountsKey is the key in config.Config.Chosen that says where per-chunk token counts
// come from when the server gives none; its value starts with ChunkCountsTokenizer when the
// client keeps each sequence's text and the model's tokenizer derives them.
const (
	ChunkCountsKey       = "chunk_counts"
	ChunkCountsTokenizer = "tokenizer"
)

// retokenize reports whether cfg has the cells' per-chunk counts derived by the tokenizer
// (see ChunkCountsKey): the client then keeps each sequence's text.
func retokenize(cfg *config.Config) bool {
	return strings.HasPrefix(cfg.Chosen[ChunkCountsKey], ChunkCountsTokenizer)
}

// tryServer sends the token-count probe to the one server of opts and reports whether every
// sequence's count is exact and exact per chunk, and whether that rests on per-chunk deltas
// for every sequence (rather than on chunks of one token each); note says why not (sse's
// token note). Two
// prompts in the run's request shape: a server that rejects the shape is told about now,
// with the hint naming the settings, rather than at the first cell; and a request of two
// sequences shows usage that is the request's, not each sequence's.
func tryServer(ctx context.Context, cfg *config.Config, opts dispatch.Options, tok *tokenizer.Tokenizer) (exact, deltas bool, note string, err error) {
	client, err := dispatch.New(opts)
	if err != nil {
		return false, false, "", err
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
		return false, false, "", err
	}
	deltas = true
	for i := range res.Sequences {
		s := &res.Sequences[i]
		known := s.Marks.Len() > 0 // every delta known
		for k := 0; k < s.Marks.Len() && known; k++ {
			known = s.Marks.Get(k).Tokens >= 0
		}
		deltas = deltas && known
		perChunk := known || s.Marks.Len() == s.CompletionTokens // or one token each
		if !s.TokenSource.Exact() || !perChunk {
			return false, false, s.TokenNote, nil
		}
		switch s.TokenSource {
		case sse.TokensEvenSplit:
			// Exact only while every sequence runs max_tokens: one early stop in a cell
			// would leave the whole request's counts unverified.
			return false, false, "only the request's usage, split evenly over its sequences", nil
		case sse.TokensUsageChunks:
			// Exact only while every chunk carries one token: one coalesced chunk in a
			// cell would leave the whole request's counts unverified.
			return false, false, "only the request's usage, equal to its chunks with text", nil
		}
	}
	return true, deltas, "", nil
}
