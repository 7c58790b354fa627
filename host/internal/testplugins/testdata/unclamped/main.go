// Command unclamped is a length distribution that breaks the ABI's output contract on purpose,
// for the tests that hold a run to it: it declares capability "pure" and returns n + extra
// lengths of scale × mean tokens each, without clamping them to [min, max], for batches of at
// least min_n prompts (smaller ones get n lengths of mean, clamped).
//
// Config: scale (default 1), extra (default 0), min_n (default 0). scale = 500 gives 500,000
// tokens for L = 1,000, beyond any context; extra = 1 one length too many.
package main

import (
	"github.com/genload/genload/sdk"
	"github.com/genload/genload/sdk/lengths"
)

type config struct {
	Scale float64 `json:"scale"`
	Extra int     `json:"extra"`
	MinN  int     `json:"min_n"`
}

func init() {
	lengths.Register(sdk.Info{Name: "unclamped", Version: "0.0.1", Caps: []string{sdk.CapPure}}, func(env *sdk.Env) (lengths.Func, error) {
		c := config{Scale: 1}
		if err := env.Decode(&c); err != nil {
			return nil, err
		}
		return func(call lengths.Call) ([]int, error) {
			if call.N < c.MinN {
				out := make([]int, call.N)
				for i := range out {
					out[i] = call.Clamp(call.Mean)
				}
				return out, nil
			}
			out := make([]int, call.N+c.Extra)
			for i := range out {
				out[i] = int(c.Scale * float64(call.Mean))
			}
			return out, nil
		}, nil
	})
}

func main() {}
