package measure

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/genload/genload/host/stats"

	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/sse"
)

// What a sequence's forward indices rest on (the keys of Figures.PerForwardCounts).
const (
	// CountsChunkForwards: Options.ChunkForwards (draft_tokens set): each chunk is one
	// forward pass of the target model, whatever it carries.
	CountsChunkForwards = "chunk_forwards"
	// CountsContinuousUsage, CountsLogprobs, CountsTokenizer: every chunk's exact token delta,
	// from continuous usage, from logprobs, or from the model's tokenizer (the generated text
	// re-encoded, its token boundaries falling on the chunk boundaries, the counts summing to
	// the server's total; see RetokenizeChunks).
	CountsContinuousUsage = "continuous_usage"
	CountsLogprobs        = "logprobs"
	CountsTokenizer       = "tokenizer"
	// CountsOnePerChunk: an exact count (the server's usage) equal to the number of chunks:
	// every chunk carried one token.
	CountsOnePerChunk = "one_per_chunk"
)

// fwdKind is how a full sequence's forward indices follow from its marks (see
// forwardIndexTok): they are not kept per mark but derived again by fullSeq.points, one
// sequence at a time, so that a cell holds no per-mark fit points.
type fwdKind uint8

const (
	// fwdUnknown: the forward indices are not known.
	fwdUnknown fwdKind = iota
	// fwdIndex: the mark's index (chunks as forward passes, or one token per chunk).
	fwdIndex
	// fwdDeltas: the cumulative exact token deltas minus the first mark's.
	fwdDeltas
	// fwdTokenizer: the cumulative tokenizer counts (fullSeq.tokens) minus the first chunk's.
	fwdTokenizer
)

// forwardIndexTok returns how s's forward indices follow from its marks (see Figures) and
// the evidence they rest on (a Counts constant), fwdUnknown and "" when unknown: with
// chunkForwards the mark index; else the cumulative exact token deltas minus the first
// mark's, when every mark has one (and they sum to an exact count, if there is one); else
// the mark index when an exact count equals the number of marks (one token per chunk); else,
// as the last resort when tok is not nil, the per-chunk counts of re-encoding the text with
// the model's tokenizer under an exact count (chunkTokensByTokenizer, returned as counts, one
// per mark), why being that attempt's outcome ("" when not tried).
func forwardIndexTok(s *recording.Sequence, chunkForwards bool, tok TokenEnder) (kind fwdKind, counts []int32, evidence, why string) {
	n := s.Marks.Len()
	if chunkForwards {
		return fwdIndex, nil, CountsChunkForwards, ""
	}
	cum, known := 0, true
	for i := range n {
		m := s.Marks.Get(i)
		t := m.Tokens
		if t < 0 || (t == 0 && m.Text > 0) { // text without a token: the delta contradicts the stream
			known = false
			break
		}
		cum += int(t)
	}
	exact := exactCount(s)
	if known && n > 0 && (!exact || cum == s.CompletionTokens) {
		return fwdDeltas, nil, deltaEvidence(s), ""
	}
	if exact && s.CompletionTokens == n {
		return fwdIndex, nil, CountsOnePerChunk, ""
	}
	if exact && tok != nil && n >= 2 {
		counts, why := chunkTokensByTokenizer(s, tok)
		if counts == nil {
			return fwdUnknown, nil, "", why
		}
		return fwdTokenizer, counts, CountsTokenizer, why
	}
	return fwdUnknown, nil, "", ""
}

// known reports whether q's forward indices are known.
func (q *fullSeq) known() bool { return q.fwd != fwdUnknown }

// points returns q's marks as fit points (arrival ns, forward index; see forwardIndexTok),
// one per mark, in buf (grown to the marks when short): valid until the next use of buf. It
// returns nil when the forward indices are unknown.
func (q *fullSeq) points(buf *[]point) []point {
	if q.fwd == fwdUnknown {
		return nil
	}
	ms := q.s.Marks
	ps := grown(*buf, ms.Len())
	*buf = ps
	switch q.fwd {
	case fwdIndex:
		for i := range ps {
			ps[i] = point{float64(ms.At(i)), float64(i)}
		}
	case fwdDeltas:
		cum, f0 := 0, 0
		for i := range ps {
			m := ms.Get(i)
			cum += int(m.Tokens)
			if i == 0 {
				f0 = cum
			}
			ps[i] = point{float64(m.At), float64(cum - f0)}
		}
	case fwdTokenizer:
		cum := 0
		for i := range ps {
			ps[i] = point{float64(ms.At(i)), 0}
		}
		for i, c := range q.tokens {
			cum += int(c)
			ps[i].f = float64(cum - int(q.tokens[0]))
		}
	}
	return ps
}

