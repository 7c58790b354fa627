// Package plugin is genload's host for WebAssembly plugins (ABI v1, specified in sdk/ABI.md):
// length distributions such as gamma and uniform, and routers such as router-rr. It is the only
// package of genload that imports wazero.
//
// A Host compiles each .wasm file once per process (with an on-disk compilation cache, so a
// warm load takes tens of milliseconds instead of seconds), instantiates one sandboxed instance
// per loaded plugin and serialises calls to it with a mutex (instances are not goroutine-safe).
// Every call runs under a deadline with wazero's WithCloseOnContextDone, inside a memory limit,
// with no filesystem, network, environment or arguments, a fake clock and a random source seeded
// from Options.Seed. The guest's stdout/stderr are captured per call and attached to errors.
// The host validates every output (count, length range, worker index) and every error is an
// *Error naming the plugin, the export and what to do.
//
// A non-zero guest status (bad config, recovered panic) leaves the instance usable; a trap, an
// exit or a timeout discards it, and later calls return an error saying so.
package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// Defaults for Options.
const (
	// DefaultCallTimeout is the deadline of one export call (2 s).
	DefaultCallTimeout = 2 * time.Second
	// DefaultMemoryLimitPages is the linear-memory limit of an instance in 64 KiB pages
	// (1024 pages = 64 MiB; a Go plugin needs about 60 pages after init).
	DefaultMemoryLimitPages = 1024
	// outputLimit is how many bytes of guest stdout+stderr are kept per call (8 KiB).
	outputLimit = 8 << 10
)

// Options configure a Host. The zero value is usable.
type Options struct {
	// Dir is an extra directory searched first for plugins given by name (see Locate).
	Dir string
	// CacheDir is wazero's compilation cache directory. Defaults to
	// os.UserCacheDir()/genload/wazero; if there is no user cache directory, or it cannot be
	// created (a container without a writable home), compiled code is cached in memory only.
	// A CacheDir given that cannot be created is an error of NewHost.
	CacheDir string
	// CallTimeout is the deadline of each export call. Defaults to DefaultCallTimeout (2 s).
	CallTimeout time.Duration
	// MemoryLimitPages caps each instance's linear memory in 64 KiB pages. Defaults to
	// DefaultMemoryLimitPages (1024 = 64 MiB).
	MemoryLimitPages uint32
	// Seed is the run seed: it is passed to plugins in the init envelope, seeds their WASI random
	// source, and derives the per-cell seed of every lengths call (abi.CallSeed).
	Seed uint64
	// Output receives a copy of what plugins write to stdout and stderr, each line prefixed with
	// "plugin NAME: " (first 8 KiB per call). Defaults to nil: discarded (it is still attached to
	// errors as Error.Output).
	Output io.Writer
	// Interpreter selects wazero's interpreter instead of its compiler: compiling takes ~0.2 s
	// instead of ~2 s per plugin but calls are 10–20x slower and nothing is cached on disk. For
	// tests of modules that are rejected anyway, and platforms without the compiler. Defaults to
	// false.
	Interpreter bool
}

// Host loads and runs plugins. Its methods are safe for concurrent use.
type Host struct {
	opts  Options
	rt    wazero.Runtime
	cache wazero.CompilationCache

	mu       sync.Mutex
	compiled map[[32]byte]wazero.CompiledModule
	outMu    sync.Mutex    // serialises writes to opts.Output
	memory   *linearMemory // the instances' linear memory (memory_unix.go)
}

// NewHost creates a wazero runtime with the options' memory limit, WithCloseOnContextDone and the
// compilation cache, and instantiates WASI preview 1 (the only import plugins may use). It
// returns an error if CacheDir cannot be created.
func NewHost(ctx context.Context, opts Options) (*Host, error) {
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.MemoryLimitPages == 0 {
		opts.MemoryLimitPages = DefaultMemoryLimitPages
	}
	var cache wazero.CompilationCache
	defaulted := opts.CacheDir == ""
	if defaulted {
		if d, err := os.UserCacheDir(); err == nil {
			opts.CacheDir = filepath.Join(d, "genload", "wazero")
		}
	}
	if opts.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(opts.CacheDir)
		switch {
		case err == nil:
			cache = c
		case defaulted:
			// The user cache directory is not writable (a container's read-only or missing
			// home): compile in memory, as without a cache directory.
			opts.CacheDir = ""
		default:
			return nil, fmt.Errorf("plugin compilation cache %s: %w", opts.CacheDir, err)
		}
	}
	if cache == nil {
		cache = wazero.NewCompilationCache()
	}
	cfg := wazero.NewRuntimeConfig()
	if opts.Interpreter {
		cfg = wazero.NewRuntimeConfigInterpreter()
	}
	cfg = cfg.
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(opts.MemoryLimitPages).
		WithCompilationCache(cache)
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		_ = cache.Close(ctx)
		return nil, fmt.Errorf("plugin host: instantiate WASI: %w", err)
	}
	return &Host{opts: opts, rt: rt, cache: cache, compiled: map[[32]byte]wazero.CompiledModule{}, memory: &linearMemory{}}, nil
}

// Close closes every instance and compiled module, then the compilation cache, and returns
// the instances' memory.
func (h *Host) Close(ctx context.Context) error {
	err := errors.Join(h.rt.Close(ctx), h.cache.Close(ctx))
	h.memory.release()
	return err
}

// Options returns the options in force, defaults filled in.
func (h *Host) Options() Options { return h.opts }

// Info describes a loaded plugin: its genload_info fields plus where it came from.
type Info struct {
	// Name, Version, Kind ("lengths" or "router"), ABIMinor and Caps come from genload_info.
	Name, Version, Kind string
	ABIMinor            int
	Caps                []string
	// Path is the .wasm file and SHA256 its hex digest (recorded in results).
	Path   string
	SHA256 string
}

// HasCap reports whether the plugin declared capability c (abi.CapPure, abi.CapCompletions).
func (i Info) HasCap(c string) bool { return slices.Contains(i.Caps, c) }
