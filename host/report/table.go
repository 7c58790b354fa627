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
	"github.com/genload/genload/host/scrape/scraped"
)

// column is one column of the table and the CSV: a header, the table's display text and the
// CSV's value (full precision, "" when unknown).
type column struct {
	head string
	csv  string
	get  func(c *Cell) string
	val  func(c *Cell) string
}

// durCol is a column of milliseconds: shown with prec decimals, written to the CSV with
// nanosecond precision; blank (or none for the table) when f reports no value.
func durCol(head, csv string, prec int, none string, f func(c *Cell) (time.Duration, bool)) column {
	return column{head: head, csv: csv,
		get: func(c *Cell) string {
			d, ok := f(c)
			if !ok {
				if c.Figures == nil {
					return ""
				}
				return none
			}
			return strconv.FormatFloat(measure.Ms(d), 'f', prec, 64)
		},
		val: func(c *Cell) string {
			if d, ok := f(c); ok {
				return strconv.FormatFloat(measure.Ms(d), 'f', 6, 64)
			}
			return ""
		}}
}

// textCol is a column whose table text is also its CSV value.
func textCol(head, csv string, f func(c *Cell) string) column { return column{head, csv, f, f} }

// figDur reads a duration from the figures; ok is false without figures or when pick says so.
func figDur(pick func(f *measure.Figures) (time.Duration, bool)) func(c *Cell) (time.Duration, bool) {
	return func(c *Cell) (time.Duration, bool) {
		if c.Figures == nil {
			return 0, false
		}
		return pick(c.Figures)
	}
}

// srvDur reads a duration from the server metrics.
func srvDur(pick func(m *scraped.CellMetrics) (time.Duration, bool)) func(c *Cell) (time.Duration, bool) {
	return func(c *Cell) (time.Duration, bool) {
		if c.Server == nil {
			return 0, false
		}
		return pick(c.Server)
	}
}

func ms3(d time.Duration) string { return strconv.FormatFloat(measure.Ms(d), 'f', 3, 64) }
func ms1(d time.Duration) string { return strconv.FormatFloat(measure.Ms(d), 'f', 1, 64) }

