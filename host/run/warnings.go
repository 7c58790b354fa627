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
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/scrape"
	"github.com/genload/genload/host/scrape/metrics"
	"github.com/genload/genload/host/warning"
)

// cellWarnings flags cells whose measurement missed its target, and gives the reason of every
// absent figure (the table shows – for it); notReached reports that the B sequences
// certainly did not run as one batch (attainmentWarnings), which makes the cell partial.
// metricsFixed reports that the server's /metrics step time does not vary with load
// (metricHistory): it is then not compared with the other estimates.
func cellWarnings(cfg *config.Config, cell matrix.Cell, rec *results.Cell, metricsFixed bool) (ws []warning.Warning, notReached bool) {
	f := rec.Figures
	if len(f.Errors) > 0 {
		ws = append(ws, warning.Newf(warning.RequestFailed, "%d of %s failed (their sequences are left out, the others kept): %s",
			len(f.Errors), plural(requestsOf(cfg, cell), "request"), f.Errors[0]))
	}
	if rt := rec.Retries; rt != nil && rt.Warmup+rt.Measured > 0 { // Free resends (a closed keep-alive connection) cost nothing worth saying
		ws = append(ws, warning.Newf(warning.RequestsResent, "requests resent: %d warmup, %d measured (%s): the figures are the last attempt's; the cell's wall and GPU time include the failed ones",
			rt.Warmup, rt.Measured, retryReasons(rt.Reasons)))
	}
	if n := len(rec.Remeasured); n > 0 {
		ws = append(ws, warning.Newf(warning.EngineRemeasured, "measured again: %s, beyond the %.0f %% a cell allows (the host's scheduling delays, not the cost model); these figures are of attempt %d of %d; the cell's wall time includes the earlier ones ([run] remeasure_overrun)",
			remeasuredOff(rec.Remeasured), 100*metrics.OverrunShareLimit, n+1, n+1))
	}
	if p := rec.CacheBefore; rec.WasCached() {
		first := "its warmup"
		if !p.Warmup {
			first = "its measured requests (no warmup: TTFT is not a cold prefill's)"
		}
		ws = append(ws, warning.Newf(warning.PromptsCached, "prompts already cached: %s found %.1f %% of the prompt tokens (%s of %s) in the server's prefix cache before the cell had sent them — an earlier run, repeat or cell sent the same prompts",
			first, 100*float64(p.Cached)/float64(p.Prompt), warning.Thousands(p.Cached), warning.Thousands(p.Prompt)))
	}
	if p := f.Prompts; p != nil && p.TruncationError == "" {
		if m := p.Message(); m != "" {
			ws = append(ws, warning.Of(m))
		}
	}
	switch i := f.ITL; {
	case i.N > 0 && i.P50 == 0:
		ws = append(ws, warning.New(warning.ChunksTogether, "over half of the chunk intervals are 0: chunks arrived together in one read (the client fell behind, or the server or network coalesced them); per-forward figures are unreliable"))
	case i.N > 0 && 10*i.P50 < i.Mean:
		// chunks of one write read one by one (frames in pairs: intervals of 0.04 and 40 ms)
		ws = append(ws, warning.Newf(warning.ChunksTogether, "over half of the chunk intervals are under a tenth of their mean (ITL p50 %.3f ms, mean %.3f ms): chunks arrived together, a write of several or a coalescing hop read frame by frame (the client fell behind, or the server or network coalesced them); per-forward figures are unreliable",
			measure.Ms(i.P50), measure.Ms(i.Mean)))
	}
	switch {
	case f.PerForward.N == 0:
		ws = append(ws, warning.New(warning.FwdAbsent, "no per-forward figure: "+f.PerForwardReason))
	case f.PerForwardReason != "":
		ws = append(ws, warning.Newf(warning.FwdSubset, "fwd over %d of %d sequences: %s", f.PerForward.N, f.Sequences, f.PerForwardReason))
	}
	if li := f.LongIntervals; f.PerForward.N > 0 && li != nil && li.Share > measure.LongShareSaid && !repaidOnPlan(cfg, rec, f) {
		ws = append(ws, warning.Newf(warning.SlowForwards, "fwd %.3f ms includes long chunk intervals that shifted every chunk after them: up to %s in %d of %d sequences (the longest %.1f ms, %.0f× the typical forward pass %.3f ms) carry %.1f %% of the decode time (said above %.0f %%); without them fwd would read %.3f ms — a few very slow forward passes (host stalls, preemption, a loaded server), which fwd rightly includes, or a delivery lag that began mid-stream (a buffering hop, a client that fell behind and stayed behind), which it should not: the client cannot tell them apart (a repeat, or the server's own step time, can)",
			measure.Ms(f.PerForward.Mean), plural(li.MaxPerSequence, "interval"), li.Sequences, li.Of, measure.Ms(li.Longest), float64(li.Longest)/float64(max(li.Typical, 1)), measure.Ms(li.Typical),
			100*li.Share, 100*measure.LongShareSaid, measure.Ms(li.Without)))
	}
	if f.PerForward.N > 0 && f.TokensUnverified > 0 {
		ws = append(ws, warning.Newf(warning.TokensUnverified, "%d of %d sequences' token counts are unverified (counted from chunks: the server sent no usable usage); the table shows them as a lower bound", f.TokensUnverified, f.Sequences))
	}
	if f.TokensPerChunk > 1.05 && cfg.DraftTokens == 0 && f.PerForward.N > 0 {
		ws = append(ws, warning.Newf(warning.TokensPerChunk, "chunks carry %.2f tokens on average: fwd counts one forward pass per token, which is right for a server that coalesces chunks (stream_interval) and wrong for one that speculates — then set draft_tokens = k to count forward passes",
			f.TokensPerChunk))
	}
	for _, n := range sortedKeys(f.TokenNotes) {
		ws = append(ws, warning.Newf(warning.TokenCountSource, "token counts of %d of %d sequences: %s", f.TokenNotes[n], f.Sequences, n))
	}
	for _, c := range f.Checks {
		ws = append(ws, warning.Of(c))
	}
	ws = append(ws, estimateWarnings(f, rec.Server, cfg.DraftTokens > 0, metricsFixed)...)
	if h := f.Header; h != nil && h.PerForward.N == 0 && h.Reason != "" {
		ws = append(ws, warning.New(warning.HeaderFwdAbsent, "hdr fwd absent: "+h.Reason))
	}
	if rec.Server != nil {
		ws = append(ws, rec.Server.Notes()...)
	}
	att, notReached := attainmentWarnings(cfg, cell, rec)
	ws = append(ws, att...)
	sw, swNotReached := serverWarnings(rec.PerServer, f.PerForward)
	ws, notReached = append(ws, sw...), notReached || swNotReached
	if w := clientBottleneck(cfg, rec, f); w != "" { // first: the figures and warnings above are then the client's
		ws = append([]warning.Warning{warning.New(warning.ClientBottleneck, w)}, ws...)
	}
	if w := bodyWriteWarning(rec.Client, f, builtinTimeScale(cfg)); w != nil {
		ws = append(ws, *w)
	}
	if !f.Window.Valid && f.Window.Reason != "" {
		ws = append(ws, warning.New(warning.FullBatchAbsent, "no full-batch figure: "+f.Window.Reason))
	}
	if cfg.Mode == config.ModeRouted && rec.Workers != nil {
		used := map[int]bool{}
		for _, w := range rec.Workers {
			used[w] = true
		}
		if len(used) > 1 {
			ws = append(ws, warning.Newf(warning.RoutedSplit, "routed over %d workers: B = %d is the total; each worker ran about %s", len(used), cell.Batch, plural((cell.Batch+len(used)-1)/len(used), "sequence")))
		}
	}
	return ws, notReached
}

