package run

import (
	"fmt"

	"github.com/genload/genload/corpus"
	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/tokenizer"
)

func loadCorpus(cfg *config.Config) ([]corpus.Row, string, error) {
	if cfg.Prompt.Corpus == "" {
		rows, err := corpus.Default()
		return rows, corpus.EmbeddedName, err
	}
	rows, err := corpus.Load(cfg.Prompt.Corpus)
	if err != nil {
		return nil, "", fmt.Errorf("%s: [prompt.corpus]: %w", cfg.Where("prompt.corpus"), err)
	}
	return rows, cfg.Prompt.Corpus, nil
}

func loadTokenizer(cfg *config.Config) (*tokenizer.Tokenizer, error) {
	if cfg.Tokenizer.Path == "" {
		return tokenizer.Default()
	}
	t, err := tokenizer.Load(cfg.Tokenizer.Path)
	if err != nil {
		return nil, fmt.Errorf("%s: [tokenizer.path]: %w", cfg.Where("tokenizer.path"), err)
	}
	return t, nil
}
