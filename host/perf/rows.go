package perf

import (
	"fmt"
	"io"
	"math"
)

// Benchmark names used by the rows (see each package's _test.go files).
const (
	chunkCost  = "BenchmarkChunkCost"
	stampErr   = "BenchmarkTimestampError"
	splitChunk = "BenchmarkPerfSplitChunkCost"
	splitStamp = "BenchmarkPerfSplitTimestampError"
	body64     = "BenchmarkBody64x64k"
	bodyAlloc  = "BenchmarkPerfBodyAllocs"
	promptCld  = "BenchmarkPerfDefaultMatrixCold"
	pluginsCld = "BenchmarkDefaultMatrixPluginsCold"
	promptWrm  = "BenchmarkBuildDefaultMatrixPrompts"
	engineB64  = "BenchmarkPerfEngineB64L64k"
	matrixSim  = "BenchmarkDefaultMatrixSimulated"
	untilCV    = "BenchmarkPerfUntilCV"

	// RSS figures (one client per process, see Jobs).
	rssIdle = "RSS/idle"
)

// chunkShapes are the (C, N) shapes of BenchmarkChunkCost.
var chunkShapes = []struct{ c, n int }{{1, 1000}, {64, 1000}, {512, 100}}

// Jobs returns the runs of one round, in order. benchtime scales the chunk-cost benchmark
// (e.g. "1s"); the others have fixed iteration counts.
func Jobs(chunkBenchtime string) []Job {
	rss := func(client string) Job {
		return Job{Pkg: "host/dispatch", Bench: "^BenchmarkPerfSplitRSS$/^" + client + "$", Benchtime: "2x",
			RSS: true, RSSName: "RSS/" + client, Split: true}
	}
	return []Job{
		{Pkg: "host/dispatch", Bench: "^" + splitChunk + "$", Benchtime: chunkBenchtime, Split: true},
		{Pkg: "host/dispatch", Bench: "^" + splitStamp + "$", Benchtime: "3x", Split: true},
		{Pkg: "host/dispatch", Bench: "^" + chunkCost + "$", Benchtime: chunkBenchtime},
		{Pkg: "host/dispatch", Bench: "^" + stampErr + "$", Benchtime: "1x"},
		{Pkg: "host/dispatch", Bench: "^(" + body64 + "|" + bodyAlloc + ")$", Benchtime: "10x"},
		{Pkg: "host/dispatch", Bench: "^$", Benchtime: "1x", RSS: true, RSSName: rssIdle, Empty: true, Split: true},
		rss("genload"), rss("nethttp"), rss("raw"),
		{Pkg: "host/prompt", Bench: "^(" + promptCld + "|" + promptWrm + ")$", Benchtime: "1x"},
		{Pkg: "host/plugin", Bench: "^(BenchmarkLoadWarm|BenchmarkGammaLengths64|BenchmarkUniformLengths64|BenchmarkRoute64|BenchmarkDefaultMatrixGammaCold)$", Benchtime: "0.5s"},
		{Pkg: "host/plugin", Bench: "^" + pluginsCld + "$", Benchtime: "20x"},
		{Pkg: "host/engine", Bench: "^" + engineB64 + "$", Benchtime: "2x"},
		{Pkg: "host/engine", Bench: "^" + matrixSim + "$", Benchtime: "1x", Once: true},
		// real time against a noisy engine, about 80 s: once
		{Pkg: "host/cmd/genload", Bench: "^" + untilCV + "$", Benchtime: "1x", Once: true},
	}
}

// Row is one line of the ratio table.
type Row struct {
	// Issue is the row number of PERF.md's table ("1" … "7").
	Issue string
	// What names the comparison.
	What string
	// Measured and Baseline are "median [min–max] unit" over the rounds.
	Measured, Baseline string
	// Ratio is the per-round ratio measured/baseline as median [min–max], or "—".
	Ratio string
	// Goal is the row's goal ("—" if it has none).
	Goal string
	// Verdict is "pass", "miss" or "info" (no goal), decided on medians.
	Verdict string
}

// fmtStat formats a Stat scaled by scale with the given precision and unit:
// "474 [452–520] ns"; a single round shows only its value.
func fmtStat(st Stat, scale float64, prec int, unit string) string {
	if st.N == 0 {
		return "n/a"
	}
	f := func(x float64) string { return fmt.Sprintf("%.*f", prec, x*scale) }
	u := ""
	if unit == "×" || unit == "%" {
		u = unit
	} else if unit != "" {
		u = " " + unit
	}
	if st.N == 1 || st.Min == st.Max {
		return f(st.Median) + u
	}
	return f(st.Median) + " [" + f(st.Min) + "–" + f(st.Max) + "]" + u
}

