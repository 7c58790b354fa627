package plugin

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/genload/genload/host/internal/testplugins"
)

// The compiled plugins' cache is $XDG_CACHE_HOME/genload/wazero, else $HOME/.cache/…
// (README); a home where it cannot be made (a container's read-only or missing home) leaves
// the cache in memory, and plugins load the same.
func TestCacheDirAndItsFallback(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the XDG cache directory is Linux's; macOS and Windows have their own")
	}
	home := t.TempDir()
	file := filepath.Join(home, "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := testplugins.Dir(t)
	for _, tc := range []struct {
		home, xdg, want string
	}{
		{home, "", filepath.Join(home, ".cache", "genload", "wazero")},
		{home, filepath.Join(home, "xdg"), filepath.Join(home, "xdg", "genload", "wazero")},
		{filepath.Join(file, "home"), "", ""}, // under a file: no directory can be made, even by root
	} {
		t.Setenv("HOME", tc.home)
		t.Setenv("XDG_CACHE_HOME", tc.xdg)
		h, err := NewHost(context.Background(), Options{Dir: dir, Interpreter: true})
		if err != nil {
			t.Fatalf("HOME=%s: %v", tc.home, err)
		}
		if h.opts.CacheDir != tc.want {
			t.Errorf("HOME=%s XDG_CACHE_HOME=%q: cache %q, want %q", tc.home, tc.xdg, h.opts.CacheDir, tc.want)
		}
		if tc.want != "" {
			if fi, err := os.Stat(tc.want); err != nil || !fi.IsDir() {
				t.Errorf("cache directory %s: %v", tc.want, err)
			}
		}
		p, err := h.LoadLengths(context.Background(), "uniform", nil)
		if err != nil {
			t.Errorf("HOME=%s: load: %v", tc.home, err)
		} else if ls, err := p.Lengths(context.Background(), 4, 100, 1, 1000); err != nil || len(ls) != 4 {
			t.Errorf("HOME=%s: lengths %v, %v", tc.home, ls, err)
		}
		_ = h.Close(context.Background())
	}
}
