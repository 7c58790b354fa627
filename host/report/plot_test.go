package report

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"
)

// plotRun is a 2 × 3 matrix with per-forward latency growing in L and B.
func plotRun(id string, scale float64) *Run {
	var cells []Cell
	i := 0
	for _, l := range []int{1000, 4000} {
		for _, b := range []int{1, 8, 32} {
			d := time.Duration(scale * float64(time.Millisecond) * (1 + float64(b)/8 + float64(l)/4000))
			cells = append(cells, sampleCell(i, l, b, d))
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
	r := mkRun("wide", 100, sampleCell(0, 1000, 1, ms), sampleCell(1, 1000, 64, 40*ms))
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
	failed := sampleCell(0, 1000, 1, ms)
	failed.Status, failed.Figures = StatusError, nil
	if _, err := LatencyPlot(mkRun("x", 100, failed)); err == nil || !strings.Contains(err.Error(), "no measured cell") {
		t.Errorf("no measured cell: %v", err)
	}
}

func TestBatchTicks(t *testing.T) {
	// The default batch sizes: powers of two always labelled; 3, 5, 6, 12, 48 are ≥ 0.2 log₂
	// from every label; 7 is log₂(8/7) = 0.19 from 8, so it keeps its tick without a label.
	ticks := batchTicks([]int{1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 32, 48, 64})
	var labels []string
	for _, tk := range ticks {
		labels = append(labels, tk.Label)
	}
	if got := strings.Join(labels, ","); got != "1,2,3,4,5,6,,8,12,16,32,48,64" {
		t.Errorf("labels %s", got)
	}
	lt := LogTicks125{}.Ticks(0.15, 12)
	var ll []string
	for _, tk := range lt {
		if tk.Label != "" {
			ll = append(ll, tk.Label)
		}
	}
	if got := strings.Join(ll, ","); got != "0.2,0.5,1,2,5,10" {
		t.Errorf("log ticks %s", got)
	}
}

// ValueAxis: log past a 20× span of positive values, else linear through 0 with 8 % of room
// past the data (1 when all are 0), below 0 as above; NiceTicks labels round steps with the
// decimals they need.
func TestValueAxisAndNiceTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi, min, max float64
		log              bool
	}{
		{1, 40, 1 / 1.15, 46, true},
		{2, 30, 0, 32.4, false},
		{0, 0, 0, 1, false},
		{-50, 10, -54.8, 14.8, false},
	} {
		p := plot.New()
		log := ValueAxis(&p.Y, c.lo, c.hi)
		if log != c.log || math.Abs(p.Y.Min-c.min) > 1e-9 || math.Abs(p.Y.Max-c.max) > 1e-9 {
			t.Errorf("ValueAxis(%g, %g): log %v, [%g, %g]; want %v, [%g, %g]", c.lo, c.hi, log, p.Y.Min, p.Y.Max, c.log, c.min, c.max)
		}
	}
	labels := func(lo, hi float64) string {
		var l []string
		for _, tk := range (NiceTicks{}).Ticks(lo, hi) {
			if tk.Label != "" {
				l = append(l, tk.Label)
			}
		}
		return strings.Join(l, " ")
	}
	for _, c := range []struct {
		lo, hi float64
		want   string
	}{{0, 1.5, "0.0 0.2 0.4 0.6 0.8 1.0 1.2 1.4"}, {-54.8, 14.8, "-50 -40 -30 -20 -10 0 10"}, {0, 1.9, "0.00 0.25 0.50 0.75 1.00 1.25 1.50 1.75"}, {0, 180, "0 25 50 75 100 125 150 175"}} {
		if got := labels(c.lo, c.hi); got != c.want {
			t.Errorf("NiceTicks(%g, %g) = %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
}
