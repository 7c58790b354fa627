package plugin

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/genload/genload/sdk/abi"
)

// instance is one running plugin instance; every method that touches the guest holds mu.
type instance struct {
	mu   sync.Mutex
	host *Host
	m    *module
	info Info

	mod                            api.Module
	mem                            api.Memory
	alloc, free, lastError, infoFn api.Function
	initFn, lengthsFn, routeFn     api.Function
	completeFn                     api.Function
	out                            *cappedBuffer

	buf, bufCap uint32 // host-owned guest buffer from genload_alloc
	dead        error  // set after a fatal failure
}

// load opens, instantiates, runs _initialize, reads the info and calls genload_init with the
// envelope carrying config.
func (h *Host) load(ctx context.Context, nameOrPath, wantKind string, config map[string]any) (*instance, error) {
	m, err := h.open(ctx, nameOrPath, wantKind)
	if err != nil {
		return nil, err
	}
	return h.instantiate(ctx, m, config)
}

// instantiate creates the sandboxed instance of m and initialises it.
func (h *Host) instantiate(ctx context.Context, m *module, config map[string]any) (*instance, error) {
	in := &instance{host: h, m: m, out: &cappedBuffer{limit: outputLimit}}
	in.info = Info{Name: m.name, Kind: m.kind, Path: m.path, SHA256: hex.EncodeToString(m.sum[:])}
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], h.opts.Seed)
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions().
		WithStdout(in.out).
		WithStderr(in.out).
		WithRandSource(rand.NewChaCha8(seed))
	mod, err := h.rt.InstantiateModule(experimental.WithMemoryAllocator(ctx, h.memory), m.compiled, cfg)
	if err != nil {
		return nil, in.classify("", err, ctx)
	}
	in.mod = mod
	in.mem = mod.Memory()
	fn := func(name string) api.Function { return mod.ExportedFunction(name) }
	in.alloc, in.free, in.lastError, in.infoFn, in.initFn = fn(abi.Alloc), fn(abi.Free), fn(abi.LastError), fn(abi.Info), fn(abi.Init)
	in.lengthsFn, in.routeFn, in.completeFn = fn(abi.Lengths), fn(abi.Route), fn(abi.OnComplete)

	if init := fn(abi.Initialize); init != nil {
		if _, err := in.call(ctx, abi.Initialize, init); err != nil {
			in.close(ctx)
			return nil, err
		}
	}
	if err := in.readInfo(ctx); err != nil {
		in.close(ctx)
		return nil, err
	}
	if err := in.initialise(ctx, config); err != nil {
		in.close(ctx)
		return nil, err
	}
	return in, nil
}

// readInfo calls genload_info and checks name and kind.
func (in *instance) readInfo(ctx context.Context) error {
	res, err := in.call(ctx, abi.Info, in.infoFn)
	if err != nil {
		return err
	}
	b, err := in.read(abi.Info, res[0])
	if err != nil {
		return err
	}
	var doc abi.InfoDoc
	if len(b) == 0 {
		return in.errf(abi.Info, rebuildHint, "returned an empty info document")
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return in.errf(abi.Info, rebuildHint, "info JSON: %w", err)
	}
	switch {
	case !validName.MatchString(doc.Name):
		return in.errf(abi.Info, "set a name of lower-case letters, digits, '-' or '_' in the plugin's info", "info name %q is invalid (was a plugin registered in an init function?)", doc.Name)
	case doc.Kind != in.m.kind:
		return in.errf(abi.Info, "the info kind must agree with the exports", "info says kind %q, exports say %q", doc.Kind, in.m.kind)
	case doc.ABIMinor < 0:
		return in.errf(abi.Info, rebuildHint, "info abi_minor %d is negative", doc.ABIMinor)
	}
	in.info.Name, in.info.Version, in.info.ABIMinor, in.info.Caps = doc.Name, doc.Version, doc.ABIMinor, doc.Caps
	if in.info.Caps == nil {
		in.info.Caps = []string{}
	}
	return nil
}