// arena hands out slices of one buffer: the per-mark slices of a cell's sequences (the
// consistency flags) in one allocation instead of one per sequence. The zero value allocates
// on first use.
type arena[T any] struct{ buf []T }

// newArena returns an arena of n elements.
func newArena[T any](n int) arena[T] { return arena[T]{make([]T, n)} }

// take returns the next n elements (zeroed), capacity n so that an append cannot run into the
// next slice; a new buffer is allocated when fewer than n are left.
func (a *arena[T]) take(n int) []T {
	if len(a.buf) < n {
		a.buf = make([]T, max(n, 4096))
	}
	s := a.buf[:n:n]
	a.buf = a.buf[n:]
	return s
}

// deltaEvidence names where s's per-chunk deltas came from.
func deltaEvidence(s *recording.Sequence) string {
	switch {
	case s.Deltas == sse.TokensLogprobs || (s.Deltas == "" && s.TokenSource == sse.TokensLogprobs):
		return CountsLogprobs
	}
	return CountsContinuousUsage
}

// countEvidence counts q's evidence in f.PerForwardCounts.
func (f *Figures) countEvidence(q fullSeq) {
	if q.counts == "" {
		return
	}
	if f.PerForwardCounts == nil {
		f.PerForwardCounts = map[string]int{}
	}
	f.PerForwardCounts[q.counts]++
}

// seqFigures are one full sequence's per-forward figures (0 when absent).
type seqFigures struct {
	headline, ends, fit time.Duration
	passes              int     // forward passes the headline times: from the first consistent mark to the last consistent one
	trail               int     // forward passes after the last consistent mark (late chunks at the end)
	skipped             int     // leading marks before the first consistent one
	firstGap            float64 // first interval (from the first consistent mark) per forward / the fit's slope (0: no fit)
	lastGap             float64 // last interval per forward / the fit's slope
	firstRes, lastRes   float64 // first and last mark's residual from the fit (ns)
	// held is, when the timing starts after the first mark (skipped > 0), how much later
	// the first mark arrived than the first consistent one, a, and the local forward pass
	// after it imply (ns): t₀ − (t_a − s·(f_a − f₀)), s the Theil–Sen slope over the marks
	// a … a + 2·anchorSlopeW (robust to a stall among them and to frames written two or
	// three at a time, whose consecutive intervals alternate 0 and 2–3 passes).
	held float64
}

// sequenceFigures computes q's figures from its consistency scan (q.con); why is "one
// chunk" (fewer than two marks, or every token in the first), "unverified" (no exact count
// nor known forward indices), "per-chunk unknown" (an exact total, several tokens per
// chunk, no per-chunk counts), "bunched" (the marks it would be timed on mostly read
// together, see bunched), else "".
func sequenceFigures(q fullSeq, sc *fitScratch) (sf seqFigures, why string) {
	s, n := q.s, q.s.Marks.Len()
	if n < 2 {
		return sf, "one chunk"
	}
	t0, tl := s.Marks.At(0), s.Marks.At(n-1)
	ps := q.points(&sc.pts)
	switch {
	case ps != nil && ps[n-1].f > 0:
		sf.ends = time.Duration(math.Round(float64(tl-t0) / ps[n-1].f))
	case ps == nil && exactCount(s) && s.CompletionTokens >= 2:
		// An exact total, but chunks carry several tokens and which carried how many is
		// unknown: decode time / (tokens − 1) would assume the first chunk carried one token
		// (a server that coalesces its first chunks, as TGI does, reads 10–16 % low).
		return sf, "per-chunk unknown"
	case ps == nil:
		return sf, "unverified"
	default: // every token in the first chunk, later chunks carrying text but no token
		return sf, "one chunk"
	}
	a := q.con.first
	sf.skipped = a
	if a >= n-1 || bunched(s.Marks, ps, a) {
		return sf, "bunched"
	}
	e := q.end
	sf.passes, sf.trail = int(math.Round(ps[e].f-ps[a].f)), int(math.Round(ps[n-1].f-ps[e].f))
	sf.headline = time.Duration(math.Round((ps[e].t - ps[a].t) / (ps[e].f - ps[a].f)))
	if a > 0 {
		if slope, _, ok := sc.theilSen(ps[a : min(a+2*anchorSlopeW, e)+1]); ok && slope > 0 {
			sf.held = ps[0].t - (ps[a].t - slope*(ps[a].f-ps[0].f))
		}
	}
	// the robust fit over the marks the headline times
	line, icpt, fitted := sc.theilSen(ps[a:])
	if n-a >= 3 && fitted && line > 0 {
		sf.firstGap = (ps[a+1].t - ps[a].t) / max(ps[a+1].f-ps[a].f, 1) / line
		sf.lastGap = (ps[n-1].t - ps[n-2].t) / max(ps[n-1].f-ps[n-2].f, 1) / line
		sf.fit = time.Duration(math.Round(line))
		sf.firstRes, sf.lastRes = ps[0].t-(icpt+line*ps[0].f), ps[n-1].t-(icpt+line*ps[n-1].f)
	}
	return sf, ""
}

