package prompt

// PERF.md row 4 — prompt building from cold, run by `make perf` (host/perf) with
// -benchtime 1x in a fresh process so that the embedded tokenizer is built inside the timing.

import (
	"testing"

	"github.com/genload/genload/host/tokenizer"
)

// BenchmarkPerfDefaultMatrixCold times everything a run pays to have the prompts of the default
// matrix (L ∈ {1000 … 64000} × B ∈ {1 … 8, 12, 16, 32, 48, 64}, 91 cells, 208 prompts per L,
// 26.4 M tokens in all): building the embedded Qwen3 tokenizer (first call only, so run it
// with -benchtime 1x in a fresh process), loading the corpus, rendering the chat template and
// tokenizing every corpus row (New), then Build for every cell. Reports tokens built per second.
func BenchmarkPerfDefaultMatrixCold(b *testing.B) {
	lens := []int{1000, 2000, 4000, 8000, 16000, 32000, 64000}
	batches := []int{1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 32, 48, 64}
	var tokens int
	for range b.N {
		bl, _, _ := qwen3Builder(b)
		row := 0
		for _, l := range lens {
			for _, bs := range batches {
				ls := make([]int, bs)
				for i := range ls {
					ls[i] = l
				}
				ps, err := bl.Build(row, ls)
				if err != nil {
					b.Fatal(err)
				}
				for _, p := range ps {
					tokens += len(p)
				}
				row = (row + bs) % bl.Rows()
			}
		}
	}
	b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkPlanSources times planning a cell's sources from a fresh Builder (embedded Qwen3,
// its word cache warm after the first iteration): the 256 corpus rows ("rows"), and 1,024
// sources, the rows and their first 768 rotations ("rotations", what a cell of B = 1,024 on
// the embedded corpus plans). Reports the time and allocation per source.
func BenchmarkPlanSources(b *testing.B) {
	_, tok, texts := qwen3Builder(b)
	tmpl := func(c string) (string, error) {
		return tok.ApplyChatTemplate([]tokenizer.Message{{Role: "user", Content: c}}, true)
	}
	for _, c := range []struct {
		name string
		n    int
	}{{"rows", 256}, {"rotations", 1024}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				bl, err := New(tok, tmpl, texts, Options{Suffix: "Summarize and analyse the text above.", Separator: "\n\n"})
				if err != nil {
					b.Fatal(err)
				}
				if c.n > bl.Rows() {
					bl.startList() // the rotations' start points are computed once per Builder
				}
				bl.prepare(0, c.n)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*c.n), "µs/source")
		})
	}
}