// initialise sends the init envelope.
func (in *instance) initialise(ctx context.Context, config map[string]any) error {
	if config == nil {
		config = map[string]any{}
	}
	env, err := json.Marshal(abi.Envelope{ABI: abi.Major, ABIMinor: abi.Minor, Host: "genload", Seed: in.host.opts.Seed, Config: config})
	if err != nil {
		return in.errf(abi.Init, "plugin config values must be strings, booleans, finite numbers, arrays or tables (the config is sent as JSON, which has no NaN or infinity)", "encode config: %w", err)
	}
	if err := in.ensure(ctx, uint32(len(env))); err != nil {
		return err
	}
	if !in.mem.Write(in.buf, env) {
		return in.errf(abi.Init, "", "write %d bytes at %#x: outside guest memory", len(env), in.buf)
	}
	res, err := in.call(ctx, abi.Init, in.initFn, uint64(in.buf), uint64(len(env)))
	if err != nil {
		return err
	}
	return in.status(ctx, abi.Init, res[0], "fix the plugin's table in bench.toml (see the plugin's documentation for its keys)")
}

// errf builds an *Error for this instance.
func (in *instance) errf(export, hint, format string, args ...any) *Error {
	return &Error{Plugin: in.info.Name, Path: in.m.path, Export: export, Err: fmt.Errorf(format, args...), Hint: hint}
}

// ensure makes the host-owned guest buffer at least size bytes (re-allocating via genload_free
// and genload_alloc).
func (in *instance) ensure(ctx context.Context, size uint32) error {
	if size <= in.bufCap && in.buf != 0 {
		return nil
	}
	if in.buf != 0 {
		if _, err := in.call(ctx, abi.Free, in.free, uint64(in.buf)); err != nil {
			return err
		}
		in.buf, in.bufCap = 0, 0
	}
	c := max(4096, size)
	res, err := in.call(ctx, abi.Alloc, in.alloc, uint64(c))
	if err != nil {
		return err
	}
	p := uint32(res[0])
	if p == 0 || p%8 != 0 || uint64(p)+uint64(c) > uint64(in.mem.Size()) {
		return in.errf(abi.Alloc, "the plugin's allocator is broken", "returned %#x for %d bytes (memory is %d bytes)", p, c, in.mem.Size())
	}
	in.buf, in.bufCap = p, c
	return nil
}

// read copies the guest bytes described by a packed ptr<<32|len.
func (in *instance) read(export string, packed uint64) ([]byte, error) {
	p, n := abi.Unpack(packed)
	if n == 0 {
		return nil, nil
	}
	b, ok := in.mem.Read(p, n)
	if !ok {
		return nil, in.errf(export, "", "returned [%#x, +%d bytes) outside guest memory (%d bytes)", p, n, in.mem.Size())
	}
	return bytes.Clone(b), nil
}

// call invokes an export under the call deadline; a wazero error discards the instance.
func (in *instance) call(ctx context.Context, export string, f api.Function, params ...uint64) ([]uint64, error) {
	if in.dead != nil {
		return nil, &Error{Plugin: in.info.Name, Path: in.m.path, Export: export, Fatal: true,
			Err: fmt.Errorf("instance was discarded after an earlier failure (%w)", in.dead), Hint: "fix the plugin and start a new run"}
	}
	if f == nil {
		return nil, in.errf(export, rebuildHint, "export is missing")
	}
	in.out.reset()
	cctx, cancel := context.WithTimeout(ctx, in.host.opts.CallTimeout)
	res, err := f.Call(cctx, params...)
	cancel()
	if w := in.host.opts.Output; w != nil && len(in.out.buf) > 0 {
		in.forward(w)
	}
	if err != nil {
		e := in.classify(export, err, ctx)
		in.dead = e.Err
		in.close(context.Background())
		return nil, e
	}
	return res, nil
}

// forward copies the captured output of the last call to w, one prefixed line at a time.
func (in *instance) forward(w io.Writer) {
	var b strings.Builder
	for _, l := range strings.SplitAfter(strings.TrimRight(in.out.String(), "\n"), "\n") {
		b.WriteString("plugin " + in.info.Name + ": ")
		b.WriteString(strings.TrimRight(l, "\n"))
		b.WriteString("\n")
	}
	in.host.outMu.Lock()
	_, _ = io.WriteString(w, b.String())
	in.host.outMu.Unlock()
}

