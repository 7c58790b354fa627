package plugin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFind(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, f := range []string{filepath.Join(a, "x.wasm"), filepath.Join(b, "x.wasm"), filepath.Join(b, "y.wasm")} {
		if err := os.WriteFile(f, []byte("\x00asm"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(EnvPluginDir, b)
	cases := []struct {
		ref, extra, want, wantErr string
	}{
		{"x", a, filepath.Join(a, "x.wasm"), ""},                         // the extra dir comes first
		{"x", "", filepath.Join(b, "x.wasm"), ""},                        // then $GENLOAD_PLUGIN_DIR
		{"y", a, filepath.Join(b, "y.wasm"), ""},                         // not in a, found in b
		{filepath.Join(a, "x.wasm"), "", filepath.Join(a, "x.wasm"), ""}, // a path is used as is
		{"z", a, "", "searched " + filepath.Join(a, "z.wasm") + ", " + filepath.Join(b, "z.wasm")},
		{"nope.wasm", "", "", "plugin file nope.wasm"},
		{"Bad Name", "", "", "invalid"},
	}
	for _, c := range cases {
		got, err := Find(c.ref, c.extra)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("Find(%q, %q) error %v, want %q", c.ref, c.extra, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Find(%q, %q) = %q, %v; want %q", c.ref, c.extra, got, err, c.want)
		}
	}
	_, err := Find("z")
	if err == nil || !strings.Contains(err.Error(), filepath.Join("build", "plugins", "z.wasm")) || !strings.Contains(err.Error(), "make plugins") {
		t.Errorf("error %v should list ./build/plugins and say how to build", err)
	}
}
