package htmlreport

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/repeat"
	"github.com/genload/genload/host/report"
)

var (
	testLs = []int{1000, 4000}
	testBs = []int{1, 8, 32}
)

// testRun is a run of the 2 × 3 cells testLs × testBs: fwd = (0.2 + 0.01·B·L/1000) ms × slow,
// lengths 1…B times L/B·2/(B+1) (mean L), and one warning of one kind on every B = 32 cell.
func testRun(id string, slow float64) *report.Run {
	r := &report.Run{Header: report.Header{RunID: id, Model: "m", Target: "http://127.0.0.1:8000", TargetKind: "external",
		Context: 131072, ContextSource: "server /v1/models max_model_len", Config: config.Default()},
		Footer: &report.Footer{Status: report.StatusOK, OK: 6}}
	for _, l := range testLs {
		for _, b := range testBs {
			fwd := time.Duration(slow * (0.2 + 0.01*float64(b*l)/1000) * float64(time.Millisecond))
			each := make([]int, b)
			sum := 0
			for i := range each {
				each[i] = (i + 1) * 2 * l / (b + 1)
				sum += each[i]
			}
			c := report.Cell{Cell: matrix.Cell{Index: len(r.Cells), SeqLen: l, Batch: b}, Status: report.StatusOK,
				Lengths: report.Lengths{Target: l, Min: each[0], Max: each[b-1], Mean: float64(sum) / float64(b), Each: each},
				Figures: &measure.Figures{Sequences: b, Counted: b, CompletionTokens: 100 * b,
					PerForward: measure.Summary{N: b, Mean: fwd, P50: fwd, P90: fwd},
					TTFT:       measure.Summary{N: b, Mean: time.Millisecond, P50: time.Millisecond, P90: time.Millisecond},
					Window:     measure.Window{Valid: true, Steps: 98, PerStep: fwd}}}
			if b == 32 {
				c.Warnings = []string{fmt.Sprintf("realised mean length %d is -1.0 %% off L = %d: 1 of 32 lengths clamped", l-10, l)}
			}
			r.Cells = append(r.Cells, c)
		}
	}
	return r
}