func columns(withHeader, withServer, withTruth bool) []column {
	fwd := func(get func(s measure.Summary) time.Duration) func(f *measure.Figures) (time.Duration, bool) {
		return func(f *measure.Figures) (time.Duration, bool) { return get(f.PerForward), f.PerForward.N > 0 }
	}
	sum := func(pick func(f *measure.Figures) measure.Summary, get func(s measure.Summary) time.Duration) func(f *measure.Figures) (time.Duration, bool) {
		return func(f *measure.Figures) (time.Duration, bool) { s := pick(f); return get(s), s.N > 0 }
	}
	mean := func(s measure.Summary) time.Duration { return s.Mean }
	p50 := func(s measure.Summary) time.Duration { return s.P50 }
	p90 := func(s measure.Summary) time.Duration { return s.P90 }
	p99 := func(s measure.Summary) time.Duration { return s.P99 }
	ttft := func(f *measure.Figures) measure.Summary { return f.TTFT }
	itl := func(f *measure.Figures) measure.Summary { return f.ITL }
	e2e := func(f *measure.Figures) measure.Summary { return f.E2E }
	cols := []column{
		textCol("L", "seq_len", func(c *Cell) string { return strconv.Itoa(c.Cell.SeqLen) }),
		textCol("B", "batch", func(c *Cell) string { return strconv.Itoa(c.Cell.Batch) }),
		{"len min/mean/max", "", func(c *Cell) string {
			if len(c.Lengths.Each) == 0 {
				return ""
			}
			return fmt.Sprintf("%d/%.0f/%d", c.Lengths.Min, c.Lengths.Mean, c.Lengths.Max)
		}, nil},
		durCol("fwd ms mean", "per_forward_mean_ms", 3, "–", figDur(fwd(mean))),
		durCol("fwd p50", "per_forward_p50_ms", 3, "–", figDur(fwd(p50))),
		durCol("fwd p90", "per_forward_p90_ms", 3, "–", figDur(fwd(p90))),
		durCol("fwd fit", "per_forward_fit_mean_ms", 3, "–", figDur(func(f *measure.Figures) (time.Duration, bool) {
			return f.PerForwardFit.Mean, f.PerForwardFit.N > 0
		})),
		durCol("full-batch fwd", "full_occupancy_per_forward_ms", 3, "–", figDur(func(f *measure.Figures) (time.Duration, bool) {
			return f.Window.PerStep, f.Window.Valid
		})),
		{"cached %", "cached_percent", func(c *Cell) string {
			f := c.Figures
			if f == nil || !f.HasCachedTokens || f.PromptTokens == 0 {
				return ""
			}
			return strconv.FormatFloat(100*float64(f.CachedTokens)/float64(f.PromptTokens), 'f', 1, 64)
		}, func(c *Cell) string {
			f := c.Figures
			if f == nil || !f.HasCachedTokens || f.PromptTokens == 0 {
				return ""
			}
			return strconv.FormatFloat(100*float64(f.CachedTokens)/float64(f.PromptTokens), 'f', 4, 64)
		}},
		durCol("TTFT p50", "ttft_p50_ms", 1, "–", figDur(sum(ttft, p50))),
		durCol("TTFT p90", "ttft_p90_ms", 1, "–", figDur(sum(ttft, p90))),
		durCol("ITL p50", "itl_p50_ms", 3, "–", figDur(sum(itl, p50))),
		durCol("ITL p99", "itl_p99_ms", 3, "–", figDur(sum(itl, p99))),
		durCol("E2E p50", "e2e_p50_ms", 1, "–", figDur(sum(e2e, p50))),
		{"tokens", "completion_tokens", func(c *Cell) string {
			if c.Figures == nil {
				return ""
			}
			if c.Figures.TokensUnverified > 0 {
				return "≥" + strconv.Itoa(c.Figures.CompletionTokens)
			}
			return strconv.Itoa(c.Figures.CompletionTokens)
		}, func(c *Cell) string {
			if c.Figures == nil {
				return ""
			}
			return strconv.Itoa(c.Figures.CompletionTokens)
		}},
	}
	if withHeader {
		cols = append(cols, durCol("hdr fwd ms", "header_per_forward_mean_ms", 3, "", figDur(func(f *measure.Figures) (time.Duration, bool) {
			if f.Header == nil || f.Header.PerForward.N == 0 {
				return 0, false
			}
			return f.Header.PerForward.Mean, true
		})))
	}
	if withServer {
		cols = append(cols,
			durCol("metrics fwd ms", "metrics_step_ms", 3, "", srvDur(func(m *scraped.CellMetrics) (time.Duration, bool) {
				return m.Steps.StepTime, m.Steps.HasStepTime
			})),
			column{"batch seen", "occupancy_mode", func(c *Cell) string {
				if c.Server == nil || c.Server.Occupancy.Samples == 0 {
					return ""
				}
				o := c.Server.Occupancy
				return fmt.Sprintf("%d (%.0f%% of %d)", o.Mode, 100*o.AtTarget, o.Samples)
			}, func(c *Cell) string {
				if c.Server == nil || c.Server.Occupancy.Samples == 0 {
					return ""
				}
				return strconv.Itoa(c.Server.Occupancy.Mode)
			}})
	}
	if withTruth {
		cols = append(cols, durCol("engine fwd ms", "engine_truth_decode_step_ms", 3, "", srvDur(func(m *scraped.CellMetrics) (time.Duration, bool) {
			return m.Steps.TruthDecodeStepTime, m.Steps.HasTruthDecode
		})))
	}
	cols = append(cols, column{"counted", "counted", func(c *Cell) string {
		if c.Figures == nil {
			return ""
		}
		return fmt.Sprintf("%d/%d", c.Figures.PerForward.N, c.Figures.Sequences)
	}, func(c *Cell) string {
		if c.Figures == nil {
			return ""
		}
		return strconv.Itoa(c.Figures.PerForward.N)
	}})
	return append(cols, column{"status", "status", func(c *Cell) string {
		s := c.Status
		if len(c.Warnings) > 0 {
			s += " ⚠"
		}
		return s
	}, nil})
}

