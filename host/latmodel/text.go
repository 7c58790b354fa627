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
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/results"
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

// DescribeJSON says what the JSON document b is, by its schema, for messages about a file of
// the wrong kind: `a results file (schema "genload.run/v1" in its header)`, `a model file
// (schema "genload.latmodel/v1")`, `a file of schema "…"`, `JSON without a "schema"`, or
// `not JSON`.
func DescribeJSON(b []byte) string {
	var probe struct {
		Schema string `json:"schema"`
		Header struct {
			Schema string `json:"schema"`
		} `json:"header"`
	}
	switch {
	case json.Unmarshal(b, &probe) != nil:
		return "not JSON"
	case probe.Schema == Schema:
		return fmt.Sprintf("a model file (schema %q)", Schema)
	case probe.Schema != "":
		return fmt.Sprintf("a file of schema %q", probe.Schema)
	case probe.Header.Schema == results.Schema:
		return fmt.Sprintf("a results file (schema %q in its header)", results.Schema)
	case probe.Header.Schema != "":
		return fmt.Sprintf("a file of schema %q in its header", probe.Header.Schema)
	}
	return `JSON without a "schema"`
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

// prose writes s as a line of text output, wrapped within report.NarrowWidth columns, the
// lines after the first indented by two spaces.
func prose(w io.Writer, s string) { report.Prose(w, "", "  ", s) }

// lines writes a and b as one line "a; b" when it fits within report.NarrowWidth columns,
// else as two, each wrapped by prose.
func lines(w io.Writer, a, b string) {
	if len([]rune(a))+2+len([]rune(b)) <= report.NarrowWidth {
		fmt.Fprintf(w, "%s; %s\n", a, b)
		return
	}
	prose(w, a)
	prose(w, b)
}

// WriteSummary writes the model's identity, the chosen form and its coefficients (with units
// and 95 % intervals), R², the leave-one-out errors and the candidate forms.
func (m *Model) WriteSummary(w io.Writer) {
	id := fmt.Sprintf("model %q", m.Model)
	if l := LabelString(m.Labels); l != "" {
		id += fmt.Sprintf(", labels {%s}", l)
	}
	id += fmt.Sprintf(", max_tokens %d; runs %s", m.MaxTokens, strings.Join(m.Runs, ", "))
	lines(w, id, m.CellCounts())
	if m.Experts != nil {
		from := " (" + m.Structure + ")"
		if rest, ok := strings.CutPrefix(m.Structure, "mixture of experts from "); ok {
			from = ", from " + rest
		}
		prose(w, fmt.Sprintf("mixture of experts: E = %d experts, k = %d active per token%s", m.Experts.Experts, m.Experts.Active, from))
	} else if m.Structure != "" {
		prose(w, "structure: "+m.Structure)
	}
	for _, g := range m.Mixed {
		prose(w, "warning: fitted together although not comparable (--allow-mixed): "+g)
	}
	for _, a := range m.Across {
		prose(w, "repeats measured on more than one instance of the deployment: "+a)
	}
	fmt.Fprintf(w, "\nform: T = %s\n\n", m.Formula())
	rows := [][]string{{"term", "coefficient", "95 % interval", "unit", "what"}}
	for _, t := range m.Terms {
		c, lo, hi := t.Display()
		rows = append(rows, []string{t.Name, sig(c), "[" + sig(lo) + ", " + sig(hi) + "]", t.Unit, t.Doc})
	}
	table(w, rows)
	fmt.Fprintln(w)
	r2 := fmt.Sprintf("R² (weighted) %.5f", m.R2)
	if m.Form == TermFixed {
		r2 = "flat: the forward pass depends on neither L nor B within noise (R² 0 by construction)"
	}
	prose(w, fmt.Sprintf("%s · leave-one-cell-out |error|: median %.2f %%, max %.2f %% · %d degrees of freedom",
		r2, 100*m.LOOMedianRel, 100*m.LOOMaxRel, m.DoF))
	for _, o := range m.Outliers {
		prose(w, fmt.Sprintf("outlier left out of the fit: cell L=%d,B=%d (fwd %.4g ms): %s", o.SeqLen, o.Batch, o.FwdMs, o.Reason))
	}
	fmt.Fprintf(w, "measured range: mean length %g–%g tokens, batch size %d–%d\n\n", m.Range.MeanLen[0], m.Range.MeanLen[1], m.Range.Batch[0], m.Range.Batch[1])
	rows = [][]string{{"candidate form", "LOO weighted RMS (ms)", "LOO median", "LOO max", ""}}
	var why []string
	for _, c := range m.Candidates {
		mark := ""
		if c.Form == m.Form {
			mark = "chosen"
		}
		if c.Rejected != "" {
			why = append(why, fmt.Sprintf("(%d) %s: %s", len(why)+1, c.Form, c.Rejected))
			mark = fmt.Sprintf("rejected (%d)", len(why))
		}
		loo, med, mx := sig(c.LOOWeighted), fmt.Sprintf("%.2f %%", 100*c.LOOMedianRel), fmt.Sprintf("%.2f %%", 100*c.LOOMaxRel)
		if !c.Scored() {
			loo, med, mx = "–", "–", "–" // not fitted or not left out: no figure, the reason below
		}
		rows = append(rows, []string{c.Form, loo, med, mx, mark})
	}
	table(w, rows)
	if len(why) > 0 {
		fmt.Fprintln(w)
	}
	for _, s := range why {
		prose(w, s)
	}
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
	fmt.Fprintln(w, residualsLegend)
}

// residualsLegend says what the residual table's σ is (Observation.SigmaMs) and what it does.
const residualsLegend = "σ ms: the cell's uncertainty, √(repeats' standard error² + |mean − Theil–Sen per-forward|²\n" +
	"  + (0.5 % of fwd)²); the fit weights each cell by 1/σ². LOO: the cell predicted by the form fitted without it."

// WritePredictions writes one row per prediction of model m: the fit's standard error,
// labelled as the fit's alone, and, for a model of two or more runs, the 95 % prediction
// interval of a new run ([Prediction].PILoMs); then a line on what each covers.
func WritePredictions(w io.Writer, m *Model, ps []Prediction) {
	r := len(m.RunLevels)
	head := []string{"mean len", "B", "predicted ms", "± SE ms (fit)"}
	if r >= 2 {
		head = append(head, "95 % PI of a new run, ms")
	}
	rows := [][]string{append(head, "note")}
	for _, p := range ps {
		note := ""
		if p.Extrapolated {
			note = "extrapolated: " + p.Why
		}
		row := []string{strconv.FormatFloat(p.MeanLen, 'g', -1, 64), strconv.Itoa(p.Batch), f3(p.Ms), f3(p.SEMs)}
		if r >= 2 {
			row = append(row, "["+f3(p.PILoMs)+", "+f3(p.PIHiMs)+"]")
		}
		rows = append(rows, append(row, note))
	}
	table(w, rows)
	fmt.Fprintln(w)
	if r >= 2 {
		prose(w, fmt.Sprintf("± SE is the fit's standard error (the coefficients' uncertainty) alone; the prediction interval adds how the level of a whole run varied over the %d runs fitted (%d degrees of freedom; no less than its cells' scatter allows), the figure a new run would measure there, with Student t of both parts' Welch–Satterthwaite degrees of freedom, but not one cell's own scatter within a run (±%.1f %% about the model).",
			r, r-1, 100*m.Scatter))
	} else {
		prose(w, "± SE is the fit's standard error (the coefficients' uncertainty) alone: not a prediction interval, it leaves out how the level of a whole run varies, which one run cannot measure (fit the repeats of genload run --repeat N together for one).")
	}
}

// WriteFits writes each model's fit quality and level uncertainty, each wrapped within
// report.NarrowWidth columns.
func (g *GateResult) WriteFits(w io.Writer) {
	report.Prose(w, "baseline fit: ", "  ", fmt.Sprintf("%s; level ±%.2f %% (%s, %d run(s))", g.BaseFit, 100*g.BaseLevel.SD, g.BaseLevel.From, g.BaseLevel.Runs))
	report.Prose(w, "new fit:      ", "  ", fmt.Sprintf("%s; level ±%.2f %% (%s, %d run(s))", g.NewFit, 100*g.NewLevel.SD, g.NewLevel.From, g.NewLevel.Runs))
}

// side names a side for the line under the first one: its files and run ids, "res/b1.json
// (run b1)", or its run ids alone when no file is known.
func side(files []string, ids string) string {
	if len(files) == 0 {
		return ids
	}
	return fmt.Sprintf("%s (runs %s)", strings.Join(files, ","), ids)
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
		prose(w, g.Comparable)
	}
	for _, s := range g.Warnings {
		prose(w, "warning: "+s)
	}
	prose(w, fmt.Sprintf("baseline %s vs new %s, through their fitted models", side(g.BaseFiles, g.Base), side(g.NewFiles, g.New)))
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
			what := "not judged: outside " // a measured range, left out (not extrapolated)
			if judged {
				what = "extrapolated: "
			}
			mark = strings.TrimPrefix(mark+"; "+what+p.Outside, "; ")
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
	extrapolated := 0
	for _, p := range g.Points {
		rows = append(rows, point(p, true))
		if p.Extrapolated {
			extrapolated++
		}
	}
	table(w, rows)
	ranges := func() {
		prose(w, fmt.Sprintf("(measured ranges — baseline: %s; new: %s)", g.BaseRange, g.NewRange))
	}
	if extrapolated > 0 {
		ranges()
	}
	if len(g.OutOfRange) > 0 {
		fmt.Fprintln(w)
		prose(w, fmt.Sprintf("%d point(s) outside a model's measured range, not judged (--extrapolate to judge them):", len(g.OutOfRange)))
		fmt.Fprintln(w)
		rows = [][]string{rows[0]}
		for _, p := range g.OutOfRange {
			rows = append(rows, point(p, false))
		}
		table(w, rows)
		ranges()
	}
	fmt.Fprintln(w)
	prose(w, fmt.Sprintf("mean change %s %s (one-sided %g %% bounds) over %d points (threshold +%g %%); largest %s at %s (threshold +%g %%)",
		pct(g.Mean.Est), bounds(g.Mean), 100*g.Thresholds.Confidence, len(g.Points), 100*g.Thresholds.MeanIncrease, pct(g.Max), g.MaxAt, 100*g.Thresholds.PointIncrease))
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
		prose(w, "gate: FAIL: "+strings.Join(g.Failed, "; "))
	default:
		prose(w, "gate: CANNOT TELL: "+strings.Join(g.Undecided, "; "))
		report.Prose(w, "  ", "  ", g.Decide)
	}
}

