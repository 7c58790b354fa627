package latmodel

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/genload/genload/host/exitcode"
)

// WriteFile writes m as indented JSON to path.
func (m *Model) WriteFile(path string) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("model: encode: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	return nil
}

// ReadFile reads and validates a model file. Errors name the file and carry
// exitcode.InvalidConfig.
func ReadFile(path string) (*Model, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, exitcode.With(exitcode.InvalidConfig, fmt.Errorf("model: %w", err))
	}
	var probe struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(b, &probe); err == nil && probe.Schema != Schema {
		hint := ""
		if probe.Schema == "" {
			hint = " (a results file has its schema in its header: fit it first with genload fit -o)"
		}
		return nil, exitcode.Errorf(exitcode.InvalidConfig, "model: %s: [schema] %q, want %q%s", path, probe.Schema, Schema, hint)
	}
	var m Model
	if err := json.Unmarshal(b, &m); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + strings.Count(string(b[:se.Offset]), "\n")
			return nil, exitcode.Errorf(exitcode.InvalidConfig, "model: %s:%d: %v", path, line, err)
		}
		return nil, exitcode.Errorf(exitcode.InvalidConfig, "model: %s: %v", path, err)
	}
	if err := m.Validate(); err != nil {
		return nil, exitcode.With(exitcode.InvalidConfig, fmt.Errorf("model: %s: %w", path, err))
	}
	return &m, nil
}

// IsModelFile reports whether the JSON file at path is a model file (its "schema" is
// [Schema]), as opposed to a results file.
func IsModelFile(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var probe struct {
		Schema string `json:"schema"`
	}
	return json.Unmarshal(b, &probe) == nil && probe.Schema == Schema
}

func f3(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }

func sig(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }

func pct(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return fmt.Sprintf("%+.2f %%", 100*x)
}

// table writes rows (the first is the header) as a markdown table.
func table(w io.Writer, rows [][]string) {
	for i, r := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
		if i == 0 {
			fmt.Fprintf(w, "|%s\n", strings.Repeat("---|", len(r)))
		}
	}
}

// WriteSummary writes the model's identity, the chosen form and its coefficients (with units
// and 95 % intervals), R², the leave-one-out errors and the candidate forms.
func (m *Model) WriteSummary(w io.Writer) {
	fmt.Fprintf(w, "model %q", m.Model)
	if l := LabelString(m.Labels); l != "" {
		fmt.Fprintf(w, ", labels {%s}", l)
	}
	fmt.Fprintf(w, ", max_tokens %d; runs %s; %s\n", m.MaxTokens, strings.Join(m.Runs, ", "), m.CellCounts())
	if m.Experts != nil {
		fmt.Fprintf(w, "mixture of experts: E = %d experts, k = %d active per token (%s)\n", m.Experts.Experts, m.Experts.Active, m.Structure)
	} else if m.Structure != "" {
		fmt.Fprintf(w, "structure: %s\n", m.Structure)
	}
	for _, g := range m.Mixed {
		fmt.Fprintf(w, "warning: fitted across groups (--allow-mixed): %s\n", g)
	}
	fmt.Fprintf(w, "\nform: T = %s\n\n", m.Formula())
	rows := [][]string{{"term", "coefficient", "95 % interval", "unit", "what"}}
	for _, t := range m.Terms {
		c, lo, hi := t.Display()
		rows = append(rows, []string{t.Name, sig(c), "[" + sig(lo) + ", " + sig(hi) + "]", t.Unit, t.Doc})
	}
	table(w, rows)
	fmt.Fprintf(w, "\nR² (weighted) %.5f · leave-one-cell-out |error|: median %.2f %%, max %.2f %% · %d degrees of freedom\n",
		m.R2, 100*m.LOOMedianRel, 100*m.LOOMaxRel, m.DoF)
	for _, o := range m.Outliers {
		fmt.Fprintf(w, "outlier left out of the fit: cell L=%d,B=%d (fwd %.4g ms): %s\n", o.SeqLen, o.Batch, o.FwdMs, o.Reason)
	}
	fmt.Fprintf(w, "measured range: mean length %g–%g tokens, batch size %d–%d\n\n", m.Range.MeanLen[0], m.Range.MeanLen[1], m.Range.Batch[0], m.Range.Batch[1])
	rows = [][]string{{"candidate form", "LOO weighted RMS (ms)", "LOO median", "LOO max", ""}}
	for _, c := range m.Candidates {
		mark := ""
		if c.Form == m.Form {
			mark = "chosen"
		}
		if c.Rejected != "" {
			mark = "rejected: " + c.Rejected
		}
		rows = append(rows, []string{c.Form, sig(c.LOOWeighted), fmt.Sprintf("%.2f %%", 100*c.LOOMedianRel), fmt.Sprintf("%.2f %%", 100*c.LOOMaxRel), mark})
	}
	table(w, rows)
}

