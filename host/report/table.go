package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/scrape"
)

// column is one column of the table and the CSV: a header and a cell formatter.
type column struct {
	head string
	csv  string
	get  func(c *Cell) string
}

func ms3(d time.Duration) string { return strconv.FormatFloat(measure.Ms(d), 'f', 3, 64) }
func ms1(d time.Duration) string { return strconv.FormatFloat(measure.Ms(d), 'f', 1, 64) }

// fig returns f(c.Figures) or "" for a cell without figures.
func fig(f func(*measure.Figures) string) func(c *Cell) string {
	return func(c *Cell) string {
		if c.Figures == nil {
			return ""
		}
		return f(c.Figures)
	}
}

// srv returns f(c.Server) or "" for a cell without server metrics.
func srv(f func(*scrape.CellMetrics) string) func(c *Cell) string {
	return func(c *Cell) string {
		if c.Server == nil {
			return ""
		}
		return f(c.Server)
	}
}

func columns(withHeader, withServer, withTruth bool) []column {
	cols := []column{
		{"L", "seq_len", func(c *Cell) string { return strconv.Itoa(c.Cell.SeqLen) }},
		{"B", "batch", func(c *Cell) string { return strconv.Itoa(c.Cell.Batch) }},
		{"len min/mean/max", "", func(c *Cell) string {
			if len(c.Lengths.Each) == 0 {
				return ""
			}
			return fmt.Sprintf("%d/%.0f/%d", c.Lengths.Min, c.Lengths.Mean, c.Lengths.Max)
		}},
		{"fwd ms mean", "per_forward_mean_ms", fig(func(f *measure.Figures) string { return ms3(f.PerForward.Mean) })},
		{"fwd p50", "per_forward_p50_ms", fig(func(f *measure.Figures) string { return ms3(f.PerForward.P50) })},
		{"fwd p90", "per_forward_p90_ms", fig(func(f *measure.Figures) string { return ms3(f.PerForward.P90) })},
		{"full-batch fwd", "full_occupancy_per_forward_ms", fig(func(f *measure.Figures) string {
			if !f.Window.Valid {
				return "–"
			}
			return ms3(f.Window.PerStep)
		})},
		{"cached %", "cached_percent", fig(func(f *measure.Figures) string {
			if !f.HasCachedTokens || f.PromptTokens == 0 {
				return ""
			}
			return strconv.FormatFloat(100*float64(f.CachedTokens)/float64(f.PromptTokens), 'f', 1, 64)
		})},
		{"TTFT p50", "ttft_p50_ms", fig(func(f *measure.Figures) string { return ms1(f.TTFT.P50) })},
		{"TTFT p90", "ttft_p90_ms", fig(func(f *measure.Figures) string { return ms1(f.TTFT.P90) })},
		{"ITL p50", "itl_p50_ms", fig(func(f *measure.Figures) string { return ms3(f.ITL.P50) })},
		{"ITL p99", "itl_p99_ms", fig(func(f *measure.Figures) string { return ms3(f.ITL.P99) })},
		{"E2E p50", "e2e_p50_ms", fig(func(f *measure.Figures) string { return ms1(f.E2E.P50) })},
		{"tokens", "completion_tokens", fig(func(f *measure.Figures) string { return strconv.Itoa(f.CompletionTokens) })},
	}
	if withHeader {
		cols = append(cols, column{"hdr fwd ms", "header_per_forward_mean_ms", fig(func(f *measure.Figures) string {
			if f.Header == nil {
				return ""
			}
			return ms3(f.Header.PerForward.Mean)
		})})
	}
	if withServer {
		cols = append(cols,
			column{"metrics fwd ms", "metrics_step_ms", srv(func(m *scrape.CellMetrics) string {
				if !m.Steps.HasStepTime {
					return ""
				}
				return ms3(m.Steps.StepTime)
			})},
			column{"batch seen", "occupancy_mode", srv(func(m *scrape.CellMetrics) string {
				if m.Occupancy.Samples == 0 {
					return ""
				}
				return fmt.Sprintf("%d (%.0f%%)", m.Occupancy.Mode, 100*m.Occupancy.AtTarget)
			})})
	}
	if withTruth {
		cols = append(cols, column{"engine fwd ms", "engine_truth_step_ms", srv(func(m *scrape.CellMetrics) string {
			if !m.Steps.HasTruth {
				return ""
			}
			return ms3(m.Steps.TruthStepTime)
		})})
	}
	return append(cols, column{"status", "status", func(c *Cell) string {
		s := c.Status
		if len(c.Warnings) > 0 {
			s += " ⚠"
		}
		return s
	}})
}

