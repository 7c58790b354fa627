package plugin

import (
	"context"
	"encoding/binary"
	"math"

	"github.com/genload/genload/sdk/abi"
)

// RouterPlugin is a loaded routing policy (ABI kind "router"). It is safe for concurrent use
// (calls are serialised, so a stateful policy sees them in one order).
type RouterPlugin struct {
	in *instance
}

// Completion is one finished request reported to a router with Complete.
type Completion struct {
	// Worker is the index Route chose for the request.
	Worker int
	// PromptLen and CompletionTokens are the request's prompt and generated lengths (tokens).
	PromptLen, CompletionTokens int
	// Failed is true when the request ended in an error.
	Failed bool
}

// LoadRouter loads a router by name (searched as in Locate) or path and initialises it with
// config, the plugin's bench.toml table without genload's own keys such as `plugin` (nil for
// none; unknown keys are rejected by the plugin). Errors are *Error values.
func (h *Host) LoadRouter(ctx context.Context, nameOrPath string, config map[string]any) (*RouterPlugin, error) {
	in, err := h.load(ctx, nameOrPath, abi.KindRouter, config)
	if err != nil {
		return nil, err
	}
	return &RouterPlugin{in: in}, nil
}

// Info returns the plugin's info.
func (p *RouterPlugin) Info() Info { return p.in.info }

// Close releases the instance (Host.Close does it for every plugin too).
func (p *RouterPlugin) Close(ctx context.Context) error {
	p.in.mu.Lock()
	defer p.in.mu.Unlock()
	p.in.close(ctx)
	return nil
}

// Route returns, for each prompt length (tokens) of a cell, the index in [0, workers) of the
// worker that serves it, by calling genload_route. The host validates that exactly
// len(promptLens) indices come back and each is below workers; violations and bad arguments
// (workers < 1, more than abi.MaxBatch prompts, negative lengths) are *Error values.
func (p *RouterPlugin) Route(ctx context.Context, promptLens []int, workers int) ([]int, error) {
	in := p.in
	n := len(promptLens)
	switch {
	case workers < 1 || workers > math.MaxInt32:
		return nil, in.errf(abi.Route, "list at least one worker in bench.toml", "workers = %d outside [1, %d]", workers, math.MaxInt32)
	case n > abi.MaxBatch:
		return nil, in.errf(abi.Route, "route at most 1048576 prompts per call", "%d prompts, more than %d", n, abi.MaxBatch)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if err := in.ensure(ctx, uint32(8*n)); err != nil {
		return nil, err
	}
	b := make([]byte, 4*n)
	for i, l := range promptLens {
		if l < 0 || l > math.MaxUint32 {
			return nil, in.errf(abi.Route, "", "prompt length %d at index %d outside [0, 2^32)", l, i)
		}
		binary.LittleEndian.PutUint32(b[4*i:], uint32(l))
	}
	inPtr, outPtr := in.buf, in.buf+uint32(4*n)
	if !in.mem.Write(inPtr, b) {
		return nil, in.errf(abi.Route, "", "input buffer outside guest memory")
	}
	res, err := in.call(ctx, abi.Route, in.routeFn, uint64(n), uint64(inPtr), uint64(workers), uint64(outPtr))
	if err != nil {
		return nil, err
	}
	if err := in.status(ctx, abi.Route, res[0], "the plugin rejected the prompts or worker count"); err != nil {
		return nil, err
	}
	if got := int(int32(uint32(res[0]))); got != n {
		return nil, in.errf(abi.Route, "this is a bug in the plugin", "returned %d worker indices for %d prompts", got, n)
	}
	ob, ok := in.mem.Read(outPtr, uint32(4*n))
	if !ok {
		return nil, in.errf(abi.Route, "", "output buffer outside guest memory")
	}
	out := make([]int, n)
	for i := range out {
		w := int(binary.LittleEndian.Uint32(ob[4*i:]))
		if w >= workers {
			return nil, in.errf(abi.Route, "this is a bug in the plugin", "worker index %d for prompt %d is out of range: %d workers", w, i, workers)
		}
		out[i] = w
	}
	return out, nil
}

// Complete reports finished requests to the router through genload_on_complete, in one batch.
// It does nothing (and returns nil) if the plugin lacks the "completions" capability.
func (p *RouterPlugin) Complete(ctx context.Context, done []Completion) error {
	in := p.in
	if !in.info.HasCap(abi.CapCompletions) || len(done) == 0 {
		return nil
	}
	if len(done) > abi.MaxBatch {
		return in.errf(abi.OnComplete, "report completions in smaller batches", "%d completions, more than %d", len(done), abi.MaxBatch)
	}
	b := make([]byte, abi.CompletionRecordSize*len(done))
	for i, d := range done {
		r := b[i*abi.CompletionRecordSize:]
		var flags uint32
		if d.Failed {
			flags |= abi.CompletionFailed
		}
		for j, v := range []int{d.Worker, d.PromptLen, d.CompletionTokens} {
			if v < 0 || v > math.MaxUint32 {
				return in.errf(abi.OnComplete, "", "completion %d has field value %d outside [0, 2^32)", i, v)
			}
			binary.LittleEndian.PutUint32(r[4*j:], uint32(v))
		}
		binary.LittleEndian.PutUint32(r[12:], flags)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.completeFn == nil {
		return in.errf(abi.OnComplete, "export "+abi.OnComplete+" or drop the \"completions\" capability", "declares %q but does not export %s", abi.CapCompletions, abi.OnComplete)
	}
	if err := in.ensure(ctx, uint32(len(b))); err != nil {
		return err
	}
	if !in.mem.Write(in.buf, b) {
		return in.errf(abi.OnComplete, "", "record buffer outside guest memory")
	}
	res, err := in.call(ctx, abi.OnComplete, in.completeFn, uint64(len(done)), uint64(in.buf))
	if err != nil {
		return err
	}
	return in.status(ctx, abi.OnComplete, res[0], "the plugin rejected the completion records")
}