// CellCounts says how many cells were fitted and how many were not, by why, e.g. "87 cells
// fitted; 6 not fitted: 4 outliers, 2 partial or failed (listed in the residual table)";
// clamped cells are fitted and counted apart.
func (m *Model) CellCounts() string {
	s := fmt.Sprintf("%d cells fitted", m.N)
	clamped := 0
	for _, o := range m.Obs {
		if o.Clamped > 0 {
			clamped++
		}
	}
	if clamped > 0 {
		s += fmt.Sprintf(" (%d with clamped prompts)", clamped)
	}
	if k := len(m.Outliers) + len(m.Excluded); k > 0 {
		var why []string
		if len(m.Outliers) > 0 {
			why = append(why, fmt.Sprintf("%d outlier(s)", len(m.Outliers)))
		}
		if len(m.Excluded) > 0 {
			why = append(why, fmt.Sprintf("%d partial, failed or without a figure", len(m.Excluded)))
		}
		s += fmt.Sprintf("; %d not fitted: %s (listed in the residual table)", k, strings.Join(why, ", "))
	}
	return s
}

// Formula is the chosen form written out, e.g. "fixed + per_seq·B + kv_read·B·(L̄ + m/2)".
func (m *Model) Formula() string {
	x := map[string]string{TermFixed: "fixed", TermPerSeq: "per_seq·B", TermKVRead: "kv_read·B·(L̄ + m/2)",
		TermKVTail: "kv_tail·(L_max + m/2)", TermMoE: "moe·E·(1 − (1 − k/E)^B)"}
	parts := make([]string, len(m.Terms))
	for i, t := range m.Terms {
		parts[i] = x[t.Name]
	}
	return strings.Join(parts, " + ") + fmt.Sprintf("  (m = %d)", m.MaxTokens)
}

// WriteResiduals writes one row per fitted cell: lengths, measured fwd ± σ, fitted, residual,
// leave-one-out prediction and its relative error; then one per outlier left out of the fit.
func (m *Model) WriteResiduals(w io.Writer) {
	rows := [][]string{{"L", "B", "mean len", "max len", "fwd ms", "σ ms", "fitted ms", "residual ms", "LOO ms", "LOO error", "note"}}
	for _, o := range m.Obs {
		note := ""
		if o.Clamped > 0 {
			note = fmt.Sprintf("%d clamped", o.Clamped)
		}
		if o.Runs > 1 {
			note = strings.TrimPrefix(note+fmt.Sprintf(", %d runs", o.Runs), ", ")
		}
		rows = append(rows, []string{strconv.Itoa(o.SeqLen), strconv.Itoa(o.Batch), strconv.FormatFloat(o.MeanLen, 'f', 0, 64),
			strconv.FormatFloat(o.MaxLen, 'f', 0, 64), f3(o.FwdMs), f3(o.SigmaMs), f3(o.FittedMs), f3(o.ResidualMs), f3(o.LOOMs), pct(o.LOORel), note})
	}
	for _, o := range m.Outliers {
		rows = append(rows, []string{strconv.Itoa(o.SeqLen), strconv.Itoa(o.Batch), strconv.FormatFloat(o.MeanLen, 'f', 0, 64),
			strconv.FormatFloat(o.MaxLen, 'f', 0, 64), f3(o.FwdMs), f3(o.SigmaMs), "–", "–", f3(o.LOOMs), pct(o.LOORel), "outlier: not fitted"})
	}
	for _, x := range m.ExcludedCells {
		fwd, ml := "–", "–"
		if x.FwdMs > 0 {
			fwd = f3(x.FwdMs)
		}
		if x.MeanLen > 0 {
			ml = strconv.FormatFloat(x.MeanLen, 'f', 0, 64)
		}
		rows = append(rows, []string{strconv.Itoa(x.SeqLen), strconv.Itoa(x.Batch), ml, "–", fwd, "–", "–", "–", "–", "–", "not fitted (" + x.Run + "): " + x.Reason})
	}
	table(w, rows)
}

