package run

import (
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"gonum.org/v1/gonum/mat"

	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/results"
)

// progress shows the run's advance: on a terminal a bar redrawn every second with the current
// cell, the elapsed time and the time left; otherwise one plain line per finished cell (logs,
// CI) ending with the time left.
//
// The time left comes from a cost model of a cell's duration fitted as the run goes
// ([costModel]); the bar's percentage is the share of the run's estimated time that has
// elapsed: elapsed / (elapsed + estimated time left), so it can step back when a slow cell
// raises the estimate.
type progress struct {
	w     io.Writer
	bar   *progressbar.ProgressBar
	cells []matrix.Cell
	now   func() time.Time

	mu        sync.Mutex
	n         int       // cells finished or skipped
	start     time.Time // run start
	cellStart time.Time // start of cell n (the one in progress)
	measured  float64   // fallbackWeight of the cells measured in this process (not skipped)
	spent     float64   // their time, seconds
	model     costModel
	shown     int // the bar's last value: it never goes back (see redraw)
	skipped   int // cells skipped (resume) since the last plain line
	stop      chan struct{}
	stopped   sync.WaitGroup
}

// etaLog, when set (by tests), receives every estimate of the time left: when it was made,
// the estimate, and whether it came from a fitted model (false: the fallback).
var etaLog func(at time.Time, left time.Duration, fitted bool)

// barWidth is the bar's width in characters: fixed, so that a terminal whose width is not
// known (a pipe through script, an IDE console) still gets a bar, and the line (cell, elapsed,
// time left, bar, percentage) stays within 120 columns.
const barWidth = 30

// barScale is the bar's maximum: the run's estimated time in thousandths.
const barScale = 1000

func newProgress(w io.Writer, tty bool, cells []matrix.Cell, maxTokens int) *progress {
	return newProgressClock(w, tty, cells, maxTokens, time.Now, time.Second)
}

// newProgressClock is newProgress with the clock and the redraw interval as test seams
// (refresh 0: no redraw goroutine).
func newProgressClock(w io.Writer, tty bool, cells []matrix.Cell, maxTokens int, now func() time.Time, refresh time.Duration) *progress {
	t := now()
	p := &progress{w: w, cells: cells, now: now, start: t, cellStart: t, model: costModel{maxTokens: maxTokens}}
	if !tty {
		return p
	}
	fmt.Fprintln(w, "progress: % is the elapsed share of the estimated run time (it holds when the estimate rises); the time left comes from a cost model fitted as cells finish")
	p.bar = progressbar.NewOptions(barScale, progressbar.OptionSetWriter(w), progressbar.OptionSetPredictTime(false),
		progressbar.OptionSetElapsedTime(false), progressbar.OptionSetWidth(barWidth), progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionSetDescription(p.desc(t)))
	if refresh > 0 {
		p.stop = make(chan struct{})
		p.stopped.Add(1)
		go func() {
			defer p.stopped.Done()
			tick := time.NewTicker(refresh)
			defer tick.Stop()
			for {
				select {
				case <-p.stop:
					return
				case <-tick.C:
					p.mu.Lock()
					p.redraw(p.now())
					p.mu.Unlock()
				}
			}
		}()
	}
	return p
}

// left estimates the time left at instant now: the cell in progress (its predicted time less
// what it has run, at least 0) plus every cell after it. Before the model can be fitted it
// scales the measured cells' time by the cells' weights B·L + a fixed share (fitted false);
// before any cell is measured it has no estimate (0, false).
func (p *progress) left(now time.Time) (time.Duration, bool) {
	if p.n >= len(p.cells) {
		return 0, true
	}
	inCell := now.Sub(p.cellStart).Seconds()
	if coef, ok := p.model.fit(); ok {
		cur := math.Max(p.model.predict(coef, p.cells[p.n])-inCell, 0)
		rest := 0.0
		for _, c := range p.cells[p.n+1:] {
			rest += p.model.predict(coef, c)
		}
		return seconds(cur + rest), true
	}
	// Fallback: the time per unit of weight of the cells measured so far, over the weight
	// left (cells skipped on resume took no time and do not count).
	if p.measured == 0 {
		return 0, false
	}
	left := 0.0
	for _, c := range p.cells[p.n:] {
		left += fallbackWeight(c)
	}
	return seconds(math.Max(p.spent/p.measured*left-inCell, 0)), false
}

