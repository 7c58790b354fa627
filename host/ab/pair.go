package ab

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/genload/genload/host/compare"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/stats"

	"gonum.org/v1/gonum/stat"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/run"
)

// side is one side of an A/B comparison (a *run.Session; tests fake it).
type side interface {
	Plan(ctx context.Context, c matrix.Cell) (*run.Plan, error)
	MeasurePlan(ctx context.Context, p *run.Plan) (results.Cell, error)
}

var _ side = (*run.Session)(nil)

// noFigure returns why rec gives no per-forward figure to compare ("" when it does): its
// status, error, the figure's own reason, its warnings.
func noFigure(rec results.Cell) string {
	if rec.Status == results.StatusOK && rec.Figures != nil && rec.Figures.PerForward.N > 0 {
		return ""
	}
	why := []string{"status " + rec.Status}
	if rec.Error != "" {
		why = append(why, rec.Error)
	}
	if rec.Figures == nil {
		why = append(why, "no figures")
	} else if rec.Figures.PerForward.N == 0 {
		r := rec.Figures.PerForwardReason
		if r == "" {
			r = "no reason recorded"
		}
		why = append(why, "no per-forward figure: "+r)
	}
	why = append(why, rec.Warnings...)
	return strings.Join(why, "; ")
}

// measureCell plans c on side A once and measures the plan on both sides, pairs times, in
// alternating order (AB, BA, …). A pair whose record on either side has no per-forward figure
// is kept in PairList with its reason and left out of the interval; fewer than two pairs left
// give no interval (Verdict says why). A failed measurement (the target failed, an interrupt:
// exit code Interrupted) is the error, with the row as far as it got.
func measureCell(ctx context.Context, sides []side, c matrix.Cell, pairs int, conf float64) (Cell, error) {
	row := Cell{Cell: c, PairList: []Pair{}}
	plan, err := sides[0].Plan(ctx, c)
	if ctx.Err() != nil {
		return row, &exitcode.Error{Code: exitcode.Interrupted, Err: fmt.Errorf("interrupted while planning cell %s", c.Key())}
	}
	if err != nil {
		return row, fmt.Errorf("cell %s: side A's plan: %w", c.Key(), err)
	}
	var as, bs []float64
	for i := range pairs {
		var v [2]float64
		order := []int{0, 1}
		p := Pair{Pair: i + 1, Order: "AB"}
		if i%2 == 1 {
			order, p.Order = []int{1, 0}, "BA"
		}
		var skip []string
		for _, side := range order {
			rec, err := sides[side].MeasurePlan(ctx, plan)
			if ctx.Err() != nil {
				return row, &exitcode.Error{Code: exitcode.Interrupted, Err: fmt.Errorf("interrupted during cell %s, pair %d, side %c", c.Key(), i+1, 'A'+side)}
			}
			if err != nil {
				return row, fmt.Errorf("cell %s, pair %d, side %c: %w", c.Key(), i+1, 'A'+side, err)
			}
			if m := rec.Server; m != nil && m.Steps.HasTruthDecode {
				truth := float64(m.Steps.TruthDecodeStepTime) / 1e6
				if side == 0 {
					p.TruthAms = truth
				} else {
					p.TruthBms = truth
				}
			}
			if why := noFigure(rec); why != "" {
				skip = append(skip, fmt.Sprintf("side %c: %s", 'A'+side, why))
				continue
			}
			v[side] = float64(rec.Figures.PerForward.Mean)
		}
		p.FwdAms, p.FwdBms = v[0]/1e6, v[1]/1e6
		if len(skip) > 0 {
			p.Skipped = strings.Join(skip, "; ")
		} else {
			d := v[1]/v[0] - 1
			p.D = &d
			as, bs = append(as, v[0]), append(bs, v[1])
			row.D = append(row.D, d)
		}
		row.PairList = append(row.PairList, p)
	}
	row.N = len(row.D)
	if row.N < 2 {
		row.Verdict = fmt.Sprintf("too few pairs (%d of %d with a figure on both sides): %s", row.N, pairs, firstSkip(row.PairList))
		return row, nil
	}
	row.FwdA, row.FwdB, row.Mean, row.Lo, row.Hi = ratioInterval(as, bs, conf)
	row.Verdict, row.significant = Verdict(row.Lo, row.Hi)
	return row, nil
}

// Verdicts of a cell whose interval holds 0 (compare.ABVerdict's).
const (
	VerdictWithin     = compare.ABNoDifference
	VerdictCannotTell = compare.ABCannotTell
)

// Verdict is compare.ABVerdict: a change's verdict from its interval and whether it is
// significant.
func Verdict(lo, hi float64) (string, bool) { return compare.ABVerdict(lo, hi) }

// ratioInterval returns the geometric means of the pairs' sides as (ns) and bs (ns, one
// each per pair, n ≥ 2, positive) and the change B/A − 1 with its t interval at confidence
// conf, all taken on the logarithm of each pair's ratio r_i = b_i / a_i:
//
//	ℓ_i = ln r_i,  ℓ̄ ± t(1 − (1 − conf)/2; n − 1) · s_ℓ / √n,  change = exp(·) − 1
//
// A ratio of latencies is multiplicative: its log is symmetric about 0 for a side twice as
// fast or as slow, and the bounds, mapped back, never pass −100 %, which the mean of the
// relative differences r_i − 1 does when a pair is noisy. exp(ℓ̄) is the ratio of the two
// geometric means, so the change printed is exactly that of the two columns beside it.
func ratioInterval(as, bs []float64, conf float64) (fwdA, fwdB, change, lo, hi float64) {
	la, lb, lr := make([]float64, len(as)), make([]float64, len(bs)), make([]float64, len(as))
	for i := range as {
		la[i], lb[i] = math.Log(as[i]), math.Log(bs[i])
		lr[i] = lb[i] - la[i]
	}
	m, l, h := stats.TInterval(lr, conf)
	return math.Exp(stat.Mean(la, nil)), math.Exp(stat.Mean(lb, nil)), math.Expm1(m), math.Expm1(l), math.Expm1(h)
}

// firstSkip returns the first left-out pair's reason.
func firstSkip(ps []Pair) string {
	for _, p := range ps {
		if p.Skipped != "" {
			return fmt.Sprintf("pair %d, %s", p.Pair, p.Skipped)
		}
	}
	return ""
}
