// Command router-rr is genload's deterministic round-robin routing plugin (ABI kind "router").
//
// It keeps one counter c (prompts routed so far, starting at the config key start) across calls.
// A route call with n prompts and W workers sends
//
//	prompt i → worker (c + i) mod W,  i = 0 … n−1,  then c ← c + n
//
// so consecutive cells continue the cycle instead of always loading worker 0 first; with start = 0
// and W = 4, a cell of 3 prompts gets workers [0 1 2] and the next cell of 3 gets [3 0 1].
// Prompt lengths are ignored and so is the seed. Config:
//
//	start = 0   # initial counter value, >= 0
package main

import (
	"strconv"

	"github.com/genload/genload/sdk/plain"
	"github.com/genload/genload/sdk/router"
)

// config is the plugin's bench.toml table.
type config struct {
	// Start is the initial counter value (prompts). Defaults to 0.
	Start int64 `json:"start"`
}

func init() {
	router.Register(plain.Info{Name: "router-rr", Version: "1.0.0"}, setup)
}

// setup decodes the config and returns a round robin starting at cfg.Start.
func setup(env *plain.Env) (router.Policy, error) {
	var cfg config
	if err := env.DecodeFields(plain.Int("start", &cfg.Start)); err != nil {
		return router.Policy{}, err
	}
	if cfg.Start < 0 {
		return router.Policy{}, plain.BadInput("config: start = " + strconv.FormatInt(cfg.Start, 10) + ", want >= 0")
	}
	rr := &roundRobin{next: uint64(cfg.Start)}
	return router.Policy{Route: rr.route}, nil
}

// roundRobin is the counter c of the package comment.
type roundRobin struct{ next uint64 }

// route assigns prompt i to worker (c + i) mod workers and advances c by len(promptLens).
func (r *roundRobin) route(promptLens []int, workers int) ([]int, error) {
	out := router.Scratch(len(promptLens))
	w := uint64(workers)
	for i := range out {
		out[i] = int((r.next + uint64(i)) % w)
	}
	r.next += uint64(len(promptLens))
	return out, nil
}

// main is required by the Go toolchain and never runs in a c-shared module.
func main() {}