// VerdictRefused is the verdict of a gate that did not judge: a model refused (a poor fit, a
// baseline too noisy, runs not comparable, one run given twice), no grid point in range, or
// bad input.
const VerdictRefused = "refused"

// Reason says why the gate reached its verdict: for a pass, the bounds within the thresholds
// (and the points left out of range); for a fail, the thresholds crossed; for cannot tell,
// what straddles and the runs that would decide it.
func (g *GateResult) Reason() string {
	switch g.Verdict {
	case VerdictFail:
		return strings.Join(g.Failed, "; ")
	case VerdictCannotTell:
		return strings.Join(g.Undecided, "; ") + "; " + g.Decide
	}
	s := fmt.Sprintf("mean change %s %s within +%g %% and every point's upper bound within +%g %% (one-sided %g %%)",
		pct(g.Mean.Est), bounds(g.Mean), 100*g.Thresholds.MeanIncrease, 100*g.Thresholds.PointIncrease, 100*g.Thresholds.Confidence)
	if len(g.OutOfRange) > 0 {
		s += fmt.Sprintf(", over the %d points in range: %d point(s) outside a model's measured range were not judged (--extrapolate to judge them)", len(g.Points), len(g.OutOfRange))
	}
	return s
}

// GateJSON returns the outcome of a gate as indented JSON, for CI, whatever it was: g the
// result (nil when none was made) and err the error the gate ended with (nil for a pass of
// every point; [GateResult.Err] for a verdict; a refusal otherwise). Every outcome has
//
//	{"verdict": "pass"|"fail"|"cannot tell"|"refused", "exit_code": n, "reason": "…", …}
//
// and a judged gate (verdict pass, fail or cannot tell) also
//
//	"comparable": line, "baseline": ids, "new": ids, "thresholds": {…},
//	"baseline_fit": FitQuality, "new_fit": …, "baseline_level": Level, "new_level": …,
//	"baseline_noise": half-width, "points": [GatePoint…], "out_of_range": [GatePoint…],
//	"baseline_range": Range, "new_range": …, "mean_change": Interval, "max_change": c,
//	"max_at": GridPoint, "passed": bool, "failed": […], "undecided": […], "decide": "…",
//	"warnings": […]
//
// while a refusal has what was known when it refused: the first line, the run ids and, once
// both models were fitted, their fits and levels (and the baseline's noise when that was the
// reason).
func GateJSON(g *GateResult, err error) ([]byte, error) {
	if g != nil && g.Verdict != "" {
		return g.json(err)
	}
	type fits struct {
		BaseFit   FitQuality `json:"baseline_fit"`
		NewFit    FitQuality `json:"new_fit"`
		BaseLevel Level      `json:"baseline_level"`
		NewLevel  Level      `json:"new_level"`
	}
	out := struct {
		Verdict    string      `json:"verdict"`
		ExitCode   int         `json:"exit_code"`
		Reason     string      `json:"reason"`
		Comparable string      `json:"comparable,omitempty"`
		Base       string      `json:"baseline,omitempty"`
		New        string      `json:"new,omitempty"`
		Thresholds *Thresholds `json:"thresholds,omitempty"`
		*fits
		BaseNoise float64  `json:"baseline_noise,omitempty"`
		Warnings  []string `json:"warnings,omitempty"`
	}{Verdict: VerdictRefused, ExitCode: int(exitcode.Of(err))}
	if err != nil {
		out.Reason = err.Error()
	}
	if g != nil {
		out.Comparable, out.Base, out.New, out.Thresholds, out.Warnings = g.Comparable, g.Base, g.New, &g.Thresholds, g.Warnings
		if g.BaseFit.Cells > 0 && g.NewFit.Cells > 0 {
			out.fits = &fits{g.BaseFit, g.NewFit, g.BaseLevel, g.NewLevel}
		}
		if errors.Is(err, ErrTooNoisy) {
			out.BaseNoise = g.BaseNoise
		}
	}
	return json.MarshalIndent(out, "", "  ")
}

