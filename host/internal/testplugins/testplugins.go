// Package testplugins builds genload's WebAssembly plugins for tests. Dir returns a directory
// holding gamma.wasm, uniform.wasm and router-rr.wasm: $GENLOAD_PLUGIN_DIR if it has all three
// (the Makefile builds them with `make plugins` and exports it), otherwise a cache directory
// where they are built once with the standard Go toolchain and reused while the sources of sdk/,
// plugins/ and this package, go.mod and go.sum are unchanged. Build builds any other package
// (the bad plugins of host/plugin's tests) the same way, and Wat assembles the plugins written in
// WebAssembly text (testdata/*.wat).
package testplugins

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
)

// Names are the plugins shipped with genload.
var Names = []string{"gamma", "uniform", "router-rr"}

// EnvPluginDir is the variable the Makefile exports (same as plugin.EnvPluginDir).
const EnvPluginDir = "GENLOAD_PLUGIN_DIR"

// Dir returns a directory containing gamma.wasm, uniform.wasm and router-rr.wasm, building them
// if needed (about 10 s on a cold Go build cache, instant afterwards). It fails the test if they
// cannot be built.
func Dir(t testing.TB) string {
	t.Helper()
	d, err := dirOf()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// SetDir sets $GENLOAD_PLUGIN_DIR to Dir's directory (building the plugins if needed), for a
// TestMain: its tests, and the genload runs they start in the process, then find the plugins
// without a t.Setenv each, which a parallel test may not call. The error says what failed to
// build.
func SetDir() error {
	d, err := dirOf()
	if err != nil {
		return err
	}
	return os.Setenv(EnvPluginDir, d)
}

// dirOf is Dir without a test.
func dirOf() (string, error) {
	if d := os.Getenv(EnvPluginDir); d != "" && hasAll(d) {
		return d, nil
	}
	var dir string
	for _, name := range Names {
		p, err := build("./plugins/"+name, Options{Name: name})
		if err != nil {
			return "", err
		}
		dir = filepath.Dir(p)
	}
	return dir, nil
}

// hasAll reports whether dir holds every plugin of Names.
func hasAll(dir string) bool {
	for _, n := range Names {
		if _, err := os.Stat(filepath.Join(dir, n+".wasm")); err != nil {
			return false
		}
	}
	return true
}

// Options vary a build.
type Options struct {
	// Name is the output file name without ".wasm"; defaults to the package's base name.
	Name string
	// GOOS defaults to "wasip1"; "js" builds a module for the wrong host.
	GOOS string
	// NoCShared builds a WASI command instead of a reactor (no -buildmode=c-shared).
	NoCShared bool
}

var (
	mu     sync.Mutex
	built  = map[string]string{}
	keyDir string
)

// Build builds the Go package pkg (a path relative to the module root, e.g. "./plugins/gamma")
// to a .wasm file in the cache directory and returns its path; each distinct (pkg, options) is
// built once per source state, and concurrent test binaries are safe (atomic rename).
func Build(t testing.TB, pkg string, o Options) string {
	t.Helper()
	p, err := build(pkg, o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// build is Build without a test: the error says what failed.
func build(pkg string, o Options) (string, error) {
	if o.Name == "" {
		o.Name = filepath.Base(pkg)
	}
	if o.GOOS == "" {
		o.GOOS = "wasip1"
	}
	mu.Lock()
	defer mu.Unlock()
	id := fmt.Sprintf("%s|%+v", pkg, o)
	if p, ok := built[id]; ok {
		return p, nil
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	if keyDir == "" {
		key, err := sourceKey(root)
		if err != nil {
			return "", err
		}
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		keyDir = filepath.Join(base, "genload", "testplugins", key)
	}
	sub := "default"
	if o.GOOS != "wasip1" || o.NoCShared {
		sub = fmt.Sprintf("%s-cshared=%t", o.GOOS, !o.NoCShared)
	}
	dir := filepath.Join(keyDir, sub)
	out := filepath.Join(dir, o.Name+".wasm")
	if _, err := os.Stat(out); err == nil {
		built[id] = out
		return out, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, o.Name+".*.tmp")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	args := []string{"build", "-trimpath", "-ldflags=-s -w", "-o", tmp.Name()}
	if !o.NoCShared {
		args = append(args, "-buildmode=c-shared")
	}
	cmd := exec.Command(goTool(), append(args, pkg)...)
	cmd.Dir = root
	// The flags are make plugins' and GOFLAGS is cleared (make test sets it for the host's
	// test builds), so that the standard library make plugins compiled for wasm is found in
	// the build cache rather than compiled again.
	cmd.Env = append(os.Environ(), "GOOS="+o.GOOS, "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("testplugins: GOOS=%s GOARCH=wasm go %s %s: %v\n%s", o.GOOS, strings.Join(args, " "), pkg, err, stderr.String())
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return "", err
	}
	built[id] = out
	return out, nil
}

// Wat assembles testdata/NAME.wat of this package with wat2wasm (Debian package wabt, which
// .ci/run installs) into the cache directory and returns the .wasm's path; the output is keyed by
// the text's SHA-256, so an edit reassembles it. Without wat2wasm on the PATH the test fails
// under CI (CI set) and is skipped elsewhere, saying what to install.
func Wat(t testing.TB, name string) string {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(root, "host", "internal", "testplugins", "testdata", name+".wat")
	text, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	tool, err := exec.LookPath("wat2wasm")
	if err != nil {
		msg := fmt.Sprintf("testplugins: %s needs wat2wasm on the PATH (apt-get install wabt)", src)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	sum := sha256.Sum256(text)
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "genload", "testplugins", "wat")
	out := filepath.Join(dir, fmt.Sprintf("%s-%x.wasm", name, sum[:8]))
	if _, err := os.Stat(out); err == nil {
		return out
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := fmt.Sprintf("%s.%d.tmp", out, os.Getpid())
	defer os.Remove(tmp)
	if b, err := exec.Command(tool, src, "-o", tmp).CombinedOutput(); err != nil {
		t.Fatalf("testplugins: wat2wasm %s: %v\n%s", src, err, b)
	}
	if err := os.Rename(tmp, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// goTool returns the go command of the toolchain running the test: `go test` puts its own
// GOROOT/bin first on the PATH of the test binary, so "go" resolves to it.
func goTool() string { return "go" }

// ModuleRoot returns the directory of the genload go.mod, walking up from the working directory.
func ModuleRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/genload/genload")) {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("testplugins: no genload go.mod above the working directory")
		}
		d = parent
	}
}

// sourceKey hashes the Go version, go.mod, go.sum and every file under sdk/, plugins/ and
// host/internal/testplugins/ (names and contents).
func sourceKey(root string) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version())
	var files []string
	for _, f := range []string{"go.mod", "go.sum"} {
		files = append(files, filepath.Join(root, f))
	}
	for _, d := range []string{"sdk", "plugins", filepath.Join("host", "internal", "testplugins")} {
		err := filepath.WalkDir(filepath.Join(root, d), func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !e.IsDir() && (strings.HasSuffix(p, ".go") || strings.HasSuffix(p, ".s")) {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		rel, _ := filepath.Rel(root, f)
		fmt.Fprintf(h, "%s %d\n", rel, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// CacheDir returns the wazero compilation cache directory for tests:
// os.UserCacheDir()/genload/wazero-test (or a temp-dir equivalent), shared by test binaries so a
// plugin is compiled to native code once, not once per test (a cold compile of gamma takes 1.5–3 s).
func CacheDir(t testing.TB) string {
	t.Helper()
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "genload", "wazero-test")
}
