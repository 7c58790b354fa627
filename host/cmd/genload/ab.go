package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/run"
)

func cmdAB(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("ab", "genload ab -a A.toml -b B.toml [--pairs 5] [--max-diff PCT] [--confidence 0.95]",
		`Paired A/B comparison on identical prompts: two configurations (two targets, array vs
routed, two engine profiles, …) are prepared side by side; for every cell of A's matrix, A
plans the cell once (lengths, prompts, route) and both sides measure that exact plan, in pairs
of alternating order (AB, BA, AB, …), so that a slow drift of the machine falls on both sides
alike. Per pair the relative difference d = fwd_B / fwd_A − 1 of the mean per-forward latency;
per cell the mean of d over the pairs with its two-sided Student t interval (--confidence) and
a verdict: B slower or B faster when the interval excludes 0, else no significant
difference. B's matrix must hold A's cells.

With --max-diff the command exits with code 6 (thresholds failed) when some cell's interval
lies wholly beyond ±PCT % — a difference larger than allowed, with that confidence — for CI.`,
		[][2]string{
			{"a config against a copy with another engine profile", "genload ab -a bench.toml -b slower.toml"},
			{"fail CI when a cell is more than 5 % apart", "genload ab -a base.toml -b new.toml --max-diff 5"},
		}, e)
	aPath := fs.String("a", "", "side A's bench.toml (required): the plans are A's")
	bPath := fs.String("b", "", "side B's bench.toml (required)")
	pairs := fs.Int("pairs", 5, "measured pairs per cell (≥ 2; a t interval needs two)")
	maxDiff := fs.Float64("max-diff", 0, "exit with code 6 when a cell's interval lies wholly beyond ±PCT percent (0 = no threshold)")
	conf := fs.Float64("confidence", 0.95, "two-sided confidence of each cell's interval, in (0, 1)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 || *aPath == "" || *bPath == "" || *pairs < 2 || *maxDiff < 0 || !(*conf > 0 && *conf < 1) {
		return exitcode.Errorf(exitcode.Usage, "want -a A.toml -b B.toml, --pairs ≥ 2, --max-diff ≥ 0, --confidence in (0, 1) (see 'genload ab --help')")
	}
	sides := make([]*run.Session, 2)
	for i, p := range []string{*aPath, *bPath} {
		cfg, err := loadConfig(p)
		if err != nil {
			return err
		}
		if err := cfg.Validate(); err != nil {
			return err
		}
		s, err := run.Prepare(ctx, cfg, run.Options{Stderr: e.stderr, Version: version, Getenv: e.getenv,
			EngineStart: fmt.Sprintf("ab side %c", 'A'+i)}) // the sides' built-in engines draw independent noise
		if err != nil {
			return fmt.Errorf("side %c (%s): %w", 'A'+i, p, err)
		}
		defer s.Close()
		sides[i] = s
	}
	inB := map[[2]int]bool{}
	for _, c := range sides[1].Cells() {
		inB[[2]int{c.SeqLen, c.Batch}] = true
	}
	var rows []abCell
	for _, c := range sides[0].Cells() {
		if !inB[[2]int{c.SeqLen, c.Batch}] {
			return exitcode.Errorf(exitcode.InvalidConfig, "cell %s of A's matrix is not in B's (%s): compare the same matrix", c.Key(), *bPath)
		}
		row, err := abMeasure(ctx, []abSide{sides[0], sides[1]}, c, *pairs, *conf)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "%s: d = %+.2f %% [%+.2f, %+.2f] %s\n", c.Key(), 100*row.Mean, 100*row.Lo, 100*row.Hi, row.Verdict)
		rows = append(rows, row)
	}
	writeAB(e.stdout, rows, *pairs, *conf)
	if *maxDiff > 0 {
		for _, r := range rows {
			if 100*r.Lo > *maxDiff || 100*r.Hi < -*maxDiff {
				return exitcode.Errorf(exitcode.ThresholdsFailed, "cell %s: B − A per-forward difference %+.2f %% [%+.2f, %+.2f] lies beyond --max-diff ±%g %%",
					r.Cell.Key(), 100*r.Mean, 100*r.Lo, 100*r.Hi, *maxDiff)
			}
		}
		fmt.Fprintf(e.stdout, "threshold: no cell's interval lies beyond ±%g %%: ok\n", *maxDiff)
	}
	return nil
}

