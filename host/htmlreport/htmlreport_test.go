package htmlreport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"image"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/chart"
	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/internal/resultstest"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/repeat"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/scrape"
)

var (
	testLs = []int{1000, 4000}
	testBs = []int{1, 8, 32}
	// the default matrix of bench.toml
	defaultLs = []int{1000, 2000, 4000, 8000, 16000, 32000, 64000}
	defaultBs = []int{1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 32, 48, 64}
)

// runOf is a run of the cells ls × bs on the built-in engine at time scale 0.05: fwd =
// (0.2 + 0.01·B·L/1000) ms × slow, lengths 1…B times L/B·2/(B+1) (mean L), the engine's truth
// beside it, and one warning of one kind on every B = 32 cell.
func runOf(id string, slow float64, ls, bs []int) *results.Run {
	r := &results.Run{Header: results.Header{RunID: id, Model: "m", Target: "http://127.0.0.1:8000", TargetKind: "builtin",
		Started: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Genload: "test",
		Context: 131072, ContextSource: "server /v1/models max_model_len", Config: config.Default(),
		Engine:  map[string]any{"profile": "moe-30b-a3b", "time_scale": 0.05},
		Plugins: map[string]results.PluginInfo{"lengths": {Name: "gamma", Version: "1.0.0"}}},
		Footer: &results.Footer{Status: results.StatusOK, OK: len(ls) * len(bs), Elapsed: results.Millis(90 * time.Second)}}
	for _, l := range ls {
		for _, b := range bs {
			fwd := time.Duration(slow * (0.2 + 0.01*float64(b*l)/1000) * float64(time.Millisecond))
			each := make([]int, b)
			sum := 0
			for i := range each {
				each[i] = (i + 1) * 2 * l / (b + 1)
				sum += each[i]
			}
			mc := matrix.Cell{Index: len(r.Cells), SeqLen: l, Batch: b}
			r.Header.Cells = append(r.Header.Cells, mc)
			c := results.Cell{Cell: mc, Status: results.StatusOK, Elapsed: results.Millis(time.Second),
				WarmupElapsed: results.Millis(600 * time.Millisecond), MeasuredElapsed: results.Millis(300 * time.Millisecond),
				Lengths: results.Lengths{Target: l, Min: each[0], Max: each[b-1], Mean: float64(sum) / float64(b), Each: each},
				Figures: &measure.Figures{Sequences: b, Counted: b, CompletionTokens: 100 * b,
					PerForward: measure.Summary{N: b, Mean: fwd, P50: fwd, P90: fwd},
					TTFT:       measure.Summary{N: b, Mean: time.Millisecond, P50: time.Millisecond, P90: time.Millisecond},
					Window:     measure.Window{Valid: true, Steps: 98, PerStep: fwd}},
				Server: &scrape.CellMetrics{}}
			c.Server.Steps.HasTruthDecode, c.Server.Steps.TruthDecodeStepTime = true, fwd*99/100
			if b == 32 {
				c.Warnings = []string{fmt.Sprintf("realised mean length %d is -1.0 %% off L = %d: 1 of 32 lengths clamped", l-10, l)}
			}
			r.Cells = append(r.Cells, c)
		}
	}
	return r
}

// testRun is runOf over the 2 × 3 cells testLs × testBs.
func testRun(id string, slow float64) *results.Run { return runOf(id, slow, testLs, testBs) }

func render(t *testing.T, runs []*results.Run, opt Options) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, runs, opt); err != nil {
		t.Fatal(err)
	}
	return html.UnescapeString(b.String()) // the text as a reader sees it ("+10.0", not "&#43;10.0")
}

// section is the text of the page's element with id (up to its </section>).
func section(html, id string) string {
	i := strings.Index(html, `id="`+id+`"`)
	if i < 0 {
		return ""
	}
	j := strings.Index(html[i:], "</section>")
	return html[i : i+j]
}