// classify turns a wazero error (trap, exit, timeout) into a fatal *Error with a hint.
func (in *instance) classify(export string, err error, parent context.Context) *Error {
	out := in.out.String()
	e := &Error{Plugin: in.info.Name, Path: in.m.path, Export: export, Fatal: true, Output: out}
	var exit *sys.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == sys.ExitCodeDeadlineExceeded && parent.Err() == nil:
		e.Err = fmt.Errorf("did not return within %v", in.host.opts.CallTimeout)
		e.Hint = "the plugin loops or is too slow; fix it, or raise [plugins] call_timeout in bench.toml (--call-timeout for genload lengths and plugin check)"
	case errors.As(err, &exit) && (exit.ExitCode() == sys.ExitCodeDeadlineExceeded || exit.ExitCode() == sys.ExitCodeContextCanceled):
		e.Err = fmt.Errorf("call interrupted: %w", parent.Err())
		e.Hint = "the run was cancelled"
	case errors.As(err, &exit) && exit.ExitCode() == 0 && export == abi.Initialize:
		e.Err = fmt.Errorf("module exited during %s", abi.Initialize)
		e.Hint = "build with -buildmode=c-shared; plugins must not call os.Exit"
	case errors.As(err, &exit):
		e.Err = fmt.Errorf("plugin exited with code %d", exit.ExitCode())
		e.Hint = "plugins must return errors, never call os.Exit"
	case strings.Contains(err.Error(), "wasm error:"):
		if l := crashLine(out); l != "" {
			e.Err = fmt.Errorf("plugin crashed: %s", l)
		} else {
			e.Err = fmt.Errorf("WebAssembly trap: %s", strings.TrimPrefix(firstLine(err.Error()), "wasm error: "))
		}
		if size, near := in.nearMemoryLimit(); near || strings.Contains(out, "out of memory") {
			e.Hint = fmt.Sprintf("the plugin reached the memory limit of %d MiB (its memory is %.1f MiB); it allocates too much",
				in.host.opts.MemoryLimitPages/16, float64(size)/(1<<20))
		} else {
			e.Hint = "this is a bug in the plugin; its stdout/stderr are attached to the error"
		}
	default:
		e.Err = err
		e.Hint = "this is a bug in the plugin or the host"
	}
	return e
}

// nearMemoryLimit reports the guest's memory size in bytes and whether it is within
// max(limit/8, 4 MiB + 64 KiB) of the memory limit: a crash there is almost surely a failed
// memory.grow (Go's wasm runtime reports it as "out of memory" or, depending on the heap,
// "arena already initialized"; it grows in 4 MiB arenas).
func (in *instance) nearMemoryLimit() (uint32, bool) {
	if in.mem == nil {
		return 0, false
	}
	size := uint64(in.mem.Size())
	limit := uint64(in.host.opts.MemoryLimitPages) << 16
	slack := max(limit/8, 4<<20+1<<16)
	return uint32(size), size+slack >= limit
}

// status checks an export's rc (>= 0 is success) and, for a failure, reads genload_last_error.
func (in *instance) status(ctx context.Context, export string, rc uint64, hint string) error {
	r := int32(uint32(rc))
	if r >= 0 {
		return nil
	}
	st := abi.Status(-r)
	output := in.out.String() // before genload_last_error's call resets it
	msg := ""
	if res, err := in.call(ctx, abi.LastError, in.lastError); err == nil {
		if b, err := in.read(abi.LastError, res[0]); err == nil {
			msg = string(b)
		}
	}
	if msg == "" {
		msg = "(no message from " + abi.LastError + ")"
	}
	switch st {
	case abi.PluginError:
		if strings.HasPrefix(msg, "panic: ") {
			hint = "the plugin panicked; this is a bug in the plugin (the instance is still usable)"
		} else if export != abi.Init {
			hint = "the plugin failed on valid input; see its message"
		}
	case abi.NotInitialised, abi.Unsupported:
		hint = "the plugin and host disagree about the ABI; " + rebuildHint
	}
	return &Error{Plugin: in.info.Name, Path: in.m.path, Export: export, Status: st,
		Err: errors.New(firstLine(msg)), Hint: hint, Detail: msg, Output: output}
}

// close releases the wazero module.
func (in *instance) close(ctx context.Context) {
	if in.mod != nil {
		_ = in.mod.Close(ctx)
	}
}
