package plugin

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// withBuiltins replaces the embedded plugin directory for one test.
func withBuiltins(t *testing.T, fsys fstest.MapFS) {
	t.Helper()
	prev := builtinFS
	builtinFS = fsys
	t.Cleanup(func() { builtinFS = prev })
}

// sumLine is a SHA256SUMS line for data named file.
func sumLine(file string, data []byte) string {
	return fmt.Sprintf("%x  %s\n", sha256.Sum256(data), file)
}

func TestLocate(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, f := range []string{filepath.Join(a, "x.wasm"), filepath.Join(b, "x.wasm"), filepath.Join(b, "y.wasm"), filepath.Join(b, "gamma.wasm")} {
		if err := os.WriteFile(f, []byte("\x00asm "+f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gamma := []byte("\x00asm built-in gamma")
	withBuiltins(t, fstest.MapFS{"gamma.wasm": {Data: gamma}, "uniform.wasm": {Data: []byte("u")},
		"SHA256SUMS": {Data: []byte(sumLine("gamma.wasm", gamma) + sumLine("uniform.wasm", []byte("u")))}})
	t.Setenv(EnvPluginDir, b)
	cases := []struct {
		ref, extra, want, wantErr string
	}{
		{"x", a, filepath.Join(a, "x.wasm"), ""},                         // the extra dir comes first
		{"x", "", filepath.Join(b, "x.wasm"), ""},                        // then $GENLOAD_PLUGIN_DIR
		{"y", a, filepath.Join(b, "y.wasm"), ""},                         // not in a, found in b
		{"gamma", a, filepath.Join(b, "gamma.wasm"), ""},                 // a directory given wins over the built-in
		{"uniform", a, "builtin:uniform.wasm", ""},                       // then the plugins built in
		{filepath.Join(a, "x.wasm"), "", filepath.Join(a, "x.wasm"), ""}, // a path is used as is
		{"z", a, "", "searched " + filepath.Join(a, "z.wasm") + ", " + filepath.Join(b, "z.wasm")},
		{"nope.wasm", "", "", "plugin file nope.wasm"},
		{"Bad Name", "", "", "invalid"},
	}
	for _, c := range cases {
		got, err := Locate(c.ref, c.extra)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("Locate(%q, %q) error %v, want %q", c.ref, c.extra, err, c.wantErr)
			}
			continue
		}
		if err != nil || got.Path != c.want {
			t.Errorf("Locate(%q, %q) = %q, %v; want %q", c.ref, c.extra, got.Path, err, c.want)
		}
	}
	// The built-in bytes are the embedded ones, marked as built in.
	t.Setenv(EnvPluginDir, "")
	src, err := Locate("gamma")
	if err != nil || !src.Builtin || src.Path != "builtin:gamma.wasm" || string(src.Wasm) != string(gamma) {
		t.Fatalf("Locate(gamma) = %+v, %v; want the embedded module", src, err)
	}
}

// A plugin name found nowhere: the message says what is built in, where it looked and the
// nearest name; a shipped plugin missing from a genload compiled without them says how to build
// it in; an embedded module that does not match its recorded digest is refused.
func TestLocateErrors(t *testing.T) {
	gamma := []byte("\x00asm built-in gamma")
	sums := sumLine("gamma.wasm", gamma)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "lognormal.wasm"), []byte("\x00asm"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvPluginDir, "")
	cases := []struct {
		name  string
		fs    fstest.MapFS
		ref   string
		extra string
		want  string
	}{
		{"typo of a built-in", fstest.MapFS{"gamma.wasm": {Data: gamma}, "SHA256SUMS": {Data: []byte(sums)}}, "gama", "",
			`plugin "gama" not found: it is not built into genload (built in: gamma); did you mean "gamma"? (a plugin of your own: give its .wasm path, or set GENLOAD_PLUGIN_DIR to its directory)`},
		{"typo of a file in the plugin directory", fstest.MapFS{}, "lognormall", dir,
			`plugin "lognormall" not found: it is not built into genload (built in: none (compiled without ` + "`make plugins`" + `)); searched ` +
				filepath.Join(dir, "lognormall.wasm") + `; did you mean "lognormal"? (a plugin of your own: give its .wasm path, or set GENLOAD_PLUGIN_DIR to its directory)`},
		{"no near name", fstest.MapFS{"gamma.wasm": {Data: gamma}, "SHA256SUMS": {Data: []byte(sums)}}, "zipf", "",
			`plugin "zipf" not found: it is not built into genload (built in: gamma) (a plugin of your own: give its .wasm path, or set GENLOAD_PLUGIN_DIR to its directory)`},
		{"compiled without the plugins", fstest.MapFS{"README.md": {Data: []byte("x")}}, "uniform", "",
			`plugin "uniform" is not built into this genload, which was compiled without its plugins (a go build or go install that did not run ` + "`make plugins`" +
				` first embeds none); build genload with ` + "`make build`" + ` (it builds the plugins, then embeds them), or set GENLOAD_PLUGIN_DIR to a directory holding uniform.wasm`},
		{"digest mismatch", fstest.MapFS{"gamma.wasm": {Data: []byte("\x00asm changed")}, "SHA256SUMS": {Data: []byte(sums)}}, "gamma", "",
			fmt.Sprintf("plugin builtin:gamma.wasm: sha256 %x does not match the digest %x recorded in SHA256SUMS when it was built in; rebuild genload with `make build`",
				short([]byte("\x00asm changed")), sha256.Sum256(gamma))},
		{"no digest", fstest.MapFS{"gamma.wasm": {Data: gamma}}, "gamma", "",
			fmt.Sprintf("plugin builtin:gamma.wasm: sha256 %x does not match the digest none recorded in SHA256SUMS when it was built in; rebuild genload with `make build`", short(gamma))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			withBuiltins(t, c.fs)
			_, err := Locate(c.ref, c.extra)
			if err == nil {
				t.Fatalf("Locate(%q) succeeded", c.ref)
			}
			if err.Error() != c.want {
				t.Errorf("Locate(%q):\n got %s\nwant %s", c.ref, err, c.want)
			}
		})
	}
}

// short is the first 8 bytes of data's SHA-256, as messages print it.
func short(data []byte) []byte {
	s := sha256.Sum256(data)
	return s[:8]
}