// One run: the summary comes first and says what ran, where, when and how long, the cells
// by status (not "ok: 6 ok, 0 partial"), the GPU time and the headline per L; then the run's
// latency figure — a gonum/plot SVG with a panel per L — its tables, its warnings grouped and
// one histogram per cell in a grid with a column per B. Nothing reaches out of the file.
func TestReportOfOneRun(t *testing.T) {
	html := render(t, []*results.Run{testRun("a", 1)}, Options{})
	sum := section(html, "summary")
	for _, want := range []string{
		"<dt>what ran</dt><dd>6 cells: 2 sequence lengths L 1000–4000 × 3 batch sizes B 1–32; model m, max_tokens 100, mode array, lengths gamma 1.0.0 (k = 0.9)</dd>",
		"the built-in engine, profile moe-30b-a3b, time scale 0.05",
		"<dt>when</dt><dd>started 2026-12-01 10:00:00 UTC, took 1m30s, ended ok</dd>",
		"<dt>cells</dt><dd>6 of 6 cells ok; 2 with warnings</dd>",
		// 90 s per GPU = 0.025 GPU-h; cells 6 s, warmups 3.6 s = 60 %, measured 1.8 s = 30 %; ×20 simulated
		"<dt>GPU time</dt><dd>0.0250 GPU-h per GPU (no gpu_count label): run wall time 1m30s, cells 6s; warmups 60.0 %, measured requests 30.0 % of the cells' time; at time scale 0.05 the simulated GPU time is 0.5000 GPU-h</dd>",
		// L=4000: 0.24 ms at B=1, 1.48 ms at B=32 (×6.17)
		"<tr><td>4000</td><td>0.240 (B=1)</td><td>1.480 (B=32)</td><td>×6.17</td><td>1.480</td><td>1.0</td><td>1.0</td></tr>",
	} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
	if strings.Contains(html, "ok: 6 ok") || strings.Contains(html, "0 partial") || strings.Contains(html, `id="ab"`) || strings.Contains(html, `id="consistency"`) {
		t.Errorf("the old status line, or a comparison section for one run without repeats")
	}
	if !(strings.Index(html, `id="summary"`) < strings.Index(html, `id="run-0"`)) {
		t.Error("the summary is not first")
	}
	run := section(html, "run-0")
	lat := regexp.MustCompile(`(?s)<svg id="latency-0" class="plot".*?</svg>`).FindString(run)
	for _, want := range []string{">L = 1000 tokens<", ">L = 4000 tokens<", ">fwd mean (per sequence, per decode forward pass)<", ">full-batch fwd (all sequences decoding together)<", ">engine fwd (the built-in engine's own decode step)<", `style="width:100%;height:auto"`} {
		if !strings.Contains(lat, want) {
			t.Errorf("the latency figure lacks %q", want)
		}
	}
	if !strings.Contains(run, `⚠ Realised mean prompt lengths are off their target L — 2 cells: L=1000 B=32; L=4000 B=32`) {
		t.Error("the warnings are not grouped")
	}
	if n := strings.Count(run, `<figure data-cell=`); n != 6 || !strings.Contains(run, "repeat(3, minmax(0, 1fr))") {
		t.Errorf("%d histograms, want 6 in a grid of 3 columns", n)
	}
	// 2 panels side by side: a legend row and one row of panels (30 + 250 pt)
	if !strings.Contains(lat, `viewBox="0 0 1000 280"`) {
		t.Errorf("the latency figure is not one row of 2 panels: %.300s", lat)
	}
	// 7 panels: 3 per row, 3 rows (30 + 3·250 pt)
	seven := render(t, []*results.Run{runOf("d", 1, defaultLs, []int{1, 8})}, Options{})
	if !strings.Contains(seven, `viewBox="0 0 1000 780"`) || strings.Count(seven, " tokens</text>") != 7 {
		t.Error("the latency figure of 7 sequence lengths is not 3 rows of panels, one per L")
	}
	// a run whose first L lacks a batch size: the grid's columns still ascend, an empty slot
	// where an L has no cell
	gap := testRun("g", 1)
	gap.Cells = append(gap.Cells[:1:1], gap.Cells[2:]...) // drop L=1000,B=8
	grid := section(render(t, []*results.Run{gap}, Options{}), "run-0")
	if !strings.Contains(grid, `<div class="colhead">B=1</div><div class="colhead">B=8</div><div class="colhead">B=32</div>`) ||
		!strings.Contains(grid, `<div class="lab">L=1000</div><figure data-cell="L=1000,B=1">`) || strings.Count(grid, "<figure data-cell=") != 5 {
		t.Errorf("the grid's columns are not B=1, 8, 32 with a slot for the missing cell:\n%s", grid)
	}
	for _, bad := range []*regexp.Regexp{regexp.MustCompile(`(?i)\s(src|href)\s*=\s*"?(https?:)?//`), regexp.MustCompile(`(?i)<link\b`), regexp.MustCompile(`(?i)url\(`), regexp.MustCompile(`(?i)@import`), regexp.MustCompile(`<\?xml`)} {
		if m := bad.FindString(html); m != "" {
			t.Errorf("report reaches out of the file, or embeds a document: %q", m)
		}
	}
}