// requestsOf is the number of requests a cell of cfg sends: B routed, else one.
func requestsOf(cfg *config.Config, cell matrix.Cell) int {
	if cfg.Mode == config.ModeRouted {
		return cell.Batch
	}
	return 1
}

// resentAfterBatch names each request of res that was resent (after a failure counted
// against the retries) and whose last attempt was sent after some of the other requests'
// sequences had finished (their last chunk, or finish, before it): its sequences never
// decoded with the whole batch, which was therefore not reached. A request is resent
// after [warmup] retry_delay (500 ms by default, doubled per attempt), longer than a short
// cell's decode (48 tokens of 8 ms steps: 384 ms), so in routed mode a resend mostly misses
// the batch.
func resentAfterBatch(res *recording.Result) []warning.Warning {
	if res == nil || len(res.Requests) < 2 {
		return nil
	}
	ends := make([]time.Duration, len(res.Sequences))
	for i := range res.Sequences {
		s := &res.Sequences[i]
		ends[i] = -1
		if n := s.Marks.Len(); n > 0 && s.Finished {
			ends[i] = max(s.FinishAt, s.Marks.At(n-1))
		}
	}
	var ws []warning.Warning
	for qi := range res.Requests {
		q := &res.Requests[qi]
		counted := 0
		for _, rt := range q.Retries {
			if !rt.Free {
				counted++
			}
		}
		if counted == 0 || q.Err != nil {
			continue
		}
		others, done := 0, 0
		var last time.Duration
		for i := range res.Sequences {
			if res.Sequences[i].Request == qi {
				continue
			}
			others++
			if ends[i] >= 0 && ends[i] < q.Sent {
				done++
				last = max(last, ends[i])
			}
		}
		if done == 0 {
			continue
		}
		name := q.WorkerName
		if name == "" {
			name = fmt.Sprint(q.Worker)
		}
		ws = append(ws, warning.Newf(warning.ResentAfterBatch, "resent after the batch: request %d (worker %s) was resent after %s (%s) and sent at %.0f ms, when %d of the other %d sequences had finished (the last at %.0f ms): its sequences never decoded with the whole batch; a shorter [warmup] retry_delay lets a resend join it",
			qi, name, plural(counted, "failure"), q.Retries[len(q.Retries)-1].Reason, measure.Ms(q.Sent), done, others, measure.Ms(last)))
	}
	return ws
}

