package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/scrape/metrics"
)

// column is one column of the table and the CSV: a header, the table's display text and the
// CSV's value (full precision, "" when unknown). narrow columns are in the default table;
// only is set on a column of the default table alone (a narrower form of a wide column).
type column struct {
	head   string
	csv    string
	get    func(c *results.Cell) string
	val    func(c *results.Cell) string
	narrow bool
	only   bool
	// perServer marks a column of routed cells' per-server figures: in the wide table only
	// when some cell has them (the CSV always has it).
	perServer bool
	// timings marks the column of the server's own per-sequence timings: in the wide table
	// only when some cell has them (the CSV always has it).
	timings bool
}

// inNarrow marks c as one of the default table's columns.
func inNarrow(c column) column { c.narrow = true; return c }

// durCol is a column of milliseconds: shown with prec decimals, written to the CSV with
// nanosecond precision; blank (or none for the table) when f reports no value.
func durCol(head, csv string, prec int, none string, f func(c *results.Cell) (time.Duration, bool)) column {
	return column{head: head, csv: csv,
		get: func(c *results.Cell) string {
			d, ok := f(c)
			if !ok {
				if c.Figures == nil {
					return ""
				}
				return none
			}
			return strconv.FormatFloat(measure.Ms(d), 'f', prec, 64)
		},
		val: func(c *results.Cell) string {
			if d, ok := f(c); ok {
				return strconv.FormatFloat(measure.Ms(d), 'f', 6, 64)
			}
			return ""
		}}
}

// textCol is a column whose table text is also its CSV value.
func textCol(head, csv string, f func(c *results.Cell) string) column {
	return column{head: head, csv: csv, get: f, val: f}
}

// figDur reads a duration from the figures; ok is false without figures, in a cell of status
// error (its figures are of what the server did instead — prompts it truncated: kept in the
// JSON, not shown as the cell's) or when pick says so.
func figDur(pick func(f *measure.Figures) (time.Duration, bool)) func(c *results.Cell) (time.Duration, bool) {
	return func(c *results.Cell) (time.Duration, bool) {
		if c.Figures == nil || c.Status == results.StatusError {
			return 0, false
		}
		return pick(c.Figures)
	}
}

// srvDur reads a duration from the server metrics.
func srvDur(pick func(m *metrics.CellMetrics) (time.Duration, bool)) func(c *results.Cell) (time.Duration, bool) {
	return func(c *results.Cell) (time.Duration, bool) {
		if c.Server == nil {
			return 0, false
		}
		return pick(c.Server)
	}
}

// Ms writes d in milliseconds with prec decimals, as the tables write a duration (prec 3:
// 1.234567 ms is "1.235").
func Ms(d time.Duration, prec int) string { return strconv.FormatFloat(measure.Ms(d), 'f', prec, 64) }

// columns are the table's columns. wide selects every column (the CSV's set, with the
// optional groups that have data); otherwise the default table's: L, B, realised lengths,
// fwd, full-batch fwd, TTFT p50, the batch seen, counted and status.
func columns(withHeader, withServer, withTruth, wide bool) []column {
	all := allColumns(withHeader, withServer, withTruth)
	var out []column
	for _, c := range all {
		if (wide && !c.only) || (!wide && c.narrow) {
			out = append(out, c)
		}
	}
	return out
}