// The A/B headline's median over an even number of cells is the mean of the two middle
// changes: B at +0, +10, … +50 % on the 6 cells gives +25.0 %, not the lower middle +20 %.
func TestABHeadlineMedian(t *testing.T) {
	a, b := testRun("a", 1), testRun("b", 1)
	for i := range b.Cells {
		f := *b.Cells[i].Figures
		f.PerForward.Mean = time.Duration(float64(f.PerForward.Mean) * (1 + 0.1*float64(i)))
		b.Cells[i].Figures = &f
	}
	if ab := section(render(t, []*results.Run{a, b}, Options{}), "ab"); !strings.Contains(ab, "median +25.0 % (range 0.0 … +50.0 %) over 6 cells") {
		t.Errorf("A/B headline:\n%.600s", ab)
	}
}

// Two runs: the A/B comes first (right after the summary), per cell with B/A − 1; two runs
// of one configuration add their consistency after the runs, two of different ones do not
// and the summary says why.
func TestReportOfTwoRuns(t *testing.T) {
	a, b := testRun("a", 1), testRun("b", 1.1)
	html := render(t, []*results.Run{a, b}, Options{})
	if !(strings.Index(html, `id="summary"`) < strings.Index(html, `id="ab"`) && strings.Index(html, `id="ab"`) < strings.Index(html, `id="run-0"`) &&
		strings.Index(html, `id="run-1"`) < strings.Index(html, `id="consistency"`)) {
		t.Error("the order is not summary, A/B, runs, consistency")
	}
	ab := section(html, "ab")
	for _, want := range []string{"A/B: a (A) → b (B)", "median +10.0 % (range +10.0 … +10.0 %) over 6 cells; no cell has an interval",
		"no intervals: each run measured each cell once", "<tr><td>4000</td><td>32</td><td>1.480</td><td>1.628</td><td>+10.0</td><td>–</td><td>–</td>",
		`<svg id="ab-change" class="plot"`} {
		if !strings.Contains(ab, want) {
			t.Errorf("A/B lacks %q:\n%s", want, ab)
		}
	}
	if s := section(html, "summary"); !strings.Contains(s, "<h3>A: run a</h3>") || !strings.Contains(s, "<h3>B: run b</h3>") || !strings.Contains(s, "<dt>change</dt><dd>B against A") ||
		!strings.Contains(s, "<dt>compared</dt><dd>comparable: ") {
		t.Errorf("the summary does not name A and B, the change and whether they are comparable:\n%s", s)
	}
	// The second run of one bench.toml finds its prompts in the server's prefix cache: a note
	// on how it went, not another configuration; its consistency section stays.
	for i := range b.Cells {
		b.Cells[i].CacheBefore = &results.PromptCache{Prompt: 1000, Cached: 992, Warmup: true}
	}
	html = render(t, []*results.Run{a, b}, Options{})
	if !strings.Contains(html, `id="consistency"`) || strings.Contains(html, "no consistency section") {
		t.Errorf("two runs of one configuration, the second with its prompts cached, got no consistency section:\n%s", section(html, "summary"))
	}
	b.Header.Engine["profile"] = "dense-8b"
	html = render(t, []*results.Run{a, b}, Options{})
	if strings.Contains(html, `id="consistency"`) || !strings.Contains(section(html, "summary"),
		"no consistency section: the runs are of different configurations (the runs differ in engine: moe-30b-a3b at time scale 0.05 / dense-8b at time scale 0.05)") {
		t.Errorf("runs of two engines got a consistency section, or no note why not")
	}
}