func verdict(ok bool, st Stat) string {
	switch {
	case st.N == 0:
		return "n/a"
	case ok:
		return "pass"
	default:
		return "miss"
	}
}

// Table reduces s to the rows of PERF.md's table, in its order: row 1 (client CPU per
// chunk, allocations, RSS) with row 6's engine CPU per chunk beside it, then rows 2 to 7.
func Table(s *Samples) []Row {
	t := &tableRows{s: s}
	t.chunkCost()
	t.engineChunkCPU()
	t.timestampError()
	t.requestBody()
	t.promptBuild()
	t.plugins()
	t.engineSteps()
	t.repeatsUntilCV()
	return t.rows
}

// tableRows gathers the rows of Table, one method per row of PERF.md.
type tableRows struct {
	s    *Samples
	rows []Row
}

// get returns the per-round values of benchmark name's unit (nil when never measured).
func (t *tableRows) get(name, unit string) []float64 { return t.s.Get(Key(name, unit)) }

// add appends r.
func (t *tableRows) add(r Row) { t.rows = append(t.rows, r) }

// last returns the row added last, for a verdict that adds to it.
func (t *tableRows) last() *Row { return &t.rows[len(t.rows)-1] }

// ratioRow adds a row comparing a and b per round: both scaled by scale and shown with prec
// decimals in unit, their per-round ratio with rprec decimals; ok, when not nil, decides pass
// on the median ratio (verdict "info" without it).
func (t *tableRows) ratioRow(issue, what string, a, b []float64, scale float64, prec int, unit string, rprec int, goal string, ok func(float64) bool) {
	r := Summarize(Ratios(a, b))
	v := "info"
	if ok != nil {
		v = verdict(ok(r.Median), r)
	}
	t.add(Row{issue, what, fmtStat(Summarize(a), scale, prec, unit), fmtStat(Summarize(b), scale, prec, unit),
		fmtStat(r, 1, rprec, "×"), goal, v})
}

// clientVariants are rows 1 and 2's two placements of the test server: in its own process
// (split) and in the benchmark's process.
var clientVariants = []struct{ chunk, stamp, label string }{
	{splitChunk, splitStamp, "server in own process"},
	{chunkCost, stampErr, "server in-process"},
}

// chunkCost adds row 1: CPU per chunk per shape against net/http and raw TCP, for both
// server placements; then allocations per chunk and peak RSS (server in own process).
func (t *tableRows) chunkCost() {
	for _, vr := range clientVariants {
		for _, sh := range chunkShapes {
			name := func(client string) string { return fmt.Sprintf("%s/%s/C=%d/N=%d", vr.chunk, client, sh.c, sh.n) }
			g, h, r := t.get(name("genload"), "cpu-ns/chunk"), t.get(name("nethttp"), "cpu-ns/chunk"), t.get(name("raw"), "cpu-ns/chunk")
			t.ratioRow("1", fmt.Sprintf("CPU per chunk, burst, C=%d N=%d, %s: genload vs net/http", sh.c, sh.n, vr.label), g, h, 1e-3, 2, "µs", 2, "≤ 0.35×", func(x float64) bool { return x <= 0.35 })
			t.ratioRow("1", fmt.Sprintf("CPU per chunk, burst, C=%d N=%d, %s: genload vs raw TCP", sh.c, sh.n, vr.label), g, r, 1e-3, 2, "µs", 2, "≤ 1.25×", func(x float64) bool { return x <= 1.25 })
		}
	}
	for _, sh := range chunkShapes {
		name := func(client string) string { return fmt.Sprintf("%s/%s/C=%d/N=%d", splitChunk, client, sh.c, sh.n) }
		g, h := t.get(name("genload"), "allocs/chunk"), t.get(name("nethttp"), "allocs/chunk")
		st := Summarize(g)
		t.add(Row{"1", fmt.Sprintf("allocations per chunk, C=%d N=%d: genload vs net/http", sh.c, sh.n),
			fmtStat(st, 1, 3, ""), fmtStat(Summarize(h), 1, 2, ""), fmtStat(Summarize(Ratios(g, h)), 1, 4, "×"), "≤ 0.1 per chunk",
			verdict(st.Median <= 0.1, st)})
	}
	idle := t.get(rssIdle, "maxrss-MB")
	sub := func(client string) []float64 { // MB above the idle process, per round
		x := t.get("RSS/"+client, "maxrss-MB")
		out := make([]float64, len(x))
		for i := range x {
			out[i] = x[i] - idle[min(i, len(idle)-1)]
			if len(idle) == 0 {
				out[i] = math.NaN()
			}
		}
		return out
	}
	t.ratioRow("1", "peak RSS above an idle test process, 512 streams (N=1000, 2 rounds of them): genload vs net/http", sub("genload"), sub("nethttp"), 1, 1, "MB", 2, "≤ 0.5×", func(x float64) bool { return x <= 0.5 })
	t.ratioRow("1", "peak RSS above an idle test process, 512 streams (N=1000): genload vs raw TCP", sub("genload"), sub("raw"), 1, 1, "MB", 2, "— (context)", nil)
}

