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
	fmt.Fprintf(w, ", max_tokens %d; runs %s; %d cells fitted", m.MaxTokens, strings.Join(m.Runs, ", "), m.N)
	if len(m.Excluded) > 0 {
		fmt.Fprintf(w, ", %d left out", len(m.Excluded))
	}
	fmt.Fprintln(w)
	if m.Experts != nil {
		fmt.Fprintf(w, "mixture of experts: E = %d experts, k = %d active per token\n", m.Experts.Experts, m.Experts.Active)
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

// WriteFits writes each model's fit quality, one line each.
func (g *GateResult) WriteFits(w io.Writer) {
	fmt.Fprintf(w, "baseline fit: %s\nnew fit:      %s\n", g.BaseFit, g.NewFit)
}

// WriteMarkdown writes the gate's per-point table, the mean and max change and the verdict.
func (g *GateResult) WriteMarkdown(w io.Writer) {
	for _, s := range g.Warnings {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
	fmt.Fprintf(w, "baseline %s vs new %s, through their fitted models\n", g.Base, g.New)
	g.WriteFits(w)
	fmt.Fprintln(w)
	rows := [][]string{{"L", "mean len", "B", "baseline ms", "new ms", "change", ""}}
	for _, p := range g.Points {
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
		rows = append(rows, []string{l, strconv.FormatFloat(p.MeanLen, 'f', 0, 64), strconv.Itoa(p.Batch), f3(p.BaseMs), f3(p.NewMs), pct(p.Change), mark})
	}
	table(w, rows)
	fmt.Fprintf(w, "\nmean change %s over %d points (threshold +%g %%); largest %s at L̄=%.0f B=%d (threshold +%g %%)\n",
		pct(g.Mean), len(g.Points), 100*g.Thresholds.MeanIncrease, pct(g.Max), g.MaxAt.MeanLen, g.MaxAt.Batch, 100*g.Thresholds.PointIncrease)
	if g.Passed() {
		fmt.Fprintln(w, "gate: pass")
	} else {
		fmt.Fprintf(w, "gate: FAIL: %s\n", strings.Join(g.Failed, "; "))
	}
}