// withRepeats is testRun measured n times, with until_cv in its header: repeat k at
// (1 + 0.02·(k − (n+1)/2)) of fwd × slow, so every cell's repeats have mean fwd × slow.
func withRepeats(id string, slow float64, n int) *results.Run {
	r := testRun(id, slow)
	r.Header.UntilCV = &results.StoppingRule{TargetCV: 0.05, MinRepeats: 2, MaxRepeats: 8, Confidence: 0.9}
	var cells []results.Cell
	for k := 1; k <= n; k++ {
		f := 1 + 0.02*(float64(k)-float64(n+1)/2)
		rk := testRun(id, slow*f)
		for i := range rk.Cells {
			rk.Cells[i].Repeat = k
		}
		cells = append(cells, rk.Cells...)
	}
	r.Cells = cells
	return r
}

// Two runs with repeats: each cell's change comes with its interval from the repeats
// (RatioInterval) and a verdict; the summary counts the verdicts; the latency figure plots
// the means with the repeats' range; the summary's GPU time counts every repeat.
func TestReportABOfRepeats(t *testing.T) {
	a, b := withRepeats("a", 1, 4), withRepeats("b", 1.1, 4)
	html := render(t, []*results.Run{a, b}, Options{})
	ab := section(html, "ab")
	xa, xb := []float64{0.97, 0.99, 1.01, 1.03}, []float64{1.1 * 0.97, 1.1 * 0.99, 1.1 * 1.01, 1.1 * 1.03}
	d, lo, hi, ok := RatioInterval(xa, xb, ABConfidence)
	if !ok {
		t.Fatal("no interval")
	}
	for _, want := range []string{
		fmt.Sprintf("<td>+10.0</td><td>[%s, %s]</td><td>B slower</td>", signed(lo), signed(hi)),
		"at 95 %: 6 B slower, 0 B faster, 0 no difference beyond ±5 %, 0 cannot tell", "<td>4/4</td>",
		"95 % intervals from each side's repeats",
	} {
		if !strings.Contains(ab, want) {
			t.Errorf("A/B lacks %q (d %.4f):\n%s", want, d, ab)
		}
	}
	run := section(html, "run-0")
	if !strings.Contains(run, "each point is the cell's mean over its measured repeats; the bars span their smallest to largest") {
		t.Error("the latency figure does not say it pools the repeats")
	}
	if s := section(html, "summary"); !strings.Contains(s, "over 24 records (every repeat)") || !strings.Contains(s, "each cell repeated (2 to 8 times) until the 90 % upper confidence bound of its CV was ≤ 5 %: 24 records") {
		t.Errorf("the summary does not count the repeats:\n%s", s)
	}
	// the same cells' repeats: one histogram per cell
	if n := strings.Count(run, `<figure data-cell=`); n != 6 {
		t.Errorf("%d histograms, want 6", n)
	}
	// a side of a cell that its rule stopped after 2 repeats: the verdict marked, the note says why
	two := withRepeats("two", 1.1, 2)
	if ab := section(render(t, []*results.Run{a, two}, Options{}), "ab"); strings.Count(ab, "<td>B slower †</td>") != 6 ||
		!strings.Contains(ab, "† a side of the cell stopped after 2 repeats under its --until-cv rule") || !strings.Contains(ab, "at 95 %: 6 B slower") {
		t.Errorf("verdicts from 2 repeats are not marked:\n%s", ab)
	}
	// against itself: no difference beyond ±5 % in any cell; against a run 10 % faster: faster
	for _, c := range []struct {
		b    *results.Run
		want string
	}{{withRepeats("a2", 1, 4), "at 95 %: 0 B slower, 0 B faster, 6 no difference beyond ±5 %, 0 cannot tell"},
		{withRepeats("c", 0.9, 4), "at 95 %: 0 B slower, 6 B faster, 0 no difference beyond ±5 %, 0 cannot tell"}} {
		if ab := section(render(t, []*results.Run{a, c.b}, Options{}), "ab"); !strings.Contains(ab, c.want) {
			t.Errorf("A/B of a and %s lacks %q:\n%s", c.b.Header.RunID, c.want, ab)
		}
	}
}

