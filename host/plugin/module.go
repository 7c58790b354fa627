package plugin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/genload/genload/sdk/abi"
)

// module is a file read and checked against the ABI, before instantiation.
type module struct {
	path     string
	name     string // file base name without .wasm, for errors before genload_info
	sum      [32]byte
	size     int
	compiled wazero.CompiledModule
	kind     string
	exports  []string
	imports  []string
}

// errf builds a file-level *Error.
func (m *module) errf(export, hint, format string, args ...any) *Error {
	return &Error{Plugin: m.name, Path: m.path, Export: export, Err: fmt.Errorf(format, args...), Hint: hint}
}

const rebuildHint = "build plugins with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared and the genload SDK (see sdk/ABI.md)"

// open finds, reads, compiles (once per content) and statically checks a plugin file. wantKind
// is abi.KindLengths, abi.KindRouter or "" for any. If only the static checks fail it returns
// both the module and the error.
func (h *Host) open(ctx context.Context, nameOrPath, wantKind string) (*module, error) {
	src, err := Locate(nameOrPath, h.opts.Dir)
	if err != nil {
		return nil, err
	}
	return h.openSource(ctx, src, wantKind)
}

// openSource is open for a located plugin.
func (h *Host) openSource(ctx context.Context, src Source, wantKind string) (*module, error) {
	m := &module{path: src.Path, name: strings.TrimSuffix(filepath.Base(strings.TrimPrefix(src.Path, BuiltinPrefix)), ".wasm")}
	wasm := src.Wasm
	m.size = len(wasm)
	m.sum = sha256.Sum256(wasm)
	if !bytes.HasPrefix(wasm, []byte("\x00asm")) {
		what := fmt.Sprintf("starts with % x", wasm[:min(4, len(wasm))])
		if bytes.HasPrefix(wasm, []byte("\x7fELF")) {
			what = "a native ELF executable"
		} else if len(wasm) == 0 {
			what = "empty file"
		}
		return nil, m.errf("", rebuildHint, "not a WebAssembly module (%s)", what)
	}
	h.mu.Lock()
	cm, ok := h.compiled[m.sum]
	h.mu.Unlock()
	if !ok {
		var err error
		cm, err = h.rt.CompileModule(ctx, wasm)
		if err != nil {
			return nil, m.errf("", rebuildHint, "invalid WebAssembly: %w", err)
		}
		h.mu.Lock()
		if prev, ok := h.compiled[m.sum]; ok {
			_ = cm.Close(ctx)
			cm = prev
		} else {
			h.compiled[m.sum] = cm
		}
		h.mu.Unlock()
	}
	m.compiled = cm
	if err := m.check(wantKind); err != nil {
		return m, err // m describes the module for Check's report
	}
	return m, nil
}

// forget drops m's compiled module from the host and closes it (its machine code is freed
// once no instance of it is left): a released plugin's module is compiled again if it is
// loaded again.
func (h *Host) forget(ctx context.Context, m *module) {
	h.mu.Lock()
	if cm, ok := h.compiled[m.sum]; ok && cm == m.compiled {
		delete(h.compiled, m.sum)
	}
	h.mu.Unlock()
	_ = m.compiled.Close(ctx)
}

// check validates imports, the version marker, every export's exact signature, the memory
// export and the kind.
func (m *module) check(wantKind string) error {
	for _, f := range m.compiled.ImportedFunctions() {
		mod, name, _ := f.Import()
		m.imports = append(m.imports, mod+"."+name)
		switch {
		case mod == "gojs":
			return m.errf("", "rebuild with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared", "built for GOOS=js (imports gojs.%s)", name)
		case mod != abi.WASIModule:
			return m.errf("", "plugins may import only "+abi.WASIModule, "imports %s.%s, which the host does not provide", mod, name)
		}
	}
	exports := m.compiled.ExportedFunctions()
	for name := range exports {
		m.exports = append(m.exports, name)
	}
	slices.Sort(m.exports)
	var markers []string
	for _, name := range m.exports {
		if strings.HasPrefix(name, abi.MarkerPrefix) {
			markers = append(markers, name)
		}
	}
	switch {
	case len(markers) == 0:
		return m.errf(abi.Marker, rebuildHint, "no ABI version marker export: not a genload plugin")
	case len(markers) > 1:
		return m.errf(abi.Marker, rebuildHint, "several ABI version markers %v", markers)
	case markers[0] != abi.Marker:
		return m.errf(markers[0], "rebuild the plugin against a genload SDK for ABI v1, or use a genload that speaks its version",
			"implements ABI v%s, this host speaks v%d", strings.TrimPrefix(markers[0], abi.MarkerPrefix), abi.Major)
	}
	if _, ok := exports[abi.Initialize]; !ok {
		if _, ok := exports[abi.Start]; ok {
			return m.errf(abi.Initialize, "rebuild with -buildmode=c-shared", "a WASI command (exports _start), not a reactor")
		}
	}
	_, hasLengths := exports[abi.Lengths]
	_, hasRoute := exports[abi.Route]
	switch {
	case hasLengths && hasRoute:
		return m.errf("", "a plugin is either a length distribution or a router; import only one of sdk/lengths and sdk/router",
			"exports both %s and %s", abi.Lengths, abi.Route)
	case hasLengths:
		m.kind = abi.KindLengths
	case hasRoute:
		m.kind = abi.KindRouter
	default:
		return m.errf("", "a plugin must export "+abi.Lengths+" (length distribution) or "+abi.Route+" (router); "+rebuildHint,
			"exports neither %s nor %s", abi.Lengths, abi.Route)
	}
	for _, e := range abi.Exports {
		if e.Kind != "" && e.Kind != m.kind {
			continue
		}
		def, ok := exports[e.Name]
		if !ok {
			if e.Optional {
				continue
			}
			return m.errf(e.Name, rebuildHint, "missing export %s %s", e.Name, sigString(e.Params, e.Results))
		}
		got := sigString(valTypes(def.ParamTypes()), valTypes(def.ResultTypes()))
		if want := sigString(e.Params, e.Results); got != want {
			return m.errf(e.Name, "fix the export's signature (sdk/ABI.md)", "export %s has signature %s, want %s", e.Name, got, want)
		}
	}
	if _, ok := m.compiled.ExportedMemories()[abi.Memory]; !ok {
		return m.errf(abi.Memory, rebuildHint, "no exported memory named %q", abi.Memory)
	}
	if wantKind != "" && wantKind != m.kind {
		return m.errf("", fmt.Sprintf("use a %s plugin here", wantKind), "is a %s plugin, want a %s plugin", m.kind, wantKind)
	}
	return nil
}

// valTypes converts wazero value types to ABI spellings.
func valTypes(ts []api.ValueType) []abi.ValType {
	out := make([]abi.ValType, len(ts))
	for i, t := range ts {
		out[i] = abi.ValType(api.ValueTypeName(t))
	}
	return out
}

// sigString renders a signature as "(i32, i32) -> (i32)".
func sigString(params, results []abi.ValType) string {
	j := func(ts []abi.ValType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = string(t)
		}
		return "(" + strings.Join(s, ", ") + ")"
	}
	return j(params) + " -> " + j(results)
}
