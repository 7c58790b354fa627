package main

import (
	"github.com/genload/genload/sdk/lengths"
	"github.com/genload/genload/sdk/plain"
)

// version is the plugin's version reported in genload_info.
const version = "1.0.0"

func init() {
	lengths.Register(plain.Info{Name: "gamma", Version: version, Caps: []string{plain.CapPure}}, setup)
}

// setup decodes and validates the config and returns the lengths function.
func setup(env *plain.Env) (lengths.Func, error) {
	cfg := defaultConfig()
	if err := env.DecodeFields(plain.Float("k", &cfg.K), plain.Bool("normalize", &cfg.Normalize)); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, plain.BadInput(err.Error())
	}
	s := newSampler(cfg)
	return func(c lengths.Call) ([]int, error) {
		ls, err := s.lengths(c.N, c.Mean, c.Min, c.Max, c.Buf)
		if err != nil {
			return nil, plain.BadInput(err.Error())
		}
		return ls, nil
	}, nil
}

// main is required by the Go toolchain and never runs in a c-shared module.
func main() {}