// The interval of the ratio of two means holds the true ratio in about 95 % of 4000 draws
// of n normal values per side (CV 5 %): n = 4 per side at ratios 1.1 and 2 (the t quantile's
// few degrees of freedom matter: a normal quantile covers 90 %), 3 against 8 with the larger
// side four times noisier, 4 against 8 with the smaller one four times noisier (Welch's
// degrees of freedom matter: the pooled ones cover 90 %). With no spread it is the point
// itself; with fewer than two values or a mean ≤ 0 there is none.
func TestRatioIntervalCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	draw := func(n int, mean, cv float64) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = mean * (1 + cv*rng.NormFloat64())
		}
		return xs
	}
	for _, c := range []struct {
		na, nb   int
		ratio    float64
		cvA, cvB float64
	}{{4, 4, 1.1, 0.05, 0.05}, {4, 4, 2, 0.05, 0.05}, {3, 8, 1.5, 0.02, 0.08}, {4, 8, 1.5, 0.08, 0.02}} {
		hit := 0
		const trials = 4000
		for range trials {
			_, lo, hi, ok := RatioInterval(draw(c.na, 2, c.cvA), draw(c.nb, 2*c.ratio, c.cvB), 0.95)
			if ok && lo <= c.ratio-1 && c.ratio-1 <= hi {
				hit++
			}
		}
		if cov := float64(hit) / trials; cov < 0.925 || cov > 0.97 {
			t.Errorf("n %d/%d, ratio %g, CV %g/%g: coverage %.3f, want 0.925 to 0.97 (95 %% nominal)", c.na, c.nb, c.ratio, c.cvA, c.cvB, cov)
		}
	}
	if d, lo, hi, ok := RatioInterval([]float64{2, 2}, []float64{3, 3}, 0.95); !ok || d != 0.5 || lo != 0.5 || hi != 0.5 {
		t.Errorf("no spread: %v %v %v %v", d, lo, hi, ok)
	}
	if _, _, _, ok := RatioInterval([]float64{2}, []float64{3, 3}, 0.95); ok {
		t.Error("one value on a side gave an interval")
	}
	if _, _, _, ok := RatioInterval([]float64{0, 0}, []float64{3, 3}, 0.95); ok {
		t.Error("a zero mean gave an interval")
	}
}

