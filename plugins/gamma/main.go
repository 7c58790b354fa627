package main

import (
	"github.com/genload/genload/sdk"
	"github.com/genload/genload/sdk/lengths"
)

// version is the plugin's version reported in genload_info.
const version = "1.0.0"

func init() {
	lengths.Register(sdk.Info{Name: "gamma", Version: version, Caps: []string{sdk.CapPure}}, setup)
}

// setup decodes and validates the config and returns the lengths function.
func setup(env *sdk.Env) (lengths.Func, error) {
	cfg := defaultConfig()
	if err := env.Decode(&cfg); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, sdk.BadInput("%w", err)
	}
	s := newSampler(cfg)
	return func(c lengths.Call) ([]int, error) {
		ls, err := s.lengths(c.N, c.Mean, c.Min, c.Max, c.Buf)
		if err != nil {
			return nil, sdk.BadInput("%w", err)
		}
		return ls, nil
	}, nil
}

// main is required by the Go toolchain and never runs in a c-shared module.
func main() {}
