package latmodel

import (
	"fmt"
	"math"

	"github.com/genload/genload/host/stats"
)

// RunLevel is one run's level against the model fitted to all the runs: the mean over the
// run's fitted cells of ln(fwd / fitted), a fraction (+0.02: the run measured 2 % slower than
// the model).
type RunLevel struct {
	Run   string  `json:"run"`
	Level float64 `json:"level"`
	Cells int     `json:"cells"`
}

// scatterOf returns the robust relative scatter of fitted cells: 1.4826 × the median over the
// cells of |fwd − fitted| / fitted (the standard deviation, for Gaussian errors, of one cell's
// relative error about the model), 0 for no cell.
func scatterOf(obs []Obs) float64 {
	rel := make([]float64, 0, len(obs))
	for _, o := range obs {
		if o.FittedMs > 0 {
			rel = append(rel, math.Abs(o.FwdMs-o.FittedMs)/o.FittedMs)
		}
	}
	if len(rel) == 0 {
		return 0
	}
	return stats.MADScale * stats.Median(rel)
}

// Level is the uncertainty of a model's level: how far, as a fraction, all of its predictions
// may be off together because the run(s) it was fitted to were, as a whole, slower or faster
// than the deployment usually is — which no number of cells within one run reveals. See
// RATIONALE.md.
type Level struct {
	// SD is the relative standard uncertainty of the level and DoF its degrees of freedom.
	SD  float64 `json:"sd_rel"`
	DoF float64 `json:"dof"`
	// From says which estimate SD is: the spread of the runs' levels (two or more runs), or
	// the cells' scatter (one run).
	From string `json:"from"`
	// Runs is the number of runs (repeats) the model was fitted to.
	Runs int `json:"runs"`
}

// Measured reports whether the level was measured from repeats (two or more runs), not
// assumed from one run's cell scatter.
func (l Level) Measured() bool { return l.Runs >= 2 }

// Level returns the model's level uncertainty:
//
//	one run:     u = Scatter,                                  N − p degrees of freedom
//	r ≥ 2 runs:  u = max(SD(run levels) / √r, Scatter / √N),  r − 1 degrees of freedom
//
// (N the cells fitted over all the runs.)
// A run's cells share its host, its server's state and the minutes it was measured in, so
// the whole run may be off together, and one run cannot tell by how much: genload takes it to
// be as uncertain as the run's cells scatter about the model (conservative when the cells'
// errors are independent, as under the built-in engine's injected noise). Repeats measure it:
// each run's level (the mean log ratio of its cells to the model fitted to all of them) is one
// draw of it, and their spread, with Student's t of r − 1 degrees of freedom, bounds the
// level of their mean. Each run's level is a mean over its cells, so it carries their noise:
// the mean of r runs' levels is known no better than Scatter / √N, whatever the few runs'
// spread — two runs whose cells scattered ±26 % and whose means happened to agree to 0.01 %
// do not measure the level to 0.01 %.
func (m *Model) Level() Level {
	scatter := m.cellScatter()
	if r := len(m.RunLevels); r >= 2 {
		lv := make([]float64, r)
		for i, x := range m.RunLevels {
			lv[i] = x.Level
		}
		_, se := stats.Pool(lv) // the mean of the runs' levels, SD/√r
		n := m.runCells()
		from := fmt.Sprintf("spread of %d runs' levels", r)
		if floor := scatter / math.Sqrt(float64(max(n, 1))); floor > se {
			se, from = floor, fmt.Sprintf("%d runs: their cells' scatter over %d cells (their levels' spread is less)", r, n)
		}
		return Level{SD: se, DoF: float64(r - 1), From: from, Runs: r}
	}
	return Level{SD: scatter, DoF: float64(max(m.DoF, 1)), From: "one run: its cells' scatter", Runs: 1}
}

// cellScatter is the model's Scatter, or for a model file written without it, the scatter of
// its cells (scatterOf).
func (m *Model) cellScatter() float64 {
	if m.Scatter == 0 && len(m.Obs) > 0 {
		return scatterOf(m.Obs)
	}
	return m.Scatter
}

// runCells is the number of cells fitted over all the runs of m (Σ RunLevels' Cells).
func (m *Model) runCells() int {
	n := 0
	for _, x := range m.RunLevels {
		n += x.Cells
	}
	return n
}

// runCell is one used cell of one run: its (L, B) and per-forward figure, ms.
type runCell struct {
	key [2]int
	fwd float64
}

// runLevels returns each run's level against m (see RunLevel): perRun[k] are run k's used
// cells, in the run's order (the sum is then the same on every call).
func (m *Model) runLevels(ids []string, perRun [][]runCell) []RunLevel {
	fitted := map[[2]int]float64{}
	for _, o := range m.Obs {
		fitted[[2]int{o.SeqLen, o.Batch}] = o.FittedMs
	}
	var out []RunLevel
	for k, cells := range perRun {
		var sum float64
		n := 0
		for _, c := range cells {
			if f, ok := fitted[c.key]; ok && f > 0 && c.fwd > 0 {
				sum += math.Log(c.fwd / f)
				n++
			}
		}
		if n > 0 {
			out = append(out, RunLevel{Run: ids[k], Level: sum / float64(n), Cells: n})
		}
	}
	return out
}
