// Command completer is a test router that declares the "completions" capability: it routes
// every prompt to the worker with the fewest outstanding prompt tokens and forgets a request's
// tokens when it completes. With config {"fail": true} its completion callback always fails,
// which genload plugin check must catch (host/plugin TestCheckCompletions).
package main

import (
	"errors"

	"github.com/genload/genload/sdk"
	"github.com/genload/genload/sdk/router"
)

type config struct {
	Fail bool `json:"fail"`
}

func init() {
	router.Register(sdk.Info{Name: "completer", Version: "0.0.1", Caps: []string{sdk.CapCompletions}}, func(env *sdk.Env) (router.Policy, error) {
		var cfg config
		if err := env.Decode(&cfg); err != nil {
			return router.Policy{}, err
		}
		var load []int // outstanding prompt tokens per worker
		return router.Policy{
			Route: func(lens []int, workers int) ([]int, error) {
				for len(load) < workers {
					load = append(load, 0)
				}
				out := router.Scratch(len(lens))
				for i, l := range lens {
					best := 0
					for w := 1; w < workers; w++ {
						if load[w] < load[best] {
							best = w
						}
					}
					out[i] = best
					load[best] += l
				}
				return out, nil
			},
			Complete: func(done []router.Completion) error {
				if cfg.Fail {
					return errors.New("completion bookkeeping broke")
				}
				for _, d := range done {
					if d.Worker >= len(load) {
						return errors.New("completion for a worker never routed to")
					}
					load[d.Worker] -= d.PromptLen
				}
				return nil
			},
		}, nil
	})
}

func main() {}