// WritePredictions writes one row per prediction.
func WritePredictions(w io.Writer, ps []Prediction) {
	rows := [][]string{{"mean len", "B", "predicted ms", "± SE ms", "note"}}
	for _, p := range ps {
		note := ""
		if p.Extrapolated {
			note = "extrapolated: " + p.Why
		}
		rows = append(rows, []string{strconv.FormatFloat(p.MeanLen, 'g', -1, 64), strconv.Itoa(p.Batch), f3(p.Ms), f3(p.SEMs), note})
	}
	table(w, rows)
}

// WriteFits writes each model's fit quality and level uncertainty, one line each.
func (g *GateResult) WriteFits(w io.Writer) {
	fmt.Fprintf(w, "baseline fit: %s; level ±%.2f %% (%s, %d run(s))\n", g.BaseFit, 100*g.BaseLevel.SD, g.BaseLevel.From, g.BaseLevel.Runs)
	fmt.Fprintf(w, "new fit:      %s; level ±%.2f %% (%s, %d run(s))\n", g.NewFit, 100*g.NewLevel.SD, g.NewLevel.From, g.NewLevel.Runs)
}

// bounds writes an interval's bounds, "[+1.20 %, +3.40 %]".
func bounds(iv Interval) string { return "[" + pct(iv.Lo) + ", " + pct(iv.Hi) + "]" }

// pointConfidence is the one-sided confidence of each point's bounds (Bonferroni over n).
func (g *GateResult) pointConfidence() float64 {
	return 1 - (1-g.Thresholds.Confidence)/float64(max(len(g.Points), 1))
}

