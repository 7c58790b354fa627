package compare

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/internal/resultstest"
	"github.com/genload/genload/host/results"
	"gonum.org/v1/plot"
)

// plotRun is a 2 × 3 matrix with per-forward latency growing in L and B.
func plotRun(id string, scale float64) *results.Run {
	var cells []results.Cell
	i := 0
	for _, l := range []int{1000, 4000} {
		for _, b := range []int{1, 8, 32} {
			d := time.Duration(scale * float64(time.Millisecond) * (1 + float64(b)/8 + float64(l)/4000))
			cells = append(cells, resultstest.Cell(i, l, b, d))
			i++
		}
	}
	return mkRun(id, 100, cells...)
}

// checkImages checks prefix.png decodes as a 1440 × 900 PNG and prefix.svg parses as XML with
// an <svg> root, both of non-trivial size, and returns the SVG text.
func checkImages(t *testing.T, pngPath, svgPath string) string {
	t.Helper()
	f, err := os.Open(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatalf("%s: %v", pngPath, err)
	}
	if cfg.Width != 1440 || cfg.Height != 900 {
		t.Errorf("png %d×%d, want 1440×900", cfg.Width, cfg.Height)
	}
	if st, _ := f.Stat(); st.Size() < 20_000 {
		t.Errorf("png only %d bytes", st.Size())
	}
	svg, err := os.ReadFile(svgPath)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(svg))
	root := ""
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" || len(svg) < 4_000 {
		t.Errorf("svg root %q, %d bytes", root, len(svg))
	}
	return string(svg)
}

func TestLatencyPlotFiles(t *testing.T) {
	dir := t.TempDir()
	one, err := LatencyPlot(plotRun("a", 1))
	if err != nil {
		t.Fatal(err)
	}
	// (1 + 32/8 + 1) = 6 ms at most, 2.25 ms at least: within 20×, so a linear axis from 0.
	if _, ok := one.Plot.Y.Scale.(plot.LinearScale); !ok || one.Plot.Y.Min != 0 {
		t.Errorf("y scale %T min %v, want linear from 0", one.Plot.Y.Scale, one.Plot.Y.Min)
	}
	if len(one.Labels) != 2 || !strings.Contains(one.Plot.Title.Text, "run a") {
		t.Errorf("title %q, legend %q", one.Plot.Title.Text, one.Labels)
	}
	p, s, err := one.Save(filepath.Join(dir, "one"))
	if err != nil {
		t.Fatal(err)
	}
	svg := checkImages(t, p, s)
	// Two lines (L = 1000, 4000), each labelled in the legend.
	if !strings.Contains(svg, "L = 1000 tokens") || !strings.Contains(svg, "L = 4000 tokens") {
		t.Error("svg has no legend entries for L = 1000 and 4000")
	}

	two, err := LatencyPlot(plotRun("before", 1), plotRun("after", 0.8))
	if err != nil {
		t.Fatal(err)
	}
	p, s, err = two.Save(filepath.Join(dir, "two"))
	if err != nil {
		t.Fatal(err)
	}
	svg = checkImages(t, p, s)
	for _, want := range []string{"before: before (dashed)", "after: after (solid)", "stroke-dasharray"} {
		if !strings.Contains(svg, want) {
			t.Errorf("svg lacks %q", want)
		}
	}
}

func TestLatencyPlotAxesAndErrors(t *testing.T) {
	// Latencies from 1 ms to 40 ms (> 20×): log latency axis.
	r := mkRun("wide", 100, resultstest.Cell(0, 1000, 1, ms), resultstest.Cell(1, 1000, 64, 40*ms))
	p, err := LatencyPlot(r)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Plot.Y.Scale.(plot.LogScale); !ok {
		t.Errorf("y scale %T, want log", p.Plot.Y.Scale)
	}
	if _, err := LatencyPlot(); err == nil {
		t.Error("no run: no error")
	}
	if _, err := LatencyPlot(r, r, r); err == nil {
		t.Error("three runs: no error")
	}
	failed := resultstest.Cell(0, 1000, 1, ms)
	failed.Status, failed.Figures = results.StatusError, nil
	if _, err := LatencyPlot(mkRun("x", 100, failed)); err == nil || !strings.Contains(err.Error(), "no measured cell") {
		t.Errorf("no measured cell: %v", err)
	}
}

// The title names each run's engine where they differ: a before/after of two profiles named
// the first run's profile for both.
func TestPlotSubtitleNamesEachRunsEngine(t *testing.T) {
	a, b := plotRun("base4", 1), plotRun("slow3", 1)
	a.Header.Model, b.Header.Model = "genload-sim", "genload-sim"
	a.Header.Engine = map[string]any{"profile": "base.toml", "time_scale": 1.0}
	b.Header.Engine = map[string]any{"profile": "slow.toml", "time_scale": 1.0}
	want := "base4 (before, dashed) vs slow3 (after, solid)\nmodel genload-sim · built-in engine before base.toml at time scale 1 / after slow.toml at time scale 1"
	if got := plotSubtitle([]*results.Run{a, b}); got != want {
		t.Errorf("subtitle\n%q\nwant\n%q", got, want)
	}
	b.Header.Engine["profile"] = "base.toml"
	if got := plotSubtitle([]*results.Run{a, b}); got != "base4 (before, dashed) vs slow3 (after, solid)\nmodel genload-sim · built-in engine base.toml at time scale 1" {
		t.Errorf("one engine: %q", got)
	}
}
