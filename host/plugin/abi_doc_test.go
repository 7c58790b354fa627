package plugin

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/sdk/abi"
)

// TestABIDocMatchesRegistry parses every `(func (export "…") …)` line of sdk/ABI.md and checks
// that the set of exports and each signature equal abi.Exports, the registry the host checks
// modules against (http-wasm's prose and code drifted; this cannot).
func TestABIDocMatchesRegistry(t *testing.T) {
	root, err := testplugins.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "sdk", "ABI.md"))
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^\(func \(export "([^"]+)"\)(.*)\)$`)
	param := regexp.MustCompile(`\(param \$\w+ (i32|i64)\)`)
	result := regexp.MustCompile(`\(result (i32|i64)\)`)
	documented := map[string]string{}
	for _, m := range line.FindAllStringSubmatch(string(doc), -1) {
		var ps, rs []abi.ValType
		for _, p := range param.FindAllStringSubmatch(m[2], -1) {
			ps = append(ps, abi.ValType(p[1]))
		}
		for _, r := range result.FindAllStringSubmatch(m[2], -1) {
			rs = append(rs, abi.ValType(r[1]))
		}
		// Everything in the parentheses must be a param or a result.
		rest := result.ReplaceAllString(param.ReplaceAllString(m[2], ""), "")
		if strings.TrimSpace(rest) != "" {
			t.Errorf("ABI.md: unparsed signature text %q in %s", rest, m[0])
		}
		if _, dup := documented[m[1]]; dup {
			t.Errorf("ABI.md documents %s twice", m[1])
		}
		documented[m[1]] = sigString(ps, rs)
	}
	var names []string
	for _, e := range abi.Exports {
		names = append(names, e.Name)
		got, ok := documented[e.Name]
		if !ok {
			t.Errorf("ABI.md does not document export %s", e.Name)
			continue
		}
		if want := sigString(e.Params, e.Results); got != want {
			t.Errorf("ABI.md: %s %s, registry %s", e.Name, got, want)
		}
	}
	for name := range documented {
		if !slices.Contains(names, name) {
			t.Errorf("ABI.md documents %s, which the registry lacks", name)
		}
	}
	if len(documented) != 10 {
		t.Errorf("ABI.md documents %d exports, want 10", len(documented))
	}
}

// TestShippedPluginsPassStaticChecks pins what the SDK produces for each shipped plugin beyond
// what every load enforces (open checks that the required exports exist with their signatures):
// the exact export set, so the SDK neither leaks an export of its own nor silently drops the
// optional one a kind may have; the kind the file name implies; and the info each plugin
// declares, name and capabilities, which decide how the host treats it (a lost "pure" would turn
// off the host's cache, a stray one would cache a stateful plugin).
func TestShippedPluginsPassStaticChecks(t *testing.T) {
	h := testHost(t)
	common := []string{abi.Initialize, abi.Marker, abi.Alloc, abi.Free, abi.Info, abi.Init, abi.LastError}
	for _, c := range []struct {
		name, kind string
		extra      []string // the kind's exports
		caps       []string
	}{
		{"gamma", abi.KindLengths, []string{abi.Lengths}, []string{abi.CapPure}},
		{"uniform", abi.KindLengths, []string{abi.Lengths}, []string{abi.CapPure}},
		// sdk/router exports genload_on_complete for every router; the host calls it only for
		// routers declaring "completions", which round robin does not.
		{"router-rr", abi.KindRouter, []string{abi.Route, abi.OnComplete}, nil},
	} {
		m, err := h.open(t.Context(), c.name, "")
		if err != nil {
			t.Fatal(err)
		}
		if m.kind != c.kind {
			t.Errorf("%s: kind %s, want %s", c.name, m.kind, c.kind)
		}
		want := slices.Sorted(slices.Values(slices.Concat(common, c.extra)))
		if got := slices.Sorted(slices.Values(m.exports)); !slices.Equal(got, want) {
			t.Errorf("%s exports %v, want exactly %v (plus memory)", c.name, got, want)
		}
		var info Info
		if c.kind == abi.KindLengths {
			p, err := h.LoadLengths(t.Context(), c.name, nil)
			if err != nil {
				t.Fatal(err)
			}
			info = p.Info()
		} else {
			p, err := h.LoadRouter(t.Context(), c.name, nil)
			if err != nil {
				t.Fatal(err)
			}
			info = p.Info()
		}
		if info.Name != c.name || info.Kind != c.kind || info.ABIMinor != 0 || !slices.Equal(info.Caps, c.caps) {
			t.Errorf("%s info %+v, want name %s, kind %s, abi_minor 0, caps %v", c.name, info, c.name, c.kind, c.caps)
		}
	}
}