// fallbackWeight is a cell's cost before any fit, in tokens-equivalent: a fixed share for the
// decode steps and round trips plus B·L for prefill and request bodies.
func fallbackWeight(c matrix.Cell) float64 { return 200_000 + float64(c.Batch)*float64(c.SeqLen) }

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// desc is the bar's description at instant now: cell counter and cell, elapsed, time left.
func (p *progress) desc(now time.Time) string {
	el := now.Sub(p.start).Round(time.Second)
	if p.n >= len(p.cells) {
		return fmt.Sprintf("[%d/%d] done in %s", len(p.cells), len(p.cells), el)
	}
	c := p.cells[p.n]
	s := fmt.Sprintf("[%d/%d] L=%d B=%d, %s elapsed", p.n+1, len(p.cells), c.SeqLen, c.Batch, el)
	if left, ok := p.left(now); ok || p.n > 0 {
		s += fmt.Sprintf(", ~%s left", left.Round(time.Second))
	}
	return s
}

// redraw updates the bar for instant now (p.mu held).
func (p *progress) redraw(now time.Time) {
	left, fitted := p.left(now)
	if etaLog != nil && p.n < len(p.cells) {
		etaLog(now, left, fitted)
	}
	if p.bar == nil {
		return
	}
	el := now.Sub(p.start)
	share := 0.0
	if el+left > 0 {
		share = float64(el) / float64(el+left)
	}
	if p.n >= len(p.cells) {
		share = 1
	}
	// The estimate of the time left can rise (a cell slower than the model thought); the bar
	// then holds its place until the elapsed time catches up, rather than going back.
	p.shown = max(p.shown, int(math.Round(share*barScale)))
	p.bar.Describe(p.desc(now))
	_ = p.bar.Set(p.shown)
}

// done records a finished cell.
func (p *progress) done(rec results.Cell) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flushSkipped()
	now := p.now()
	if results.Measured(rec.Status) || rec.Status == results.StatusError {
		took := now.Sub(p.cellStart).Seconds()
		p.model.add(rec.Cell, took)
		p.measured += fallbackWeight(rec.Cell)
		p.spent += took
	}
	p.n++
	p.cellStart = now
	if p.bar != nil {
		p.redraw(now)
		return
	}
	if etaLog != nil {
		p.redraw(now)
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
	if p.n < len(p.cells) {
		if left, _ := p.left(now); p.n > 0 {
			line += fmt.Sprintf(" · ~%s left", left.Round(time.Second))
		}
	}
	fmt.Fprintln(p.w, line)
}

// skip records a cell already measured by the run being resumed (its time is not a cost:
// the fit leaves it out).
func (p *progress) skip(c matrix.Cell) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	now := p.now()
	p.cellStart = now
	if p.bar != nil {
		p.redraw(now)
		return
	}
	p.skipped++ // said in one line for a run of skipped cells, when the next cell ends or the run does
}

// flushSkipped writes the line of the skipped cells not said yet (p.mu held; plain lines only).
func (p *progress) flushSkipped() {
	if p.skipped > 0 && p.bar == nil {
		fmt.Fprintf(p.w, "[%d/%d] %s measured before, skipped\n", p.n, len(p.cells), plural(p.skipped, "cell"))
	}
	p.skipped = 0
}