// engineChunkCPU adds row 6's CPU per chunk, reported next to row 1: the engine (B=64,
// L=64k, TimeScale 0) against the genload client at C=64.
func (t *tableRows) engineChunkCPU() {
	t.ratioRow("6", "engine CPU per streamed chunk (B=64, L=64k, incl. a light reader) vs genload client CPU per chunk (C=64, server in own process)",
		t.get(engineB64, "cpu-ns/chunk"), t.get(fmt.Sprintf("%s/genload/C=64/N=1000", splitChunk), "cpu-ns/chunk"), 1e-3, 2, "µs", 1, "— (report)", nil)
}

// timestampError adds row 2, for both server placements: the p50 and p99 timestamp error
// of 512 streams on a 20 ms step against net/http and raw TCP (with an absolute goal in µs
// too), and the p50 of 64 streams paced at 1 ms against its absolute goal.
func (t *tableRows) timestampError() {
	for _, vr := range clientVariants {
		for _, q := range []string{"p50", "p99"} {
			sc := "step20ms/C=512/N=20"
			g := t.get(vr.stamp+"/genload/"+sc, q+"-µs")
			h := t.get(vr.stamp+"/nethttp/"+sc, q+"-µs")
			r := t.get(vr.stamp+"/raw/"+sc, q+"-µs")
			goalH, limH, abs := "≤ 0.35×", 0.35, 350.0
			if q == "p99" {
				goalH, limH, abs = "≤ 0.6×", 0.6, 5000
			}
			t.ratioRow("2", fmt.Sprintf("timestamp error %s, 512 streams on a 20 ms step, %s: genload vs net/http", q, vr.label), g, h, 1, 0, "µs", 2, goalH, func(x float64) bool { return x <= limH })
			t.ratioRow("2", fmt.Sprintf("timestamp error %s, 512 streams on a 20 ms step, %s: genload vs raw TCP", q, vr.label), g, r, 1, 0, "µs", 2,
				fmt.Sprintf("≤ 1.2× (and ≤ %.0f µs here)", abs), func(x float64) bool { return x <= 1.2 })
			st := Summarize(g)
			t.last().Verdict += fmt.Sprintf("; absolute %s", verdict(st.Median <= abs, st))
		}
		g := t.get(vr.stamp+"/genload/paced1ms/C=64/N=200", "p50-µs")
		r := t.get(vr.stamp+"/raw/paced1ms/C=64/N=200", "p50-µs")
		st := Summarize(g)
		t.ratioRow("2", fmt.Sprintf("timestamp error p50, 64 streams paced at 1 ms, %s: genload vs raw TCP", vr.label), g, r, 1, 0, "µs", 2, "≤ 100 µs", nil)
		t.last().Verdict = verdict(st.Median <= 100, st)
	}
}

// requestBody adds row 3: the 64 × 64,000-id request body against encoding/json, in ms per
// body and ns per id, and the allocations per request of the largest and smallest body.
func (t *tableRows) requestBody() {
	t.ratioRow("3", "request body 64 × 64,000 ids: genload (id table reused) vs encoding/json", t.get(body64+"/genload", "ns/op"), t.get(body64+"/encoding_json", "ns/op"), 1e-6, 1, "ms", 3, "≤ 0.15×", func(x float64) bool { return x <= 0.15 })
	g := t.get(body64+"/genload", "ns/id")
	st := Summarize(g)
	t.add(Row{"3", "request body: ns per token id (genload) vs encoding/json", fmtStat(st, 1, 2, "ns"),
		fmtStat(Summarize(t.get(body64+"/encoding_json", "ns/id")), 1, 2, "ns"), fmtStat(Summarize(Ratios(g, t.get(body64+"/encoding_json", "ns/id"))), 1, 3, "×"),
		"≤ 15 ns/id", verdict(st.Median <= 15, st)})
	big, small := t.get(bodyAlloc+"/B=64/L=64000", "allocs/op"), t.get(bodyAlloc+"/B=1/L=1000", "allocs/op")
	r := Summarize(Ratios(big, small))
	t.add(Row{"3", "allocations per request (real planning path): 64 × 64,000 vs 1 × 1,000 ids", fmtStat(Summarize(big), 1, 0, ""),
		fmtStat(Summarize(small), 1, 0, ""), fmtStat(r, 1, 2, "×"), "fixed (= 1×)", verdict(r.Median == 1, r)})
}

