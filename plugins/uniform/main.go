// Command uniform is a prompt-length distribution plugin (ABI kind "lengths") that gives every
// prompt of a cell the same length: ℓ_i = clamp(L, min, max) for i = 0 … B−1, where L is the
// cell's mean length (tokens). It takes no config keys and ignores the seed (capability "pure").
package main

import (
	"github.com/genload/genload/sdk"
	"github.com/genload/genload/sdk/lengths"
)

func init() {
	lengths.Register(sdk.Info{Name: "uniform", Version: "1.0.0", Caps: []string{sdk.CapPure}},
		func(env *sdk.Env) (lengths.Func, error) {
			if err := env.Decode(&struct{}{}); err != nil {
				return nil, err
			}
			return uniformLengths, nil
		})
}

// uniformLengths returns c.N copies of c.Mean clamped to [c.Min, c.Max].
func uniformLengths(c lengths.Call) ([]int, error) {
	if c.Mean < 1 {
		return nil, sdk.BadInput("mean = %d tokens, want >= 1", c.Mean)
	}
	if c.Min > c.Max {
		return nil, sdk.BadInput("min = %d > max = %d", c.Min, c.Max)
	}
	out := c.Buf
	for i := range out {
		out[i] = c.Clamp(c.Mean)
	}
	return out, nil
}

// main is required by the Go toolchain and never runs in a c-shared module.
func main() {}