// present reports which optional column groups have data in run: server-header figures,
// /metrics figures, and the built-in engine's truth.
func present(run *Run) (header, server, truth bool) {
	for _, c := range run.Cells {
		header = header || (c.Figures != nil && c.Figures.Header != nil)
		server = server || c.Server != nil
		truth = truth || (c.Server != nil && c.Server.Steps.HasTruthDecode)
	}
	return
}

// legend explains the table's columns, printed under it.
var legend = map[string]string{
	"len min/mean/max": "realised prompt lengths in tokens (chat template included), after clamping",
	"fwd ms mean":      "latency per decode forward pass: a sequence's decode time / (completion tokens − 1), from its first on-time chunk (a held-back first chunk is skipped); mean, p50, p90 over the counted sequences",
	"fwd fit":          "the cross-check: a robust (Theil–Sen) fit of chunk arrival time against tokens, per sequence, mean — the typical forward pass; the warnings say when the two disagree and why",
	"full-batch fwd":   "the same over the window where all counted sequences decode together (ms); – when shorter than 10 forward passes",
	"cached %":         "share of prompt tokens the server served from its prefix cache (the warmup sent the same prompts)",
	"TTFT p50":         "time to first token (ms), after the warmup: mostly cached, so not a cold prefill",
	"ITL p50":          "interval between consecutive chunks of a sequence (ms, per chunk)",
	"E2E p50":          "request start to a sequence's last token (ms)",
	"tokens":           "completion tokens generated in the cell; ≥: counted from chunks, unverified (the server sent no usable count)",
	"counted":          "sequences in the per-forward figures / B: the others stopped early, ran past max_tokens, returned no token or failed (the cell is partial), or could not be timed (the warnings say why)",
	"hdr fwd ms":       "per forward pass from the server's generation-duration (and speculation-acceptance) headers",
	"metrics fwd ms":   "per forward pass from the server's /metrics before and after the cell",
	"batch seen":       "most frequent number of running requests sampled during the cell (share of samples at B); blank: no sample",
	"engine fwd ms":    "the built-in engine's own mean duration of its decode steps during the cell (the truth)",
	"status":           "ok, partial (some sequences left out: see counted), error or interrupted; ⚠ = see the warnings below; – in a column: not measured (the warnings say why)",
}

// Table writes run's cells as a markdown table, then one line per warning or error. Times are
// milliseconds: "fwd" is the per-sequence latency per decode forward pass (decode time /
// (completion tokens − 1) from the first on-time chunk; "fwd fit" the robust fit beside it),
// "full-batch fwd" the same over the window where all counted sequences decode together;
// "counted" is the sequences in those figures over B (a partial cell left some out).
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
		n := fmt.Sprintf("%d workers", len(h.Workers))
		if len(h.Workers) == 1 {
			n = "1 worker"
		}
		fmt.Fprintf(w, "routed over %s, router %s: %s\n", n, pluginName(h, "router"), strings.Join(names, ", "))
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
	fmt.Fprintf(w, "  %-16s %s\n", "p50, p90, p99", "nearest-rank percentiles: the ⌈q·N⌉-th smallest of the N samples (always one of them)")
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