// json writes a judged gate (see GateJSON), err the error it ended with.
func (g *GateResult) json(err error) ([]byte, error) {
	return json.MarshalIndent(struct {
		Verdict    string      `json:"verdict"`
		ExitCode   int         `json:"exit_code"`
		Reason     string      `json:"reason"`
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
		BaseRange  Range       `json:"baseline_range"`
		NewRange   Range       `json:"new_range"`
		Mean       Interval    `json:"mean_change"`
		Max        float64     `json:"max_change"`
		MaxAt      GridPoint   `json:"max_at"`
		Passed     bool        `json:"passed"`
		Failed     []string    `json:"failed,omitempty"`
		Undecided  []string    `json:"undecided,omitempty"`
		Decide     string      `json:"decide,omitempty"`
		Warnings   []string    `json:"warnings,omitempty"`
	}{g.Verdict, int(exitcode.Of(err)), g.Reason(), g.Comparable, g.Base, g.New, g.Thresholds, g.BaseFit, g.NewFit, g.BaseLevel, g.NewLevel,
		g.BaseNoise, g.Points, g.OutOfRange, g.BaseRange, g.NewRange, g.Mean, g.Max, g.MaxAt, g.Passed(), g.Failed, g.Undecided, g.Decide,
		g.Warnings}, "", "  ")
}