// A genload ab --json file gives the A/B section its paired intervals, alone or beside runs;
// a file that is not one is refused, naming it.
func TestReportOfABFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ab.json")
	doc := `{"a": "base.toml", "b": "new.toml", "pairs": 5, "confidence": 0.95, "engines": [null, null], "status": "ok", "comparable": "comparable: same served model \"m\"", "cells": [
	  {"cell": {"index": 0, "seq_len": 1000, "batch": 8}, "pair_list": [], "n": 5, "mean": 0.05, "lo": 0.02, "hi": 0.08, "fwd_a_ns": 2000000, "fwd_b_ns": 2100000, "verdict": "B slower"},
	  {"cell": {"index": 1, "seq_len": 1000, "batch": 32}, "pair_list": [], "n": 1, "verdict": "too few pairs (1 of 5 with a figure on both sides): pair 2, side B: status error"}]}`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := ReadAB(path)
	if err != nil {
		t.Fatal(err)
	}
	html := render(t, nil, Options{AB: f})
	if s := section(html, "summary"); !strings.Contains(s, `<dt>compared</dt><dd>comparable: same served model "m"</dd>`) {
		t.Errorf("the summary lacks genload ab's comparable line:\n%s", s)
	}
	ab := section(html, "ab")
	for _, want := range []string{"A/B: base.toml (A) → new.toml (B), paired on identical prompts",
		"<tr><td>1000</td><td>8</td><td>5</td><td>2.000</td><td>2.100</td><td>+5.0</td><td>[+2.0, +8.0]</td><td>B slower</td></tr>",
		"<tr><td>1000</td><td>32</td><td>1</td><td>–</td><td>–</td><td>–</td><td>–</td><td>too few pairs",
		"at 95 %: 1 B slower, 0 B faster, 0 no difference beyond ±5 %, 0 cannot tell, 1 without an interval", "(5 pairs per cell, AB/BA alternating), from genload ab (" + path + ")"} {
		if !strings.Contains(ab, want) {
			t.Errorf("A/B of the file lacks %q:\n%s", want, ab)
		}
	}
	if strings.Contains(html, `id="run-0"`) {
		t.Error("a run section without a run")
	}
	html = render(t, []*results.Run{testRun("a", 1), testRun("b", 1.1)}, Options{AB: f})
	if !strings.Contains(section(html, "ab"), "paired on identical prompts") || strings.Count(html, `<section id="ab">`) != 1 {
		t.Error("with runs and a file, the A/B is not the file's")
	}
	for _, bad := range []struct{ body, want string }{{"[1, 2]", "not JSON"}, {`{"a": "x"}`, `no "pairs" key: not the --json file of genload ab`}} {
		p := filepath.Join(dir, "bad.json")
		os.WriteFile(p, []byte(bad.body), 0o644)
		if _, err := ReadAB(p); err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("ReadAB(%s) = %v, want %q and the path", bad.body, err, bad.want)
		}
	}
	if err := Write(&bytes.Buffer{}, nil, Options{}); err == nil {
		t.Error("no run and no file: no error")
	}
}

// The histogram of lengths 1…16 has ⌈√16⌉ = 4 bins of width 15/4 (gonum's NewHist): 1–4.75
// holds 1,2,3,4; the next 5,6,7,8; then 9…12; the last (closed) 13…16 — 4 each, named in its
// accessible title. Equal lengths: one bin holding all.
func TestHistogramBins(t *testing.T) {
	ls := make([]int, 16)
	for i := range ls {
		ls[i] = i + 1
	}
	svg := string(histogram("L=1000,B=16", ls))
	if want := "<title>L=1000,B=16 prompt lengths (16): 1–5 tokens: 4; 5–8 tokens: 4; 8–12 tokens: 4; 12–16 tokens: 4</title>"; !strings.Contains(svg, want) {
		t.Errorf("histogram lacks %q:\n%.600s", want, svg)
	}
	if svg := string(histogram("c", []int{7, 7, 7})); !strings.Contains(svg, "(3): 7–8 tokens: 3</title>") {
		t.Errorf("equal lengths:\n%.600s", svg)
	}
	if svg := string(histogram("c", nil)); !strings.Contains(svg, "no lengths") {
		t.Errorf("no lengths: %s", svg)
	}
}

// Repeats of one run: the consistency of its repeats with the stopping rule and each cell's
// CV upper bound (two repeats 10 % apart: CV 6.73 %, × 7.96 at n = 2 and 90 %: 53.6 %).
func TestReportOfRepeats(t *testing.T) {
	r := testRun("u", 1)
	r.Header.UntilCV = &results.StoppingRule{TargetCV: 0.05, MinRepeats: 2, MaxRepeats: 4, Confidence: 0.9}
	slow := testRun("u", 1.1)
	for i := range r.Cells {
		r.Cells[i].Repeat, slow.Cells[i].Repeat = 1, 2
	}
	r.Cells = append(r.Cells, slow.Cells...)
	html := render(t, []*results.Run{r}, Options{})
	cv := 0.1 / math.Sqrt2 / 1.05
	up := cv * repeat.UpperFactor(2, 0.9)
	for _, want := range []string{`<section id="consistency">`, "Consistency of the repeats of u", "over its own measured repeats: median 6.7 %",
		"until the one-sided 90 % upper confidence bound of its CV is ≤ 5 %",
		"<tr><td>1000</td><td>1</td><td>2</td><td>", fmt.Sprintf("<td>0.210</td><td>0.231</td><td>6.7</td><td>6.7</td><td>%.1f</td><td>no</td>", 100*up),
		`<svg id="cv" class="plot"`} {
		if !strings.Contains(html, want) {
			t.Errorf("report of one run with repeats lacks %q", want)
		}
	}
}

