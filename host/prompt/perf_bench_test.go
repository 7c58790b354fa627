package prompt

// PERF.md row 4 — prompt building from cold, run by `make perf` (host/perf) with
// -benchtime 1x in a fresh process so that the embedded tokenizer is built inside the timing.

import "testing"

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