// present reports which optional column groups have data in run: server-header figures,
// /metrics figures, and the built-in engine's truth.
func present(run *Run) (header, server, truth bool) {
	for _, c := range run.Cells {
		header = header || (c.Figures != nil && c.Figures.Header != nil)
		server = server || c.Server != nil
		truth = truth || (c.Server != nil && c.Server.Steps.HasTruth)
	}
	return
}

// legend explains the table's columns, printed under it.
var legend = map[string]string{
	"len min/mean/max": "realised prompt lengths in tokens (chat template included), after clamping",
	"fwd ms mean":      "latency per decode forward pass: a sequence's decode time / (completion tokens − 1); mean, p50, p90 over the B sequences",
	"full-batch fwd":   "the same over the window where all B sequences decode together (ms)",
	"cached %":         "share of prompt tokens the server served from its prefix cache (the warmup sent the same prompts)",
	"TTFT p50":         "time to first token (ms), after the warmup: mostly cached, so not a cold prefill",
	"ITL p50":          "interval between consecutive chunks of a sequence (ms, per chunk)",
	"E2E p50":          "request start to a sequence's last token (ms)",
	"tokens":           "completion tokens generated in the cell",
	"hdr fwd ms":       "per forward pass from the server's generation-duration (and speculation-acceptance) headers",
	"metrics fwd ms":   "per forward pass from the server's /metrics before and after the cell",
	"batch seen":       "most frequent number of running requests sampled during the cell (share of samples at B); blank: no sample",
	"engine fwd ms":    "the built-in engine's own mean step duration during the cell (the truth, prefill steps included)",
	"status":           "ok, error or interrupted; ⚠ = see the warnings below",
}

// Table writes run's cells as a markdown table, then one line per warning or error. Times are
// milliseconds: "fwd" is the per-sequence latency per decode forward pass (decode time /
// (completion tokens − 1)), "full-batch fwd" the same over the window where all B sequences
// decode together.
func Table(w io.Writer, run *Run) {
	cols := columns(present(run))
	rows := make([][]string, 0, len(run.Cells)+2)
	head := make([]string, len(cols))
	for i, c := range cols {
		head[i] = c.head
	}
	rows = append(rows, head)
	for i := range run.Cells {
		r := make([]string, len(cols))
		for j, c := range cols {
			r[j] = c.get(&run.Cells[i])
		}
		rows = append(rows, r)
	}
	width := make([]int, len(cols))
	for _, r := range rows {
		for j, s := range r {
			width[j] = max(width[j], len([]rune(s)))
		}
	}
	line := func(r []string) {
		var b strings.Builder
		b.WriteString("|")
		for j, s := range r {
			pad := width[j] - len([]rune(s))
			if j < 2 || j > 2 { // numbers right-aligned
				b.WriteString(" " + strings.Repeat(" ", pad) + s + " |")
			} else {
				b.WriteString(" " + s + strings.Repeat(" ", pad) + " |")
			}
		}
		fmt.Fprintln(w, b.String())
	}
	h := run.Header
	fmt.Fprintf(w, "\n## genload %s — %s\n\n", h.RunID, h.Model)
	fmt.Fprintf(w, "target %s (%s), tokenizer %s, context %d, max_tokens %d, mode %s, lengths %s\n",
		h.Target, h.TargetKind, h.Tokenizer, h.Context, cfgMaxTokens(h), cfgMode(h), pluginName(h, "lengths"))
	if len(h.Workers) > 0 {
		names := make([]string, len(h.Workers))
		for i, wk := range h.Workers {
			names[i] = wk.Name + "=" + wk.URL
		}
		fmt.Fprintf(w, "routed over %d workers, router %s: %s\n", len(h.Workers), pluginName(h, "router"), strings.Join(names, ", "))
	}
	if ts, ok := h.Engine["time_scale"].(float64); ok && ts > 0 {
		fmt.Fprintf(w, "built-in engine: profile %v, time scale %g: times are wall-clock; ×%g gives the simulated GPU time\n", h.Engine["profile"], ts, 1/ts)
	}
	fmt.Fprintln(w)
	line(rows[0])
	sep := make([]string, len(cols))
	for j := range sep {
		sep[j] = strings.Repeat("-", width[j])
	}
	line(sep)
	for _, r := range rows[1:] {
		line(r)
	}
	fmt.Fprintln(w)
	for _, c := range cols {
		if l, ok := legend[c.head]; ok {
			fmt.Fprintf(w, "  %-16s %s\n", c.head, l)
		}
	}
	for _, c := range run.Cells {
		for _, warn := range c.Warnings {
			fmt.Fprintf(w, "⚠ %s: %s\n", c.Cell.Key(), warn)
		}
		if c.Error != "" {
			fmt.Fprintf(w, "✗ %s: %s\n", c.Cell.Key(), c.Error)
		}
	}
}

