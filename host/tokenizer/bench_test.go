package tokenizer

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkEncode200k measures Encode throughput (tokens/s, and MB/s of input) on the two
// 200k-UTF-16-unit texts of the corpus (long/english_200k, long/mixed_200k) for each
// tokenizer; "warm" reuses the word cache across iterations, "cold" clears it first (the
// texts repeat a paragraph, so words still hit the cache within one text), "nocache" merges
// every word.
func BenchmarkEncode200k(b *testing.B) {
	texts, err := corpusOnce()
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range goldenTokenizers {
		b.Run(name, func(b *testing.B) {
			tk := tokenizerFor(b, name)
			for _, tn := range []string{"english_200k", "mixed_200k"} {
				text := texts["long/"+tn]
				for _, mode := range []string{"warm", "cold", "nocache"} {
					b.Run(tn+"/"+mode, func(b *testing.B) {
						n := len(tk.Encode(text))
						tk.model.noCache = mode == "nocache"
						defer func() { tk.model.noCache = false }()
						b.SetBytes(int64(len(text)))
						b.ResetTimer()
						for i := 0; i < b.N; i++ {
							if mode == "cold" {
								b.StopTimer()
								tk.model.resetCache()
								b.StartTimer()
							}
							tk.Encode(text)
						}
						b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
					})
				}
			}
		})
	}
}

// BenchmarkLoadDefault measures what the first Default call costs: building the embedded
// Qwen3 tokenizer from its JSON (gunzip, JSON, vocabulary and merge tables; "json", a
// machine's first run) and reading it from the prepared-tables cache ("prepared", every later
// run).
func BenchmarkLoadDefault(b *testing.B) {
	b.Run("json", func(b *testing.B) {
		withPreparedDir(b, "", func() {
			for i := 0; i < b.N; i++ {
				if _, err := loadEmbedded(); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("prepared", func(b *testing.B) {
		withPreparedDir(b, b.TempDir(), func() {
			if _, err := loadEmbedded(); err != nil { // writes the cache
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tk, err := loadEmbedded()
				if err != nil || !tk.prepared {
					b.Fatalf("prepared %v, %v", tk != nil && tk.prepared, err)
				}
			}
		})
	})
}

// BenchmarkLoad measures Load of each cached tokenizer directory (the variants of
// oracle/variants.json are built in memory and have none).
func BenchmarkLoad(b *testing.B) {
	for _, name := range goldenTokenizers {
		if name == "qwen3" {
			continue
		}
		dir := filepath.Join(cacheDir(), name)
		if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
			continue
		}
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := Load(dir); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParseSpec measures parseSpec alone (the JSON reading of tokenizer.json: vocab,
// merges and the component objects) on the embedded Qwen3 file and each cached one; MB/s is
// of tokenizer.json bytes.
func BenchmarkParseSpec(b *testing.B) {
	qwen, err := readGzip("models/qwen3/tokenizer.json.gz")
	if err != nil {
		b.Fatal(err)
	}
	files := map[string][]byte{"qwen3": qwen}
	for _, name := range []string{"llama3", "gemma3", "llama2"} {
		if data, err := os.ReadFile(filepath.Join(cacheDir(), name, "tokenizer.json")); err == nil {
			files[name] = data
		}
	}
	for _, name := range []string{"qwen3", "llama3", "gemma3", "llama2"} {
		data, ok := files[name]
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := parseSpec(data, name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