// promptBuild adds row 4: building the default matrix's prompts from cold against the goal
// (no same-run baseline exists for a cold build; the warm rebuild shows the part that is not
// tokenizer/corpus setup).
func (t *tableRows) promptBuild() {
	c := t.get(promptCld, "ns/op")
	st := Summarize(c)
	t.add(Row{"4", "prompts of the default matrix from cold (tokenizer build + corpus tokenization + 91 cells) vs a warm rebuild",
		fmtStat(st, 1e-9, 3, "s"), fmtStat(Summarize(t.get(promptWrm, "ns/op")), 1e-9, 3, "s"), fmtStat(Summarize(Ratios(c, t.get(promptWrm, "ns/op"))), 1, 1, "×"),
		"< 2 s", verdict(st.Median < 2e9, st)})
}

// plugins adds row 5: plugin load and calls, their cost on fresh instances against building
// the prompts from cold, and their share of one default-matrix run at the default scale:
// (load + 91 cold cells + 182 routes) / the run's simulated wall time, per round.
func (t *tableRows) plugins() {
	load, lens, route, cold := t.get("BenchmarkLoadWarm", "ns/op"), t.get("BenchmarkGammaLengths64", "ns/op"), t.get("BenchmarkRoute64", "ns/op"), t.get("BenchmarkDefaultMatrixGammaCold", "ns/op")
	wallS := Summarize(t.get(matrixSim, "wall-at-default-scale-s"))
	base := fmt.Sprintf("matrix run %.1f s", wallS.Median)
	t.add(Row{"5", "plugin load, warm compilation cache (gamma)", fmtStat(Summarize(load), 1e-6, 1, "ms"), "—", "—", "—", "info"})
	uni := t.get("BenchmarkUniformLengths64", "ns/op")
	t.ratioRow("5", "lengths(64), gamma vs uniform (the bare wasm call and copy of 64 lengths)", lens, uni, 1e-3, 1, "µs", 2, "—", nil)
	t.ratioRow("5", "route(64) over 8 workers, router-rr vs uniform lengths(64)", route, uni, 1e-3, 1, "µs", 2, "—", nil)
	// One run of the default matrix: load + 91 cold cells + route for its 182 requests
	// (warmup + measurement per cell; routed mode only), over its wall time at TimeScale 0.05.
	share := make([]float64, t.s.Rounds)
	for i := range share {
		share[i] = (at(load, i) + at(cold, i) + 182*at(route, i)) / 1e9 / wallS.Median
	}
	ss := Summarize(share)
	cost := make([]float64, t.s.Rounds)
	for i := range cost {
		cost[i] = share[i] * wallS.Median
	}
	// The plugin host's goal: every plugin call of the default matrix on fresh instances (the gamma
	// inversions included) against building that matrix's prompts from cold (row 4), per round.
	pc := t.get(promptCld, "ns/op")
	for _, m := range []struct{ mode, what string }{
		{"array", "array mode, the default: 91 lengths calls"},
		{"routed", "routed mode: 91 lengths + 182 route calls"},
	} {
		pl := t.get(pluginsCld+"/"+m.mode, "ns/op")
		r := Summarize(Ratios(pl, pc))
		t.add(Row{"5", "a default matrix's plugin calls on fresh instances (" + m.what + ") vs building its prompts from cold (row 4)",
			fmtStat(Summarize(pl), 1e-6, 2, "ms"), fmtStat(Summarize(pc), 1e-9, 3, "s"), fmtStat(r, 100, 2, "%"), "< 1 %", verdict(r.Median < 0.01, r)})
	}
	t.add(Row{"5", "plugins' share of a default-matrix run (load + 91 cells + 182 routes) vs its wall time",
		fmtStat(Summarize(cost), 1e3, 1, "ms"), base, fmtStat(ss, 100, 3, "%"), "≤ 1 %", verdict(ss.Median <= 0.01, ss)})
}