// allColumns is every column in table order: the figures of every run ([figureColumns]),
// the optional groups (the server's own timings: its headers' figure and its per-sequence
// timings (llama.cpp, ollama); the server's metrics and its per-server columns,
// the built-in engine's truth) and last the counted sequences and the status.
func allColumns(withHeader, withServer, withTruth bool) []column {
	cols := figureColumns()
	if withHeader {
		cols = append(cols, durCol("hdr fwd ms", "header_per_forward_mean_ms", 3, "", figDur(func(f *measure.Figures) (time.Duration, bool) {
			if f.Header == nil || f.Header.PerForward.N == 0 {
				return 0, false
			}
			return f.Header.PerForward.Mean, true
		})))
		srv := durCol("srv fwd ms", "server_timings_per_forward_mean_ms", 3, "", figDur(func(f *measure.Figures) (time.Duration, bool) {
			if f.ServerTimings == nil || f.ServerTimings.PerForward.N == 0 {
				return 0, false
			}
			return f.ServerTimings.PerForward.Mean, true
		}))
		srv.timings = true
		cols = append(cols, srv)
	}
	if withServer {
		cols = append(cols, durCol("metrics fwd ms", "metrics_step_ms", 3, "", srvDur(func(m *metrics.CellMetrics) (time.Duration, bool) {
			return m.Steps.StepTime, m.Steps.HasStepTime
		})))
	}
	// The wide form of the default table's B seen: the same figure, with the number of gauge
	// samples it is over; in every wide table, since the client's figure stands in for the
	// gauge where none was sampled. The CSV keeps the gauge's mode alone.
	cols = append(cols, column{head: "B seen", csv: "occupancy_mode", get: func(c *results.Cell) string { return batchSeenOf(c, true) },
		val: func(c *results.Cell) string {
			if c.Server == nil || c.Server.Occupancy.Samples == 0 {
				return ""
			}
			return strconv.Itoa(c.Server.Occupancy.Mode)
		}})
	cols = append(cols, perServerColumns()...)
	if withTruth {
		cols = append(cols, durCol("engine fwd ms", "engine_truth_decode_step_ms", 3, "", srvDur(func(m *metrics.CellMetrics) (time.Duration, bool) {
			return m.Steps.TruthDecodeStepTime, m.Steps.HasTruthDecode
		})))
	}
	return append(cols, countedColumn(), statusColumn())
}

// Getters of a figure's summary, for [figureColumns].
func summaryMean(s measure.Summary) time.Duration { return s.Mean }
func summaryP50(s measure.Summary) time.Duration  { return s.P50 }
func summaryP90(s measure.Summary) time.Duration  { return s.P90 }
func summaryP99(s measure.Summary) time.Duration  { return s.P99 }
func ttftOf(f *measure.Figures) measure.Summary   { return f.TTFT }
func itlOf(f *measure.Figures) measure.Summary    { return f.ITL }
func e2eOf(f *measure.Figures) measure.Summary    { return f.E2E }
func perFwdOf(f *measure.Figures) measure.Summary { return f.PerForward }

// summaryFig is get of the summary pick picks, present when the summary has a sample.
func summaryFig(pick func(f *measure.Figures) measure.Summary, get func(s measure.Summary) time.Duration) func(f *measure.Figures) (time.Duration, bool) {
	return func(f *measure.Figures) (time.Duration, bool) { s := pick(f); return get(s), s.N > 0 }
}

// figureColumns are the columns every run has: L, B, realised lengths, the per-forward
// figures, cached share, TTFT, ITL, E2E, completion tokens and the default table's B seen.
func figureColumns() []column {
	return []column{
		inNarrow(textCol("L", "seq_len", func(c *results.Cell) string { return strconv.Itoa(c.Cell.SeqLen) })),
		inNarrow(textCol("B", "batch", func(c *results.Cell) string { return strconv.Itoa(c.Cell.Batch) })),
		inNarrow(column{head: "len min/mean/max", get: func(c *results.Cell) string {
			if len(c.Lengths.Each) == 0 {
				return ""
			}
			return fmt.Sprintf("%d/%.0f/%d", c.Lengths.Min, c.Lengths.Mean, c.Lengths.Max)
		}}),
		inNarrow(durCol("fwd ms mean", "per_forward_mean_ms", 3, "–", figDur(summaryFig(perFwdOf, summaryMean)))),
		durCol("fwd p50", "per_forward_p50_ms", 3, "–", figDur(summaryFig(perFwdOf, summaryP50))),
		durCol("fwd p90", "per_forward_p90_ms", 3, "–", figDur(summaryFig(perFwdOf, summaryP90))),
		durCol("fwd fit", "per_forward_fit_mean_ms", 3, "–", figDur(func(f *measure.Figures) (time.Duration, bool) {
			return f.PerForwardFit.Mean, f.PerForwardFit.N > 0
		})),
		inNarrow(durCol("full-batch fwd", "full_occupancy_per_forward_ms", 3, "–", figDur(func(f *measure.Figures) (time.Duration, bool) {
			return f.Window.PerStep, f.Window.Valid
		}))),
		{head: "cached %", csv: "cached_percent", get: cachedPercent(1), val: cachedPercent(4)},
		inNarrow(durCol("TTFT p50", "ttft_p50_ms", 1, "–", figDur(summaryFig(ttftOf, summaryP50)))),
		durCol("TTFT p90", "ttft_p90_ms", 1, "–", figDur(summaryFig(ttftOf, summaryP90))),
		durCol("ITL p50", "itl_p50_ms", 3, "–", figDur(summaryFig(itlOf, summaryP50))),
		durCol("ITL p99", "itl_p99_ms", 3, "–", figDur(summaryFig(itlOf, summaryP99))),
		durCol("E2E p50", "e2e_p50_ms", 1, "–", figDur(summaryFig(e2eOf, summaryP50))),
		tokensColumn(),
		{head: "B seen", get: func(c *results.Cell) string { return batchSeenOf(c, false) }, narrow: true, only: true},
	}
}

