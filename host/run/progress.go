package run

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/report"
)

// progress shows the run's advance: a bar with the current cell and an ETA on a terminal, one
// plain line per finished cell otherwise (logs, CI).
//
// The bar advances by each cell's weight, fixedWeight + B·L tokens, so that the ETA accounts
// for long-context cells costing more (prefill and request bodies grow with B·L) while every
// cell pays a similar decode cost (max_tokens steps).
type progress struct {
	w     io.Writer
	bar   *progressbar.ProgressBar
	cells []matrix.Cell
	n     int
	start time.Time
}

const fixedWeight = 200_000 // tokens-equivalent of a cell's decode steps and round trips

func weight(c matrix.Cell) int { return fixedWeight + c.Batch*c.SeqLen }

func newProgress(w io.Writer, tty bool, cells []matrix.Cell) *progress {
	p := &progress{w: w, cells: cells, start: time.Now()}
	if tty {
		total := 0
		for _, c := range cells {
			total += weight(c)
		}
		p.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true), progressbar.OptionFullWidth(), progressbar.OptionSetRenderBlankState(true),
			progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionSetDescription(p.desc(0)))
	}
	return p
}

func (p *progress) desc(i int) string {
	if i >= len(p.cells) {
		return fmt.Sprintf("[%d/%d] done", len(p.cells), len(p.cells))
	}
	c := p.cells[i]
	return fmt.Sprintf("[%d/%d] L=%d B=%d", i+1, len(p.cells), c.SeqLen, c.Batch)
}

// done records a finished cell.
func (p *progress) done(rec report.Cell) {
	p.n++
	if p.bar != nil {
		p.bar.Describe(p.desc(p.n))
		_ = p.bar.Add(weight(rec.Cell))
		return
	}
	line := fmt.Sprintf("[%d/%d] L=%d B=%d %s %.1fs", p.n, len(p.cells), rec.Cell.SeqLen, rec.Cell.Batch, rec.Status,
		time.Duration(rec.Elapsed).Seconds())
	if f := rec.Figures; f != nil {
		fwd, ttft := "–", "–" // absent: the warnings say why
		if f.PerForward.N > 0 {
			fwd = fmt.Sprintf("%.3f ms", ms(f.PerForward.Mean))
		}
		if f.TTFT.N > 0 {
			ttft = fmt.Sprintf("%.1f ms", ms(f.TTFT.P50))
		}
		line += fmt.Sprintf(" fwd %s ttft p50 %s", fwd, ttft)
	}
	if rec.Error != "" {
		line += ": " + rec.Error
	}
	fmt.Fprintln(p.w, line)
}

// skip records a cell already measured by the run being resumed.
func (p *progress) skip(c matrix.Cell) {
	p.n++
	if p.bar != nil {
		p.bar.Describe(p.desc(p.n))
		_ = p.bar.Add(weight(c))
		return
	}
	fmt.Fprintf(p.w, "[%d/%d] L=%d B=%d already measured\n", p.n, len(p.cells), c.SeqLen, c.Batch)
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.w)
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
