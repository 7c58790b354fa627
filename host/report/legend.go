package report

import "github.com/genload/genload/host/results"

// legend explains the table's columns, printed under it; cached % and TTFT p50 depend on the
// run (legendFor).
var legend = map[string]string{
	"len min/mean/max":      "realised prompt lengths in tokens (chat template included), after clamping",
	"fwd ms mean":           "latency per decode forward pass: a sequence's decode time / its forward passes, from its first chunk consistent with those after it to its last consistent with those before (chunks held back or read late at either end are skipped); mean, p50, p90 over the counted sequences",
	"fwd fit":               "the cross-check: a robust (Theil–Sen) fit of chunk arrival time against tokens, per sequence, mean — the typical forward pass; the warnings say when the two disagree and why",
	"full-batch fwd":        "the same over the window where all counted sequences decode together (ms); – when shorter than 10 forward passes",
	"ITL p50":               "interval between consecutive chunks of a sequence (ms, per chunk)",
	"E2E p50":               "request start to a sequence's last token (ms)",
	"tokens":                "completion tokens generated in the cell; ≥: counted from chunks, unverified (the server sent no usable count)",
	"counted":               "sequences in the per-forward figures / B: the others stopped early, ran past max_tokens, returned no token or failed (the cell is partial), or could not be timed (the warnings say why)",
	"hdr fwd ms":            "per forward pass from the server's generation-duration (and speculation-acceptance) headers",
	"srv fwd ms":            "per forward pass from the server's own timing of each sequence (llama.cpp's timings: predicted_ms / (predicted_n − 1); ollama's eval_duration / (eval_count − 1))",
	"metrics fwd ms":        "per forward pass from the server's /metrics before and after the cell",
	"B seen":                "the batch the cell ran at: the server's running-requests gauge, most frequent value (share of samples at B); (client): the most sequences the client saw decoding together, where no gauge was sampled (<B: probably not reached); ?: neither could tell",
	"fwd per server":        "routed over several servers: each server's fwd over the sequences routed to it, in the order of the workers' servers above (/ between servers)",
	"full-batch per server": "each server's full-batch fwd over its share, where it ran all of its share together (– otherwise)",
	"B seen per server":     "each server's most sequences running at once / the sequences routed to it (share of gauge samples at it); (client): from the client's marks, without a gauge",
	"engine fwd ms":         "the built-in engine's own mean duration of its decode steps during the cell (the truth)",
	"repeat":                "the cell's repeat (genload run --until-cv measures a cell until its CV is within the target)",
	"status":                "ok, partial (some of the B sequences stopped early, ran past max_tokens, returned no token or failed, or the B were never running at once: the batch was not the one asked for; the figures are kept, the warnings say for which batch), error (its figures, of what the server did instead, are – here and kept in the JSON) or interrupted; ⚠ = see the warnings below (an ok cell whose sequences could not be timed has – for fwd and counted 0/B); – in a column: not measured (the warnings say why)",
}

// cacheState says what the run's servers reported of prefix-cache hits: "hits" when some
// prompt tokens were served from the cache, "none" when usage counted cached tokens and all
// were 0, "unreported" when no usage carried the count.
func cacheState(run *results.Run) string {
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
func legendFor(head string, run *results.Run, wide bool) string {
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
	case "B seen":
		if wide {
			return "the batch the cell ran at: the server's running-requests gauge, most frequent value (share of samples at B of the number of samples); (client): the most sequences the client saw decoding together, where no gauge was sampled (<B: probably not reached); ?: neither could tell"
		}
	case "fwd ms mean":
		if !wide {
			return "latency per decode forward pass: a sequence's decode time / its forward passes, from its first chunk consistent with those after it to its last consistent with those before (chunks held back or read late at either end are skipped); mean over the counted sequences (--wide adds p50, p90, the robust fit, ITL, E2E, tokens and the server's own figures)"
		}
	case "TTFT p50":
		if note := cacheNote(run); note != "" {
			// An earlier run, repeat or cell had sent these prompts: say so where TTFT is read.
			if !warm {
				return "time to first token (ms), with no warmup: a cold prefill except where the prompts were already cached — " + note
			}
			return "time to first token (ms), after the warmup: mostly served from the prefix cache (cached %), so not a cold prefill; " + note
		}
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

// Legends keeps the legend of the columns to once per command: the tables of a command
// (every point of a sweep, every file of genload report) written with one *Legends print under them only the legend lines no earlier table
// printed — the first table the whole legend, a later one only a column it adds or whose
// meaning differs in its run (cached %, TTFT p50) — and none when Off (--no-legend). The zero
// value prints each line once; a nil *Legends prints every table's whole legend.
type Legends struct {
	// Off leaves every legend out.
	Off     bool
	printed map[[2]string]bool
}

// take returns the lines of legend to print and records them as printed.
func (l *Legends) take(legend [][2]string) [][2]string {
	if l == nil {
		return legend
	}
	if l.Off {
		return nil
	}
	if l.printed == nil {
		l.printed = map[[2]string]bool{}
	}
	var out [][2]string
	for _, e := range legend {
		if !l.printed[e] {
			l.printed[e] = true
			out = append(out, e)
		}
	}
	return out
}