// cachedPercent is the share of prompt tokens the server found cached, with prec decimals:
// "–" in the table when the server does not say (the legend says why), "" in the CSV.
func cachedPercent(prec int) func(c *results.Cell) string {
	return func(c *results.Cell) string {
		f := c.Figures
		switch {
		case f == nil:
			return ""
		case !f.HasCachedTokens || f.PromptTokens == 0:
			if prec > 1 {
				return "" // CSV: unknown
			}
			return "–" // the legend says why
		}
		return strconv.FormatFloat(100*float64(f.CachedTokens)/float64(f.PromptTokens), 'f', prec, 64)
	}
}

// tokensColumn is the completion tokens ("≥N" in the table when some were not verified).
func tokensColumn() column {
	return column{head: "tokens", csv: "completion_tokens", get: func(c *results.Cell) string {
		if c.Figures == nil {
			return ""
		}
		if c.Figures.TokensUnverified > 0 {
			return "≥" + strconv.Itoa(c.Figures.CompletionTokens)
		}
		return strconv.Itoa(c.Figures.CompletionTokens)
	}, val: func(c *results.Cell) string {
		if c.Figures == nil {
			return ""
		}
		return strconv.Itoa(c.Figures.CompletionTokens)
	}}
}

// countedColumn is the sequences with a per-forward figure, "N/sequences" in the table.
func countedColumn() column {
	return inNarrow(column{head: "counted", csv: "counted", get: func(c *results.Cell) string {
		if c.Figures == nil {
			return ""
		}
		return fmt.Sprintf("%d/%d", c.Figures.PerForward.N, c.Figures.Sequences)
	}, val: func(c *results.Cell) string {
		if c.Figures == nil {
			return ""
		}
		return strconv.Itoa(c.Figures.PerForward.N)
	}})
}

// statusColumn is the cell's status, " ⚠" after it when the cell has warnings.
func statusColumn() column {
	return inNarrow(column{head: "status", csv: "status", get: func(c *results.Cell) string {
		s := c.Status
		if len(c.Warnings) > 0 {
			s += " ⚠"
		}
		return s
	}})
}

