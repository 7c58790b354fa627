// Command badrouter is a deliberately broken router for host/plugin's tests: it sends every
// prompt to worker index `workers` (one past the last) when the first prompt length is 1, and to
// worker 0 otherwise. It declares the "completions" capability and fails completions with a
// failed request.
package main

import (
	"errors"

	"github.com/genload/genload/sdk"
	"github.com/genload/genload/sdk/router"
)

func init() {
	router.Register(sdk.Info{Name: "badrouter", Version: "0.0.1", Caps: []string{sdk.CapCompletions}}, func(env *sdk.Env) (router.Policy, error) {
		return router.Policy{
			Route: func(lens []int, workers int) ([]int, error) {
				out := make([]int, len(lens))
				if len(lens) > 0 && lens[0] == 1 {
					for i := range out {
						out[i] = workers
					}
				}
				return out, nil
			},
			Complete: func(done []router.Completion) error {
				for _, d := range done {
					if d.Failed {
						return errors.New("saw a failed request")
					}
				}
				return nil
			},
		}, nil
	})
}

func main() {}