// attainmentWarnings says whether the cell's B sequences ran as one batch; notReached
// reports that they certainly did not (the cell is then partial, its figures kept). The
// server's running gauge decides where it was sampled (≥ metrics.MinSamples samples, every
// 20 ms), by its distribution (metrics.Occupancy.Judge: at most Max < B running is not
// reached; per server when routed over several, in Notes); otherwise the client's marks
// (measure.Attain), whose "at most k < B sequences decoding at once" is as certain — and a
// cell whose attainment nobody can tell says so, since its figures may be for a smaller
// batch.
func attainmentWarnings(cfg *config.Config, cell matrix.Cell, rec *results.Cell) (ws []warning.Warning, notReached bool) {
	if m := rec.Server; m != nil && len(m.Servers) > 1 {
		return nil, m.NotReached() // each server against its share of B: rec.Server.Notes
	}
	if len(rec.PerServer) > 1 {
		return nil, false // each server's share by the client's marks: serverWarnings
	}
	if m := rec.Server; m != nil && m.Occupancy.Samples >= metrics.MinSamples && !m.Occupancy.Fixed {
		o := m.Occupancy
		o.Target = cell.Batch
		if cfg.Mode == config.ModeN && o.Max <= cell.Batch {
			return nil, false // one request of n = B: a gauge of requests counts it once
		}
		if w, ok := gaugeCountsRequests(cfg, cell, o, rec.Figures.Attainment); ok {
			return []warning.Warning{w}, false
		}
		w, ok := o.Judge("the server", fmt.Sprintf("B = %d", cell.Batch))
		if !ok {
			return nil, false
		}
		return []warning.Warning{w}, w.Name == warning.BatchNotReached
	}
	a := rec.Figures.Attainment
	if a == nil {
		return nil, false
	}
	src := "no running-requests gauge from /metrics"
	if rec.Server != nil {
		src = fmt.Sprintf("the running-requests gauge gave %d samples", rec.Server.Occupancy.Samples)
		if rec.Server.Occupancy.Fixed {
			src = fmt.Sprintf("the running-requests gauge reads a fixed %d", rec.Server.Occupancy.Max)
		}
	}
	switch a.State {
	case measure.AttainmentProbablyNotReached:
		if counted := rec.Figures.Sequences - len(rec.Figures.LeftOut); a.Concurrency < cell.Batch && a.Concurrency < counted {
			// The streams' [first, last mark] spans overlap at most k < B at a time: some
			// sequences decoded after others had finished.
			return []warning.Warning{warning.Newf(warning.BatchNotReached, "batch not reached (%s; the client's marks): %s; the figures are kept, for a batch of at most %d",
				src, a.Reason, a.Concurrency)}, true
		}
		return []warning.Warning{warning.Newf(warning.BatchNotReached, "batch probably not reached (%s; the client's marks): %s", src, a.Reason)}, false
	case measure.AttainmentUnknown:
		return []warning.Warning{warning.Newf(warning.AttainmentUnknown, "batch attainment unknown (%s; the client's marks cannot tell: %s)", src, a.Reason)}, false
	}
	if rec.Server != nil && !rec.Server.Occupancy.Fixed {
		// The gauge exists but the cell was too short to sample it ≥ 3 times; the client's
		// marks agree with one batch of B.
		return nil, false
	}
	// The client's marks agree with one batch of B, but only the server can confirm it (and
	// only it can show other load sharing the batch).
	return []warning.Warning{warning.Newf(warning.AttainmentUnknown, "batch attainment unknown (%s): the client saw %s decoding together, consistent with B = %d",
		src, plural(a.Concurrency, "sequence"), cell.Batch)}, false
}

