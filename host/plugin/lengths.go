package plugin

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/genload/genload/sdk/abi"
)

// LengthsPlugin is a loaded length distribution (ABI kind "lengths"). It is safe for concurrent
// use (calls are serialised).
type LengthsPlugin struct {
	mu   sync.Mutex // held over in, cache and released (before in.mu)
	in   *instance
	info Info

	cache map[lengthsKey][]int // results of a "pure" plugin

	// After Release, in is closed: a call the cache does not answer loads the plugin again
	// from where it was found, with the same config.
	host       *Host
	nameOrPath string
	config     map[string]any
	released   bool
}

// lengthsKey identifies a call of a pure plugin.
type lengthsKey struct{ n, mean, min, max int }

// LoadLengths loads a length distribution by name (searched as in Locate) or path, and initialises
// it with config: the plugin's bench.toml table without genload's own keys such as `plugin`
// (nil for none; keys the plugin does not know are rejected by it, so a typo fails here).
// Errors are *Error values naming the plugin and the failing export.
func (h *Host) LoadLengths(ctx context.Context, nameOrPath string, config map[string]any) (*LengthsPlugin, error) {
	in, err := h.load(ctx, nameOrPath, abi.KindLengths, config)
	if err != nil {
		return nil, err
	}
	p := &LengthsPlugin{in: in, info: in.info, host: h, nameOrPath: nameOrPath, config: config}
	if in.info.HasCap(abi.CapPure) {
		p.cache = map[lengthsKey][]int{}
	}
	return p, nil
}

// Info returns the plugin's info.
func (p *LengthsPlugin) Info() Info { return p.info }

// Close releases the instance (Host.Close does it for every plugin too).
func (p *LengthsPlugin) Close(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.in.mu.Lock()
	defer p.in.mu.Unlock()
	p.in.close(ctx)
	return nil
}

// Release closes the instance of a plugin with the "pure" capability and drops its compiled
// module, keeping its cached answers, and reports whether it did: a Go plugin's machine code
// (13 MB for gamma), decoded module and linear memory are freed, for a run that has asked for
// every cell it measures (lengths.Stage.Prefetch). A later call the cache does not answer
// loads the plugin again (tens of milliseconds, from the compilation cache). A plugin that is
// not pure (its answers are not cached), or whose instance failed, is kept.
func (p *LengthsPlugin) Release(ctx context.Context) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cache == nil || p.released {
		return p.released
	}
	in := p.in
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.dead != nil {
		return false
	}
	in.close(ctx)
	p.host.forget(ctx, in.m)
	// Nothing may keep the closed instance reachable (its module, and through it the machine
	// code, are freed by the collector): in is replaced by one that only names the plugin,
	// for errors.
	m := in.m
	p.in = &instance{host: in.host, info: in.info, dead: errReleased,
		m: &module{path: m.path, name: m.name, kind: m.kind, size: m.size, sum: m.sum}}
	p.released = true
	return true
}

var errReleased = errors.New("released (every cell's lengths were cached)")

// ready loads a released plugin again (p.mu held).
func (p *LengthsPlugin) ready(ctx context.Context) error {
	if !p.released {
		return nil
	}
	in, err := p.host.load(ctx, p.nameOrPath, abi.KindLengths, p.config)
	if err != nil {
		return err
	}
	p.in, p.released = in, false
	return nil
}