// batchSeenOf is the table's batch attainment (the B seen column): the server's
// running-requests gauge (most frequent value and its share of samples at B, "4 (67%)", and
// with samples the number of samples, "4 (67% of 3)") where it was sampled, else the most
// sequences the client saw decoding together, marked "(client)" ("<" before it when the
// client's marks say the batch was probably not reached), also where the gauge read a fixed
// value (metrics.Occupancy.Fixed); "?" when neither can tell.
func batchSeenOf(c *results.Cell, samples bool) string {
	if c.Figures == nil && c.Server == nil {
		return ""
	}
	if m := c.Server; m != nil && m.Occupancy.Samples > 0 && !m.Occupancy.Fixed { // a fixed gauge counts nothing
		if samples {
			return fmt.Sprintf("%d (%.0f%% of %d)", m.Occupancy.Mode, 100*m.Occupancy.AtTarget, m.Occupancy.Samples)
		}
		return fmt.Sprintf("%d (%.0f%%)", m.Occupancy.Mode, 100*m.Occupancy.AtTarget)
	}
	if c.Figures == nil || c.Figures.Attainment == nil {
		return "?"
	}
	a := c.Figures.Attainment
	switch a.State {
	case measure.AttainmentReached:
		return fmt.Sprintf("%d (client)", a.Concurrency)
	case measure.AttainmentProbablyNotReached:
		return fmt.Sprintf("<%d (client)", c.Cell.Batch)
	}
	return "?"
}

// present reports which optional column groups have data in run: server-header figures,
// /metrics figures, and the built-in engine's truth.
func present(run *results.Run) (header, server, truth bool) {
	for _, c := range run.Cells {
		header = header || (c.Figures != nil && (c.Figures.Header != nil || c.Figures.ServerTimings != nil))
		server = server || c.Server != nil
		truth = truth || (c.Server != nil && c.Server.Steps.HasTruthDecode)
	}
	return
}

// perServerColumns are the per-server figures of routed cells (Cell.PerServer), one value
// per server in the order of Cell.PerServer, joined by " / " in the table and ";" in the CSV:
// fwd, full-batch fwd, the batch seen and the servers' names.
func perServerColumns() []column {
	each := func(head, csv string, f func(s *results.ServerFigures, table bool) string) column {
		join := func(sep string, table bool) func(c *results.Cell) string {
			return func(c *results.Cell) string {
				parts := make([]string, len(c.PerServer))
				for i := range c.PerServer {
					parts[i] = f(&c.PerServer[i], table)
				}
				return strings.Join(parts, sep)
			}
		}
		return column{head: head, csv: csv, get: join(" / ", true), val: join(";", false), perServer: true}
	}
	dur := func(d time.Duration, ok, table bool) string {
		switch {
		case ok && table:
			return Ms(d, 3)
		case ok:
			return strconv.FormatFloat(measure.Ms(d), 'f', 6, 64)
		case table:
			return "–"
		}
		return ""
	}
	return []column{
		each("fwd per server", "per_server_per_forward_mean_ms", func(s *results.ServerFigures, table bool) string {
			return dur(s.PerForward.Mean, s.PerForward.N > 0, table)
		}),
		each("full-batch per server", "per_server_full_occupancy_per_forward_ms", func(s *results.ServerFigures, table bool) string {
			return dur(s.Window.PerStep, s.Window.Valid, table)
		}),
		each("B seen per server", "per_server_occupancy_max", func(s *results.ServerFigures, table bool) string {
			switch o := s.Occupancy; {
			case o != nil && o.Samples > 0 && table:
				return fmt.Sprintf("%d/%d (%.0f%%)", o.Max, s.Sequences, 100*o.AtTarget)
			case o != nil && o.Samples > 0:
				return strconv.Itoa(o.Max)
			case table:
				return fmt.Sprintf("%d/%d (client)", s.Attainment.Concurrency, s.Sequences)
			}
			return ""
		}),
		{head: "servers", csv: "per_server_servers", perServer: true, val: func(c *results.Cell) string {
			parts := make([]string, len(c.PerServer))
			for i, s := range c.PerServer {
				parts[i] = s.Server
			}
			return strings.Join(parts, ";")
		}},
	}
}

// hasPerServer reports whether a cell of run has per-server figures.
// hasTimings reports whether some cell of run has the server's own per-sequence timings.
func hasTimings(run *results.Run) bool {
	for _, c := range run.Cells {
		if c.Figures != nil && c.Figures.ServerTimings != nil {
			return true
		}
	}
	return false
}

func hasPerServer(run *results.Run) bool {
	for _, c := range run.Cells {
		if len(c.PerServer) > 0 {
			return true
		}
	}
	return false
}
