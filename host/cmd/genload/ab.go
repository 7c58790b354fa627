package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/run"
)

func cmdAB(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("ab", "genload ab -a A.toml -b B.toml [--pairs 5] [--max-diff PCT] [--confidence 0.95] [--json FILE]",
		`Paired A/B comparison on identical prompts: two configurations (two targets, array vs
routed, two engine profiles, …) are prepared side by side; for every cell of A's matrix, A
plans the cell once (lengths, prompts, route) and both sides measure that exact plan, in pairs
of alternating order (AB, BA, AB, …), so that a slow drift of the machine falls on both sides
alike. Per pair the relative difference d = fwd_B / fwd_A − 1 of the mean per-forward latency;
per cell the mean of d over the pairs with its two-sided Student t interval (--confidence) and
a verdict: B slower or B faster when the interval excludes 0, else no significant
difference. B's matrix must hold A's cells, and both sides must generate the same max_tokens.

A pair in which one side's record has no per-forward figure (or is not status ok) is left
out with the record's reason; the cell keeps its other pairs, and a cell left with fewer than
two has no interval and no verdict ("too few pairs"). A failed request (the target failed)
stops the comparison, exit 5. Ctrl-C stops it too: the cells finished so far are printed and
written, exit 130. --json FILE writes every pair (each side's per-forward mean, d, the order,
the reason of a pair left out) and each cell's interval, rewritten after every cell.

Built-in engines: each side starts its own, and with [engine] noise each side's engine draws
its own noise (a seed derived from the configured one and the side, recorded in --json), so
that a config against itself shows the noise in its intervals instead of cancelling it.

With --max-diff the command exits with code 6 (thresholds failed) when some cell's interval
lies wholly beyond ±PCT % — a difference larger than allowed, with that confidence — or when a
cell has no interval to check; for CI.`,
		[][2]string{
			{"a config against a copy with another engine profile", "genload ab -a bench.toml -b slower.toml"},
			{"fail CI when a cell is more than 5 % apart", "genload ab -a base.toml -b new.toml --max-diff 5"},
			{"keep every pair to check the intervals", "genload ab -a base.toml -b new.toml --json ab.json"},
		}, e)
	aPath := fs.String("a", "", "side A's bench.toml (required): the plans are A's")
	bPath := fs.String("b", "", "side B's bench.toml (required)")
	pairs := fs.Int("pairs", 5, "measured pairs per cell (≥ 2; a t interval needs two)")
	maxDiff := fs.Float64("max-diff", 0, "exit with code 6 when a cell's interval lies wholly beyond ±PCT percent, or a cell has none (0 = no threshold)")
	conf := fs.Float64("confidence", 0.95, "two-sided confidence of each cell's interval, in (0, 1)")
	jsonPath := fs.String("json", "", "write every pair and each cell's interval to FILE (JSON, rewritten after each cell)")
	if err := parse(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return exitcode.Errorf(exitcode.Usage, "unexpected argument %q: the configs are given with -a and -b (see 'genload ab --help')", fs.Arg(0))
	case *aPath == "" || *bPath == "":
		return exitcode.Errorf(exitcode.Usage, "-a A.toml and -b B.toml are both required (see 'genload ab --help')")
	case *pairs < 2:
		return exitcode.Errorf(exitcode.Usage, "--pairs %d: want ≥ 2 (a t interval needs two pairs)", *pairs)
	case !(*maxDiff >= 0):
		return exitcode.Errorf(exitcode.Usage, "--max-diff %g: want a percentage ≥ 0 (0 = no threshold)", *maxDiff)
	case !(*conf > 0 && *conf < 1):
		return exitcode.Errorf(exitcode.Usage, "--confidence %g: want a confidence in (0, 1), such as 0.95", *conf)
	}
	paths := []string{*aPath, *bPath}
	var maxTokens [2]int
	cfgs := make([]*config.Config, 2)
	for i, p := range paths {
		cfg, err := loadConfig(p)
		if err != nil {
			return fmt.Errorf("side %c: %w", 'A'+i, err)
		}
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("side %c: %w", 'A'+i, err)
		}
		cfgs[i], maxTokens[i] = cfg, cfg.MaxTokens
	}
	if maxTokens[0] != maxTokens[1] {
		// B measures A's plans with its own settings: sequences of another length are not the
		// same forward passes, and B's records would come back partial.
		return exitcode.Errorf(exitcode.InvalidConfig, "max_tokens differs: %d in A (%s), %d in B (%s); the sides must generate the same tokens per sequence",
			maxTokens[0], *aPath, maxTokens[1], *bPath)
	}
	sides := make([]*run.Session, 2)
	for i, cfg := range cfgs {
		s, err := run.Prepare(ctx, cfg, run.Options{Stderr: e.stderr, Version: version, Getenv: e.getenv,
			EngineStart: fmt.Sprintf("ab side %c", 'A'+i)}) // the sides' built-in engines draw independent noise
		if err != nil {
			return fmt.Errorf("side %c (%s): %w", 'A'+i, paths[i], err)
		}
		defer s.Close()
		sides[i] = s
	}
	inB := map[[2]int]bool{}
	for _, c := range sides[1].Cells() {
		inB[[2]int{c.SeqLen, c.Batch}] = true
	}
	for _, c := range sides[0].Cells() {
		if !inB[[2]int{c.SeqLen, c.Batch}] {
			return exitcode.Errorf(exitcode.InvalidConfig, "cell %s of A's matrix is not in B's (%s): compare the same matrix", c.Key(), *bPath)
		}
	}
	// Two configurations compared on one plan: the served model, labels and engine profile
	// may be what differs; max_tokens may not (checked above).
	ids := []report.Identity{report.IdentityOf("A "+*aPath, sides[0].Header()), report.IdentityOf("B "+*bPath, sides[1].Header())}
	report.Prose(e.stdout, "", "  ", report.CheckComparable(ids).Line(append([]string{report.FieldModel, report.FieldLabels}, report.AcrossDeployments...)...))
	doc := abDoc{A: *aPath, B: *bPath, Pairs: *pairs, Confidence: *conf, Engines: [2]map[string]any{sides[0].Header().Engine, sides[1].Header().Engine}, Cells: []abCell{}}
	var runErr error
	for _, c := range sides[0].Cells() {
		row, err := abMeasure(ctx, []abSide{sides[0], sides[1]}, c, *pairs, *conf)
		if err != nil {
			runErr = err
			break
		}
		if row.N >= 2 {
			fmt.Fprintf(e.stderr, "%s: d = %+.2f %% [%+.2f, %+.2f] %s\n", c.Key(), 100*row.Mean, 100*row.Lo, 100*row.Hi, row.Verdict)
		} else {
			fmt.Fprintf(e.stderr, "%s: %s\n", c.Key(), row.Verdict)
		}
		doc.Cells = append(doc.Cells, row)
		if *jsonPath != "" {
			if err := writeABJSON(*jsonPath, doc); err != nil {
				return err
			}
		}
	}
	if runErr != nil {
		doc.Status, doc.Error = "error", runErr.Error()
		if exitcode.Of(runErr) == exitcode.Interrupted {
			doc.Status = "interrupted"
		}
	} else {
		doc.Status = "ok"
	}
	writeAB(e.stdout, doc, len(sides[0].Cells()))
	if *jsonPath != "" {
		if err := writeABJSON(*jsonPath, doc); err != nil {
			return errors.Join(runErr, err)
		}
		fmt.Fprintf(e.stdout, "pairs: %s\n", *jsonPath)
	}
	if runErr != nil {
		return runErr
	}
	if *maxDiff > 0 {
		for _, r := range doc.Cells {
			if r.N < 2 {
				return exitcode.Errorf(exitcode.ThresholdsFailed, "cell %s: no interval to hold to --max-diff ±%g %% (%s)", r.Cell.Key(), *maxDiff, r.Verdict)
			}
			if 100*r.Lo > *maxDiff || 100*r.Hi < -*maxDiff {
				return exitcode.Errorf(exitcode.ThresholdsFailed, "cell %s: B − A per-forward difference %+.2f %% [%+.2f, %+.2f] lies beyond --max-diff ±%g %%",
					r.Cell.Key(), 100*r.Mean, 100*r.Lo, 100*r.Hi, *maxDiff)
			}
		}
		fmt.Fprintf(e.stdout, "threshold: no cell's interval lies beyond ±%g %%: ok\n", *maxDiff)
	}
	return nil
}