// scanAll runs the consistency scan (see scan) over every full sequence with forward
// indices, twice: the first scan, at a provisional tolerance of a quarter step, measures the
// cell's jitter from the residuals of the predicting marks; the second judges every mark
// against it. It sets each one's consistency and last consistent mark, and returns the
// jitter. It keeps the residuals of the first scan (8 bytes per mark) in sc.resid (grown when
// short) until the jitter is measured, then hands their buffer to sc.fit's slopes, and
// allocates the consistency flags (1 byte per mark), kept in the sequences.
func scanAll(fulls []fullSeq, sc *computeScratch) jitter {
	marks := 0
	for i := range fulls {
		if fulls[i].known() {
			marks += fulls[i].s.Marks.Len()
		}
	}
	resid := sc.resid[:0]
	if cap(resid) < marks {
		resid = make([]float64, 0, marks)
	}
	for i := range fulls {
		if ps := fulls[i].points(&sc.fit.pts); ps != nil {
			scan(ps, provisionalTol, looseTol, &resid, &sc.scan, nil)
		}
	}
	j := measureJitter(resid)
	// the residuals are spent: their buffer becomes the fits' slopes (sequenceFigures, and
	// the window's pooled fit, whose bracket of slopes it holds without growing)
	sc.fit.slopes, sc.resid = resid[:0], nil
	member := newArena[bool](marks)
	for i := range fulls {
		q := &fulls[i]
		if ps := q.points(&sc.fit.pts); ps != nil {
			q.con = scan(ps, j.tol, j.ref, nil, &sc.scan, member.take(len(ps)))
			q.end = scanEnd(ps, q.con.first, j)
		}
	}
	return j
}

// bunched reports whether over half of the intervals between marks from, from+1, … of ms
// are "together": shorter than a tenth of the sequence's mean forward pass, (last − first
// mark) / (forward passes between them), per forward pass they span (ps[i].f the forward index
// of mark i). One read stamps every chunk it holds with the same time (an interval of 0), and
// chunks the server or network held back and then released come microseconds apart in reads
// of their own; either way the client cannot time the forward passes between them — it fell
// behind, or the stream stalled and burst. A regular stream has every interval near the mean;
// one long interval (a prefill sharing a step) raises the mean by a fraction, not tenfold.
// Also true when fewer than one interval is left, or the marks span no forward pass.
func bunched(ms sse.Marks, ps []point, from int) bool {
	n := ms.Len()
	if n-1-from < 1 {
		return true
	}
	forwards := ps[n-1].f - ps[0].f
	if forwards <= 0 {
		return true
	}
	tenth := float64(ms.At(n-1)-ms.At(0)) / forwards / 10
	together := 0
	for i := from + 1; i < n; i++ {
		if d := float64(ms.At(i) - ms.At(i-1)); d == 0 || d/max(ps[i].f-ps[i-1].f, 1) < tenth {
			together++
		}
	}
	return 2*together > n-1-from
}

// lateSaid is the least relative change of the skipped sequences' figures (their decode time
// / (tokens − 1) from their first chunk against fwd) for which the late starts are said in
// Figures.Checks.
const lateSaid = 0.005

