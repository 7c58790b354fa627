package htmlreport

import (
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/warning"
)

// A run routed over two servers whose forward passes are 20 and 30 ms (a new user's): each
// cell's figure, 25 ms, mixes the two halves of the batch and is neither server's. The
// summary names both servers, marks the mixed headline as such and gives a row per server
// with its own figure; the plot draws a series per server beside the mixture.
func TestReportOfARunRoutedOverTwoServers(t *testing.T) {
	r := runOf("two", 1, []int{1000}, []int{4, 16})
	r.Header.TargetKind, r.Header.Engine = "external", nil
	r.Header.Target = "http://127.0.0.1:18201"
	r.Header.Workers = []results.Worker{{Name: "w0", URL: "http://127.0.0.1:18201"}, {Name: "w1", URL: "http://127.0.0.1:18202"}}
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	for i := range r.Cells {
		c := &r.Cells[i]
		b := c.Cell.Batch
		c.Server = nil
		c.Figures.PerForward.Mean = ms(25.0)
		c.Figures.Window.Valid = false
		c.PerServer = []results.ServerFigures{
			{Server: "http://127.0.0.1:18202", Sequences: b / 2, PerForward: measure.Summary{N: b / 2, Mean: ms(30.0)}},
			{Server: "http://127.0.0.1:18201", Sequences: b / 2, PerForward: measure.Summary{N: b / 2, Mean: ms(20.0 + 0.001*float64(b))}},
		}
		c.Warnings, c.WarningNames = []string{"servers differ: fwd http://127.0.0.1:18202 30.000 ms, http://127.0.0.1:18201 20.004 ms (-33 %)"}, []warning.Name{warning.ServersDiffer}
	}
	html := render(t, []*results.Run{r}, Options{})
	sum := section(html, "summary")
	for _, want := range []string{
		"routed over 2 servers: http://127.0.0.1:18201, http://127.0.0.1:18202 (external)",
		"<td>1000 (all servers)</td><td>25.000 (B=4)</td><td>25.000 (B=16): mixed, a figure of neither server</td>",
		"<td>1000 on http://127.0.0.1:18201</td><td>20.004 (B=4, 2 on it)</td><td>20.016 (B=16, 8 on it)</td><td>×1.00</td>",
		"<td>1000 on http://127.0.0.1:18202</td><td>30.000 (B=4, 2 on it)</td><td>30.000 (B=16, 8 on it)</td>",
	} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
	run := section(html, "run-0")
	for _, want := range []string{"fwd on http://127.0.0.1:18201 (its share of the batch)", "fwd on http://127.0.0.1:18202 (its share of the batch)",
		"fwd mean over all servers' sequences (a mixture when they differ)", "routed over several servers: each server's own mean per-forward latency"} {
		if !strings.Contains(run, want) {
			t.Errorf("run section lacks %q", want)
		}
	}
	// One server: no per-server rows or series.
	one := testRun("one", 1)
	if html := render(t, []*results.Run{one}, Options{}); strings.Contains(html, "fwd on ") || strings.Contains(html, "all servers") {
		t.Error("a run on one server got per-server rows or series")
	}
}

// Each sequence length's per-server rows hold that length's cells only: at L = 1000 the
// servers read 20 and 30 ms, at L = 4000 40 and 60 ms.
func TestServerRowsPerSequenceLength(t *testing.T) {
	r := runOf("two", 1, []int{1000, 4000}, []int{4, 16})
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	for i := range r.Cells {
		c := &r.Cells[i]
		k := float64(c.Cell.SeqLen) / 1000
		if k > 1 {
			k = 2
		}
		c.PerServer = []results.ServerFigures{
			{Server: "http://a", Sequences: 2, PerForward: measure.Summary{N: 2, Mean: ms(20 * k)}},
			{Server: "http://b", Sequences: 2, PerForward: measure.Summary{N: 2, Mean: ms(30 * k)}},
		}
	}
	rows := serverRows(r, 4000)
	if len(rows) != 2 || rows[0][0] != "4000 on http://a" || !strings.HasPrefix(rows[0][1], "40.000 (B=4") || !strings.HasPrefix(rows[1][2], "60.000 (B=16") {
		t.Errorf("rows at L=4000: %q", rows)
	}
}