// chromium finds the Debian chromium binary: absent, the test skips (locally) or fails (in
// CI, whose .ci/run installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed, and CI must have it: .ci/run installs the Debian package chromium")
	}
	t.Skip("chromium is not installed (Debian package chromium; .ci/run installs it in CI)")
	return ""
}

// headless runs chromium headless on file with no network (every host name unresolvable, no
// background requests) and the extra flags; it returns stdout.
func headless(t *testing.T, bin, file string, flags ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hung browser, not a speed check
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--host-resolver-rules=MAP * ~NOTFOUND",
		"--user-data-dir=" + t.TempDir()}, flags...)
	cmd := exec.CommandContext(ctx, bin, append(args, "file://"+file)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(flags, " "), err, stderr.String())
	}
	return out
}

// measureLayout is a script the test appends to a copy of the page: after the page's own
// script it writes, into a <pre id="layout">, the layout facts at the window's width — the
// document's scroll and client widths, the width of every plot (as a share of the client
// width), and per run section its cells, histogram figures and default-table rows.
const measureLayout = `<script>
(function () {
  var de = document.documentElement, w = de.clientWidth;
  var facts = {ready: de.dataset.ready || "", scrollWidth: de.scrollWidth, clientWidth: w, plots: [], runs: []};
  document.querySelectorAll("svg.plot").forEach(function (s) {
    facts.plots.push({id: s.id, share: s.getBoundingClientRect().width / w});
  });
  document.querySelectorAll("section.run").forEach(function (s) {
    var hists = s.querySelectorAll("figure[data-cell] svg.hist"), shown = 0;
    hists.forEach(function (h) { if (h.getBoundingClientRect().width > 20) { shown++; } });
    facts.runs.push({cells: +s.dataset.cells, hists: hists.length, histsShown: shown,
      rows: s.querySelectorAll("table.narrow tbody tr").length, top: s.querySelector(".hists").getBoundingClientRect().top,
      histRows: new Set(Array.from(hists).map(function (h) { return Math.round(h.getBoundingClientRect().top); })).size});
  });
  var pre = document.createElement("pre");
  pre.id = "layout";
  pre.textContent = JSON.stringify(facts);
  document.body.appendChild(pre);
})();
</script>`

// layoutFacts is what measureLayout writes.
type layoutFacts struct {
	Ready                    string
	ScrollWidth, ClientWidth int
	Plots                    []struct {
		ID    string
		Share float64
	}
	Runs []struct {
		Cells, Hists, HistsShown, Rows, HistRows int
	}
}

