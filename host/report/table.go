package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/scrape/scraped"
)

// column is one column of the table and the CSV: a header, the table's display text and the
// CSV's value (full precision, "" when unknown). narrow columns are in the default table;
// only is set on a column of the default table alone (a narrower form of a wide column).
type column struct {
	head   string
	csv    string
	get    func(c *Cell) string
	val    func(c *Cell) string
	narrow bool
	only   bool
}

// inNarrow marks c as one of the default table's columns.
func inNarrow(c column) column { c.narrow = true; return c }

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
func textCol(head, csv string, f func(c *Cell) string) column {
	return column{head: head, csv: csv, get: f, val: f}
}

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

func allColumns(withHeader, withServer, withTruth bool) []column {
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
	cached := func(prec int) func(c *Cell) string {
		return func(c *Cell) string {
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
	cols := []column{
		inNarrow(textCol("L", "seq_len", func(c *Cell) string { return strconv.Itoa(c.Cell.SeqLen) })),
		inNarrow(textCol("B", "batch", func(c *Cell) string { return strconv.Itoa(c.Cell.Batch) })),
		inNarrow(column{head: "len min/mean/max", get: func(c *Cell) string {
			if len(c.Lengths.Each) == 0 {
				return ""
			}
			return fmt.Sprintf("%d/%.0f/%d", c.Lengths.Min, c.Lengths.Mean, c.Lengths.Max)
		}}),
		inNarrow(durCol("fwd ms mean", "per_forward_mean_ms", 3, "–", figDur(fwd(mean)))),
		durCol("fwd p50", "per_forward_p50_ms", 3, "–", figDur(fwd(p50))),
		durCol("fwd p90", "per_forward_p90_ms", 3, "–", figDur(fwd(p90))),
		durCol("fwd fit", "per_forward_fit_mean_ms", 3, "–", figDur(func(f *measure.Figures) (time.Duration, bool) {
			return f.PerForwardFit.Mean, f.PerForwardFit.N > 0
		})),
		inNarrow(durCol("full-batch fwd", "full_occupancy_per_forward_ms", 3, "–", figDur(func(f *measure.Figures) (time.Duration, bool) {
			return f.Window.PerStep, f.Window.Valid
		}))),
		{head: "cached %", csv: "cached_percent", get: cached(1), val: cached(4)},
		inNarrow(durCol("TTFT p50", "ttft_p50_ms", 1, "–", figDur(sum(ttft, p50)))),
		durCol("TTFT p90", "ttft_p90_ms", 1, "–", figDur(sum(ttft, p90))),
		durCol("ITL p50", "itl_p50_ms", 3, "–", figDur(sum(itl, p50))),
		durCol("ITL p99", "itl_p99_ms", 3, "–", figDur(sum(itl, p99))),
		durCol("E2E p50", "e2e_p50_ms", 1, "–", figDur(sum(e2e, p50))),
		{head: "tokens", csv: "completion_tokens", get: func(c *Cell) string {
			if c.Figures == nil {
				return ""
			}
			if c.Figures.TokensUnverified > 0 {
				return "≥" + strconv.Itoa(c.Figures.CompletionTokens)
			}
			return strconv.Itoa(c.Figures.CompletionTokens)
		}, val: func(c *Cell) string {
			if c.Figures == nil {
				return ""
			}
			return strconv.Itoa(c.Figures.CompletionTokens)
		}},
		{head: "B seen", get: batchSeen, narrow: true, only: true},
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
			column{head: "batch seen", csv: "occupancy_mode", get: func(c *Cell) string {
				if c.Server == nil || c.Server.Occupancy.Samples == 0 {
					return ""
				}
				o := c.Server.Occupancy
				return fmt.Sprintf("%d (%.0f%% of %d)", o.Mode, 100*o.AtTarget, o.Samples)
			}, val: func(c *Cell) string {
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
	cols = append(cols, inNarrow(column{head: "counted", csv: "counted", get: func(c *Cell) string {
		if c.Figures == nil {
			return ""
		}
		return fmt.Sprintf("%d/%d", c.Figures.PerForward.N, c.Figures.Sequences)
	}, val: func(c *Cell) string {
		if c.Figures == nil {
			return ""
		}
		return strconv.Itoa(c.Figures.PerForward.N)
	}}))
	return append(cols, inNarrow(column{head: "status", csv: "status", get: func(c *Cell) string {
		s := c.Status
		if len(c.Warnings) > 0 {
			s += " ⚠"
		}
		return s
	}}))
}

// batchSeen is the default table's batch attainment: the server's running-requests gauge
// (most frequent value and its share of samples at B) where it was sampled, else the most
// sequences the client saw decoding together, marked "(client)" ("<" before it when the
// client's marks say the batch was probably not reached); "?" when neither can tell.
func batchSeen(c *Cell) string {
	if c.Figures == nil && c.Server == nil {
		return ""
	}
	if m := c.Server; m != nil && m.Occupancy.Samples > 0 {
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
func present(run *Run) (header, server, truth bool) {
	for _, c := range run.Cells {
		header = header || (c.Figures != nil && c.Figures.Header != nil)
		server = server || c.Server != nil
		truth = truth || (c.Server != nil && c.Server.Steps.HasTruthDecode)
	}
	return
}

// legend explains the table's columns, printed under it; cached % and TTFT p50 depend on the
// run (legendFor).
var legend = map[string]string{
	"len min/mean/max": "realised prompt lengths in tokens (chat template included), after clamping",
	"fwd ms mean":      "latency per decode forward pass: a sequence's decode time / (completion tokens − 1), from its first on-time chunk (a held-back first chunk is skipped); mean, p50, p90 over the counted sequences",
	"fwd fit":          "the cross-check: a robust (Theil–Sen) fit of chunk arrival time against tokens, per sequence, mean — the typical forward pass; the warnings say when the two disagree and why",
	"full-batch fwd":   "the same over the window where all counted sequences decode together (ms); – when shorter than 10 forward passes",
	"ITL p50":          "interval between consecutive chunks of a sequence (ms, per chunk)",
	"E2E p50":          "request start to a sequence's last token (ms)",
	"tokens":           "completion tokens generated in the cell; ≥: counted from chunks, unverified (the server sent no usable count)",
	"counted":          "sequences in the per-forward figures / B: the others stopped early, ran past max_tokens, returned no token or failed (the cell is partial), or could not be timed (the warnings say why)",
	"hdr fwd ms":       "per forward pass from the server's generation-duration (and speculation-acceptance) headers",
	"metrics fwd ms":   "per forward pass from the server's /metrics before and after the cell",
	"batch seen":       "most frequent number of running requests sampled during the cell (share of samples at B); blank: no sample",
	"B seen":           "the batch the cell ran at: the server's running-requests gauge, most frequent value (share of samples at B); (client): the most sequences the client saw decoding together, where no gauge was sampled (<B: probably not reached); ?: neither could tell",
	"engine fwd ms":    "the built-in engine's own mean duration of its decode steps during the cell (the truth)",
	"repeat":           "the cell's repeat (genload run --until-cv measures a cell until its CV is within the target)",
	"status":           "ok, partial (some sequences left out: see counted), error or interrupted; ⚠ = see the warnings below; – in a column: not measured (the warnings say why)",
}

// cacheState says what the run's servers reported of prefix-cache hits: "hits" when some
// prompt tokens were served from the cache, "none" when usage counted cached tokens and all
// were 0, "unreported" when no usage carried the count.
func cacheState(run *Run) string {
	state := "unreported"
	for _, c := range run.Cells {
		if f := c.Figures; f != nil && f.HasCachedTokens {
			if f.CachedTokens > 0 {
				return "hits"
			}
			state = "none"
		}
	}
	return state
}

// legendFor returns the legend line of column head in run ("" for none): cached % and TTFT
// say what the server reported of its prefix cache instead of assuming hits.
func legendFor(head string, run *Run, wide bool) string {
	warm := run.Header.Config == nil || !run.Header.Config.Warmup.Disabled
	switch head {
	case "cached %":
		switch cacheState(run) {
		case "hits":
			return "share of prompt tokens the server served from its prefix cache (the warmup sent the same prompts); – the server's usage gave no cached-token count"
		case "none":
			return "share of prompt tokens the server served from its prefix cache: 0 everywhere — it reported no cache hits; – the server's usage gave no cached-token count"
		}
		return "– everywhere: the server's usage gave no cached-token count (prompt_tokens_details.cached_tokens), so prefix-cache hits are unknown"
	case "fwd ms mean":
		if !wide {
			return "latency per decode forward pass: a sequence's decode time / (completion tokens − 1), from its first on-time chunk (a held-back first chunk is skipped); mean over the counted sequences (--wide adds p50, p90, the robust fit, ITL, E2E, tokens and the server's own figures)"
		}
	case "TTFT p50":
		switch {
		case !warm:
			return "time to first token (ms), with no warmup: a cold prefill"
		case cacheState(run) == "hits":
			return "time to first token (ms), after the warmup: mostly served from the prefix cache (cached %), so not a cold prefill"
		case cacheState(run) == "none":
			return "time to first token (ms), after the warmup; the server reported no prefix-cache hits, so it includes the prefill"
		}
		return "time to first token (ms), after the warmup; the server did not report cached tokens, so whether its prefix cache served the prompts is unknown"
	}
	return legend[head]
}

// TableOptions choose the form of [WriteTable].
type TableOptions struct {
	// Wide shows every column with data and every warning on its own line. The default
	// (false) shows the columns a latency model needs — L, B, realised lengths, fwd,
	// full-batch fwd, TTFT p50, the batch seen, counted, status — in at most [NarrowWidth]
	// characters a line for the default matrix, with warnings grouped by kind.
	Wide bool
}

// NarrowWidth is the line width in characters (runes) that the default table and the prose
// around it are kept within.
const NarrowWidth = 120

// Grid is the table as text: Head the column headers, Rows one row per cell (run order), and
// Legend the [head, explanation] pairs of the columns shown.
type Grid struct {
	Head   []string
	Rows   [][]string
	Legend [][2]string
}

// TableGrid returns run's table as text cells, the default or the wide set of columns.
func TableGrid(run *Run, opt TableOptions) Grid {
	h, s, t := present(run)
	cols := columns(h, s, t, opt.Wide)
	if run.HasRepeats() {
		rep := textCol("repeat", "", func(c *Cell) string { return strconv.Itoa(c.Repeat) })
		cols = append(cols[:2:2], append([]column{rep}, cols[2:]...)...)
	}
	g := Grid{Head: make([]string, len(cols))}
	for i, c := range cols {
		g.Head[i] = c.head
		if l := legendFor(c.head, run, opt.Wide); l != "" {
			g.Legend = append(g.Legend, [2]string{c.head, l})
		}
	}
	g.Legend = append(g.Legend, [2]string{"p50, p90, p99", "nearest-rank percentiles: the ⌈q·N⌉-th smallest of the N samples (always one of them)"})
	for i := range run.Cells {
		r := make([]string, len(cols))
		for j, c := range cols {
			r[j] = c.get(&run.Cells[i])
		}
		g.Rows = append(g.Rows, r)
	}
	return g
}

// Table writes run's default table ([WriteTable] with zero [TableOptions]).
func Table(w io.Writer, run *Run) { WriteTable(w, run, TableOptions{}) }

// WriteTable writes run's cells as a markdown table under a header naming the run, then the
// legend of the columns shown, then the warnings and errors. Times are milliseconds: "fwd" is
// the per-sequence latency per decode forward pass (decode time / (completion tokens − 1) from
// the first on-time chunk; "fwd fit" the robust fit beside it), "full-batch fwd" the same over
// the window where all counted sequences decode together; "counted" is the sequences in those
// figures over B (a partial cell left some out). The default form keeps its prose within
// [NarrowWidth] characters and groups warnings by kind ([GroupWarnings]); opt.Wide gives
// every column and one line per warning.
func WriteTable(w io.Writer, run *Run, opt TableOptions) {
	g := TableGrid(run, opt)
	width := make([]int, len(g.Head))
	for _, r := range append([][]string{g.Head}, g.Rows...) {
		for j, s := range r {
			width[j] = max(width[j], len([]rune(s)))
		}
	}
	lenCol := slices.Index(g.Head, "len min/mean/max")
	line := func(r []string) {
		var b strings.Builder
		b.WriteString("|")
		for j, s := range r {
			pad := width[j] - len([]rune(s))
			if j != lenCol { // numbers right-aligned
				b.WriteString(" " + strings.Repeat(" ", pad) + s + " |")
			} else {
				b.WriteString(" " + s + strings.Repeat(" ", pad) + " |")
			}
		}
		fmt.Fprintln(w, b.String())
	}
	prose := func(indent string, s string) {
		if opt.Wide {
			fmt.Fprintln(w, indent+s)
			return
		}
		for _, l := range wrap(s, NarrowWidth-len([]rune(indent))) {
			fmt.Fprintln(w, indent+l)
			indent = strings.Repeat(" ", len([]rune(indent)))
		}
	}
	h := run.Header
	fmt.Fprintf(w, "\n## genload %s — %s\n\n", h.RunID, h.Model)
	prose("", fmt.Sprintf("target %s (%s), tokenizer %s, %s, max_tokens %d, mode %s, lengths %s",
		h.Target, h.TargetKind, h.Tokenizer, contextText(h), cfgMaxTokens(h), cfgMode(h), pluginName(h, "lengths")))
	if len(h.Workers) > 0 {
		names := make([]string, len(h.Workers))
		for i, wk := range h.Workers {
			names[i] = wk.Name + "=" + wk.URL
		}
		n := fmt.Sprintf("%d workers", len(h.Workers))
		if len(h.Workers) == 1 {
			n = "1 worker"
		}
		prose("", fmt.Sprintf("routed over %s, router %s: %s", n, pluginName(h, "router"), strings.Join(names, ", ")))
	}
	if ts, ok := h.Engine["time_scale"].(float64); ok && ts > 0 {
		prose("", fmt.Sprintf("built-in engine: profile %v, time scale %g: times are wall-clock; ×%g gives the simulated GPU time", h.Engine["profile"], ts, 1/ts))
	}
	fmt.Fprintln(w)
	line(g.Head)
	sep := make([]string, len(width))
	for j := range sep {
		sep[j] = strings.Repeat("-", width[j])
	}
	line(sep)
	for _, r := range g.Rows {
		line(r)
	}
	fmt.Fprintln(w)
	for _, l := range g.Legend {
		prose(fmt.Sprintf("  %-16s ", l[0]), l[1])
	}
	if opt.Wide {
		for _, c := range run.Cells {
			for _, warn := range c.Warnings {
				fmt.Fprintf(w, "⚠ %s: %s\n", c.Cell.Key(), warn)
			}
			if c.Error != "" {
				fmt.Fprintf(w, "✗ %s: %s\n", c.Cell.Key(), c.Error)
			}
		}
		return
	}
	all := make([]matrix.Cell, len(run.Cells))
	for i, c := range run.Cells {
		all[i] = c.Cell
	}
	for _, gr := range GroupWarnings(run) {
		mark := "⚠"
		if gr.Error {
			mark = "✗"
		}
		if len(gr.Cells) == 1 {
			prose(mark+" ", gr.Cells[0].Key()+": "+gr.Messages[0])
			continue
		}
		prose(mark+" ", fmt.Sprintf("%s — %d cells: %s", gr.Kind, len(gr.Cells), CellList(gr.Cells, all)))
		prose("    ", "e.g. "+gr.Cells[0].Key()+": "+gr.Messages[0])
	}
	if gs := GroupWarnings(run); len(gs) > 0 && len(gs) < countMessages(run) {
		prose("", "(warnings of one kind are grouped; --wide lists each cell's, and the JSON file holds them all)")
	}
}

// contextText is the header's context and where it came from ("context unknown" when no
// source gave one).
func contextText(h Header) string {
	if h.Context <= 0 {
		return "context unknown"
	}
	if h.ContextSource == "" || h.ContextSource == "unknown" {
		return fmt.Sprintf("context %d", h.Context)
	}
	return fmt.Sprintf("context %d (%s)", h.Context, h.ContextSource)
}

// wrap breaks s into lines of at most width runes at spaces (a longer word stays whole).
func wrap(s string, width int) []string {
	var out []string
	var cur []rune
	for _, word := range strings.Fields(s) {
		wr := []rune(word)
		if len(cur) > 0 && len(cur)+1+len(wr) > width {
			out = append(out, string(cur))
			cur = cur[:0]
		}
		if len(cur) > 0 {
			cur = append(cur, ' ')
		}
		cur = append(cur, wr...)
	}
	if len(cur) > 0 || len(out) == 0 {
		out = append(out, string(cur))
	}
	return out
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

// CSVHeader lists the CSV columns: one row per cell record (one per repeat of a run with
// repeats, whose repeat column is then set), times in milliseconds with nanosecond
// precision, lengths in tokens; an unknown value is an empty field.
func CSVHeader() []string {
	h := []string{"run_id", "cell", "seq_len", "batch", "len_min", "len_mean", "len_max", "len_clamped"}
	for _, c := range csvColumns() {
		h = append(h, c.csv)
	}
	return append(h, "itl_tokens_per_chunk", "tokens_per_chunk", "ttft_mean_ms", "e2e_mean_ms", "short_sequences", "prompt_tokens",
		"prompt_token_deviation", "cached_tokens", "errors", "occupancy_share_at_b", "occupancy_max", "occupancy_samples",
		"per_forward_method", "per_forward_endpoints_mean_ms", "full_occupancy_endpoints_ms", "full_occupancy_fit_ms", "tokens_unverified", "zero_token_sequences", "early_stop_sequences",
		"overlong_sequences", "prompt_requests_deviating", "prompt_max_abs_deviation", "prompt_truncated_requests", "repeat", "status", "error")
}

// csvColumns are the table's columns that have a CSV value, past L and B.
func csvColumns() []column {
	var out []column
	for _, c := range columns(true, true, true, true)[2:] {
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
		rep := ""
		if c.Repeat > 0 {
			rep = strconv.Itoa(c.Repeat)
		}
		row = append(row, rep, c.Status, c.Error)
		_ = w.Write(row)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("results: %s: %w", path, err)
	}
	return f.Close()
}