// abCell is one cell's paired comparison: the pairs' relative differences D (B/A − 1), their
// mean and t interval [Lo, Hi], and each side's mean per-forward latency over the pairs.
type abCell struct {
	Cell        matrix.Cell
	D           []float64
	Mean        float64
	Lo, Hi      float64
	FwdA, FwdB  float64 // ns
	Verdict     string
	significant bool
}

// abSide is one side of an A/B comparison (a *run.Session; tests fake it).
type abSide interface {
	Plan(ctx context.Context, c matrix.Cell) (*run.Plan, error)
	MeasurePlan(ctx context.Context, p *run.Plan) (report.Cell, error)
}

var _ abSide = (*run.Session)(nil)

// abMeasure plans c on side A once and measures the plan on both sides, pairs times, in
// alternating order (AB, BA, …). A failed measurement is the command's error.
func abMeasure(ctx context.Context, sides []abSide, c matrix.Cell, pairs int, conf float64) (abCell, error) {
	row := abCell{Cell: c}
	plan, err := sides[0].Plan(ctx, c)
	if err != nil {
		return row, fmt.Errorf("cell %s: side A's plan: %w", c.Key(), err)
	}
	var as, bs []float64
	for i := range pairs {
		var v [2]float64
		order := []int{0, 1}
		if i%2 == 1 {
			order = []int{1, 0}
		}
		for _, side := range order {
			rec, err := sides[side].MeasurePlan(ctx, plan)
			if err != nil {
				return row, fmt.Errorf("cell %s, pair %d, side %c: %w", c.Key(), i+1, 'A'+side, err)
			}
			if rec.Status != report.StatusOK || rec.Figures == nil || rec.Figures.PerForward.N == 0 {
				return row, exitcode.Errorf(exitcode.TargetFailed, "cell %s, pair %d, side %c: status %s, no per-forward figure", c.Key(), i+1, 'A'+side, rec.Status)
			}
			v[side] = float64(rec.Figures.PerForward.Mean)
		}
		as, bs = append(as, v[0]), append(bs, v[1])
		row.D = append(row.D, v[1]/v[0]-1)
	}
	row.FwdA, row.FwdB = stat.Mean(as, nil), stat.Mean(bs, nil)
	row.Mean, row.Lo, row.Hi = tInterval(row.D, conf)
	switch {
	case row.Lo > 0:
		row.Verdict, row.significant = "B slower", true
	case row.Hi < 0:
		row.Verdict, row.significant = "B faster", true
	default:
		row.Verdict = "no significant difference"
	}
	return row, nil
}

// tInterval returns the mean of xs (n ≥ 2) and its two-sided Student t interval at
// confidence conf: mean ± t(1 − (1 − conf)/2; n − 1) · s / √n, s the sample SD.
func tInterval(xs []float64, conf float64) (mean, lo, hi float64) {
	mean, sd := stat.MeanStdDev(xs, nil)
	n := float64(len(xs))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Quantile(1 - (1-conf)/2)
	h := t * sd / math.Sqrt(n)
	return mean, mean - h, mean + h
}

// writeAB writes the per-cell table and the count of verdicts.
func writeAB(w io.Writer, rows []abCell, pairs int, conf float64) {
	fmt.Fprintf(w, "\n## Paired A/B: per-forward latency, B vs A on identical prompts (%d pairs per cell, AB/BA alternating)\n\n", pairs)
	fmt.Fprintf(w, "| L | B | A fwd ms | B fwd ms | B − A %% | %.0f %% interval %% | verdict |\n", 100*conf)
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---|---|")
	sig := 0
	for _, r := range rows {
		if r.significant {
			sig++
		}
		f := func(x float64) string { return strconv.FormatFloat(100*x, 'f', 2, 64) }
		fmt.Fprintf(w, "| %d | %d | %.3f | %.3f | %s | [%s, %s] | %s |\n", r.Cell.SeqLen, r.Cell.Batch, r.FwdA/1e6, r.FwdB/1e6, f(r.Mean), f(r.Lo), f(r.Hi), r.Verdict)
	}
	fmt.Fprintf(w, "\n%d of %d cells differ significantly at %.0f %%; %d show no significant difference\n", sig, len(rows), 100*conf, len(rows)-sig)
}