// Lengths returns n prompt lengths (tokens) for a cell of target mean length mean, each within
// [min, max], by calling genload_lengths with the per-cell seed abi.CallSeed(Options.Seed, mean,
// n). The host validates the output: exactly n values, each in [min, max]; a violation is an
// *Error naming the plugin, as are bad arguments (n outside [0, abi.MaxBatch], mean < 1,
// min < 1, min > max, values above 2^31−1). Results of plugins with the "pure" capability are
// cached per (n, mean, min, max). The returned slice belongs to the caller.
func (p *LengthsPlugin) Lengths(ctx context.Context, n, mean, min, max int) ([]int, error) {
	in := p.in
	switch {
	case n < 0 || n > abi.MaxBatch:
		return nil, in.errf(abi.Lengths, "use a batch size of at most 1048576", "batch size n = %d outside [0, %d]", n, abi.MaxBatch)
	case mean < 1 || mean > math.MaxInt32:
		return nil, in.errf(abi.Lengths, "use a mean length of at least 1 token", "mean = %d tokens outside [1, %d]", mean, math.MaxInt32)
	case min < 1 || max > math.MaxInt32 || min > max:
		return nil, in.errf(abi.Lengths, "check min_len, the model context and max_tokens", "length range [%d, %d] is empty or outside [1, %d]", min, max, math.MaxInt32)
	}
	key := lengthsKey{n, mean, min, max}
	p.mu.Lock()
	defer p.mu.Unlock()
	if ls, ok := p.cache[key]; ok {
		return slices.Clone(ls), nil
	}
	if err := p.ready(ctx); err != nil {
		return nil, err
	}
	in = p.in
	in.mu.Lock()
	defer in.mu.Unlock()
	out, err := p.call(ctx, n, mean, min, max)
	if err != nil {
		return nil, err
	}
	if p.cache != nil {
		p.cache[key] = slices.Clone(out)
	}
	return out, nil
}

// VerifyPure holds a plugin that declares capability "pure" to it, as `genload plugin check`
// does: the call lengths(n, mean, min, max) is made twice on the instance, past the cache, and
// must give the same lengths. The error is the one plugin check's pure step gives (naming
// genload_lengths, the call and the first index that differs), with "on a second call"; errors
// of the calls themselves are returned as Lengths returns them. A plugin without the
// capability, whose answers are not cached, is not called (nil).
func (p *LengthsPlugin) VerifyPure(ctx context.Context, n, mean, min, max int) error {
	if p.cache == nil {
		return nil
	}
	if _, err := p.Lengths(ctx, n, mean, min, max); err != nil { // the arguments checked
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.ready(ctx); err != nil {
		return err
	}
	in := p.in
	in.mu.Lock()
	defer in.mu.Unlock()
	first, err := p.call(ctx, n, mean, min, max)
	if err != nil {
		return err
	}
	second, err := p.call(ctx, n, mean, min, max)
	if err != nil {
		return err
	}
	return impure(in, fmt.Sprintf("n=%d, mean=%d, min=%d, max=%d", n, mean, min, max), second, first, "a second call")
}

// call is one genload_lengths call with its output validated (count and range); in.mu is held.
func (p *LengthsPlugin) call(ctx context.Context, n, mean, min, max int) ([]int, error) {
	in := p.in
	if err := in.ensure(ctx, uint32(4*n)); err != nil {
		return nil, err
	}
	seed := abi.CallSeed(in.host.opts.Seed, mean, n)
	res, err := in.call(ctx, abi.Lengths, in.lengthsFn, uint64(n), uint64(mean), uint64(min), uint64(max), seed, uint64(in.buf))
	if err != nil {
		return nil, err
	}
	if int32(uint32(res[0])) < 0 { // the hint is formatted only for a failed call
		return nil, in.status(ctx, abi.Lengths, res[0], fmt.Sprintf("the plugin rejected the cell n=%d mean=%d min=%d max=%d", n, mean, min, max))
	}
	if got := int(int32(uint32(res[0]))); got != n {
		return nil, in.errf(abi.Lengths, "this is a bug in the plugin", "returned %d lengths, want %d", got, n)
	}
	b, ok := in.mem.Read(in.buf, uint32(4*n))
	if !ok {
		return nil, in.errf(abi.Lengths, "", "output buffer outside guest memory")
	}
	out := make([]int, n)
	for i := range out {
		v := int(binary.LittleEndian.Uint32(b[4*i:]))
		if v < min || v > max {
			return nil, in.errf(abi.Lengths, "the plugin must clamp every length to [min, max]; this is a bug in the plugin",
				"length %d at index %d is outside [%d, %d] (n=%d, mean=%d)", v, i, min, max, n, mean)
		}
		out[i] = v
	}
	return out, nil
}