// gaugeCountsRequests judges a running gauge o that read fewer sequences than B, at most one
// per HTTP request, in a cell whose B prompts went out in arrays (not routed): a server whose
// gauge counts requests, not sequences, reads 1 for an array of B prompts that its engine
// decodes together. When the client's marks a show the B sequences sharing forward passes
// (measure.AttainmentReached: all B decoding at once, their chunks arriving together) the gauge
// is not taken as the batch: ok with a warning of attainment unknown that says both, and the
// cell is not partial. ok is false otherwise (the gauge is judged as it reads).
func gaugeCountsRequests(cfg *config.Config, cell matrix.Cell, o metrics.Occupancy, a *measure.Attainment) (warning.Warning, bool) {
	req := requestsOf(cfg, cell)
	if cfg.Mode == config.ModeRouted || o.Max >= cell.Batch || o.Max > req || a == nil || a.State != measure.AttainmentReached || a.Concurrency < cell.Batch {
		return warning.Warning{}, false
	}
	return warning.Newf(warning.AttainmentUnknown, "batch attainment unknown (the running-requests gauge read at most %d, one per HTTP request: it counts requests, not sequences, and the cell sent its %d prompts in %s; gauge: %s): the client's marks show %s, consistent with B = %d",
		o.Max, cell.Batch, plural(req, "request"), o.Distribution(), a.Reason, cell.Batch), true
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
func estimateWarnings(f *measure.Figures, m *scrape.CellMetrics, chunkForwards, metricsFixed bool) []warning.Warning {
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
	if st := f.ServerTimings; st != nil && st.PerForward.N > 0 {
		others = append(others, est{"srv fwd (" + st.Source + ")", st.PerForward.Mean})
	}
	if m != nil && m.Steps.HasStepTime && m.Steps.StepTime > 0 && !metricsFixed {
		others = append(others, est{"metrics fwd (/metrics)", m.Steps.StepTime})
	}
	var ws []warning.Warning
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
		case strings.HasPrefix(e.name, "srv"):
			why = "the server times each sequence from its first token's sampling; a late first token or a stall moved the client's decode window, or the server's clock counts work the client does not see (sampling, detokenizing)"
		case strings.HasPrefix(e.name, "hdr"):
			why = "the header's generation time or acceptance does not match the forward passes seen (check draft_tokens)"
		case strings.HasPrefix(e.name, "metrics"):
			why = "the server's metric may not be its step time — a fixed or configured value, which the next cells tell by whether it follows the load — or a late first token or a stall moved the client's decode window"
		}
		ws = append(ws, warning.Newf(warning.SourcesDisagree, "per-forward sources disagree: %s %.3f ms is %+.0f %% of %s %.3f ms (%s)",
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

// metricHistory holds, over a run's cells so far, the server's /metrics step time beside the
// reference figure of each cell (the engine's truth where known, else the client's fwd): a
// metric that stays put while the reference moves does not vary with load.
type metricHistory struct {
	points []metricPoint
}

// metricPoint is one cell's /metrics step time and reference figure.
type metricPoint struct {
	cell         string
	metrics, ref time.Duration
	refName      string
}

// Fixed-metric thresholds: a cell's /metrics step time within MetricSame of another's while
// their references differ by more than MetricMoved.
const (
	MetricSame  = 0.005
	MetricMoved = 0.10
)

// observe adds the cell's figures to h and returns the warning that the server's /metrics
// step time does not vary with load, when it reads within MetricSame of the same value in
// this and an earlier cell whose reference figures are more than MetricMoved apart
// (ok false otherwise, and for a cell without both figures).
func (h *metricHistory) observe(key string, f *measure.Figures, m *scrape.CellMetrics) (w warning.Warning, ok bool) {
	if h == nil || f == nil || m == nil || !m.Steps.HasStepTime || m.Steps.StepTime <= 0 || f.PerForward.N == 0 {
		return w, false
	}
	p := metricPoint{cell: key, metrics: m.Steps.StepTime, ref: f.PerForward.Mean, refName: "client fwd"}
	if m.Steps.HasTruthDecode && m.Steps.TruthDecodeStepTime > 0 {
		p.ref, p.refName = m.Steps.TruthDecodeStepTime, "engine's own decode step time"
	}
	h.points = append(h.points, p)
	var same []metricPoint
	lo, hi := p.ref, p.ref
	for _, q := range h.points {
		if math.Abs(float64(q.metrics)/float64(p.metrics)-1) <= MetricSame {
			same = append(same, q)
			lo, hi = min(lo, q.ref), max(hi, q.ref)
		}
	}
	if len(same) < 2 || float64(hi)/float64(lo)-1 <= MetricMoved {
		return w, false
	}
	cells := make([]string, len(same))
	for i, q := range same {
		cells[i] = q.cell
	}
	return warning.Newf(warning.MetricConstant, "server metric does not vary with load: metrics fwd (/metrics) reads %.3f ms in %d cells (%s) whose %s spans %.3f–%.3f ms: the server reports a fixed or configured value, not its step time, and it is not compared with the other figures",
		measure.Ms(p.metrics), len(same), strings.Join(cells, "; "), p.refName, measure.Ms(lo), measure.Ms(hi)), true
}

// clientBottleneck is recording.ClientLoad.Bottleneck of the cell, read against where its
// server ran. With the built-in engine in genload's own process (target "builtin") the
// process's CPU and its goroutines' waits for a CPU are the engine's and the client's
// together (the engine's forward passes sleep and wake on the same cores), so they do not show
// that the client fell behind; the engine's own clock does: when the client's fwd agrees with
// the engine's decode step time (scraped from its /metrics) within measure.EstimatorTolerance,
// the reads kept up with the steps and there is nothing to say (""). Otherwise the text says
// that the process is shared and, when the engine's step time is known, by how much the two
// differ.
func clientBottleneck(cfg *config.Config, rec *results.Cell, f *measure.Figures) string {
	w := rec.Client.Bottleneck(f.ITL.P50)
	if w == "" || cfg.Target != config.Builtin {
		return w
	}
	shared := " — the built-in engine runs in genload's process: the CPU and the waits are the engine's and the client's together"
	if d, ok := engineGap(cfg, rec, f); ok {
		if math.Abs(d) <= measure.EstimatorTolerance {
			return ""
		}
		shared += fmt.Sprintf(", and the client's fwd %.3f ms differs from the engine's own decode step time %.3f ms by %+.1f %%",
			measure.Ms(f.PerForward.Mean), measure.Ms(rec.Server.Steps.TruthDecodeStepTime), 100*d)
	}
	return w + shared
}

// engineGap is, for a cell on the built-in engine in genload's process whose engine decode
// step time is known (scraped from its /metrics) and that has a fwd, fwd ÷ that step time − 1;
// ok is false otherwise.
func engineGap(cfg *config.Config, rec *results.Cell, f *measure.Figures) (gap float64, ok bool) {
	m := rec.Server
	if cfg.Target != config.Builtin || m == nil || !m.Steps.HasTruthDecode || m.Steps.TruthDecodeStepTime <= 0 || f.PerForward.N == 0 {
		return 0, false
	}
	return float64(f.PerForward.Mean)/float64(m.Steps.TruthDecodeStepTime) - 1, true
}

// repaidOnPlan reports whether the cell ran on the built-in engine in genload's process and
// the engine's own record shows its decode steps on their plan: their measured time within
// scrape's OverrunShareLimit of the planned in all, and the client's fwd within
// measure.EstimatorTolerance of the engine's decode step time. The engine repays a step's
// lateness with shorter steps after it, so long chunk intervals there were host stalls
// already repaid: fwd is not inflated by them, and the slow-forwards figure "without them",
// which removes the stalls but not the shorter steps that repaid them, would read below the
// cost model.
func repaidOnPlan(cfg *config.Config, rec *results.Cell, f *measure.Figures) bool {
	d, ok := engineGap(cfg, rec, f)
	if !ok || rec.Server.Steps.Overrun == nil || !rec.Server.Steps.Overrun.HasDecode {
		return false
	}
	return math.Abs(rec.Server.Steps.Overrun.Decode) <= metrics.OverrunShareLimit && math.Abs(d) <= measure.EstimatorTolerance
}

// builtinTimeScale is the time scale of the built-in engine the run starts (bench.toml's
// [engine] time_scale, or the engine's default), 0 when the target is another server.
func builtinTimeScale(cfg *config.Config) float64 {
	switch {
	case cfg.Target != config.Builtin:
		return 0
	case cfg.Engine.TimeScale > 0:
		return cfg.Engine.TimeScale
	}
	return engine.DefaultConfig().TimeScale
}

// bodyWriteWarning flags a cell whose request body took a material share of its TTFT p50 to
// write (recording.ClientLoad.BodyWrite): material is beyond measure.EstimatorTolerance, the
// gap genload lets two estimates of one figure differ by before it flags the cell, so a write
// below it moves the reported TTFT less than its own estimators may disagree. nil otherwise.
//
// scale is the built-in engine's time scale (0: another server). Below 1 the engine's TTFT is
// scaled and the write is not, so the share is that many times what it would be at time
// scale 1 — still a share of the TTFT the table reports, and of TTFT ÷ scale, the simulated
// time a reader derives from it; the text gives the share at time scale 1 beside it,
// Write / ((TTFT − Write) / scale + Write), the server's part unscaled.
func bodyWriteWarning(l *recording.ClientLoad, f *measure.Figures, scale float64) *warning.Warning {
	w := l.BodyWrite(f.TTFT.P50, measure.EstimatorTolerance)
	if w == "" {
		return nil
	}
	if scale > 0 && scale < 1 && l.Write < f.TTFT.P50 {
		at1 := float64(l.Write) / (float64(f.TTFT.P50-l.Write)/scale + float64(l.Write))
		w += fmt.Sprintf(" — the built-in engine runs at time scale %g: its TTFT is scaled and the write is not; at time scale 1 this write would be about %.1f %% of TTFT",
			scale, 100*at1)
	}
	wn := warning.New(warning.SlowBodyWrite, w)
	return &wn
}

// remeasuredOff says how far each discarded attempt's engine steps ran off their plan: "in
// attempt 1 the built-in engine's steps ran 10.1 % over their planned wall time; in attempt 2
// its decode steps ran 3.0 % short of their plan".
func remeasuredOff(rs []results.Remeasured) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		if r.Overrun.Share > metrics.OverrunShareLimit {
			parts[i] = fmt.Sprintf("in attempt %d the built-in engine's steps ran %.1f %% over their planned wall time", i+1, 100*r.Overrun.Share)
		} else {
			parts[i] = fmt.Sprintf("in attempt %d the built-in engine's decode steps ran %.1f %% short of their plan", i+1, -100*r.Overrun.Decode)
		}
	}
	return strings.Join(parts, "; ")
}