func render(t *testing.T, runs ...*report.Run) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, runs, Options{}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The page holds every cell's row in both tables, one chart line per L, one histogram per
// cell, the warnings grouped, the consistency and A/B sections for two runs — and nothing
// that reaches out: no external script, style, image or font.
func TestReportContents(t *testing.T) {
	a, b := testRun("a", 1), testRun("b", 1.1)
	html := render(t, a, b)
	for _, want := range []string{
		`<table class="results narrow" id="table-0">`, `<table class="results wide" id="table-wide-0" hidden>`,
		`<svg xmlns="http://www.w3.org/2000/svg" id="fwd-0"`, `id="full-1"`,
		`⚠ realised mean length … is -1.0 % off L = … — 2 cells: L=1000 B=32; L=4000 B=32`,
		`<section id="consistency">`, `<section id="ab">`, `A/B: a (A) → b (B)`,
		// B/A − 1 = +10.0 % in every cell.
		`median 10.0 %, range 10.0 … 10.0 % over 6 cells`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if n := strings.Count(html, `class="hist"`); n != 12 {
		t.Errorf("%d histograms, want 12 (6 cells × 2 runs)", n)
	}
	// One <polyline> per L in each of the 2 charts of each run, and in the CV and A/B charts.
	if n := strings.Count(html, "<polyline"); n != 2*2*2+2+2 {
		t.Errorf("%d chart lines, want 12", n)
	}
	for _, bad := range []*regexp.Regexp{regexp.MustCompile(`(?i)\s(src|href)\s*=\s*"?(https?:)?//`), regexp.MustCompile(`(?i)<link\b`), regexp.MustCompile(`(?i)url\(`), regexp.MustCompile(`(?i)@import`)} {
		if m := bad.FindString(html); m != "" {
			t.Errorf("report reaches out of the file: %q", m)
		}
	}
}

// The histogram of lengths 1…16 has ⌈√16⌉ = 4 bins of width 15/4: 1–4.75 holds 1,2,3,4; the
// next 5,6,7,8; then 9…12; the last (closed) 13…16 — 4 each.
func TestHistogramBins(t *testing.T) {
	ls := make([]int, 16)
	for i := range ls {
		ls[i] = i + 1
	}
	svg := string(histogram("h", ls))
	for _, want := range []string{"<title>1–5 tokens: 4</title>", "<title>5–8 tokens: 4</title>", "<title>8–12 tokens: 4</title>", "<title>12–16 tokens: 4</title>"} {
		if !strings.Contains(svg, want) {
			t.Errorf("histogram lacks %q:\n%s", want, svg)
		}
	}
	// Equal lengths: one bin holding all.
	if svg := string(histogram("h", []int{7, 7, 7})); !strings.Contains(svg, "<title>7–7 tokens: 3</title>") || strings.Count(svg, "<rect") != 1 {
		t.Errorf("equal lengths:\n%s", svg)
	}
}

// Ticks are round, start at or below lo and end at or above hi.
func TestNiceTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   string
	}{
		{0, 7.7, "[0 2 4 6 8]"}, // step 2: 7.7/6 = 1.28 → 2
		{0, 1.44, "[0 0.25 0.5 0.75 1 1.25 1.5]"},
		{-3.7, 23.7, "[-5 0 5 10 15 20 25]"}, // step 5: 27.4/6 = 4.6 → 5
	} {
		if got := fmt.Sprint(niceTicks(tc.lo, tc.hi, 6)); got != tc.want {
			t.Errorf("niceTicks(%g, %g) = %s, want %s", tc.lo, tc.hi, got, tc.want)
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

// The report opens in a real headless Chromium with no network: its script ran (the
// document is marked ready and the column toggle shown), the DOM holds the table's rows and
// the plots' lines, and a screenshot is not blank — many colours, and the plots' blue.
func TestReportInHeadlessChromium(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	if err := WriteFile(file, []*report.Run{testRun("a", 1), testRun("b", 1.1)}, Options{}); err != nil {
		t.Fatal(err)
	}
	dom := string(headless(t, bin, file, "--dump-dom"))
	if !regexp.MustCompile(`<html[^>]*data-ready="1"`).MatchString(dom) {
		t.Errorf("the page's script did not run (no data-ready on <html>):\n%.2000s", dom)
	}
	if !strings.Contains(dom, `<button type="button" class="toggle" data-run="0">show every column</button>`) {
		t.Errorf("the column toggle was not shown by the script")
	}
	table := regexp.MustCompile(`(?s)<table class="results narrow" id="table-0">.*?</table>`).FindString(dom)
	if n := strings.Count(table, "<tr>"); n != 1+6 {
		t.Errorf("the default table of run a has %d rows in the DOM, want 7 (head + 6 cells)", n)
	}
	if !strings.Contains(table, `<td class="text">`) {
		t.Errorf("the script did not left-align the lengths column")
	}
	fwd := regexp.MustCompile(`(?s)<svg[^>]*id="fwd-0".*?</svg>`).FindString(dom)
	if n := strings.Count(fwd, "<polyline"); n != len(testLs) {
		t.Errorf("the fwd plot has %d lines in the DOM, want %d", n, len(testLs))
	}
	if n := strings.Count(fwd, "<circle"); n != len(testLs)*len(testBs) {
		t.Errorf("the fwd plot has %d points in the DOM, want %d", n, len(testLs)*len(testBs))
	}

	shot := filepath.Join(dir, "report.png")
	headless(t, bin, file, "--screenshot="+shot, "--window-size=1280,1600", "--hide-scrollbars")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	colours, ink, blue := pixels(img)
	total := img.Bounds().Dx() * img.Bounds().Dy()
	t.Logf("screenshot %dx%d: %d colours, %.1f %% non-white, %d pixels of the plots' blue", img.Bounds().Dx(), img.Bounds().Dy(), colours, 100*float64(ink)/float64(total), blue)
	if colours < 16 || float64(ink) < 0.02*float64(total) {
		t.Errorf("the screenshot looks blank: %d colours, %d of %d pixels not white", colours, ink, total)
	}
	if blue < 200 {
		t.Errorf("the screenshot has %d pixels of the plots' and histograms' blue #0072b2, want ≥ 200", blue)
	}
}

// pixels counts img's distinct colours, its pixels that are not near-white, and those of the
// first series' colour #0072b2 (within 8 per channel).
func pixels(img image.Image) (colours, ink, blue int) {
	seen := map[[3]uint32]bool{}
	b := img.Bounds()
	near := func(v uint32, want int) bool { d := int(v>>8) - want; return d > -8 && d < 8 }
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
			if r>>8 < 240 || g>>8 < 240 || bl>>8 < 240 {
				ink++
			}
			if near(r, 0x00) && near(g, 0x72) && near(bl, 0xb2) {
				blue++
			}
		}
	}
	return len(seen), ink, blue
}