func (p *progress) finish() {
	if p.stop != nil {
		close(p.stop)
		p.stopped.Wait()
	}
	p.mu.Lock()
	p.flushSkipped()
	p.mu.Unlock()
	if p.bar != nil {
		p.mu.Lock()
		p.redraw(p.now())
		p.mu.Unlock()
		_ = p.bar.Finish()
		fmt.Fprintln(p.w)
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// costModel is the model of a cell's wall-clock time T (seconds) fitted to the cells measured
// so far:
//
//	T(B, L) = c₀ + c₁·m·B + c₂·B·L + c₃·B·L²/L₀
//
//	B   batch size                      L   target mean prompt length, tokens
//	m   max_tokens (decode steps)       L₀  10⁴ tokens (keeps the columns of one scale)
//	c₀  per-cell fixed cost (round trips, the warmup's request, the cell's first and last steps), s
//	c₁  decode cost per sequence and step, s
//	c₂  cost per prompt token: the warmup's prefill, tokenizing and sending the bodies, s
//	c₃  attention over the prompt in prefill and decode, growing with L per token, s
//
// The coefficients are non-negative least squares (every term is a cost): an ordinary least
// squares fit by QR on the columns that are identifiable from the cells seen (c₂ and c₃
// need two distinct L, c₁ two distinct B), dropping the most negative coefficient and
// refitting until none is negative (the active-set method of Lawson and Hanson, Solving Least
// Squares Problems, 1974, ch. 23, in its simplest form).
type costModel struct {
	maxTokens int
	x         [][4]float64
	t         []float64
}

const l0 = 1e4

func (m *costModel) features(c matrix.Cell) [4]float64 {
	b, l := float64(c.Batch), float64(c.SeqLen)
	return [4]float64{1, float64(max(m.maxTokens, 1)) * b, b * l, b * l * l / l0}
}

func (m *costModel) add(c matrix.Cell, seconds float64) {
	m.x = append(m.x, m.features(c))
	m.t = append(m.t, seconds)
}

// fit returns the coefficients, ok false until at least 3 cells are measured.
func (m *costModel) fit() ([4]float64, bool) {
	var coef [4]float64
	n := len(m.t)
	if n < 3 {
		return coef, false
	}
	ls, bs := map[float64]bool{}, map[float64]bool{}
	for _, x := range m.x {
		bs[x[1]] = true
		ls[x[2]/x[1]] = true
	}
	active := []int{0}
	if len(bs) > 1 {
		active = append(active, 1)
	}
	if len(ls) > 1 {
		active = append(active, 2, 3)
	} else {
		// One L so far: B·L is proportional to B; keep the prompt term, which carries over
		// to longer prompts, and let c₁ wait for a second L.
		active = []int{0, 2}
	}
	for len(active) > 0 {
		if len(active) >= n {
			active = active[:n-1]
			continue
		}
		// Columns scaled to unit maximum for the QR's conditioning.
		scale := make([]float64, len(active))
		a := mat.NewDense(n, len(active), nil)
		for j, k := range active {
			for i := range n {
				scale[j] = math.Max(scale[j], math.Abs(m.x[i][k]))
			}
			if scale[j] == 0 {
				scale[j] = 1
			}
			for i := range n {
				a.Set(i, j, m.x[i][k]/scale[j])
			}
		}
		var qr mat.QR
		qr.Factorize(a)
		var sol mat.VecDense
		if err := qr.SolveVecTo(&sol, false, mat.NewVecDense(n, append([]float64(nil), m.t...))); err != nil {
			active = active[:len(active)-1]
			continue
		}
		worst, worstJ := 0.0, -1
		for j := range active {
			if v := sol.AtVec(j); v < worst {
				worst, worstJ = v, j
			}
		}
		if worstJ < 0 {
			coef = [4]float64{}
			for j, k := range active {
				coef[k] = sol.AtVec(j) / scale[j]
			}
			return coef, true
		}
		active = append(active[:worstJ], active[worstJ+1:]...)
	}
	return coef, false
}

// predict is the model's time of cell c in seconds.
func (m *costModel) predict(coef [4]float64, c matrix.Cell) float64 {
	x := m.features(c)
	s := 0.0
	for k := range x {
		s += coef[k] * x[k]
	}
	return s
}
