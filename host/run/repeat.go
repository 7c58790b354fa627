package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/repeat"
	"github.com/genload/genload/host/results"
)

// CellRepeats is how a cell of a run with repeats ([Options.Repeats]) ended.
type CellRepeats struct {
	Cell matrix.Cell
	// Repeats is the number of times the cell was measured (its records); Values the
	// measured repeats among them (status ok with a per-forward sample), whose mean
	// per-forward latencies the rule judged.
	Repeats, Values int
	// Verdict is the rule's last answer on the values (Stable, or Exhausted: flagged; Done
	// under a fixed count).
	Verdict repeat.Verdict
	// Failed is the error of a repeat that failed, when the cell was closed by it
	// ([run] on_error = "continue"); the cell is then neither stable nor exhausted.
	Failed string
	// Stopped is why the cell's repeats did not end by the rule, when the run stopped while
	// the cell was still open: "interrupted" (the run was interrupted) or "stopped" (the run
	// stopped at another cell's failed repeat, or could not write its results). Verdict is
	// then the rule's answer on the values measured so far, all of them (CV, UpperCV), and is
	// neither stable nor exhausted. "" for a cell whose repeats ended by the rule or failed.
	Stopped string
	// Wall is the sum of the cell's records' elapsed times (its share of the run's GPU time,
	// per GPU).
	Wall time.Duration
}

// Flagged reports whether the cell's repeats did not end as the protocol meant: not stable
// under a stopping rule (exhausted, failed or stopped), not all measured under a fixed count
// (failed or stopped).
func (c CellRepeats) Flagged() bool { return !c.Verdict.Stable && !c.Verdict.Done }

// Outcome is how the cell's repeats ended, as the summary writes it: "failed" (Failed),
// "interrupted" or "stopped" (Stopped), "stable", "done" (a fixed count measured), or
// "flagged" (exhausted: MaxRepeats reached without meeting the target).
func (c CellRepeats) Outcome() string {
	switch {
	case c.Failed != "":
		return "failed"
	case c.Stopped != "":
		return c.Stopped
	case c.Verdict.Stable:
		return "stable"
	case c.Verdict.Done:
		return "done"
	}
	return "flagged"
}

// repeatValue is a record's value for the stopping rule: its mean per-forward latency, when
// it was measured with status ok and at least one per-forward sample (what the consistency
// report counts; a partial cell left sequences out and is not a repeat of the same figure).
func repeatValue(rec *results.Cell) (float64, bool) {
	if rec.Status != results.StatusOK || rec.Figures == nil || rec.Figures.PerForward.N == 0 {
		return 0, false
	}
	return float64(rec.Figures.PerForward.Mean), true
}

