package ab

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/genload/genload/host/compare"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/matrix"
)

// Doc is what --json writes: the sides, the settings, each side's built-in engine info (nil
// for a server; its noise string holds the seed used), every finished cell, and how the
// comparison ended (Status "ok", "error" or "interrupted", "" while running, with Error).
type Doc struct {
	A          string            `json:"a"`
	B          string            `json:"b"`
	Pairs      int               `json:"pairs"`
	Confidence float64           `json:"confidence"`
	Engines    [2]map[string]any `json:"engines"`
	Cells      []Cell            `json:"cells"`
	Status     string            `json:"status"`
	Error      string            `json:"error,omitempty"`
	// JSON is the file the document was written to at the end ("" when none was).
	JSON string `json:"-"`
	// Comparable is the line on what differs between the sides' runs besides the
	// comparison's subject (compare.CheckComparable's Line), printed before the table and
	// kept in the file for the HTML report's A/B section.
	Comparable string `json:"comparable,omitempty"`
	of         int    // the cells of A's matrix
}

// Pair is one measured pair: its 1-based index, the order the sides were measured in ("AB"
// or "BA"), each side's mean per-forward latency in ms (0 when that side has none) and
// d = fwd_B / fwd_A − 1; or, when the pair is left out of the cell's interval, Skipped with
// the side's record's reason. TruthAms and TruthBms are, for a side that is a built-in
// engine, its own mean decode step time over the measured request (from its /metrics: the
// steps' wall-clock durations as the engine measured them, injected noise included; without
// the client's timing), 0 otherwise.
type Pair struct {
	Pair     int      `json:"pair"`
	Order    string   `json:"order"`
	FwdAms   float64  `json:"fwd_a_ms,omitempty"`
	FwdBms   float64  `json:"fwd_b_ms,omitempty"`
	TruthAms float64  `json:"truth_a_ms,omitempty"`
	TruthBms float64  `json:"truth_b_ms,omitempty"`
	D        *float64 `json:"d,omitempty"`
	Skipped  string   `json:"skipped,omitempty"`
}