// forwardTally gathers perForward's per-sequence figures over a cell's full sequences: the
// samples of the figures (ns), what the checks read and the counts of the sequences left
// without a figure, by reason (see sequenceFigures).
type forwardTally struct {
	// heads, ends, fits are the anchored, endpoint and Theil–Sen figures of the sequences
	// with a figure (fits only where the fit exists); firstRes, lastRes the fit's first and
	// last residuals (ns) beside fits.
	heads, ends, fits []time.Duration
	firstRes, lastRes []float64
	// skippedMarks, lateness, held: per sequence whose timing starts after its first mark,
	// the marks skipped, its first mark's residual in the scan and how late it was against
	// its headline (seqFigures.held), ns; endsOfSkipped, headsOfSkipped sum their endpoint
	// and anchored figures.
	skippedMarks                  []int
	lateness, held                []float64
	endsOfSkipped, headsOfSkipped time.Duration
	// trailed: per sequence whose timing ends before its last mark, the forward passes after.
	trailed []int
	// slowFirst, slowLast count the sequences whose first or last interval is over 3
	// typical forward passes (see fitCheck).
	slowFirst, slowLast int
	// the sequences without a figure, by sequenceFigures' reason
	oneChunk, oneToken, unverified, perChunkUnknown, bunched int
}

// perForward fills f.PerForward, PerForwardMethod, PerForwardEndpoints, PerForwardFit, the
// chunk offsets, the cross-checks and PerForwardReason from the full sequences.
func perForward(f *Figures, fulls []fullSeq, maxTok int, jit jitter, sc *fitScratch) {
	t := f.tallyForwards(fulls, maxTok, sc)
	f.summarizeForwards(&t)
	f.checkLateStarts(&t, jit)
	f.checkLateEnds(&t)
	if len(t.heads) > 0 && len(t.fits) == len(t.heads) {
		fitCheck(f, t.slowFirst, t.slowLast)
	}
	f.fitFlagged = len(f.Checks) > 0
	f.PerForwardReason = f.perForwardReason(&t, len(fulls), maxTok)
}

// tallyForwards computes every full sequence's figures (sequenceFigures) into a
// forwardTally, and f.PerForwardPasses, PerForwardTrail and PerForwardCounts (by index in
// Result.Sequences).
func (f *Figures) tallyForwards(fulls []fullSeq, maxTok int, sc *fitScratch) forwardTally {
	t := forwardTally{heads: make([]time.Duration, 0, len(fulls)), ends: make([]time.Duration, 0, len(fulls))}
	for _, q := range fulls {
		sf, why := sequenceFigures(q, sc)
		switch why {
		case "one chunk":
			if maxTok == 1 || (exactCount(q.s) && q.s.CompletionTokens == 1) {
				t.oneToken++
			} else {
				t.oneChunk++
			}
			continue
		case "unverified":
			t.unverified++
			continue
		case "per-chunk unknown":
			t.perChunkUnknown++
			continue
		case "bunched":
			t.bunched++
			continue
		}
		t.heads, t.ends = append(t.heads, sf.headline), append(t.ends, sf.ends)
		if f.PerForwardPasses == nil {
			f.PerForwardPasses = make([]int, f.Sequences)
		}
		if q.idx < len(f.PerForwardPasses) {
			f.PerForwardPasses[q.idx] = sf.passes
		}
		if sf.trail > 0 {
			if f.PerForwardTrail == nil {
				f.PerForwardTrail = make([]int, f.Sequences)
			}
			if q.idx < len(f.PerForwardTrail) {
				f.PerForwardTrail[q.idx] = sf.trail
			}
			t.trailed = append(t.trailed, sf.trail)
		}
		f.countEvidence(q)
		if sf.skipped > 0 {
			t.skippedMarks = append(t.skippedMarks, sf.skipped)
			t.lateness, t.held = append(t.lateness, q.con.firstRes), append(t.held, sf.held)
			t.endsOfSkipped += sf.ends
			t.headsOfSkipped += sf.headline
		}
		if sf.firstGap > 3 {
			t.slowFirst++
		}
		if sf.lastGap > 3 {
			t.slowLast++
		}
		if sf.fit > 0 {
			t.fits = append(t.fits, sf.fit)
			t.firstRes, t.lastRes = append(t.firstRes, sf.firstRes), append(t.lastRes, sf.lastRes)
		}
	}
	return t
}

