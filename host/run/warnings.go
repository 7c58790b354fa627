package run

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/scrape"
)

// cellWarnings flags cells whose measurement missed its target, and gives the reason of every
// absent figure (the table shows – for it).
func cellWarnings(cfg *config.Config, cell matrix.Cell, rec *report.Cell) []string {
	var ws []string
	f := rec.Figures
	if len(f.Errors) > 0 {
		ws = append(ws, fmt.Sprintf("%d request errors: %s", len(f.Errors), f.Errors[0]))
	}
	if rt := rec.Retries; rt != nil && rt.Warmup+rt.Measured > 0 { // Free resends (a closed keep-alive connection) cost nothing worth saying
		ws = append(ws, fmt.Sprintf("requests resent: %d warmup, %d measured (%s): the figures are the last attempt's; the cell's wall and GPU time include the failed ones",
			rt.Warmup, rt.Measured, retryReasons(rt.Reasons)))
	}
	if p := f.Prompts; p != nil && p.TruncationError == "" {
		if m := p.Message(); m != "" {
			ws = append(ws, m)
		}
	}
	if f.ITL.N > 0 && f.ITL.P50 == 0 {
		ws = append(ws, "over half of the chunk intervals are 0: chunks arrived together in one read (the client fell behind, or the server or network coalesced them); per-forward figures are unreliable")
	}
	switch {
	case f.PerForward.N == 0:
		ws = append(ws, "no per-forward figure: "+f.PerForwardReason)
	case f.PerForwardReason != "":
		ws = append(ws, fmt.Sprintf("fwd over %d of %d sequences: %s", f.PerForward.N, f.Sequences, f.PerForwardReason))
	}
	if i := f.ITL; f.PerForward.N > 0 && i.P50 > 0 && i.P99 > 10*i.P50 && f.PerForward.Mean > 3*i.P50/2 {
		ws = append(ws, fmt.Sprintf("fwd %.3f ms is %.1f× the median chunk interval %.3f ms, and ITL p99 is %.1f ms: a few very slow forward passes (host stalls, preemption, a loaded server) weigh on the mean; fwd fit and a repeat tell whether they are the server's",
			measure.Ms(f.PerForward.Mean), float64(f.PerForward.Mean)/float64(i.P50), measure.Ms(i.P50), measure.Ms(i.P99)))
	}
	if f.PerForward.N > 0 && f.TokensUnverified > 0 {
		ws = append(ws, fmt.Sprintf("%d of %d sequences' token counts are unverified (counted from chunks: the server sent no usable usage); the table shows them as a lower bound", f.TokensUnverified, f.Sequences))
	}
	if f.TokensPerChunk > 1.05 && cfg.DraftTokens == 0 && f.PerForward.N > 0 {
		ws = append(ws, fmt.Sprintf("chunks carry %.2f tokens on average: fwd counts one forward pass per token, which is right for a server that coalesces chunks (stream_interval) and wrong for one that speculates — then set draft_tokens = k to count forward passes",
			f.TokensPerChunk))
	}
	for _, n := range sortedKeys(f.TokenNotes) {
		ws = append(ws, fmt.Sprintf("token counts of %d of %d sequences: %s", f.TokenNotes[n], f.Sequences, n))
	}
	ws = append(ws, f.Checks...)
	ws = append(ws, estimateWarnings(f, rec.Server, cfg.DraftTokens > 0)...)
	if h := f.Header; h != nil && h.PerForward.N == 0 && h.Reason != "" {
		ws = append(ws, "hdr fwd absent: "+h.Reason)
	}
	if rec.Server != nil {
		ws = append(ws, rec.Server.Notes()...)
	}
	ws = append(ws, attainmentWarnings(cfg, cell, rec)...)
	if w := rec.Client.Bottleneck(f.ITL.P50); w != "" { // first: the figures and warnings above are then the client's
		ws = append([]string{w}, ws...)
	}
	if !f.Window.Valid && f.Window.Reason != "" {
		ws = append(ws, "no full-batch figure: "+f.Window.Reason)
	}
	if cfg.Mode == config.ModeRouted && rec.Workers != nil {
		used := map[int]bool{}
		for _, w := range rec.Workers {
			used[w] = true
		}
		if len(used) > 1 {
			ws = append(ws, fmt.Sprintf("routed over %d workers: B = %d is the total; each worker ran about %s", len(used), cell.Batch, plural((cell.Batch+len(used)-1)/len(used), "sequence")))
		}
	}
	return ws
}

