package report

import (
	"encoding/csv"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/results"
)

// CSVHeader lists the CSV columns: one row per cell record (one per repeat of a run with
// repeats, whose repeat column is then set), times in milliseconds with nanosecond
// precision, lengths in tokens; an unknown value is an empty field. The last column,
// warnings, names the kind of each of the record's warnings (its catalogue name, see
// [results.Cell.NamedWarnings]), "; "-separated.
func CSVHeader() []string {
	h := []string{"run_id", "cell", "seq_len", "batch", "len_min", "len_mean", "len_max", "len_clamped"}
	for _, c := range csvColumns() {
		h = append(h, c.csv)
	}
	return append(h, "itl_tokens_per_chunk", "tokens_per_chunk", "ttft_mean_ms", "e2e_mean_ms", "short_sequences", "prompt_tokens",
		"prompt_token_deviation", "cached_tokens", "errors", "occupancy_share_at_b", "occupancy_max", "occupancy_samples",
		"per_forward_method", "per_forward_endpoints_mean_ms", "full_occupancy_endpoints_ms", "full_occupancy_fit_ms", "tokens_unverified", "zero_token_sequences", "early_stop_sequences",
		"overlong_sequences", "prompt_requests_deviating", "prompt_max_abs_deviation", "prompt_truncated_requests", "repeat", "status", "error", "warnings")
}

// csvWarnings is a record's warnings column: the catalogue name of each of its warnings
// (package warning: "batch-not-reached", …; "other" for a text the catalogue does not know,
// see [results.Cell.NamedWarnings]), in order, joined by "; " ("" for none). The messages themselves
// are in the JSON files.
func csvWarnings(c *results.Cell) string {
	ws := c.NamedWarnings()
	names := make([]string, len(ws))
	for i, w := range ws {
		names[i] = string(w.Name)
	}
	return strings.Join(names, "; ")
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

// Finish ends a run's files: it appends the footer and writes <run-id>.json
// ([results.Writer.Finish]), then <run-id>.csv beside it ([WriteCSV]), and returns the paths
// written (csvPath "" when the CSV could not be written; the JSON file is kept).
func Finish(w *results.Writer, status string, runErr error) (jsonPath, csvPath string, err error) {
	jsonPath, err = w.Finish(status, runErr)
	if err != nil {
		return "", "", err
	}
	csvPath = strings.TrimSuffix(jsonPath, ".json") + ".csv"
	if err := WriteCSV(csvPath, w.Run()); err != nil {
		return jsonPath, "", err
	}
	return jsonPath, csvPath, nil
}

// WriteCSV writes run as CSV (columns in [CSVHeader]).
func WriteCSV(path string, run *results.Run) error {
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
		row = append(row, rep, c.Status, c.Error, csvWarnings(c))
		_ = w.Write(row)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("results: %s: %w", path, err)
	}
	return f.Close()
}