// abDoc is what --json writes: the sides, the settings, each side's built-in engine info (nil
// for a server; its noise string holds the seed used), every finished cell, and how the
// comparison ended (Status "ok", "error" or "interrupted", "" while running, with Error).
type abDoc struct {
	A          string            `json:"a"`
	B          string            `json:"b"`
	Pairs      int               `json:"pairs"`
	Confidence float64           `json:"confidence"`
	Engines    [2]map[string]any `json:"engines"`
	Cells      []abCell          `json:"cells"`
	Status     string            `json:"status"`
	Error      string            `json:"error,omitempty"`
}

// abPair is one measured pair: its 1-based index, the order the sides were measured in ("AB"
// or "BA"), each side's mean per-forward latency in ms (0 when that side has none) and
// d = fwd_B / fwd_A − 1; or, when the pair is left out of the cell's interval, Skipped with
// the side's record's reason. TruthAms and TruthBms are, for a side that is a built-in
// engine, its own mean decode step time over the measured request (from its /metrics: the
// steps' wall-clock durations as the engine measured them, injected noise included; without
// the client's timing), 0 otherwise.
type abPair struct {
	Pair     int      `json:"pair"`
	Order    string   `json:"order"`
	FwdAms   float64  `json:"fwd_a_ms,omitempty"`
	FwdBms   float64  `json:"fwd_b_ms,omitempty"`
	TruthAms float64  `json:"truth_a_ms,omitempty"`
	TruthBms float64  `json:"truth_b_ms,omitempty"`
	D        *float64 `json:"d,omitempty"`
	Skipped  string   `json:"skipped,omitempty"`
}