// summarizeForwards sets f.PerForwardMethod, the chunk offsets (medians of the fit's first
// and last residuals), the per-forward histogram and the Summaries of the headline, endpoint
// and fit samples (sorting them: the histogram is recorded first, in the sequences' order).
func (f *Figures) summarizeForwards(t *forwardTally) {
	if len(t.heads) > 0 {
		f.PerForwardMethod = "anchored"
	}
	if len(t.fits) > 0 {
		f.FirstChunkOffset = time.Duration(math.Round(stats.MedianInPlace(t.firstRes)))
		f.LastChunkOffset = time.Duration(math.Round(stats.MedianInPlace(t.lastRes)))
	}
	f.Hist.PerForward = histOf(t.heads)
	f.PerForward, f.PerForwardEndpoints, f.PerForwardFit = Summarize(t.heads), Summarize(t.ends), Summarize(t.fits)
}

// checkLateStarts appends the check that says the first chunks of some sequences arrived
// late: when their residual's median (ns) lies beyond the cell's jitter (offset + anchorK·σ,
// not only beyond the cap of the tolerance) and skipping them moved the figure by lateSaid or
// more — (Σ endpoint figures / Σ anchored figures of the skipped sequences) − 1 — a jitter
// tail that happens to exceed the tolerance moves it by less. How late it says is the median
// of seqFigures.held, each first chunk against its own sequence's first consistent chunk and
// fwd: the scan's residual is carried back over several chunks with a slack and from the
// earliest of its predictions, which decides membership but overstates a hold (chunks
// written two at a time, the first held one 20 ms step, read +95 ms as a residual).
func (f *Figures) checkLateStarts(t *forwardTally, jit jitter) {
	if len(t.skippedMarks) == 0 {
		return
	}
	gap := float64(t.endsOfSkipped)/max(float64(t.headsOfSkipped), 1) - 1
	late := stats.MedianInPlace(t.lateness)
	if math.Abs(gap) < lateSaid || late-jit.offset <= anchorK*jit.sigma {
		return
	}
	slices.Sort(t.skippedMarks)
	step := float64(f.PerForward.Mean)
	f.Checks = append(f.Checks, fmt.Sprintf("the first chunks of %d of %d sequences arrived late: their first chunk %+.1f ms (median) later than the chunks after it imply, beyond the cell's jitter (tolerance %.2f ms: %d × its robust deviation %.3f ms, clamped to [%.0f %%, %.0f %%] of a forward pass) — held back (Nagle's algorithm with delayed ACK on a server without TCP_NODELAY, a late first flush, a buffering proxy) or read late by the client; or forward passes that were faster before them: fwd is timed from each one's first consistent chunk (chunk %d, median), its forward passes counted from there; decode time / (tokens − 1) would read %+.1f %%",
		len(t.skippedMarks), len(t.heads), stats.MedianInPlace(t.held)/1e6, jit.beyond(step)/1e6,
		anchorK, jit.sigma/1e6, 100*anchorTolMin, 100*anchorTolMax, t.skippedMarks[len(t.skippedMarks)/2], 100*gap))
}

// checkLateEnds appends the check that says the last chunks of some sequences arrived late
// (their timing ends before their last mark), with the median of the forward passes left out.
func (f *Figures) checkLateEnds(t *forwardTally) {
	if len(t.trailed) == 0 {
		return
	}
	slices.Sort(t.trailed)
	f.Checks = append(f.Checks, fmt.Sprintf("the last chunks of %d of %d sequences arrived late: later than the chunks before them imply, beyond the cell's jitter (read late by the client, or a delayed final flush; or a slower last step, which the client cannot tell apart): fwd ends at each one's last consistent chunk, %d forward pass(es) before its last token (median)",
		len(t.trailed), len(t.heads), t.trailed[len(t.trailed)/2]))
}