func cfgMaxTokens(h Header) int {
	if h.Config == nil {
		return 0
	}
	return h.Config.MaxTokens
}

func cfgMode(h Header) string {
	if h.Config == nil {
		return ""
	}
	return h.Config.Mode
}

func pluginName(h Header, kind string) string {
	p, ok := h.Plugins[kind]
	if !ok {
		return "–"
	}
	return p.Name + " " + p.Version
}

// CSVHeader lists the CSV columns: one row per cell, times in milliseconds, lengths in tokens.
func CSVHeader() []string {
	h := []string{"run_id", "cell", "seq_len", "batch", "len_min", "len_mean", "len_max", "len_clamped"}
	for _, c := range columns(true, true, true)[3:] {
		if c.csv != "" && c.csv != "status" {
			h = append(h, c.csv)
		}
	}
	return append(h, "itl_tokens_per_chunk", "ttft_mean_ms", "e2e_mean_ms", "short_sequences", "prompt_tokens", "prompt_token_deviation",
		"cached_tokens", "errors", "occupancy_share_at_b", "occupancy_max", "status", "error")
}

// WriteCSV writes run as CSV (columns in [CSVHeader]).
func WriteCSV(path string, run *Run) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	w := csv.NewWriter(f)
	_ = w.Write(CSVHeader())
	cols := columns(true, true, true)[3:]
	for i := range run.Cells {
		c := &run.Cells[i]
		row := []string{run.Header.RunID, strconv.Itoa(c.Cell.Index), strconv.Itoa(c.Cell.SeqLen), strconv.Itoa(c.Cell.Batch),
			strconv.Itoa(c.Lengths.Min), strconv.FormatFloat(c.Lengths.Mean, 'f', 2, 64), strconv.Itoa(c.Lengths.Max), strconv.Itoa(c.Lengths.Clamped)}
		for _, col := range cols {
			if col.csv != "" && col.csv != "status" {
				v := col.get(c)
				if v == "–" {
					v = ""
				}
				row = append(row, v)
			}
		}
		if f := c.Figures; f != nil {
			row = append(row, strconv.FormatFloat(f.ITLTokens, 'f', 3, 64), ms3(f.TTFT.Mean), ms3(f.E2E.Mean), strconv.Itoa(f.Short),
				strconv.Itoa(f.PromptTokens), strconv.Itoa(c.PromptTokenDeviation), strconv.Itoa(f.CachedTokens), strconv.Itoa(len(f.Errors)))
		} else {
			row = append(row, "", "", "", "", "", "", "", "")
		}
		if m := c.Server; m != nil && m.Occupancy.Samples > 0 {
			row = append(row, strconv.FormatFloat(m.Occupancy.AtTarget, 'f', 3, 64), strconv.Itoa(m.Occupancy.Max))
		} else {
			row = append(row, "", "")
		}
		row = append(row, c.Status, c.Error)
		_ = w.Write(row)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("results: %s: %w", path, err)
	}
	return f.Close()
}