// runRepeats measures cells in rounds until each is stable under rule, or has the rule's fixed
// count of repeats (see package repeat):
// round 1 measures every cell in matrix order — the order of a run without repeats, so a
// stateful lengths or router plugin is asked for the same cells in the same order and the
// plans are that run's — and each cell's plan is then measured again, unchanged (same
// lengths, prompts and routing), in later rounds; rounds 2, 3, … visit the cells still open in
// the order repeat.Order(open, seed, round), so that a slow drift of the server falls on every
// cell alike. Round k measures every open cell's k-th repeat; newProg is called at the start
// of each round with its cells. After each round every cell's values are judged by
// rule.Judge; a cell leaves when it is stable or exhausted (flagged), or done. A repeat without
// a value (partial) counts against MaxRepeats. Every record is written before the next starts,
// with its Repeat (1-based).
//
// A failed repeat closes its cell (no more repeats of it: the server failed that cell, and its
// CV would be judged on the repeats before the failure) and stops the run (keepGoing false)
// or goes on with the other cells; an interruption stops at once. When the run stops before
// every cell is closed, each open cell is judged on every value measured, the unfinished
// round's included: one that the rule closes on them (stable, exhausted at MaxRepeats, done)
// has that verdict, the others — and the cell whose repeat was cut — are Stopped. The returned
// error is as runCells'.
//
// It is longer than 100 lines for a reason: one loop whose three early exits (a record that
// cannot be written, an interrupt, a failed repeat without keepGoing) each close the open
// cells by the same closures over the same per-cell state; the planning and the visiting
// order are roundOrder's and measureRepeat's.
func runRepeats(ctx context.Context, cr *cellRunner, cells []matrix.Cell, rule repeat.Rule, seed uint64,
	w cellWriter, newProg func(cells []matrix.Cell) *progress, keepGoing bool) ([]CellRepeats, error) {
	if err := rule.Validate(); err != nil {
		return nil, exitcode.With(exitcode.Usage, err)
	}
	out := make([]CellRepeats, len(cells))
	plans := make([]*planned, len(cells))
	values := make([][]float64, len(cells))
	open := make([]int, len(cells))
	for i, c := range cells {
		out[i].Cell = c
		open[i] = i
	}
	// decide is the rule's verdict on cell i's values, its repeats counted against MaxRepeats.
	decide := func(i int) (repeat.Verdict, error) {
		v, err := rule.Judge(values[i], out[i].Repeats)
		if err != nil { // values are positive durations: cannot happen
			return v, fmt.Errorf("cell %s: %w", cells[i].Key(), err)
		}
		return v, nil
	}
	// stop judges the cells still open when the run stops (why: "interrupted" or "stopped")
	// on all their values; cut is the cell whose repeat was cut short (-1: none).
	stop := func(why string, cut int) {
		for _, i := range open {
			if out[i].Failed != "" {
				continue
			}
			v, _ := decide(i)
			if v.Again || i == cut {
				v.Again, v.Stable, v.Exhausted, v.Done = false, false, false, false
				out[i].Stopped = why
			}
			out[i].Verdict, out[i].Values = v, len(values[i])
		}
	}
	var failed []error
	for round := 1; len(open) > 0; round++ {
		order := roundOrder(open, seed, round)
		roundCells := make([]matrix.Cell, len(order))
		for k, i := range order {
			roundCells[k] = cells[i]
		}
		prog := newProg(roundCells)
		for _, i := range order {
			c := cells[i]
			rec, err := measureRepeat(ctx, cr, c, &plans[i])
			out[i].Repeats++
			rec.Repeat = out[i].Repeats
			if ctx.Err() != nil {
				rec.Status, rec.Error = results.StatusInterrupted, "interrupted"
			}
			out[i].Wall += time.Duration(rec.Elapsed)
			if werr := w.Cell(rec); werr != nil {
				prog.finish()
				stop("stopped", i)
				return out, werr
			}
			prog.done(rec)
			if err != nil {
				if ctx.Err() != nil {
					prog.finish()
					stop("interrupted", i)
					return out, exitcode.With(exitcode.Interrupted, fmt.Errorf("interrupted during cell %s, repeat %d", c.Key(), rec.Repeat))
				}
				err = fmt.Errorf("cell %s, repeat %d: %w", c.Key(), rec.Repeat, err)
				out[i].Failed = err.Error()
				out[i].Values = len(values[i])
				out[i].Verdict, _ = rule.Decide(values[i])
				out[i].Verdict.Again, out[i].Verdict.Stable, out[i].Verdict.Exhausted, out[i].Verdict.Done = false, false, false, false
				if !keepGoing {
					prog.finish()
					stop("stopped", -1)
					return out, err
				}
				failed = append(failed, err)
				continue
			}
			if v, ok := repeatValue(&rec); ok {
				values[i] = append(values[i], v)
			}
		}
		prog.finish()
		next := open[:0:0]
		for _, i := range open {
			if out[i].Failed != "" {
				continue
			}
			v, derr := decide(i)
			if derr != nil {
				return out, derr
			}
			out[i].Verdict, out[i].Values = v, len(values[i])
			if v.Again {
				next = append(next, i)
			}
		}
		open = next
	}
	switch len(failed) {
	case 0:
		return out, nil
	case 1:
		return out, failed[0]
	}
	return out, fmt.Errorf("%d of %d cells failed ([run] on_error = %q):\n%w", len(failed), len(cells), config.OnErrorContinue, errors.Join(failed...))
}