// abCell is one cell's paired comparison: every pair, the N pairs with a difference D
// (B/A − 1), their mean and t interval [Lo, Hi] (N ≥ 2; else absent and Verdict says why),
// and each side's mean per-forward latency over those pairs in ns.
type abCell struct {
	Cell        matrix.Cell `json:"cell"`
	PairList    []abPair    `json:"pair_list"`
	N           int         `json:"n"`
	D           []float64   `json:"-"`
	Mean        float64     `json:"mean,omitempty"`
	Lo          float64     `json:"lo,omitempty"`
	Hi          float64     `json:"hi,omitempty"`
	FwdA        float64     `json:"fwd_a_ns,omitempty"`
	FwdB        float64     `json:"fwd_b_ns,omitempty"`
	Verdict     string      `json:"verdict"`
	significant bool
}

// abSide is one side of an A/B comparison (a *run.Session; tests fake it).
type abSide interface {
	Plan(ctx context.Context, c matrix.Cell) (*run.Plan, error)
	MeasurePlan(ctx context.Context, p *run.Plan) (report.Cell, error)
}

var _ abSide = (*run.Session)(nil)

// noFigure returns why rec gives no per-forward figure to compare ("" when it does): its
// status, error, the figure's own reason, its warnings.
func noFigure(rec report.Cell) string {
	if rec.Status == report.StatusOK && rec.Figures != nil && rec.Figures.PerForward.N > 0 {
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

// abMeasure plans c on side A once and measures the plan on both sides, pairs times, in
// alternating order (AB, BA, …). A pair whose record on either side has no per-forward figure
// is kept in PairList with its reason and left out of the interval; fewer than two pairs left
// give no interval (Verdict says why). A failed measurement (the target failed, an interrupt:
// exit code Interrupted) is the error, with the row as far as it got.
func abMeasure(ctx context.Context, sides []abSide, c matrix.Cell, pairs int, conf float64) (abCell, error) {
	row := abCell{Cell: c, PairList: []abPair{}}
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
		p := abPair{Pair: i + 1, Order: "AB"}
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

// firstSkip returns the first left-out pair's reason.
func firstSkip(ps []abPair) string {
	for _, p := range ps {
		if p.Skipped != "" {
			return fmt.Sprintf("pair %d, %s", p.Pair, p.Skipped)
		}
	}
	return ""
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

// writeAB writes the per-cell table of doc's finished cells (of = the cells of A's matrix)
// and the count of verdicts.
func writeAB(w io.Writer, doc abDoc, of int) {
	rows, pairs, conf := doc.Cells, doc.Pairs, doc.Confidence
	fmt.Fprintf(w, "\n## Paired A/B: per-forward latency, B vs A on identical prompts (%d pairs per cell, AB/BA alternating)\n\n", pairs)
	fmt.Fprintf(w, "| L | B | pairs | A fwd ms | B fwd ms | B − A %% | %.0f %% interval %% | verdict |\n", 100*conf)
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---|---|")
	sig, none := 0, 0
	for _, r := range rows {
		if r.N < 2 {
			none++
			fmt.Fprintf(w, "| %d | %d | %d | – | – | – | – | %s |\n", r.Cell.SeqLen, r.Cell.Batch, r.N, r.Verdict)
			continue
		}
		if r.significant {
			sig++
		}
		f := func(x float64) string { return strconv.FormatFloat(100*x, 'f', 2, 64) }
		fmt.Fprintf(w, "| %d | %d | %d | %.3f | %.3f | %s | [%s, %s] | %s |\n", r.Cell.SeqLen, r.Cell.Batch, r.N, r.FwdA/1e6, r.FwdB/1e6, f(r.Mean), f(r.Lo), f(r.Hi), r.Verdict)
	}
	compared := len(rows) - none
	shows := "show"
	if compared-sig == 1 {
		shows = "shows"
	}
	fmt.Fprintf(w, "\nA = %s, B = %s: %d of %d compared cells differ significantly at %.0f %%; %d %s no significant difference",
		doc.A, doc.B, sig, compared, 100*conf, compared-sig, shows)
	if none > 0 {
		fmt.Fprintf(w, "; %d without an interval (too few pairs)", none)
	}
	if len(rows) < of {
		fmt.Fprintf(w, "; %d of %d cells not measured (stopped)", of-len(rows), of)
	}
	fmt.Fprintln(w)
}

// writeABJSON writes doc to path through a temporary file in the same directory, so that a
// reader (or a crash) never sees half a file.
func writeABJSON(path string, doc abDoc) error {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("--json %s: %w", path, err)
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("--json %s: %w", path, err)
	}
	return nil
}