// engineSteps adds row 6: engine steps per second at B = 64, L = 64k against the rate the
// default scale needs, and the engine's CPU when it paces that cell in real time:
// need-steps/s × 64 chunks per step × CPU per chunk, as a share of one core.
func (t *tableRows) engineSteps() {
	t.ratioRow("6", "engine decode steps/s, B=64, 64k contexts, TimeScale 0 vs steps/s needed at the default TimeScale",
		t.get(engineB64, "steps/s"), t.get(engineB64, "need-steps/s"), 1, 0, "steps/s", 1, "≥ 1× (keeps pace)", func(x float64) bool { return x >= 1 })
	cpu, need := t.get(engineB64, "cpu-ns/chunk"), t.get(engineB64, "need-steps/s")
	share := make([]float64, len(cpu))
	for i := range cpu {
		share[i] = at(need, i) * 64 * cpu[i] / 1e9
	}
	ss := Summarize(share)
	t.add(Row{"6", "engine CPU while pacing B=64, L=64k at the default TimeScale (steps/s needed × 64 chunks × CPU per chunk)",
		fmtStat(ss, 100, 1, "% of a core"), "1 core", fmtStat(ss, 1, 3, "×"), "— (report)", "info"})
}

// repeatsUntilCV adds row 7: --until-cv against five fixed repeats, each protocol on its own noisy
// engine: GPU time (cells' wall; the engine's busy time beside it) and the consistency
// reached (median and max per-cell CV), then how far the cell means are from the noise-free
// value. The field noise with --until-cv 10 --cv-confidence 0.8 is the goal's comparison;
// the default confidence 0.9, --until-cv 5 and the uniform noise are reported beside it.
func (t *tableRows) repeatsUntilCV() {
	for _, v := range []struct {
		sub, what, p, flags string
		goals               bool
	}{
		{"field", "field-fitted noise, 48 cells", "untilcv10c80", "--until-cv 10 --cv-confidence 0.8", true},
		{"field", "field-fitted noise, 48 cells", "untilcv10", "--until-cv 10 --cv-confidence 0.9", false},
		{"field", "field-fitted noise, 48 cells", "untilcv5", "--until-cv 5 --cv-confidence 0.9", false},
		{"uniform3", "3 % per request on every cell, 16 cells", "untilcv10", "--until-cv 10 --cv-confidence 0.9", false},
	} {
		name, p := untilCV+"/"+v.sub, v.p
		what := func(figure string) string {
			return fmt.Sprintf("%s, %s: %s vs --repeat 5", figure, v.what, v.flags)
		}
		goal := func(g string, ok func(float64) bool) (string, func(float64) bool) {
			if !v.goals {
				return "— (report)", nil
			}
			return g, ok
		}
		g, ok := goal("≤ 0.5×", func(x float64) bool { return x <= 0.5 })
		t.ratioRow("7", what("GPU time (cells' wall, per GPU)"), t.get(name, p+"-gpu-s"), t.get(name, "fixed5-gpu-s"), 1, 2, "s", 2, g, ok)
		t.last().Measured += fmt.Sprintf(" (%s repeats per cell)", fmtStat(Summarize(t.get(name, p+"-repeats/cell")), 1, 2, ""))
		t.ratioRow("7", what("engine busy time (sum of simulated steps)"), t.get(name, p+"-busy-s"), t.get(name, "fixed5-busy-s"), 1, 2, "s", 2, "— (report)", nil)
		g, ok = goal("≤ 1× (no worse)", func(x float64) bool { return x <= 1 })
		t.ratioRow("7", what("median per-cell CV of per-forward latency"), t.get(name, p+"-median-cv-%"), t.get(name, "fixed5-median-cv-%"), 1, 2, "%", 2, g, ok)
		t.ratioRow("7", what("max per-cell CV of per-forward latency"), t.get(name, p+"-max-cv-%"), t.get(name, "fixed5-max-cv-%"), 1, 2, "%", 2, g, ok)
		t.ratioRow("7", what("median |cell mean / noise-free − 1|"), t.get(name, p+"-median-err-%"), t.get(name, "fixed5-median-err-%"), 1, 2, "%", 2, "— (report)", nil)
		t.ratioRow("7", what("max |cell mean / noise-free − 1|"), t.get(name, p+"-max-err-%"), t.get(name, "fixed5-max-err-%"), 1, 2, "%", 2, "— (report)", nil)
	}
}

func at(xs []float64, i int) float64 {
	if i < len(xs) {
		return xs[i]
	}
	return math.NaN()
}

// WriteTable writes rows as a Markdown table.
func WriteTable(w io.Writer, rows []Row) {
	fmt.Fprintln(w, "| row | comparison | genload | baseline | ratio | goal | verdict |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Issue, r.What, r.Measured, r.Baseline, r.Ratio, r.Goal, r.Verdict)
	}
}
