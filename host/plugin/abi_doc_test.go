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

// TestShippedPluginsPassStaticChecks opens each shipped plugin and checks the exports the SDK
// produced against the registry (the same check every load does), and the kind it implies.
func TestShippedPluginsPassStaticChecks(t *testing.T) {
	h := testHost(t)
	for name, kind := range map[string]string{"gamma": abi.KindLengths, "uniform": abi.KindLengths, "router-rr": abi.KindRouter} {
		m, err := h.open(t.Context(), name, "")
		if err != nil {
			t.Fatal(err)
		}
		if m.kind != kind {
			t.Errorf("%s: kind %s, want %s", name, m.kind, kind)
		}
		if !slices.Equal(m.imports, slices.DeleteFunc(slices.Clone(m.imports), func(s string) bool { return !strings.HasPrefix(s, abi.WASIModule+".") })) {
			t.Errorf("%s imports %v", name, m.imports)
		}
		for _, e := range []string{abi.Initialize, abi.Marker, abi.Alloc, abi.Info, abi.Init} {
			if !slices.Contains(m.exports, e) {
				t.Errorf("%s lacks %s", name, e)
			}
		}
	}
}