// attainmentWarnings says whether the cell's B sequences ran as one batch. The server's
// running gauge decides where it was sampled (≥ 3 samples, every 20 ms; per server when
// routed over several, in Notes); otherwise the client's marks (measure.Attain) — and a cell
// whose attainment nobody can tell says so, since its figures may be for a smaller batch.
func attainmentWarnings(cfg *config.Config, cell matrix.Cell, rec *report.Cell) []string {
	if m := rec.Server; m != nil && len(m.Servers) > 1 {
		return nil // each server against its share of B: rec.Server.Notes
	}
	if m := rec.Server; m != nil && m.Occupancy.Samples >= 3 {
		o := m.Occupancy
		switch {
		case o.Max > cell.Batch:
			return []string{fmt.Sprintf("the server ran up to %d requests at once, more than B = %d: other load shares it", o.Max, cell.Batch)}
		case cfg.Mode != config.ModeN && o.Mode < cell.Batch:
			return []string{fmt.Sprintf("batch attainment: the server mostly ran %s at once, not B = %d (%.0f %% of samples at B)", plural(o.Mode, "sequence"), cell.Batch, 100*o.AtTarget)}
		}
		return nil
	}
	a := rec.Figures.Attainment
	if a == nil {
		return nil
	}
	src := "no running-requests gauge from /metrics"
	if rec.Server != nil {
		src = fmt.Sprintf("the running-requests gauge gave %d samples", rec.Server.Occupancy.Samples)
	}
	switch a.State {
	case measure.AttainmentProbablyNotReached:
		return []string{fmt.Sprintf("batch probably not reached (%s; the client's marks): %s", src, a.Reason)}
	case measure.AttainmentUnknown:
		return []string{fmt.Sprintf("batch attainment unknown (%s; the client's marks cannot tell: %s)", src, a.Reason)}
	}
	if rec.Server != nil {
		// The gauge exists but the cell was too short to sample it ≥ 3 times; the client's
		// marks agree with one batch of B.
		return nil
	}
	// The client's marks agree with one batch of B, but only the server can confirm it (and
	// only it can show other load sharing the batch).
	return []string{fmt.Sprintf("batch attainment unknown (%s): the client saw %s decoding together, consistent with B = %d", src, plural(a.Concurrency, "sequence"), cell.Batch)}
}

// sortedKeys returns m's keys in ascending order (so that warnings come out the same in
// every run).
func sortedKeys(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// estimateWarnings (chunkForwards: the client counts chunks as forward passes, draft_tokens
// set) holds every per-forward estimate of a cell against the best reference and
// flags a gap above 5 %. The reference is the built-in engine's own decode step time when it
// is known, else the client's figure. /metrics on vLLM and SGLang is an inter-token latency:
// per token, not per forward pass, when chunks carry several tokens (speculative decoding).
func estimateWarnings(f *measure.Figures, m *scrape.CellMetrics, chunkForwards bool) []string {
	if f.PerForward.N == 0 {
		return nil
	}
	type est struct {
		name string
		d    time.Duration
	}
	ref := est{"the client's fwd", f.PerForward.Mean}
	var others []est
	if m != nil && m.Steps.HasTruthDecode && m.Steps.TruthDecodeStepTime > 0 {
		ref = est{"the engine's own decode step time", m.Steps.TruthDecodeStepTime}
		others = append(others, est{"client fwd", f.PerForward.Mean})
	}
	if d := headerMean(f); d > 0 {
		others = append(others, est{"hdr fwd (timing headers)", d})
	}
	if m != nil && m.Steps.HasStepTime && m.Steps.StepTime > 0 {
		others = append(others, est{"metrics fwd (/metrics)", m.Steps.StepTime})
	}
	var ws []string
	for _, e := range others {
		dev := float64(e.d)/float64(ref.d) - 1
		if math.Abs(dev) <= 0.05 {
			continue
		}
		why := "a late first token or a stall shortens or lengthens the client's decode window"
		switch {
		case strings.HasPrefix(e.name, "metrics") && f.TokensPerChunk > 1.05:
			why = fmt.Sprintf("chunks carry %.2f tokens: the server's inter-token latency is per token, not per forward pass", f.TokensPerChunk)
		case strings.HasPrefix(e.name, "client") && f.TokensPerChunk > 1.05 && !chunkForwards:
			why = "speculative decoding: see draft_tokens"
		case strings.HasPrefix(e.name, "hdr"):
			why = "the header's generation time or acceptance does not match the forward passes seen (check draft_tokens)"
		}
		ws = append(ws, fmt.Sprintf("per-forward estimates disagree: %s %.3f ms is %+.0f %% of %s %.3f ms (%s)",
			e.name, float64(e.d)/1e6, 100*dev, ref.name, float64(ref.d)/1e6, why))
	}
	return ws
}

// headerMean is the mean per-forward latency from the server's timing headers (0 if none).
func headerMean(f *measure.Figures) time.Duration {
	if f.Header == nil {
		return 0
	}
	return f.Header.PerForward.Mean
}

// summarize shortens a joined error whose parts repeat (B routed requests failing alike) to
// "N requests failed: <message>". Hints for errors whose fix is known come with each
// request's error (dispatch's table of known server messages).
func summarize(err error) error {
	var parts []string
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			parts = append(parts, e.Error())
		}
	} else {
		parts = []string{err.Error()}
	}
	msg := parts[0]
	if len(parts) > 1 {
		distinct := map[string]bool{}
		for _, p := range parts {
			distinct[p] = true
		}
		if len(distinct) == 1 {
			msg = fmt.Sprintf("%d requests failed: %s", len(parts), parts[0])
		} else {
			msg = fmt.Sprintf("%d requests failed; first: %s", len(parts), parts[0])
		}
	}
	if msg == err.Error() {
		return err
	}
	return errors.New(msg) // the caller attaches the exit code
}

// retryReasons lists the reasons of a cell's resends, most frequent first: "status 500: …
// ×2, timeout ×1".
func retryReasons(m map[string]int) string {
	keys := sortedKeys(m)
	slices.SortStableFunc(keys, func(a, b string) int { return m[b] - m[a] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s ×%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