// CSVHeader lists the CSV columns: one row per cell, times in milliseconds with nanosecond
// precision, lengths in tokens; an unknown value is an empty field.
func CSVHeader() []string {
	h := []string{"run_id", "cell", "seq_len", "batch", "len_min", "len_mean", "len_max", "len_clamped"}
	for _, c := range csvColumns() {
		h = append(h, c.csv)
	}
	return append(h, "itl_tokens_per_chunk", "tokens_per_chunk", "ttft_mean_ms", "e2e_mean_ms", "short_sequences", "prompt_tokens",
		"prompt_token_deviation", "cached_tokens", "errors", "occupancy_share_at_b", "occupancy_max", "occupancy_samples",
		"per_forward_method", "per_forward_endpoints_mean_ms", "full_occupancy_endpoints_ms", "full_occupancy_fit_ms", "tokens_unverified", "zero_token_sequences", "early_stop_sequences",
		"overlong_sequences", "prompt_requests_deviating", "prompt_max_abs_deviation", "prompt_truncated_requests", "status", "error")
}

// csvColumns are the table's columns that have a CSV value, past L and B.
func csvColumns() []column {
	var out []column
	for _, c := range columns(true, true, true)[2:] {
		if c.csv != "" && c.val != nil {
			out = append(out, c)
		}
	}
	return out
}

// WriteCSV writes run as CSV (columns in [CSVHeader]).
func WriteCSV(path string, run *Run) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	w := csv.NewWriter(f)
	_ = w.Write(CSVHeader())
	cols := csvColumns()
	ms := func(d time.Duration) string { return strconv.FormatFloat(measure.Ms(d), 'f', 6, 64) }
	for i := range run.Cells {
		c := &run.Cells[i]
		row := []string{run.Header.RunID, strconv.Itoa(c.Cell.Index), strconv.Itoa(c.Cell.SeqLen), strconv.Itoa(c.Cell.Batch),
			strconv.Itoa(c.Lengths.Min), strconv.FormatFloat(c.Lengths.Mean, 'f', 2, 64), strconv.Itoa(c.Lengths.Max), strconv.Itoa(c.Lengths.Clamped)}
		for _, col := range cols {
			row = append(row, col.val(c))
		}
		if f := c.Figures; f != nil {
			itlTok, cached := "", ""
			if f.ITLTokens > 0 {
				itlTok = strconv.FormatFloat(f.ITLTokens, 'f', 4, 64)
			}
			if f.HasCachedTokens {
				cached = strconv.Itoa(f.CachedTokens)
			}
			row = append(row, itlTok, strconv.FormatFloat(f.TokensPerChunk, 'f', 4, 64), ms(f.TTFT.Mean), ms(f.E2E.Mean), strconv.Itoa(f.Short),
				strconv.Itoa(f.PromptTokens), strconv.Itoa(c.PromptTokenDeviation), cached, strconv.Itoa(len(f.Errors)))
		} else {
			row = append(row, "", "", "", "", "", "", "", "", "")
		}
		if m := c.Server; m != nil && m.Occupancy.Samples > 0 {
			row = append(row, strconv.FormatFloat(m.Occupancy.AtTarget, 'f', 4, 64), strconv.Itoa(m.Occupancy.Max), strconv.Itoa(m.Occupancy.Samples))
		} else {
			row = append(row, "", "", "")
		}
		if f := c.Figures; f != nil {
			ends, winEnds, winFit, pd, pm, pt := "", "", "", "", "", ""
			if f.PerForwardEndpoints.N > 0 {
				ends = ms(f.PerForwardEndpoints.Mean)
			}
			if f.Window.Valid && f.Window.Endpoints > 0 {
				winEnds = ms(f.Window.Endpoints)
			}
			if f.Window.Valid && f.Window.Fit > 0 {
				winFit = ms(f.Window.Fit)
			}
			if p := f.Prompts; p != nil {
				pd, pm, pt = strconv.Itoa(p.Deviating), strconv.Itoa(p.MaxAbs), strconv.Itoa(p.Truncated)
			}
			row = append(row, f.PerForwardMethod, ends, winEnds, winFit, strconv.Itoa(f.TokensUnverified), strconv.Itoa(f.ZeroToken), strconv.Itoa(f.EarlyStop),
				strconv.Itoa(f.Overlong), pd, pm, pt)
		} else {
			row = append(row, "", "", "", "", "", "", "", "", "", "", "")
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