// Cell is one cell's paired comparison: every pair, the N pairs with a difference D
// (B/A − 1), the change Mean = exp(mean ln(B/A)) − 1 and its t interval [Lo, Hi] taken on
// ln(B/A) and mapped back (N ≥ 2; else absent and Verdict says why; see ratioInterval), and
// each side's geometric mean per-forward latency over those pairs in ns (FwdB/FwdA − 1 is
// Mean).
type Cell struct {
	Cell        matrix.Cell `json:"cell"`
	PairList    []Pair      `json:"pair_list"`
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

// WriteMarkdown writes the per-cell table of the finished cells and the count of verdicts,
// and how many of A's cells were not measured when the comparison stopped early.
func (d *Doc) WriteMarkdown(w io.Writer) {
	rows, pairs, conf := d.Cells, d.Pairs, d.Confidence
	fmt.Fprintf(w, "\n## Paired A/B: per-forward latency, B vs A on identical prompts (%d pairs per cell, AB/BA alternating)\n\n", pairs)
	fmt.Fprintf(w, "| L | B | pairs | A fwd ms | B fwd ms | B/A − 1 %% | %.0f %% interval %% | verdict |\n", 100*conf)
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---|---|")
	sig, none, unsure := 0, 0, 0
	for _, r := range rows {
		if r.N < 2 {
			none++
			fmt.Fprintf(w, "| %d | %d | %d | – | – | – | – | %s |\n", r.Cell.SeqLen, r.Cell.Batch, r.N, r.Verdict)
			continue
		}
		if r.significant {
			sig++
		}
		if r.Verdict == VerdictCannotTell {
			unsure++
		}
		f := func(x float64) string { return strconv.FormatFloat(100*x, 'f', 2, 64) }
		fmt.Fprintf(w, "| %d | %d | %d | %.3f | %.3f | %s | [%s, %s] | %s |\n", r.Cell.SeqLen, r.Cell.Batch, r.N, r.FwdA/1e6, r.FwdB/1e6, f(r.Mean), f(r.Lo), f(r.Hi), r.Verdict)
	}
	compared := len(rows) - none
	shows := "show"
	if compared-sig-unsure == 1 {
		shows = "shows"
	}
	fmt.Fprintf(w, "\nA = %s, B = %s: %d of %d compared cells differ significantly at %.0f %%; %d %s no difference beyond ±%.0f %%; %d cannot tell (an interval that holds 0 and a difference beyond ±%.0f %%)",
		d.A, d.B, sig, compared, 100*conf, compared-sig-unsure, shows, 100*compare.DiffMaterial, unsure, 100*compare.DiffMaterial)
	if none > 0 {
		fmt.Fprintf(w, "; %d without an interval (too few pairs)", none)
	}
	if len(rows) < d.of {
		fmt.Fprintf(w, "; %d of %d cells not measured (stopped)", d.of-len(rows), d.of)
	}
	fmt.Fprintln(w)
}

// CheckMaxDiff holds every finished cell to ±pct percent (> 0) with the three outcomes of the
// gate, at the document's confidence:
//
//   - ok: every cell's interval lies within [−pct, +pct]; the line returned says so;
//   - fail (exitcode.ThresholdsFailed, 6): some cell's interval lies wholly beyond ±pct, a
//     difference larger than allowed;
//   - cannot tell (exitcode.Inconclusive, 8): no interval lies beyond, but some straddle +pct
//     or −pct, or a cell has no interval (fewer than two pairs): the pairs measured cannot
//     decide; more --pairs narrow the intervals.
//
// The error names the cells of each kind with their change and interval (fail also lists
// the cells that cannot tell).
func (d *Doc) CheckMaxDiff(pct float64) (string, error) {
	var beyond, straddle []string
	for _, r := range d.Cells {
		switch {
		case r.N < 2:
			straddle = append(straddle, fmt.Sprintf("%s no interval (%s)", r.Cell.Key(), r.Verdict))
		case 100*r.Lo > pct || 100*r.Hi < -pct:
			beyond = append(beyond, fmt.Sprintf("%s %+.2f %% [%+.2f, %+.2f]", r.Cell.Key(), 100*r.Mean, 100*r.Lo, 100*r.Hi))
		case 100*r.Hi > pct || 100*r.Lo < -pct:
			straddle = append(straddle, fmt.Sprintf("%s %+.2f %% [%+.2f, %+.2f]", r.Cell.Key(), 100*r.Mean, 100*r.Lo, 100*r.Hi))
		}
	}
	n := len(d.Cells)
	conf := 100 * d.Confidence
	switch {
	case len(beyond) > 0:
		msg := fmt.Sprintf("--max-diff ±%g %%: fail: %d of %d cells' B/A − 1 per-forward %.0f %% intervals lie wholly beyond it: %s",
			pct, len(beyond), n, conf, listCells(beyond))
		if len(straddle) > 0 {
			msg += fmt.Sprintf("; %d cannot tell (interval straddles ±%g %% or is absent): %s", len(straddle), pct, listCells(straddle))
		}
		return "", exitcode.Errorf(exitcode.ThresholdsFailed, "%s", msg)
	case len(straddle) > 0:
		return "", exitcode.Errorf(exitcode.Inconclusive, "--max-diff ±%g %%: cannot tell: %d of %d cells' %.0f %% intervals straddle ±%g %% or are absent, so these pairs cannot decide (more --pairs narrow the intervals): %s",
			pct, len(straddle), n, conf, pct, listCells(straddle))
	}
	return fmt.Sprintf("threshold: every cell's %.0f %% interval lies within ±%g %%: ok", conf, pct), nil
}

// listCells joins the first five cell descriptions and counts the rest.
func listCells(cells []string) string {
	if len(cells) <= 5 {
		return strings.Join(cells, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(cells[:5], "; "), len(cells)-5)
}

// WriteJSON writes d to path through a temporary file in the same directory, so that a
// reader (or a crash) never sees half a file; the error names the file (--json).
func (d *Doc) WriteJSON(path string) error {
	b, err := json.MarshalIndent(d, "", "  ")
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