// perForwardReason says why PerForward is absent or which of the fulls full sequences it
// leaves out ("" when none): no full sequence, the sequences left out of the cell, then the
// tally's sequences without a figure, by reason.
func (f *Figures) perForwardReason(t *forwardTally, fulls, maxTok int) string {
	var parts []string
	if f.PerForward.N == 0 && fulls == 0 {
		parts = append(parts, "no sequence ran its max_tokens")
	}
	if lo := f.LeftOutSummary(maxTok); lo != "" {
		parts = append(parts, "left out: "+lo)
	}
	if t.unverified > 0 {
		parts = append(parts, fmt.Sprintf("token counts unverified: no usable usage (absent, or contradicting the stream) and chunks may carry several tokens (%d of %d full sequences; continuous usage or logprobs give exact counts)", t.unverified, fulls))
	}
	if t.perChunkUnknown > 0 {
		tk := ""
		var fails []string
		for _, k := range []string{RetokenizedCount, RetokenizedBoundary, RetokenizedText} {
			if n := f.Retokenized[k]; n > 0 {
				fails = append(fails, fmt.Sprintf("%d %s", n, k))
			}
		}
		if len(fails) > 0 {
			tk = "; re-encoding their text with the model's tokenizer did not give them (" + strings.Join(fails, ", ") + ")"
		}
		parts = append(parts, fmt.Sprintf("%d of %d full sequences' chunks carry several tokens (%.2f on average) and the server gives no per-chunk counts: how many tokens the first chunk carried is unknown, so decode time / (tokens − 1) would be a guess (continuous usage or logprobs give per-chunk counts)%s", t.perChunkUnknown, fulls, f.TokensPerChunk, tk))
	}
	if t.bunched > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d full sequences' chunks arrived mostly together (over half of their intervals under a tenth of the mean forward pass: a server that flushes its chunks on a timer or every few tokens (a stream interval), a buffering hop, a stream that stalled and then burst, or a client that fell behind): the client cannot time their forward passes", t.bunched, fulls))
	}
	if t.oneChunk > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d full sequences received all their tokens in one chunk: no decode interval to time", t.oneChunk, fulls))
	}
	if t.oneToken > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d full sequences generated a single token (max_tokens %d): a decode forward pass needs ≥ 2 tokens", t.oneToken, fulls, maxTok))
	}
	return strings.Join(parts, "; ")
}

// fitCheck compares the headline's mean (the mean forward pass) with the robust fit's (the
// typical forward pass) and appends a failed check with the likely cause to f.Checks.
// slowFirst and slowLast count sequences whose first (after the anchor) or last interval is
// over 3 typical forward passes.
func fitCheck(f *Figures, slowFirst, slowLast int) {
	head, fit := f.PerForward.Mean, f.PerForwardFit.Mean
	if fit <= 0 || head <= 0 {
		return
	}
	gap := float64(head)/float64(fit) - 1
	if math.Abs(gap) <= EstimatorTolerance {
		return
	}
	var cause string
	switch {
	case gap > 0 && slowFirst > 0:
		cause = fmt.Sprintf("the first decode interval of %d of %d sequences is over 3 typical forward passes: a slow first step (a prefill sharing it), or a first chunk sent before the decode steps began; fwd includes it", slowFirst, f.PerForward.N)
	case gap > 0 && slowLast > 0:
		cause = fmt.Sprintf("the last decode interval of %d of %d sequences is over 3 typical forward passes: a slow last step, or a delayed final flush; fwd includes it", slowLast, f.PerForward.N)
	case gap > 0:
		cause = "some forward passes were much slower than the typical one (stalls, preemption, a loaded host): the mean includes them, the fit does not"
	default:
		cause = "the chunk arrivals are irregular (coalesced reads, bunching): the fit follows the majority of them"
	}
	f.Checks = append(f.Checks, fmt.Sprintf("per-forward estimators disagree: fwd (the mean forward pass) %.3f ms is %s the robust fit %.3f ms (the Theil–Sen slope over each sequence's chunks): %s",
		Ms(head), apart(gap), Ms(fit), cause))
}

// apart words a relative gap (a fraction): "6.9 % below", "3.2 % above".
func apart(gap float64) string {
	if gap < 0 {
		return fmt.Sprintf("%.1f %% below", -100*gap)
	}
	return fmt.Sprintf("%.1f %% above", 100*gap)
}

// windowCheck compares the window's headline (the mean forward pass on the reference
// sequence) with its pooled fit (a Theil–Sen slope), unless the per-sequence check already
// failed (it names the cause).
func windowCheck(f *Figures) {
	w := f.Window
	if !w.Valid || w.PerStep <= 0 {
		return
	}
	if w.Fit > 0 && !f.fitFlagged { // the per-sequence check already names the cause
		if gap := float64(w.PerStep)/float64(w.Fit) - 1; math.Abs(gap) > EstimatorTolerance {
			f.Checks = append(f.Checks, fmt.Sprintf("full-batch estimators disagree: full-batch fwd (the mean forward pass) %.3f ms is %s the pooled robust fit %.3f ms (the Theil–Sen slope over the window's chunks): some forward passes in the window were much slower or faster than the others",
				Ms(w.PerStep), apart(gap), Ms(w.Fit)))
			f.windowCheck = len(f.Checks)
		}
	}
}
