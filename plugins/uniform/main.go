// Command uniform is a prompt-length distribution plugin (ABI kind "lengths") that gives every
// prompt of a cell the same length: ℓ_i = clamp(L, min, max) for i = 0 … B−1, where L is the
// cell's mean length (tokens). It takes no config keys and ignores the seed (capability "pure").
package main

import (
	"strconv"

	"github.com/genload/genload/sdk/lengths"
	"github.com/genload/genload/sdk/plain"
)

func init() {
	lengths.Register(plain.Info{Name: "uniform", Version: "1.0.0", Caps: []string{plain.CapPure}},
		func(env *plain.Env) (lengths.Func, error) {
			if err := env.DecodeFields(); err != nil { // no keys
				return nil, err
			}
			return uniformLengths, nil
		})
}

// uniformLengths returns c.N copies of c.Mean clamped to [c.Min, c.Max].
func uniformLengths(c lengths.Call) ([]int, error) {
	if c.Mean < 1 {
		return nil, plain.BadInput("mean = " + strconv.Itoa(c.Mean) + " tokens, want >= 1")
	}
	if c.Min > c.Max {
		return nil, plain.BadInput("min = " + strconv.Itoa(c.Min) + " > max = " + strconv.Itoa(c.Max))
	}
	out := c.Buf
	for i := range out {
		out[i] = c.Clamp(c.Mean)
	}
	return out, nil
}

// main is required by the Go toolchain and never runs in a c-shared module.
func main() {}