// The report of two runs of the default matrix (7 × 13 cells, with repeats) opens in a real
// headless Chromium 1,400 px wide with no network, and its layout holds: the page's script
// ran, nothing scrolls sideways, every plot is at least 80 % of the window's width, every
// cell has its table row and its histogram, drawn, in one grid row per L (a row of 13 that
// does not wrap); and a screenshot is not blank (many colours, the plots' colour).
func TestReportInHeadlessChromium(t *testing.T) {
	bin := chromium(t)
	a, b := runOf("a", 1, defaultLs, defaultBs), runOf("b", 1.1, defaultLs, defaultBs)
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	if err := WriteFile(file, []*results.Run{a, b}, Options{}); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(dir, "probe.html")
	if err := os.WriteFile(probe, bytes.Replace(page, []byte("</body>"), []byte(measureLayout+"</body>"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := string(headless(t, bin, probe, "--window-size=1400,900", "--dump-dom"))
	m := regexp.MustCompile(`<pre id="layout">(.*?)</pre>`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("no layout facts in the DOM:\n%.2000s", dom)
	}
	var facts layoutFacts
	if err := json.Unmarshal([]byte(strings.ReplaceAll(m[1], "&quot;", `"`)), &facts); err != nil {
		t.Fatalf("layout facts %q: %v", m[1], err)
	}
	t.Logf("layout at 1400 px: %+v", facts)
	if facts.Ready != "1" {
		t.Error("the page's script did not run")
	}
	if facts.ClientWidth < 1300 || facts.ScrollWidth > facts.ClientWidth {
		t.Errorf("the page scrolls sideways: scroll width %d, client width %d", facts.ScrollWidth, facts.ClientWidth)
	}
	if len(facts.Plots) != 4 { // the A/B, one latency figure per run, the consistency's CV
		t.Errorf("%d plots, want 4", len(facts.Plots))
	}
	for _, p := range facts.Plots {
		if p.Share < 0.8 {
			t.Errorf("plot %s is %.0f %% of the width, want ≥ 80 %%", p.ID, 100*p.Share)
		}
	}
	if len(facts.Runs) != 2 {
		t.Fatalf("%d run sections, want 2", len(facts.Runs))
	}
	for i, r := range facts.Runs {
		if r.Cells != 91 || r.Rows != 91 || r.Hists != 91 || r.HistsShown != 91 || r.HistRows != len(defaultLs) {
			t.Errorf("run %d: %d cells, %d table rows, %d histograms (%d drawn) on %d rows; want 91 of each on %d rows",
				i, r.Cells, r.Rows, r.Hists, r.HistsShown, r.HistRows, len(defaultLs))
		}
	}

	shot := filepath.Join(dir, "report.png")
	headless(t, bin, file, "--screenshot="+shot, "--window-size=1400,2400", "--hide-scrollbars")
	if keep := os.Getenv("GENLOAD_REPORT_SCREENSHOT"); keep != "" { // to look at it
		if b, err := os.ReadFile(shot); err == nil {
			os.WriteFile(keep, b, 0o644)
		}
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	colours, ink, series := pixels(img)
	total := img.Bounds().Dx() * img.Bounds().Dy()
	t.Logf("screenshot %dx%d: %d colours, %.1f %% non-white, %d pixels of the first series' colour", img.Bounds().Dx(), img.Bounds().Dy(), colours, 100*float64(ink)/float64(total), series)
	if colours < 16 || float64(ink) < 0.02*float64(total) {
		t.Errorf("the screenshot looks blank: %d colours, %d of %d pixels not white", colours, ink, total)
	}
	if series < 200 {
		t.Errorf("the screenshot has %d pixels of the first series' colour, want ≥ 200", series)
	}
}

// pixels counts img's distinct colours, its pixels that are not near-white, and those of the
// first series' colour (chart.Colour(0), within 8 per channel).
func pixels(img image.Image) (colours, ink, series int) {
	cr, cg, cb, _ := chart.Colour(0).RGBA()
	seen := map[[3]uint32]bool{}
	b := img.Bounds()
	near := func(v, want uint32) bool { d := int(v>>8) - int(want>>8); return d > -8 && d < 8 }
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
			if r>>8 < 240 || g>>8 < 240 || bl>>8 < 240 {
				ink++
			}
			if near(r, cr) && near(g, cg) && near(bl, cb) {
				series++
			}
		}
	}
	return len(seen), ink, series
}

// An ok cell whose sequences could not be timed (no per-forward figure) is counted apart in
// the summary: "ok" alone would overstate what was measured.
func TestCellCountsSayOKCellsWithoutFwd(t *testing.T) {
	untimed := resultstest.Cell(1, 1000, 4, 0)
	untimed.Figures.PerForward = measure.Summary{}
	r := &results.Run{Cells: []results.Cell{resultstest.Cell(0, 1000, 1, 5*time.Millisecond), untimed}}
	if got, want := countCells(r).String(), "2 of 2 cells ok (1 of them without a per-forward figure: their sequences could not be timed)"; got != want {
		t.Errorf("counts %q, want %q", got, want)
	}
}