// repeatsRun is testRun measured twice, with until_cv in its header: repeat 1 at the fwd of
// testRun, repeat 2 10 % slower, so every cell's CV over its two repeats is
// (0.1x/√2)/(1.05x) = 6.73 % and its pooled figure 1.05x.
func repeatsRun() *report.Run {
	r := testRun("u", 1)
	r.Header.UntilCV = &report.StoppingRule{TargetCV: 0.05, MinRepeats: 2, MaxRepeats: 4, Confidence: 0.9}
	slow := testRun("u", 1.1)
	for i := range r.Cells {
		r.Cells[i].Repeat, slow.Cells[i].Repeat = 1, 2
	}
	r.Cells = append(r.Cells, slow.Cells...)
	return r
}

// One run with repeats gets the consistency of its repeats, with the stopping rule and each
// cell's CV upper bound (6.73 % × 7.96 at n = 2 and 90 %: 53.6 %, not within 5 %); with another
// run, the consistency and the A/B compare its cells' pooled means (1.05x against x: −4.8 %)
// and say so.
func TestReportOfRepeats(t *testing.T) {
	html := render(t, repeatsRun())
	cv := 0.1 / math.Sqrt2 / 1.05
	up := cv * repeat.UpperFactor(2, 0.9)
	for _, want := range []string{`<section id="consistency">`, "Consistency of the repeats of u", "over its own measured repeats: median 6.7 %",
		"until the one-sided 90 % upper confidence bound of its CV is ≤ 5 %",
		"<tr><td>1000</td><td>1</td><td>2</td><td>", fmt.Sprintf("<td>0.210</td><td>0.231</td><td>6.7</td><td>6.7</td><td>%.1f</td><td>no</td>", 100*up)} {
		if !strings.Contains(html, want) {
			t.Errorf("report of one run with repeats lacks %q", want)
		}
	}
	// the charts have one point per cell, its mean over the repeats (L=4000,B=32: 1.48 and
	// 1.628 ms → 1.554 ms), and the lengths one histogram per cell
	if !strings.Contains(html, "L=4000,B=32: 1.554 ms") || strings.Contains(html, "L=4000,B=32: 1.628 ms") ||
		!strings.Contains(html, "each cell&#39;s mean over its measured repeats") {
		t.Errorf("the charts do not pool the repeats")
	}
	if n := strings.Count(html, `class="hist"`); n != 6 {
		t.Errorf("%d histograms, want 6 (one per cell)", n)
	}
	html = render(t, repeatsRun(), testRun("a", 1))
	for _, want := range []string{"A/B: u (A) → a (B)", "median -4.8 %, range -4.8 … -4.8 % over 6 cells",
		"⚠ before (u): each cell&#39;s figure is the mean over its measured repeats (2 to 2 per cell",
		"⚠ u: each cell&#39;s figure is the mean over its measured repeats"} {
		if !strings.Contains(html, want) {
			t.Errorf("report of two runs lacks %q", want)
		}
	}
}
