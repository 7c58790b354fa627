package htmlreport

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/genload/genload/host/compare"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/stats"
)

// ABConfidence is the two-sided confidence of the per-cell intervals of an A/B of two runs
// with repeats.
const ABConfidence = 0.95

// ABFile is a paired A/B comparison as genload ab --json writes it: the two configurations,
// the pairs per cell, the confidence, what differs between the sides besides the subject, and
// per cell the change of the per-forward latency B/A − 1 over its pairs with its Student t
// interval (taken on the pairs' log ratios; see package ab).
type ABFile struct {
	// Path is the file read (not in the JSON).
	Path       string   `json:"-"`
	A          string   `json:"a"`
	B          string   `json:"b"`
	Pairs      int      `json:"pairs"`
	Confidence float64  `json:"confidence"`
	Cells      []ABCell `json:"cells"`
	// Comparable is genload ab's first line: what differs between the sides' runs besides
	// the comparison's subject ("" in files written before it was kept).
	Comparable string `json:"comparable,omitempty"`
	// Status is how the comparison ended ("ok", "error", "interrupted"; "" while it ran),
	// Error why it stopped.
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// ABCell is one cell of an [ABFile]: N pairs with a difference, their mean d and interval
// [Lo, Hi] (fractions; set when N ≥ 2), each side's mean per-forward latency over those
// pairs (ns), and the verdict (or why there is none).
type ABCell struct {
	Cell    matrix.Cell `json:"cell"`
	N       int         `json:"n"`
	Mean    float64     `json:"mean"`
	Lo      float64     `json:"lo"`
	Hi      float64     `json:"hi"`
	FwdA    float64     `json:"fwd_a_ns"`
	FwdB    float64     `json:"fwd_b_ns"`
	Verdict string      `json:"verdict"`
}

// ReadAB reads the --json file of genload ab. It fails, naming path, when the file cannot be
// read, is not JSON, or is not an A/B comparison (no "pairs", "confidence" or "cells").
func ReadAB(path string) (*ABFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("a/b file: %w", err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("a/b file %s: not JSON: %w", path, err)
	}
	for _, k := range []string{"pairs", "confidence", "cells"} {
		if _, ok := raw[k]; !ok {
			return nil, fmt.Errorf("a/b file %s: no %q key: not the --json file of genload ab", path, k)
		}
	}
	f := &ABFile{Path: path}
	if err := json.Unmarshal(b, f); err != nil {
		return nil, fmt.Errorf("a/b file %s: %w", path, err)
	}
	return f, nil
}

// abRow is one cell of the A/B section: each side's figure (ms), the change B/A − 1 and its
// interval (fractions; NaN when there is none), the verdict, and the TTFT p50 of each side
// (ms, 0 unknown) with its change.
type abRow struct {
	key              compare.CellKey
	pairs            int // genload ab: pairs with a difference; runs: repeats of A and B
	repA, repB       int
	fwdA, fwdB       float64
	change, lo, hi   float64
	verdict          string
	ttftA, ttftB     float64
	ttftChange       float64
	hasTTFT, fromRep bool
}

// verdictOf is compare.ABVerdict's: "B slower" when the interval lies above 0, "B faster"
// below, "no difference beyond ±5 %" when it holds 0 within ±5 %, else "cannot tell".
func verdictOf(lo, hi float64) string {
	v, _ := compare.ABVerdict(lo, hi)
	return v
}

// RatioInterval returns the relative change d = mean(b)/mean(a) − 1 of two independent
// samples (each ≥ 2 values, a's mean > 0) and its two-sided interval at confidence conf. The
// variance of the ratio R = m_b/m_a is the delta method's,
//
//	Var(R) ≈ R² · (s_a²/(n_a·m_a²) + s_b²/(n_b·m_b²))
//
// (s the sample SDs, n the counts), and the t quantile has the Welch–Satterthwaite degrees
// of freedom of the two relative variance terms u_a = s_a²/(n_a·m_a²), u_b likewise,
//
//	ν = (u_a + u_b)² / (u_a²/(n_a − 1) + u_b²/(n_b − 1)),
//
// so d ± t(1 − (1 − conf)/2; ν) · √Var(R). With no spread on either side the interval is the
// point itself. ok is false for fewer than two values on a side or a mean ≤ 0. Its coverage
// at 95 % is 95 % for 4 or more values a side (CV 5 %, simulated); with the few repeats of
// an --until-cv run on the noisier side it drifts: about 98 % for 2 against 2, 93 % for 3
// against 8 when the 3 are four times noisier (ν estimated from so few is itself noisy).
func RatioInterval(a, b []float64, conf float64) (d, lo, hi float64, ok bool) {
	if len(a) < 2 || len(b) < 2 {
		return math.NaN(), math.NaN(), math.NaN(), false
	}
	ma, va := stat.MeanVariance(a, nil)
	mb, vb := stat.MeanVariance(b, nil)
	if ma <= 0 || mb <= 0 {
		return math.NaN(), math.NaN(), math.NaN(), false
	}
	na, nb := float64(len(a)), float64(len(b))
	r := mb / ma
	ua, ub := va/(na*ma*ma), vb/(nb*mb*mb)
	if ua+ub == 0 {
		return r - 1, r - 1, r - 1, true
	}
	nu := (ua + ub) * (ua + ub) / (ua*ua/(na-1) + ub*ub/(nb-1))
	t := stats.TQuantile(1-(1-conf)/2, nu)
	h := t * r * math.Sqrt(ua+ub)
	return r - 1, r - 1 - h, r - 1 + h, true
}

// abOfRuns compares after (B) against before (A) cell by cell ([compare.Compare]: a run with
// repeats by its cells' means over their measured repeats). When both runs have repeats,
// each cell with two or more measured repeats on both sides gets its [ABConfidence]
// interval ([RatioInterval]) and a verdict; otherwise the rows have no interval and the
// note says why. A verdict from a side of a run with a stopping rule (--until-cv) that
// stopped after 2 repeats is marked †: the rule stops a cell when its repeats agree, so the
// spread of the repeats it kept understates the noise.
func abOfRuns(before, after *results.Run) *abView {
	v := &abView{Title: fmt.Sprintf("A/B: %s (A) → %s (B)", runName(before, 0), runName(after, 1)), confidence: ABConfidence}
	d, err := compare.Compare(before, after)
	if err != nil {
		v.Note = "not computed: " + err.Error()
		return v
	}
	ra, rb := compare.RepeatsByCell(before), compare.RepeatsByCell(after)
	switch {
	case ra != nil && rb != nil:
		v.Source = fmt.Sprintf("%.0f %% intervals from each side's repeats: the delta-method variance of the ratio of the two means with Welch's degrees of freedom; B/A − 1 is of the means over the repeats", 100*ABConfidence)
	case ra != nil || rb != nil:
		v.Source = "no intervals: only one of the runs has repeats, so the other side's spread is unknown (measure both with genload run --until-cv, or compare with genload ab)"
	default:
		v.Source = "no intervals: each run measured each cell once, so the change cannot be told from noise (measure both with genload run --until-cv, or compare with genload ab, which pairs the sides on identical prompts)"
	}
	v.Warnings = append(slices.Clone(d.Pooled), d.Warnings...)
	few := false
	for _, c := range d.Cells {
		row := abRow{key: c.CellKey, fwdA: measure.Ms(c.Before), fwdB: measure.Ms(c.After), change: c.Change, lo: math.NaN(), hi: math.NaN(),
			ttftA: measure.Ms(c.TTFTBefore), ttftB: measure.Ms(c.TTFTAfter), ttftChange: c.TTFTChange, hasTTFT: true}
		if ra != nil && rb != nil {
			row.fromRep, row.repA, row.repB = true, len(ra[c.CellKey]), len(rb[c.CellKey])
			if dd, lo, hi, ok := RatioInterval(ra[c.CellKey], rb[c.CellKey], ABConfidence); ok {
				row.change, row.lo, row.hi, row.verdict = dd, lo, hi, verdictOf(lo, hi)
				if stopped := before.Header.UntilCV != nil && row.repA < 3 || after.Header.UntilCV != nil && row.repB < 3; stopped {
					row.verdict += " †"
					few = true
				}
			} else {
				row.verdict = "no interval: fewer than 2 measured repeats on a side"
			}
		}
		v.rows = append(v.rows, row)
	}
	if few {
		v.Source += "; † a side of the cell stopped after 2 repeats under its --until-cv rule, which stops a cell when its repeats agree: their spread understates the noise, so the interval may be too narrow"
	}
	v.Warnings = append(v.Warnings, leftOut(d.LeftOut)...)
	v.build()
	return v
}

// abOfFile is the A/B section of a genload ab --json file: its per-cell paired intervals.
func abOfFile(f *ABFile) *abView {
	v := &abView{Title: fmt.Sprintf("A/B: %s (A) → %s (B), paired on identical prompts", f.A, f.B), confidence: f.Confidence, paired: true}
	v.Source = fmt.Sprintf("%.0f %% Student t intervals of B/A − 1, taken on the log ratio ln(fwd_B/fwd_A) of each cell's pairs (%d pairs per cell, AB/BA alternating), from genload ab (%s)",
		100*f.Confidence, f.Pairs, f.Path)
	switch f.Status {
	case "ok":
	case "":
		v.Warnings = append(v.Warnings, "the comparison had not finished when the file was written: its finished cells are shown")
	default:
		v.Warnings = append(v.Warnings, fmt.Sprintf("the comparison ended with status %s: %s; its finished cells are shown", f.Status, f.Error))
	}
	for _, c := range f.Cells {
		row := abRow{key: compare.CellKey{SeqLen: c.Cell.SeqLen, Batch: c.Cell.Batch}, pairs: c.N, fwdA: c.FwdA / 1e6, fwdB: c.FwdB / 1e6,
			change: math.NaN(), lo: math.NaN(), hi: math.NaN(), verdict: c.Verdict}
		if c.N >= 2 {
			row.change, row.lo, row.hi = c.Mean, c.Lo, c.Hi
		}
		v.rows = append(v.rows, row)
	}
	if len(v.rows) == 0 {
		v.Note = "no cell finished"
		return v
	}
	v.build()
	return v
}

// abView is the A/B section.
type abView struct {
	Title, Note, Source string
	Headline            string
	Warnings            []string
	Table               tableView
	Chart               []chartView

	confidence float64
	paired     bool
	rows       []abRow
}

// build fills the headline, the table and the chart from the rows.
func (v *abView) build() {
	var ch []float64
	slower, faster, same, unsure, none := 0, 0, 0, 0, 0
	for _, r := range v.rows {
		if !math.IsNaN(r.change) {
			ch = append(ch, r.change)
		}
		switch {
		case math.IsNaN(r.lo):
			none++
		case strings.HasPrefix(r.verdict, "B slower"):
			slower++
		case strings.HasPrefix(r.verdict, "B faster"):
			faster++
		case r.verdict == compare.ABCannotTell:
			unsure++
		default:
			same++
		}
	}
	if len(ch) > 0 {
		v.Headline = fmt.Sprintf("B against A, mean per-forward latency: median %s %% (range %s … %s %%) over %d cells",
			signed(stats.Median(ch)), signed(slices.Min(ch)), signed(slices.Max(ch)), len(ch))
	} else {
		v.Headline = "no cell with a change"
	}
	if n := slower + faster + same + unsure; n > 0 {
		v.Headline += fmt.Sprintf("; at %.0f %%: %d B slower, %d B faster, %d %s, %d cannot tell", 100*v.confidence, slower, faster, same, compare.ABNoDifference, unsure)
		if none > 0 {
			v.Headline += fmt.Sprintf(", %d without an interval", none)
		}
	} else {
		v.Headline += "; no cell has an interval"
	}
	iv := fmt.Sprintf("%.0f %% interval %%", 100*v.confidence)
	if v.paired {
		v.Table.Head = []string{"L", "B", "pairs", "A fwd ms", "B fwd ms", "B/A − 1 %", iv, "verdict"}
	} else {
		v.Table.Head = []string{"L", "B", "A fwd ms", "B fwd ms", "B/A − 1 %", iv, "verdict", "TTFT p50 A", "TTFT p50 B", "TTFT B/A − 1 %"}
		if v.rows[0].fromRep {
			v.Table.Head = slices.Insert(v.Table.Head, 2, "repeats A/B")
		}
	}
	fig := panelFigure{id: "ab-change", title: "change of the mean per-forward latency, B against A, per sequence length", yLabel: "B/A − 1 (%)", zeroLine: true,
		series: []seriesDef{{label: "B/A − 1 of the mean per-forward latency (bars: its interval, where it has one)", byL: map[int][]value{}}}}
	for _, r := range v.rows {
		interval := "–"
		if !math.IsNaN(r.lo) {
			interval = "[" + signed(r.lo) + ", " + signed(r.hi) + "]"
		}
		verdict := r.verdict
		if verdict == "" {
			verdict = "–"
		}
		row := []string{strconv.Itoa(r.key.SeqLen), strconv.Itoa(r.key.Batch)}
		if v.paired {
			row = append(row, strconv.Itoa(r.pairs))
		} else if r.fromRep {
			row = append(row, fmt.Sprintf("%d/%d", r.repA, r.repB))
		}
		row = append(row, msOr(r.fwdA, 3), msOr(r.fwdB, 3), signed(r.change), interval, verdict)
		if !v.paired {
			row = append(row, msOr(r.ttftA, 1), msOr(r.ttftB, 1), signed(r.ttftChange))
		}
		v.Table.Rows = append(v.Table.Rows, row)
		if !math.IsNaN(r.change) {
			fig.series[0].byL[r.key.SeqLen] = append(fig.series[0].byL[r.key.SeqLen], value{x: float64(r.key.Batch), y: 100 * r.change, lo: 100 * r.lo, hi: 100 * r.hi})
		}
	}
	v.Chart = []chartView{{SVG: fig.svg()}}
}

// signed is 100·f with one decimal and its sign ("+10.0", "-4.8", "0.0"); "–" for NaN or
// ±Inf.
func signed(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "–"
	}
	s := strconv.FormatFloat(100*f, 'f', 1, 64)
	if s[0] != '-' && s != "0.0" {
		s = "+" + s
	}
	return s
}

// msOr is ms with prec decimals, "–" for 0 (unknown).
func msOr(ms float64, prec int) string {
	if ms == 0 || math.IsNaN(ms) {
		return "–"
	}
	return strconv.FormatFloat(ms, 'f', prec, 64)
}

// runName is the run's id, or "run N" (1-based).
func runName(r *results.Run, i int) string {
	if r.Header.RunID != "" {
		return r.Header.RunID
	}
	return "run " + strconv.Itoa(i+1)
}
