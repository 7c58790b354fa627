package tokenizer

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// TestMain points the prepared-tables cache at a directory of its own, empty at the start:
// the first load of each tokenizer in this package's tests builds from the JSON and writes
// the cache, later loads read it.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "genload-tokenizer-tables-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	preparedDir = func() string { return dir }
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// withPreparedDir runs f with the cache at dir ("" for none).
func withPreparedDir(t testing.TB, dir string, f func()) {
	t.Helper()
	old := preparedDir
	preparedDir = func() string { return dir }
	defer func() { preparedDir = old }()
	f()
}

// loadNamed loads a golden tokenizer by name ("qwen3": the embedded one) without the
// package's memo, or skips when the oracle cache lacks it.
func loadNamed(t *testing.T, name string) *Tokenizer {
	t.Helper()
	if name == "qwen3" {
		tk, err := loadEmbedded()
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	dir := filepath.Join(cacheDir(), name)
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		t.Skipf("tokenizer %s not in the cache %s: run host/tokenizer/oracle/fetch.sh", name, cacheDir())
	}
	tk, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// tables returns what the prepared cache stands for: the model's tables and options and
// the tokenizer's id tables.
func tables(tk *Tokenizer) []any {
	m := tk.model
	return []any{m.toks, m.vocabN, m.aliasID, m.vocab, m.merges, m.unk, m.fuseUnk, m.byteFallback, m.ignoreMerges,
		m.contPrefix, m.eowSuffix, m.byteIDs, tk.extra, tk.override, tk.special, tk.vocabSize, tk.post, tk.maxLen, tk.maxLenSrc}
}

// TestPreparedTables loads every golden tokenizer three ways — from the JSON with no cache,
// from the JSON writing the cache, from the cache — and checks that the tables are the same
// and that the tokenizer read from the cache encodes and decodes every golden text as the one
// built from the JSON (which TestGoldenIDs holds to the Rust library).
func TestPreparedTables(t *testing.T) {
	texts, err := corpusOnce()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"qwen3", "llama3", "llama3_1", "deepseek_v3", "gptoss", "gemma3", "llama2"} {
		t.Run(name, func(t *testing.T) {
			var cold, first, warm *Tokenizer
			withPreparedDir(t, "", func() { cold = loadNamed(t, name) })
			withPreparedDir(t, t.TempDir(), func() {
				first = loadNamed(t, name)
				warm = loadNamed(t, name)
			})
			if cold.prepared || first.prepared || !warm.prepared {
				t.Fatalf("prepared: no cache %v, first load %v, second load %v; want false, false, true", cold.prepared, first.prepared, warm.prepared)
			}
			for i, want := range tables(cold) {
				if got := tables(warm)[i]; !reflect.DeepEqual(got, want) {
					t.Errorf("table %d of the tokenizer read from the cache differs from the one built from the JSON (%T)", i, want)
				}
			}
			_, rows := readGolden(t, name)
			n := 0
			for _, g := range rows {
				text, ok := texts[g.Name]
				if !ok || g.Windows != nil {
					continue
				}
				want, got := cold.EncodeSpecial(text, true), warm.EncodeSpecial(text, true)
				if !slices.Equal(got, want) {
					t.Fatalf("%s: the tokenizer read from the cache encodes %.60q as %v, from the JSON %v", g.Name, text, got[:min(len(got), 20)], want[:min(len(want), 20)])
				}
				if d, w := warm.Decode(got, false), cold.Decode(want, false); d != w {
					t.Fatalf("%s: Decode differs: %.60q, want %.60q", g.Name, d, w)
				}
				n++
			}
			if n < 4300 {
				t.Errorf("compared %d golden texts, want >= 4300", n)
			}
		})
	}
}

// TestPreparedDamaged checks that a cache file that is truncated, altered or of another
// layout is not used: the tokenizer is built from the JSON, as the goldens check, and the
// file is rewritten.
func TestPreparedDamaged(t *testing.T) {
	dir := t.TempDir()
	var want []int32
	const text = "Hello, world! Ünïcödé 123 and <|im_end|> tokens."
	withPreparedDir(t, dir, func() {
		tk, err := loadEmbedded()
		if err != nil {
			t.Fatal(err)
		}
		want = tk.Encode(text)
	})
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != 1 {
		t.Fatalf("cache files %v, want one", files)
	}
	good, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		alter func([]byte) []byte
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }},
		{"one byte changed", func(b []byte) []byte { b = slices.Clone(b); b[len(b)/3] ^= 0x40; return b }},
		{"another layout", func(b []byte) []byte { b = slices.Clone(b); b[len(preparedMagic)-2] = '0'; return b }},
		{"checksum changed", func(b []byte) []byte { b = slices.Clone(b); b[len(b)-1] ^= 1; return b }},
		{"empty", func([]byte) []byte { return nil }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(files[0], c.alter(good), 0o644); err != nil {
				t.Fatal(err)
			}
			withPreparedDir(t, dir, func() {
				tk, err := loadEmbedded()
				if err != nil {
					t.Fatal(err)
				}
				if tk.prepared {
					t.Errorf("a %s cache file was used", c.name)
				}
				if got := tk.Encode(text); !slices.Equal(got, want) {
					t.Errorf("Encode = %v, want %v", got, want)
				}
			})
			if b, err := os.ReadFile(files[0]); err != nil || !slices.Equal(b, good) {
				t.Errorf("the cache file was not rewritten as it was (%d bytes, want %d; %v)", len(b), len(good), err)
			}
		})
	}
}

// The embedded tokenizer's cache key is its file's SHA-256, as for any other tokenizer.json: a
// stale embeddedSHA256 would read another file's prepared tables.
func TestEmbeddedSHA256(t *testing.T) {
	f, err := embedded.Open("models/qwen3/tokenizer.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	key, err := fileKey(f)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(key[:]); got != embeddedSHA256 {
		t.Errorf("embeddedSHA256 = %s, the file's SHA-256 is %s (update it)", embeddedSHA256, got)
	}
}