// WriteMarkdown writes the comparability line first, then each model's fit, the per-point
// table with each change's bounds, the points left out of range, the mean change with its
// bounds, the baseline's own noise and the verdict (with, for cannot tell, the repeats that
// would decide it).
func (g *GateResult) WriteMarkdown(w io.Writer) {
	if g.Comparable != "" {
		fmt.Fprintln(w, g.Comparable)
	}
	for _, s := range g.Warnings {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
	fmt.Fprintf(w, "baseline %s vs new %s, through their fitted models\n", g.Base, g.New)
	g.WriteFits(w)
	fmt.Fprintln(w)
	conf := fmt.Sprintf("%.4g", 100*g.pointConfidence())
	rows := [][]string{{"L", "mean len", "B", "baseline ms", "new ms", "change", "bounds (one-sided " + conf + " % each)", ""}}
	point := func(p GatePoint, judged bool) []string {
		mark := ""
		if p.Over {
			mark = fmt.Sprintf("over +%g %%", 100*g.Thresholds.PointIncrease)
		}
		if p.Extrapolated {
			mark = strings.TrimPrefix(mark+"; extrapolated: "+p.Why, "; ")
		}
		l := "–"
		if p.SeqLen > 0 {
			l = strconv.Itoa(p.SeqLen)
		}
		b := "–"
		if judged {
			b = bounds(p.Change)
		}
		return []string{l, strconv.FormatFloat(p.MeanLen, 'f', 0, 64), strconv.Itoa(p.Batch), f3(p.BaseMs), f3(p.NewMs), pct(p.Change.Est), b, mark}
	}
	for _, p := range g.Points {
		rows = append(rows, point(p, true))
	}
	table(w, rows)
	if len(g.OutOfRange) > 0 {
		fmt.Fprintf(w, "\n%d point(s) outside a model's measured range, not judged (--extrapolate to judge them):\n\n", len(g.OutOfRange))
		rows = [][]string{rows[0]}
		for _, p := range g.OutOfRange {
			rows = append(rows, point(p, false))
		}
		table(w, rows)
	}
	fmt.Fprintf(w, "\nmean change %s %s (one-sided %g %% bounds) over %d points (threshold +%g %%); largest %s at %s (threshold +%g %%)\n",
		pct(g.Mean.Est), bounds(g.Mean), 100*g.Thresholds.Confidence, len(g.Points), 100*g.Thresholds.MeanIncrease, pct(g.Max), g.MaxAt, 100*g.Thresholds.PointIncrease)
	limit := "no limit"
	if f := g.Thresholds.maxBaselineNoise(); f > 0 {
		limit = fmt.Sprintf("limit %g × the mean threshold = %.1f %%", f, 100*f*g.Thresholds.MeanIncrease)
	}
	fmt.Fprintf(w, "baseline's own level over the grid: ±%.2f %% (%s)\n", 100*g.BaseNoise, limit)
	switch g.Verdict {
	case VerdictPass:
		fmt.Fprint(w, "gate: pass")
		if len(g.OutOfRange) > 0 {
			fmt.Fprintf(w, " on the %d points in range (%d out of range, not judged)", len(g.Points), len(g.OutOfRange))
		}
		fmt.Fprintln(w)
	case VerdictFail:
		fmt.Fprintf(w, "gate: FAIL: %s\n", strings.Join(g.Failed, "; "))
	default:
		fmt.Fprintf(w, "gate: CANNOT TELL: %s\n  %s\n", strings.Join(g.Undecided, "; "), g.Decide)
	}
}

// JSON returns the gate's result as indented JSON, for CI:
//
//	{"comparable": line, "baseline": ids, "new": ids, "thresholds": {…},
//	 "baseline_fit": FitQuality, "new_fit": …, "baseline_level": Level, "new_level": …,
//	 "baseline_noise": half-width, "points": [GatePoint…], "out_of_range": [GatePoint…],
//	 "mean_change": Interval, "max_change": c, "max_at": GridPoint,
//	 "verdict": "pass"|"fail"|"cannot tell", "passed": bool, "failed": […],
//	 "undecided": […], "decide": "…", "warnings": […]}
func (g *GateResult) JSON() ([]byte, error) {
	return json.MarshalIndent(struct {
		Comparable string      `json:"comparable"`
		Base       string      `json:"baseline"`
		New        string      `json:"new"`
		Thresholds Thresholds  `json:"thresholds"`
		BaseFit    FitQuality  `json:"baseline_fit"`
		NewFit     FitQuality  `json:"new_fit"`
		BaseLevel  Level       `json:"baseline_level"`
		NewLevel   Level       `json:"new_level"`
		BaseNoise  float64     `json:"baseline_noise"`
		Points     []GatePoint `json:"points"`
		OutOfRange []GatePoint `json:"out_of_range,omitempty"`
		Mean       Interval    `json:"mean_change"`
		Max        float64     `json:"max_change"`
		MaxAt      GridPoint   `json:"max_at"`
		Verdict    string      `json:"verdict"`
		Passed     bool        `json:"passed"`
		Failed     []string    `json:"failed,omitempty"`
		Undecided  []string    `json:"undecided,omitempty"`
		Decide     string      `json:"decide,omitempty"`
		Warnings   []string    `json:"warnings,omitempty"`
	}{g.Comparable, g.Base, g.New, g.Thresholds, g.BaseFit, g.NewFit, g.BaseLevel, g.NewLevel, g.BaseNoise, g.Points, g.OutOfRange,
		g.Mean, g.Max, g.MaxAt, g.Verdict, g.Passed(), g.Failed, g.Undecided, g.Decide, g.Warnings}, "", "  ")
}
