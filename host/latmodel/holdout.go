package latmodel

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/genload/genload/host/stats"
)

// Split returns obs (ascending L, then B) divided into the cells to fit and the cells held
// out: every n-th cell is held out (indexes n−1, 2n−1, …), so with n = 2 every other cell.
// n < 2 holds out nothing.
func Split(obs []Obs, n int) (fit, held []Obs) {
	if n < 2 {
		return obs, nil
	}
	for i, o := range obs {
		if i%n == n-1 {
			held = append(held, o)
		} else {
			fit = append(fit, o)
		}
	}
	return fit, held
}

// HeldOut is one held-out cell's prediction.
type HeldOut struct {
	Obs
	PredMs float64
	// Rel is (predicted − measured) / measured.
	Rel          float64
	Extrapolated bool
}

// Validation is a model's prediction of cells it was not fitted on.
type Validation struct {
	Cells []HeldOut
	// MedianRel and MaxRel are the median and max of |Rel| over the cells.
	MedianRel, MaxRel float64
}

// Check predicts each held cell at its realised mean length and batch size (a cell
// outside the fitted range is predicted and flagged) and returns the relative errors.
func (m *Model) Check(held []Obs) (*Validation, error) {
	v := &Validation{}
	var rel []float64
	for _, o := range held {
		p, err := m.Predict(o.MeanLen, o.Batch, true)
		if err != nil {
			return nil, err
		}
		h := HeldOut{Obs: o, PredMs: p.Ms, Rel: (p.Ms - o.FwdMs) / o.FwdMs, Extrapolated: p.Extrapolated}
		v.Cells = append(v.Cells, h)
		rel = append(rel, math.Abs(h.Rel))
	}
	if len(rel) > 0 {
		v.MedianRel, v.MaxRel = stats.Median(rel), slices.Max(rel)
	}
	return v, nil
}

// WriteHeldOut predicts the cells held out of m's fit (every n-th, [Split]) with [Model.Check]
// and writes them under a line saying so; nothing for none. Errors as Check's.
func (m *Model) WriteHeldOut(w io.Writer, held []Obs, n int) error {
	if len(held) == 0 {
		return nil
	}
	v, err := m.Check(held)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nheld out (one cell in %d), predicted by the model fitted on the others:\n\n", n)
	v.WriteMarkdown(w)
	return nil
}

// WriteMarkdown writes one row per held-out cell and the median and max error.
func (v *Validation) WriteMarkdown(w io.Writer) {
	rows := [][]string{{"L", "B", "mean len", "measured ms", "predicted ms", "error", "note"}}
	for _, h := range v.Cells {
		note := ""
		if h.Extrapolated {
			note = "extrapolated"
		}
		rows = append(rows, []string{strconv.Itoa(h.SeqLen), strconv.Itoa(h.Batch), strconv.FormatFloat(h.MeanLen, 'f', 0, 64), f3(h.FwdMs), f3(h.PredMs), pct(h.Rel), note})
	}
	table(w, rows)
	fmt.Fprintf(w, "\nheld-out cells: %d · |error| median %.2f %%, max %.2f %%\n", len(v.Cells), 100*v.MedianRel, 100*v.MaxRel)
}
