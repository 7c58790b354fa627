package plugin

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/sdk/abi"
)

// badHost returns a host with a small memory limit, 256 pages = 16 MiB (a Go plugin needs ~60),
// so the memory blow-up ends fast, and the given call deadline.
func badHost(t *testing.T, timeout time.Duration) *Host {
	t.Helper()
	h, err := NewHost(context.Background(), Options{CacheDir: testplugins.CacheDir(t), CallTimeout: timeout, MemoryLimitPages: 256, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}

// interpHost returns a host running wazero's interpreter: it compiles a module in ~0.2 s
// instead of ~2 s (tests of plugins other than the shipped ones would otherwise spend most of a
// cold run compiling), with the same results (sdk/ABI.md §7, reference: bit-identical outputs).
func interpHost(t *testing.T) *Host {
	t.Helper()
	h, err := NewHost(context.Background(), Options{Interpreter: true, CallTimeout: 20 * time.Second, Seed: testSeed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}

// wantOneLine checks that err is an *Error whose single-line message contains every part.
func wantOneLine(t *testing.T, err error, parts ...string) *Error {
	t.Helper()
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("got %v (%T), want *Error", err, err)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("message spans lines: %q", msg)
	}
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("message %q lacks %q", msg, p)
		}
	}
	if pe.Hint == "" {
		t.Errorf("message %q says nothing about what to do", msg)
	}
	return pe
}

func TestBadLengthsCalls(t *testing.T) {
	ctx := context.Background()
	wasm := testplugins.Build(t, "./host/internal/testplugins/testdata/badlengths", testplugins.Options{})
	// Only the infinite loop meets the short deadline; the others get a generous one so that a
	// slow machine (or -race) cannot turn them into timeouts.
	slow, fast := badHost(t, 20*time.Second), badHost(t, time.Second)
	cases := []struct {
		name  string
		mean  int
		want  []string
		fatal bool
	}{
		{"panic", 1, []string{"plugin badlengths", "[genload_lengths]", "status 2 (plugin error): panic: boom", "instance is still usable"}, false},
		{"trap", 2, []string{"[genload_lengths]", "WebAssembly trap: out of bounds memory access", "bug in the plugin"}, true},
		{"exit", 3, []string{"[genload_lengths]", "plugin exited with code 7", "never call os.Exit"}, true},
		{"loop", 4, []string{"[genload_lengths]", "did not return within 1s", "loops"}, true},
		{"memory", 5, []string{"[genload_lengths]", "plugin crashed: fatal error: ", "reached the memory limit of 16 MiB"}, true},
		{"count", 6, []string{"[genload_lengths]", "returned 5 lengths, want 4"}, false},
		{"zero", 7, []string{"[genload_lengths]", "length 0 at index 0 is outside [1, 100]"}, false},
		{"above-max", 8, []string{"[genload_lengths]", "length 101 at index 0 is outside [1, 100]"}, false},
		{"goroutine-panic", 9, []string{"[genload_lengths]", "plugin crashed: panic: boom in a goroutine"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := slow
			if c.name == "loop" {
				h = fast
			}
			p, err := h.LoadLengths(ctx, wasm, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Lengths(ctx, 4, c.mean, 1, 100)
			pe := wantOneLine(t, err, c.want...)
			t.Log(err)
			if pe.Fatal != c.fatal {
				t.Errorf("Fatal = %v, want %v", pe.Fatal, c.fatal)
			}
			if c.name != "memory" && strings.Contains(err.Error(), "memory limit") {
				t.Errorf("%s blamed on the memory limit: %v", c.name, err)
			}
			if c.name == "panic" && (pe.Output != "about to panic\n" || !strings.Contains(pe.Detail, "goroutine")) {
				t.Errorf("panic: output %q, detail %q; want the guest's stderr and the stack", pe.Output, pe.Detail)
			}
			// The host keeps running; a non-fatal failure leaves the instance usable, a fatal one
			// makes later calls fail at once with the reason.
			ls, err := p.Lengths(ctx, 3, 50, 1, 100)
			if c.fatal {
				wantOneLine(t, err, "instance was discarded after an earlier failure")
			} else if err != nil || len(ls) != 3 || ls[2] != 50 {
				t.Errorf("after %s: %v, %v; want [50 50 50]", c.name, ls, err)
			}
		})
	}
}

func TestSandbox(t *testing.T) {
	// The guest sees no files, no environment, no arguments, no network and a fake clock
	// (sdk/ABI.md §7), whatever the host process has.
	ctx := context.Background()
	wasm := testplugins.Build(t, "./host/internal/testplugins/testdata/badlengths", testplugins.Options{})
	p, err := badHost(t, 20*time.Second).LoadLengths(ctx, wasm, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Lengths(ctx, 1, 11, 1, 100)
	t.Log(err)
	wantOneLine(t, err, "status 2 (plugin error): sandbox:", "file=open /etc/hostname: ", "dir=open /: ", "env=0 args=0 year=2022")
	if strings.Contains(err.Error(), "net=<nil>") {
		t.Errorf("guest opened a socket: %v", err)
	}
}

func TestGuestOutput(t *testing.T) {
	ctx := context.Background()
	wasm := testplugins.Build(t, "./host/internal/testplugins/testdata/badlengths", testplugins.Options{})
	var out bytes.Buffer
	h, err := NewHost(ctx, Options{CacheDir: testplugins.CacheDir(t), Output: &out})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	p, err := h.LoadLengths(ctx, wasm, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Lengths(ctx, 2, 10, 1, 100); err != nil {
		t.Fatal(err)
	}
	if want := "plugin badlengths: hello on stdout\nplugin badlengths: hello on stderr\n"; out.String() != want {
		t.Errorf("forwarded %q, want %q", out.String(), want)
	}
	// A crash's stderr (the Go runtime's panic report) is attached to the error.
	_, err = p.Lengths(ctx, 2, 9, 1, 100)
	var pe *Error
	if !errors.As(err, &pe) || !strings.Contains(pe.Output, "panic: boom in a goroutine") || !strings.Contains(pe.Output, "goroutine ") {
		t.Errorf("error %v, output %q", err, pe.Output)
	}
}

func TestBadRouter(t *testing.T) {
	ctx := context.Background()
	wasm := testplugins.Build(t, "./host/internal/testplugins/testdata/badrouter", testplugins.Options{})
	h := interpHost(t)
	r, err := h.LoadRouter(ctx, wasm, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Route(ctx, []int{1, 2}, 3)
	wantOneLine(t, err, "plugin badrouter", "[genload_route]", "worker index 3 for prompt 0 is out of range: 3 workers")
	if got, err := r.Route(ctx, []int{5, 2}, 3); err != nil || got[0] != 0 || got[1] != 0 {
		t.Errorf("valid route after a bad one: %v, %v", got, err)
	}
	// Completions reach the guest: a failed request makes this policy return an error.
	if err := r.Complete(ctx, []Completion{{Worker: 0, PromptLen: 5, CompletionTokens: 100}}); err != nil {
		t.Error(err)
	}
	err = r.Complete(ctx, []Completion{{Worker: 0, PromptLen: 5, Failed: true}})
	wantOneLine(t, err, "[genload_on_complete]", "status 2 (plugin error): saw a failed request")
	// A lengths plugin where a router is wanted.
	_, err = h.LoadLengths(ctx, wasm, nil)
	wantOneLine(t, err, "is a router plugin, want a lengths plugin")
}

func TestBadConfigKey(t *testing.T) {
	wasm := testplugins.Build(t, "./host/internal/testplugins/testdata/badlengths", testplugins.Options{})
	_, err := badHost(t, 20*time.Second).LoadLengths(context.Background(), wasm, map[string]any{"meen": 3})
	wantOneLine(t, err, "plugin badlengths", "[genload_init]", `status 1 (bad input): config: json: unknown field "meen"`, "bench.toml")
}

func TestBadModules(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(t *testing.T, name string, b []byte) string {
		p := filepath.Join(dir, name+".wasm")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	elf, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	i32, i64 := byte(0x7f), byte(0x7e)
	core := []wasmFunc{{name: abi.Initialize}, {name: abi.Marker}, {abi.Alloc, []byte{i32}, []byte{i32}}, {name: abi.Free, params: []byte{i32}},
		{abi.Info, nil, []byte{i64}}, {abi.Init, []byte{i32, i32}, []byte{i32}}, {abi.LastError, nil, []byte{i64}}}
	lengthsFn := wasmFunc{abi.Lengths, []byte{i32, i32, i32, i32, i64, i32}, []byte{i32}}
	without := func(fs []wasmFunc, name string) []wasmFunc {
		var out []wasmFunc
		for _, f := range fs {
			if f.name != name {
				out = append(out, f)
			}
		}
		return out
	}
	badAlloc := append(without(core, abi.Alloc), wasmFunc{abi.Alloc, []byte{i64}, []byte{i32}}, lengthsFn)
	cases := []struct {
		name string
		path func(t *testing.T) string
		want []string
	}{
		{"not-wasm", func(t *testing.T) string { return write(t, "elf", elf[:4096]) }, []string{"plugin elf", "not a WebAssembly module (a native ELF executable)", "GOOS=wasip1"}},
		{"garbage", func(t *testing.T) string { return write(t, "junk", []byte("\x00asm\x01\x00\x00\x00\xff\xff")) }, []string{"plugin junk", "invalid WebAssembly"}},
		{"goos-js", func(t *testing.T) string {
			return testplugins.Build(t, "./plugins/uniform", testplugins.Options{Name: "uniform-js", GOOS: "js", NoCShared: true})
		}, []string{"plugin uniform-js", "built for GOOS=js (imports gojs.", "rebuild with GOOS=wasip1"}},
		{"no-c-shared", func(t *testing.T) string {
			return testplugins.Build(t, "./plugins/uniform", testplugins.Options{Name: "uniform-cmd", NoCShared: true})
		}, []string{"plugin uniform-cmd", "[_initialize]", "a WASI command (exports _start), not a reactor", "-buildmode=c-shared"}},
		{"no-marker", func(t *testing.T) string {
			return write(t, "nomarker", wasmModule([]wasmFunc{{name: abi.Initialize}}, true))
		},
			[]string{"[genload_abi_v1]", "no ABI version marker export: not a genload plugin"}},
		{"abi-v2", func(t *testing.T) string {
			return write(t, "v2", wasmModule([]wasmFunc{{name: abi.Initialize}, {name: "genload_abi_v2"}, lengthsFn}, true))
		}, []string{"plugin v2", "[genload_abi_v2]", "implements ABI v2, this host speaks v1"}},
		{"missing-export", func(t *testing.T) string {
			return write(t, "noalloc", wasmModule(append(without(core, abi.Alloc), lengthsFn), true))
		},
			[]string{"plugin noalloc", "[genload_alloc]", "missing export genload_alloc (i32) -> (i32)"}},
		{"no-kind", func(t *testing.T) string { return write(t, "nokind", wasmModule(core, true)) },
			[]string{"exports neither genload_lengths nor genload_route"}},
		{"wrong-signature", func(t *testing.T) string { return write(t, "badsig", wasmModule(badAlloc, true)) },
			[]string{"[genload_alloc]", "export genload_alloc has signature (i64) -> (i32), want (i32) -> (i32)"}},
		{"no-memory", func(t *testing.T) string { return write(t, "nomem", wasmModule(append(core, lengthsFn), false)) },
			[]string{"[memory]", `no exported memory named "memory"`}},
		{"missing-file", func(t *testing.T) string { return filepath.Join(dir, "absent.wasm") }, []string{"absent.wasm", "no such file"}},
	}
	// These modules are all rejected before running: the interpreter compiles them ten times
	// faster than the compiler.
	h := interpHost(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := h.LoadLengths(ctx, c.path(t), nil)
			if err == nil {
				t.Fatal("loaded")
			}
			if c.name == "missing-file" {
				for _, p := range c.want {
					if !strings.Contains(err.Error(), p) {
						t.Errorf("%q lacks %q", err, p)
					}
				}
				return
			}
			wantOneLine(t, err, c.want...)
		})
	}
}

// wasmFunc is an export of a hand-encoded test module: a function returning zeros.
type wasmFunc struct {
	name            string
	params, results []byte // value types: 0x7f i32, 0x7e i64
}

// wasmModule encodes a WebAssembly 1.0 module exporting fs (each its own type, body returning
// zero constants) and, if memory, a 1-page memory named "memory".
func wasmModule(fs []wasmFunc, memory bool) []byte {
	uleb := func(v int) []byte {
		var b []byte
		for {
			c := byte(v & 0x7f)
			v >>= 7
			if v != 0 {
				b = append(b, c|0x80)
			} else {
				return append(b, c)
			}
		}
	}
	vec := func(n int, items ...[]byte) []byte {
		b := uleb(n)
		for _, it := range items {
			b = append(b, it...)
		}
		return b
	}
	section := func(id byte, body []byte) []byte { return append(append([]byte{id}, uleb(len(body))...), body...) }
	var types, funcs, exports, codes [][]byte
	for i, f := range fs {
		types = append(types, append(append(append([]byte{0x60}, vec(len(f.params), f.params)...), uleb(len(f.results))...), f.results...))
		funcs = append(funcs, uleb(i))
		exports = append(exports, append(append(vec(len(f.name), []byte(f.name)), 0x00), uleb(i)...))
		body := []byte{0x00} // no locals
		for _, r := range f.results {
			if r == 0x7e {
				body = append(body, 0x42, 0x00) // i64.const 0
			} else {
				body = append(body, 0x41, 0x00) // i32.const 0
			}
		}
		body = append(body, 0x0b)
		codes = append(codes, append(uleb(len(body)), body...))
	}
	if memory {
		exports = append(exports, append(vec(6, []byte("memory")), 0x02, 0x00))
	}
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, section(1, vec(len(types), types...))...)
	m = append(m, section(3, vec(len(funcs), funcs...))...)
	if memory {
		m = append(m, section(5, []byte{0x01, 0x00, 0x01})...) // one memory, min 1 page
	}
	m = append(m, section(7, vec(len(exports), exports...))...)
	m = append(m, section(10, vec(len(codes), codes...))...)
	return m
}

func TestHammerWithFatalCall(t *testing.T) {
	// Four goroutines call one instance while a fifth makes it loop: the loop is stopped at the
	// deadline, the host does not freeze, every call returns, and after the kill every call
	// reports the discarded instance.
	ctx := context.Background()
	wasm := testplugins.Build(t, "./host/internal/testplugins/testdata/badlengths", testplugins.Options{})
	p, err := badHost(t, time.Second).LoadLengths(ctx, wasm, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, discarded := 0, 0
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				ls, err := p.Lengths(ctx, 8, 50+g, 1, 100)
				mu.Lock()
				switch {
				case err == nil && len(ls) == 8 && ls[7] == 50+g:
					ok++
				case err != nil && strings.Contains(err.Error(), "discarded"):
					discarded++
				default:
					t.Errorf("unexpected %v, %v", ls, err)
				}
				mu.Unlock()
			}
		}()
	}
	_, err = p.Lengths(ctx, 1, 4, 1, 100)
	wantOneLine(t, err, "did not return within 1s")
	wg.Wait()
	if ok+discarded != 200 {
		t.Errorf("%d ok + %d discarded, want 200 in all", ok, discarded)
	}
	if _, err := p.Lengths(ctx, 1, 50, 1, 100); err == nil || !strings.Contains(err.Error(), "discarded") {
		t.Errorf("after the kill: %v", err)
	}
}