// roundOrder is the order in which round visits the open cells (indices into the matrix):
// round 1 in matrix order, the later rounds permuted by repeat.Order(len(open), seed, round).
func roundOrder(open []int, seed uint64, round int) []int {
	order := slices.Clone(open)
	if round > 1 {
		for k, j := range repeat.Order(len(open), seed, round) {
			order[k] = open[j]
		}
	}
	return order
}

// measureRepeat measures cell c's next repeat: the first plans the cell (lengths, prompts,
// route) and keeps the plan in *plan, the later ones measure that plan again unchanged. The
// record is filled as far as the cell got; the error is the plan's or the measurement's.
func measureRepeat(ctx context.Context, cr *cellRunner, c matrix.Cell, plan **planned) (results.Cell, error) {
	if *plan != nil {
		return cr.measurePlan(ctx, (*plan).again())
	}
	p, err := cr.plan(ctx, c)
	*plan = &p
	if err != nil {
		return p.rec, err
	}
	return cr.measurePlan(ctx, p)
}

// WriteRepeats writes how the cells of a run with repeats ended: one line of totals (cells
// stable and flagged under a stopping rule, or done under a fixed count, and — when there are
// — failed and interrupted or stopped; repeats; wall time), then per cell its repeats,
// measured values, CV and, under a stopping rule, the CV's upper confidence bound (%, "–" with
// fewer than two values), the verdict ([CellRepeats.Outcome]) and its wall time in seconds
// (its share of the GPU time, per GPU), and a line per cell that did not end stable or done.
func WriteRepeats(w io.Writer, cells []CellRepeats, rule repeat.Rule) {
	r := rule.WithDefaults()
	fixed := r.Count > 0
	count := map[string]int{}
	total := 0
	var wall time.Duration
	for _, c := range cells {
		total += c.Repeats
		wall += c.Wall
		count[c.Outcome()]++
	}
	mean := 0.0
	if len(cells) > 0 {
		mean = float64(total) / float64(len(cells))
	}
	if fixed {
		fmt.Fprintf(w, "\n## Repeats: %d per cell, in interleaved rounds\n\n", r.Count)
		fmt.Fprintf(w, "%d of %d cells measured %d times", count["done"], len(cells), r.Count)
	} else {
		fmt.Fprintf(w, "\n## Repeats until the CV's %.0f %% upper bound ≤ %g %% (%d to %d repeats per cell)\n\n",
			100*r.Confidence, 100*r.TargetCV, r.MinRepeats, r.MaxRepeats)
		fmt.Fprintf(w, "%d of %d cells stable, %d flagged", count["stable"], len(cells), count["flagged"])
	}
	for _, o := range []string{"failed", "interrupted", "stopped"} {
		if count[o] > 0 {
			fmt.Fprintf(w, ", %d %s", count[o], o)
		}
	}
	fmt.Fprintf(w, "; %d repeats in all (%.2f per cell); cells' wall time %s\n\n", total, mean, wall.Round(time.Millisecond))
	if fixed {
		fmt.Fprintln(w, "| L | B | repeats | measured | CV % | verdict | wall s |")
		fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---|---:|")
	} else {
		fmt.Fprintln(w, "| L | B | repeats | measured | CV % | CV upper % | verdict | wall s |")
		fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---|---:|")
	}
	// pct is a CV in %, "–" when the cell has fewer than two values (no CV, no bound).
	pct := func(f float64, values int) string {
		if values < 2 || math.IsInf(f, 0) || math.IsNaN(f) {
			return "–"
		}
		return strconv.FormatFloat(100*f, 'f', 2, 64)
	}
	var notes []string
	for _, c := range cells {
		v := c.Verdict
		cv, up := pct(v.CV, c.Values), pct(v.UpperCV, c.Values)
		bound := ", upper bound " + up + " %"
		if fixed {
			bound = ""
		}
		switch c.Outcome() {
		case "failed":
			notes = append(notes, fmt.Sprintf("⚠ %s failed (no more repeats of it after %d, %d measured): %s", c.Cell.Key(), c.Repeats, c.Values, c.Failed))
		case "flagged":
			notes = append(notes, fmt.Sprintf("⚠ %s did not reach the target: CV %s %%, upper bound %s %% > %g %% after %d repeats (%d measured)",
				c.Cell.Key(), cv, up, 100*r.TargetCV, c.Repeats, c.Values))
		case "interrupted", "stopped":
			notes = append(notes, fmt.Sprintf("⚠ %s %s before its repeats ended: CV %s %%%s after %d repeats (%d measured)",
				c.Cell.Key(), c.Stopped, cv, bound, c.Repeats, c.Values))
		}
		if fixed {
			fmt.Fprintf(w, "| %d | %d | %d | %d | %s | %s | %.3f |\n", c.Cell.SeqLen, c.Cell.Batch, c.Repeats, c.Values, cv, c.Outcome(), c.Wall.Seconds())
		} else {
			fmt.Fprintf(w, "| %d | %d | %d | %d | %s | %s | %s | %.3f |\n", c.Cell.SeqLen, c.Cell.Batch, c.Repeats, c.Values, cv, up, c.Outcome(), c.Wall.Seconds())
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
	}
	for _, f := range notes {
		fmt.Fprintln(w, f)
	}
}

// RepeatsOf rebuilds, from a results file of a run with repeats (its header's until_cv or
// repeats, and its records), how each cell's repeats ended — what [WriteRepeats] printed at
// the end of the run — in the header's cell order, and the rule. A cell's values are its
// measured repeats (see repeatValue), in repeat order; a failed repeat makes it Failed; a cell
// whose last record was interrupted, or that the rule would measure again, was open when the
// run ended: Stopped is "interrupted" when the footer says so or is absent (the run was
// killed), else "stopped". It fails for a run whose header has neither (a run without
// repeats, or the N files of a --repeat N run of a genload before one file held them: read
// those as N runs, as genload consistency does).
func RepeatsOf(r *results.Run) ([]CellRepeats, repeat.Rule, error) {
	rule, ok := RuleOf(r.Header)
	if !ok {
		return nil, repeat.Rule{}, fmt.Errorf("run %s: the header has no until_cv or repeats (not a run of genload run --until-cv or --repeat)", r.Header.RunID)
	}
	ended := "interrupted"
	if f := r.Footer; f != nil && f.Status != results.StatusInterrupted {
		ended = "stopped"
	}
	recs := map[int][]*results.Cell{}
	for i := range r.Cells {
		c := &r.Cells[i]
		recs[c.Cell.Index] = append(recs[c.Cell.Index], c)
	}
	out := make([]CellRepeats, 0, len(r.Header.Cells))
	for _, mc := range r.Header.Cells {
		cs := recs[mc.Index]
		slices.SortFunc(cs, func(a, b *results.Cell) int { return a.Repeat - b.Repeat })
		c := CellRepeats{Cell: mc, Repeats: len(cs)}
		var values []float64
		cut := false
		for _, rec := range cs {
			c.Wall += time.Duration(rec.Elapsed)
			if v, ok := repeatValue(rec); ok {
				values = append(values, v)
			}
			switch rec.Status {
			case results.StatusError:
				c.Failed = fmt.Sprintf("cell %s, repeat %d: %s", mc.Key(), rec.Repeat, rec.Error)
			case results.StatusInterrupted:
				cut = true
			}
		}
		v, err := rule.Judge(values, c.Repeats)
		if err != nil {
			return nil, rule, fmt.Errorf("run %s, cell %s: %w", r.Header.RunID, mc.Key(), err)
		}
		if c.Failed != "" || cut || v.Again {
			v.Again, v.Stable, v.Exhausted, v.Done = false, false, false, false
			if c.Failed == "" {
				c.Stopped = ended
			}
		}
		c.Verdict, c.Values = v, len(values)
		out = append(out, c)
	}
	return out, rule, nil
}

// RuleOf returns the repeat protocol a results header records — the stopping rule of
// until_cv, or the fixed count of repeats — and whether it records one.
func RuleOf(h results.Header) (repeat.Rule, bool) {
	switch u := h.UntilCV; {
	case u != nil:
		return repeat.Rule{TargetCV: u.TargetCV, MinRepeats: u.MinRepeats, MaxRepeats: u.MaxRepeats, Confidence: u.Confidence}, true
	case h.Repeats > 0:
		return repeat.Rule{Count: h.Repeats}, true
	}
	return repeat.Rule{}, false
}

// headerRepeats sets, in h, the repeat protocol of rule (nil: none): until_cv with the
// stopping rule's settings (defaults filled in), or repeats with the fixed count.
func headerRepeats(h *results.Header, rule *repeat.Rule) {
	switch {
	case rule == nil:
	case rule.Count > 0:
		h.Repeats = rule.Count
	default:
		d := rule.WithDefaults()
		h.UntilCV = &results.StoppingRule{TargetCV: d.TargetCV, MinRepeats: d.MinRepeats, MaxRepeats: d.MaxRepeats, Confidence: d.Confidence}
	}
}

// roundStart names the engine start whose noise round k of a run with repeats draws (the
// built-in engine is started with round 1's, Options.EngineStart, and reseeded before each
// round: see engine.Engine.ReseedNoise), so that each repeat draws its own noise, as when each
// repeat was a run of its own.
func roundStart(k int) string { return "repeat " + strconv.Itoa(k) }

// roundStarter returns runRepeats' newProg for the run: each call starts the next round k
// (1, 2, …) — it reseeds the built-in engine's noise for round k (reseedNoise), says "round
// k: N cells" on Stderr and returns the round's progress.
func (s *setup) roundStarter() func(cells []matrix.Cell) *progress {
	round := 0
	return func(cells []matrix.Cell) *progress {
		round++
		s.reseedNoise(round)
		fmt.Fprintf(s.opt.Stderr, "round %d: %s\n", round, plural(len(cells), "cell"))
		return newProgress(s.opt.Stderr, s.opt.Progress, cells, s.cfg.MaxTokens)
	}
}

// reseedNoise draws round k's noise on the built-in engine (none: nothing to do): from the
// seed derived from the configured [engine] noise and roundStart(k), which the header lists
// (repeatNoise).
func (s *setup) reseedNoise(k int) {
	if n, ok := s.configuredNoise(); ok {
		s.eng.ReseedNoise(n.ForStart(roundStart(k)).Seed)
	}
}

// configuredNoise is the built-in engine's [engine] noise as configured (before a seed is
// derived from it), and whether the run has a built-in engine that injects noise.
func (s *setup) configuredNoise() (engine.Noise, bool) {
	if s.eng == nil {
		return engine.Noise{}, false
	}
	n, err := engine.ParseNoise(s.cfg.Engine.Noise) // parsed without error when the engine started
	return n, err == nil && n.On()
}

// repeatNoise records, in the built-in engine's header info, the noise each round of a run
// with repeats draws (rounds repeats: the fixed count, or the stopping rule's MaxRepeats):
// "noise_repeats", the noise of round k at index k − 1, each with its derived seed.
func (s *setup) repeatNoise(rounds int) {
	n, ok := s.configuredNoise()
	if !ok || s.engineInfo == nil {
		return
	}
	list := make([]string, rounds)
	for k := range list {
		list[k] = n.ForStart(roundStart(k + 1)).String()
	}
	s.engineInfo["noise_repeats"] = list
	s.engineInfo["noise_seed_from"] = fmt.Sprintf("seed=%d of [engine] noise, engine start %q for repeat k (noise_repeats: the noise of each)", n.Seed, "repeat k")
}
