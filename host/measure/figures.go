package measure

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
	"unsafe"

	"github.com/genload/genload/host/recording"
)

// Options are the cell parameters measure needs besides the Result.
type Options struct {
	// MaxTokens is the max_tokens asked per sequence: a sequence ends full with exactly this
	// many tokens, early-stopped below it, overlong above it (see the Class constants).
	// 0 uses Result.MaxTokens.
	MaxTokens int
	// GenerationDurationHeader and SpeculationAcceptanceHeader are the response header
	// names (as given to the dispatch Options fields of the same names, which copy their
	// values into Request.Headers) used for the header-based figure; "" disables.
	GenerationDurationHeader, SpeculationAcceptanceHeader string
	// GenerationDurationUnit is the unit of a bare number in the generation-duration
	// header (default time.Second); values ending in "ms", "us", "s" carry their own.
	GenerationDurationUnit time.Duration
	// DraftTokens is the speculative draft length k used in the header formula (0 =
	// unknown; see HeaderFigure).
	DraftTokens int
	// ChunkForwards counts a sequence's forward passes as its token-bearing chunks instead of
	// its tokens. Set it for a server that speculates: it streams each target-model forward
	// pass's accepted tokens (1 + accepted drafts) as one chunk, so chunks − 1 is the number
	// of decode forward passes while tokens − 1 overcounts them. Wrong for a server that
	// coalesces several steps into one chunk (stream_interval > 1).
	ChunkForwards bool
	// PromptLengths are the built prompts' lengths in tokens, by prompt index (what genload
	// sent, or with text prompts what it encoded before decoding to text); nil skips the
	// per-request prompt-token check (Figures.Prompts).
	PromptLengths []int
	// TextPrompts reports that the prompts were sent as text: a server count that differs
	// is drift, never truncation.
	TextPrompts bool
	// Tokenizer, when not nil, is the model's tokenizer: a full sequence with an exact count
	// but no per-chunk counts gets them from re-encoding its text (Sequence.Text, kept by the
	// client; see chunkTokensByTokenizer), accepted only where they sum to the server's count.
	Tokenizer TokenEnder
	// TruncationWarns downgrades server-side truncation of token-id prompts from a cell
	// error (PromptCheck.TruncationError) to a deviation the caller warns about.
	TruncationWarns bool
}

// MinWindowSteps is the fewest forward passes the full-batch window must hold for a figure.
// The window's figure is a mean over Steps forward passes timed by two arrivals: each
// arrival's jitter (a read that lands a fraction of a step late) moves it by jitter / Steps,
// ≤ 5 % of a step's worth at 10; and its pooled fit needs enough marks per sequence that a
// bunched chunk stays a minority. Below it the window is absent with the reason: an early stop
// that shrank the window to 2 steps gave +17 %, not a figure.
const MinWindowSteps = 10

// EstimatorTolerance is the largest gap between the headline per-forward figure (the mean
// forward pass) and the robust fit (the typical one) of a cell that is not flagged in
// Figures.Checks.
const EstimatorTolerance = 0.05

// Figures are one cell's client-side measurements. All durations are time.Duration
// internally and milliseconds in JSON (via Summary, or the *_ms fields).
//
// Each sequence is classified (see the Class constants): only full sequences — their request
// succeeded, they finished with max_tokens tokens and streamed at least one token-bearing
// chunk (sse.Mark) — are counted in the per-forward figures and the full-batch window; the
// others are in LeftOut and make the cell partial (a batch of 7 is not a batch of 8).
// TTFT, ITL, E2E and the token counts are over the streamed sequences: succeeded, finished,
// with at least one mark (full, early-stopped or overlong). Failed requests count in Errors.
// Offsets below are the sse.Mark arrival times; Sent is the request's send time.
//
// A sequence's forward index of a mark is the number of decode forward passes after its first
// mark: with Options.ChunkForwards the mark's index; else its cumulative tokens minus the
// first mark's, known when every mark carries its exact token delta (continuous usage,
// logprobs) or when an exact count equals the number of marks (one token per chunk).
type Figures struct {
	// Sequences is the number of sequences asked for (B); Counted how many were full.
	Sequences int `json:"sequences"`
	Counted   int `json:"counted"`
	// ZeroToken, EarlyStop, Overlong, Failed and Unfinished count the sequences of each
	// class left out (see the Class constants); LeftOut describes each of them.
	ZeroToken  int       `json:"zero_token_sequences"`
	EarlyStop  int       `json:"early_stop_sequences"`
	Overlong   int       `json:"overlong_sequences"`
	Failed     int       `json:"failed_sequences"`
	Unfinished int       `json:"unfinished_sequences"`
	LeftOut    []LeftOut `json:"left_out,omitempty"`
	// PerForward is the headline latency per decode forward pass, one sample per full
	// sequence: the mean forward-pass time of the sequence, computed by PerForwardMethod:
	//   "anchored":  (last mark − anchor mark) / (forward index of the last − of the anchor),
	//                the anchor being the sequence's first consistent mark: the first whose
	//                arrival is not later than the marks after it imply, beyond the cell's
	//                jitter (see scan) — the first mark, unless the start was held back,
	//                bunched or late — the only method: a sequence whose forward indices are
	//                not known (an exact total but several tokens per chunk, no per-chunk
	//                counts) gets no figure, since decode time / (tokens − 1) would assume its
	//                first chunk carried one token.
	// N = 0 when absent; PerForwardReason then says why, and also names any full sequence
	// left out of it (all tokens in one chunk, a single token, an unverified count).
	PerForward       Summary `json:"per_forward"`
	PerForwardMethod string  `json:"per_forward_method,omitempty"`
	PerForwardReason string  `json:"per_forward_reason,omitempty"`
	// PerForwardPasses is, per sequence of the cell (by index in Result.Sequences), the
	// decode forward passes its PerForward sample times: from its anchor to its last token
	// (0 for a sequence without a sample); nil when no sequence has one.
	PerForwardPasses []int `json:"per_forward_passes,omitempty"`
	// PerForwardTrail is, per sequence, the forward passes after the last mark its sample
	// times (chunks at its end that arrived late: see scanEnd); nil when none.
	PerForwardTrail []int `json:"per_forward_trail,omitempty"`
	// PerForwardCounts counts the sequences of PerForward by what their forward indices
	// rest on (the Counts constants: continuous usage, logprobs, the tokenizer, one token per
	// chunk, chunks as forward passes).
	PerForwardCounts map[string]int `json:"per_forward_counts,omitempty"`
	// Retokenized counts the full sequences whose per-chunk counts were sought by re-encoding
	// their text with Options.Tokenizer, by outcome (the Retokenized constants).
	Retokenized map[string]int `json:"retokenized,omitempty"`
	// Jitter is the cell's arrival jitter: 1.4826 × the median absolute deviation of the
	// consistent marks' residuals from the marks after them (see scan); the anchors'
	// tolerance is anchorK times it, within a fraction of a forward pass.
	Jitter time.Duration `json:"jitter_ns,omitempty"`
	// PerForwardEndpoints is (last mark − first mark) / (forward index of the last mark),
	// i.e. decode time / (completion_tokens − 1) when the first chunk carries one token; with
	// Options.ChunkForwards (speculative decoding) decode time / (marks − 1). It needs an
	// exact count or known forward indices; a sequence with one mark has none.
	PerForwardEndpoints Summary `json:"per_forward_endpoints"`
	// PerForwardFit is, per sequence with known forward indices and ≥ 3 marks, the
	// Theil–Sen slope of mark arrival time against forward index: the typical forward pass
	// (the median-like one; slower stalls move it little), the cross-check of PerForward.
	PerForwardFit Summary `json:"per_forward_fit"`
	// FirstChunkOffset and LastChunkOffset are the medians over fitted sequences of the
	// first and last mark's residual from the fit (positive: later than the line).
	FirstChunkOffset time.Duration `json:"first_chunk_offset_ns"`
	LastChunkOffset  time.Duration `json:"last_chunk_offset_ns"`
	// LongIntervals are the long chunk intervals that shifted every chunk after them (a stall,
	// or a delivery lag that began mid-stream: see LongIntervals); nil when there are none.
	LongIntervals *LongIntervals `json:"long_intervals,omitempty"`
	// Checks are the cross-checks between estimators that failed (fit against endpoints,
	// per sequence and over the window), each with its likely cause; empty when they agree.
	Checks []string `json:"checks,omitempty"`
	// Window is the full-occupancy figure (every counted sequence decoding): see Window.
	Window Window `json:"window"`
	// TTFT is first mark − Sent over streamed sequences.
	TTFT Summary `json:"ttft"`
	// ITL is the interval between consecutive marks of a sequence, per chunk (never
	// divided per token), over streamed sequences; ITLTokens is the mean token delta of
	// those chunks where continuous usage gave it (0 when never known).
	ITL       Summary `json:"itl"`
	ITLTokens float64 `json:"itl_tokens_per_chunk"`
	// E2E is (finish chunk arrival − Sent) over streamed sequences.
	E2E Summary `json:"e2e"`
	// CompletionTokens sums completion tokens over streamed sequences; TokenSources counts
	// them per sse.TokenSource; TokensUnverified counts those whose count is not exact
	// (chunk counts: a lower bound when chunks carry several tokens); Short counts the
	// finished sequences with fewer than MaxTokens tokens (zero-token and early-stopped).
	CompletionTokens int            `json:"completion_tokens"`
	TokenSources     map[string]int `json:"token_sources"`
	TokensUnverified int            `json:"tokens_unverified"`
	Short            int            `json:"short_sequences"`
	// TokensPerChunk is CompletionTokens / marks over streamed sequences.
	TokensPerChunk float64 `json:"tokens_per_chunk"`
	// PromptTokens and CachedTokens sum the server-reported usage over succeeded
	// requests (CachedTokens only where prompt_tokens_details.cached_tokens was sent).
	PromptTokens    int  `json:"prompt_tokens"`
	HasPromptTokens bool `json:"has_prompt_tokens"`
	CachedTokens    int  `json:"cached_tokens"`
	HasCachedTokens bool `json:"has_cached_tokens"`
	// Prompts is the per-request prompt-token check; nil without Options.PromptLengths or
	// without usage.
	Prompts *PromptCheck `json:"prompt_check,omitempty"`
	// Errors are the failed requests' messages; ErrorKinds counts them by
	// recording.ErrorKind (timeouts as "timeout:<which>").
	Errors     []string       `json:"errors,omitempty"`
	ErrorKinds map[string]int `json:"error_kinds,omitempty"`
	// ServerTimings is the server's own per-forward figure where it times each sequence in
	// the stream (llama.cpp's "timings", ollama's eval_duration); nil when no full sequence
	// has them.
	ServerTimings *ServerTimings `json:"server_timings,omitempty"`
	// Header is the server-header figure; nil when the headers were absent.
	Header *HeaderFigure `json:"header,omitempty"`
	// Attainment is whether the B sequences decoded as one batch as the client's marks show
	// it (see Attain); nil in records written before it existed.
	Attainment *Attainment `json:"attainment,omitempty"`
	// TokenNotes counts the sequences per sse.Sequence.TokenNote: why a token-count source
	// was discarded and which one was used instead.
	TokenNotes map[string]int `json:"token_notes,omitempty"`
	// Hist holds the same samples as PerForward, TTFT, ITL and E2E in mergeable HDR
	// histograms, to combine repeats and shards exactly (see Histogram).
	Hist *Histograms `json:"hist,omitempty"`

	fitFlagged bool // a per-sequence check failed (the window's would repeat it)
	// windowCheck is 1 + the index in Checks of the check about the window (windowCheck's),
	// 0 when there is none.
	windowCheck int
}

// WithoutWindow makes f's full-batch figure absent for reason (a cell routed over several
// servers, whose sequences share no single batch) and drops the check that compared the
// window's two estimators, so that no warning speaks of a figure the table does not show.
func (f *Figures) WithoutWindow(reason string) {
	f.Window.Valid, f.Window.Reason = false, reason
	if i := f.windowCheck - 1; i >= 0 && i < len(f.Checks) {
		f.Checks = slices.Delete(f.Checks, i, i+1)
	}
	f.windowCheck = 0
}

// ServerTimings is the server's own timing of the full sequences, beside the client's
// figures: per sequence, predicted_ms / (predicted_n − 1) — llama.cpp times from the first
// token's sampling to the last's and counts every token decoded, the first included, so its
// span holds predicted_n − 1 forward passes (its predicted_per_token_ms, over predicted_n,
// reads (n − 1)/n low) — or, from ollama's native API, eval_duration / (eval_count − 1), for
// the same reason (sse.GenerateMetrics.PerForward: ollama's eval_count / eval_duration
// "tokens per second" reads n/(n − 1) high). Without speculative decoding only: with it,
// tokens are not forward passes (Reason says so and PerForward is empty).
type ServerTimings struct {
	// Source names the server field ("llama.cpp timings", "ollama eval_duration").
	Source string `json:"source"`
	// PerForward has one sample per full sequence with timings of at least 2 tokens.
	PerForward Summary `json:"per_forward"`
	Reason     string  `json:"reason,omitempty"`
}

// serverTimings returns the ServerTimings of the full sequences, nil when none has timings.
func serverTimings(fulls []fullSeq, chunkForwards bool) *ServerTimings {
	var per []time.Duration
	source := ""
	for _, q := range fulls {
		switch t := q.s.Timings; {
		case q.s.HasTimings:
			source = "llama.cpp timings"
			if t.PredictedN >= 2 && t.PredictedMs > 0 {
				per = append(per, time.Duration(math.Round(t.PredictedMs*1e6/float64(t.PredictedN-1))))
			}
		case q.s.HasGenerate:
			source = "ollama eval_duration"
			if d, ok := q.s.Generate.PerForward(); ok {
				per = append(per, d)
			}
		}
	}
	if source == "" {
		return nil
	}
	st := &ServerTimings{Source: source}
	switch {
	case chunkForwards:
		st.Reason = "speculative decoding (draft_tokens set): the server's timings count tokens, not forward passes"
	case len(per) == 0:
		st.Reason = "no sequence's timings span two tokens"
	default:
		st.PerForward = Summarize(per)
	}
	return st
}

// Partial reports that some of the B sequences were left out of the per-forward figures
// (zero-token, early-stopped, overlong, failed or unfinished).
func (f *Figures) Partial() bool { return f.Counted < f.Sequences }

// Window is the full-occupancy window over the full sequences: from Start = the latest first
// mark (every sequence has its first token) to End = the earliest last mark (the first
// sequence finishes; see span). It is measured on the reference sequence r that finishes
// first, from its first consistent mark (see scan) at or after its mark nearest to Start to
// its last mark: Steps is
// the difference of their forward indices, PerStep (the headline) the time between them /
// Steps — the mean forward pass over the window, every sequence decoding. Counting on one
// sequence's forward index, not on arrivals inside [Start, End], makes Steps immune to the
// sub-step jitter between sequences of the same step, and timing on r's own marks removes the
// alignment error of Start.
//
// Endpoints = (End − Start) / (forward passes of r after its mark nearest Start) is the
// former endpoint form; Fit the pooled Theil–Sen slope over the marks inside [Start, End] of
// every full sequence, each with its own intercept (the median of all within-sequence
// pairwise slopes: the typical forward pass), both beside PerStep. Valid needs every full
// sequence's forward indices, two marks in each, and Steps ≥ MinWindowSteps; else Reason
// says why.
type Window struct {
	Valid  bool          `json:"valid"`
	Reason string        `json:"reason,omitempty"`
	Start  time.Duration `json:"-"`
	End    time.Duration `json:"-"`
	// Ref is the reference sequence's index in Result.Sequences; Steps the forward passes
	// PerStep times on it, ending Trail forward passes before its last token (at its last
	// consistent mark; Trail is 0 unless its last chunks arrived late).
	Ref       int           `json:"-"`
	Steps     int           `json:"steps"`
	Trail     int           `json:"-"`
	PerStep   time.Duration `json:"-"`
	Endpoints time.Duration `json:"-"`
	Fit       time.Duration `json:"-"`
}

type windowJSON struct {
	Valid       bool    `json:"valid"`
	Reason      string  `json:"reason,omitempty"`
	StartMs     float64 `json:"start_ms"`
	EndMs       float64 `json:"end_ms"`
	Ref         int     `json:"ref_sequence,omitempty"`
	Steps       int     `json:"steps"`
	Trail       int     `json:"trail_steps,omitempty"`
	PerStepMs   float64 `json:"per_step_ms"`
	EndpointsMs float64 `json:"endpoints_per_step_ms"`
	FitMs       float64 `json:"fit_per_step_ms"`
}

// MarshalJSON writes start_ms, end_ms, per_step_ms, endpoints_per_step_ms and
// fit_per_step_ms in milliseconds.
func (w Window) MarshalJSON() ([]byte, error) {
	return json.Marshal(windowJSON{w.Valid, w.Reason, Ms(w.Start), Ms(w.End), w.Ref, w.Steps, w.Trail, Ms(w.PerStep), Ms(w.Endpoints), Ms(w.Fit)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (w *Window) UnmarshalJSON(b []byte) error {
	var j windowJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*w = Window{j.Valid, j.Reason, fromMs(j.StartMs), fromMs(j.EndMs), j.Ref, j.Steps, j.Trail, fromMs(j.PerStepMs), fromMs(j.EndpointsMs), fromMs(j.FitMs)}
	return nil
}

// Compute returns the Figures of one cell's Result: it classifies every sequence (see the
// Class constants), computes the per-forward figures and the full-batch window over the full
// ones (fit and endpoints, cross-checked: Figures.Checks), TTFT, ITL and E2E over the
// streamed ones, and the per-request prompt-token check. It never fails: an absent figure
// carries its reason (Figures.PerForwardReason, Window.Reason).
//
// Its cost is linear in the marks but for the fits: per full sequence the pairwise slopes of
// at most maxFitPoints marks, and over the window those of at most maxWindowFitPoints marks
// of each sequence, in one buffer reused from sequence to sequence. Its memory is one word per
// mark, reused from step to step (computeScratch.resid), a byte per mark of consistency flags,
// and per sequence its window's fit points and the per-sequence figures: a sequence's marks
// as fit points (fullSeq.points) are derived again by each step that reads them, one sequence
// at a time, not kept for the cell (BenchmarkCompute1024 reports the bytes per mark).
func Compute(res *recording.Result, o Options) Figures {
	maxTok := o.MaxTokens
	if maxTok == 0 {
		maxTok = res.MaxTokens
	}
	f := Figures{Sequences: len(res.Sequences), TokenSources: map[string]int{}}
	f.countRequests(res)
	var sc computeScratch
	fulls, st := f.classifySequences(res, o, maxTok)
	f.summarizeStreams(&st)
	sc.resid = floatsOver(st.itl) // the ITL samples are summarized: their buffer is the scans'
	st.itl = nil
	jit := scanAll(fulls, &sc)
	f.Jitter = time.Duration(math.Round(jit.sigma))
	perForward(&f, fulls, maxTok, jit, &sc.fit)
	earlyFirst(&f, fulls, jit, &sc.fit)
	f.LongIntervals = longIntervals(fulls, f.PerForwardPasses, &sc.fit)
	f.Window = window(fulls, f.TokensPerChunk, &sc)
	windowCheck(&f)
	f.Prompts = checkPrompts(res, o)
	f.Header = headerFigure(res, o)
	f.ServerTimings = serverTimings(fulls, o.ChunkForwards)
	att := attain(res, len(res.Sequences), &st.itlMedian)
	f.Attainment = &att
	f.countTokenNotes(res)
	return f
}

// computeScratch is the working memory of one Compute, shared by its steps one after
// another: the fits' and the scans' buffers (fit.pts the points of the sequence at hand:
// fullSeq.points), and one sequence's points in the window (see pooledFit). resid is the one
// buffer of a word per mark: the ITL samples' (streamSamples.itl), then the scans' residuals
// (scanAll), then the fits' slopes (fit.slopes).
type computeScratch struct {
	fit    fitScratch
	scan   scanScratch
	window []point
	resid  []float64
}

// floatsOver returns an empty []float64 over d's backing array (capacity cap(d)), for a
// caller done with d: both are 8-byte words without pointers, so that one allocation serves
// the ITL samples and then the scans' residuals instead of two of 8 bytes per mark each.
func floatsOver(d []time.Duration) []float64 {
	if cap(d) == 0 {
		return nil
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(d))), cap(d))[:0]
}

// countRequests sets f.Errors and ErrorKinds from the failed requests, and the usage sums
// (PromptTokens, CachedTokens) from the succeeded ones.
func (f *Figures) countRequests(res *recording.Result) {
	for i := range res.Requests {
		r := &res.Requests[i]
		if r.Err != nil {
			f.Errors = append(f.Errors, r.Err.Error())
			if f.ErrorKinds == nil {
				f.ErrorKinds = map[string]int{}
			}
			f.ErrorKinds[errorKind(r.Err)]++
			continue
		}
		if r.HasUsage {
			f.PromptTokens += r.Usage.PromptTokens
			f.HasPromptTokens = true
			if r.Usage.HasCached {
				f.CachedTokens += r.Usage.CachedTokens
				f.HasCachedTokens = true
			}
		}
	}
}

// streamSamples are the samples of the streamed sequences (succeeded, finished, with a
// mark), in the sequences' order: TTFT and E2E one per sequence, ITL one per interval between
// consecutive marks (ns); marks counts their marks, knownTok the tokens of the knownChunks
// intervals whose chunk has an exact delta.
type streamSamples struct {
	ttft, itl, e2e               []time.Duration
	marks, knownTok, knownChunks int
	// itlMedian is the median of itl (stats.MedianDuration's), set by summarizeStreams.
	itlMedian time.Duration
}

// classifySequences classifies every sequence of res (f.LeftOut and the class counts),
// returns the full ones with their forward indices (forwardIndexTok; f.Retokenized counts
// the tokenizer's outcomes) and the streamed ones' samples, and sums their tokens
// (f.CompletionTokens, TokenSources, TokensUnverified).
func (f *Figures) classifySequences(res *recording.Result, o Options, maxTok int) ([]fullSeq, streamSamples) {
	marks := 0
	for i := range res.Sequences {
		marks += res.Sequences[i].Marks.Len()
	}
	st := streamSamples{
		ttft: make([]time.Duration, 0, len(res.Sequences)), e2e: make([]time.Duration, 0, len(res.Sequences)),
		itl: make([]time.Duration, 0, marks),
	}
	fulls := make([]fullSeq, 0, len(res.Sequences))
	for i := range res.Sequences {
		s := &res.Sequences[i]
		failed := s.Request >= len(res.Requests) || res.Requests[s.Request].Err != nil
		class := classify(s, failed, maxTok)
		if class != ClassFull {
			f.leaveOut(i, s, class)
		}
		if failed || !s.Finished || s.Marks.Len() == 0 {
			continue
		}
		if class == ClassFull {
			kind, tokens, counts, why := forwardIndexTok(s, o.ChunkForwards, o.Tokenizer)
			fulls = append(fulls, fullSeq{idx: i, s: s, fwd: kind, tokens: tokens, counts: counts})
			if why != "" {
				if f.Retokenized == nil {
					f.Retokenized = map[string]int{}
				}
				f.Retokenized[why]++
			}
		}
		st.add(s, res.Requests[s.Request].Sent)
		f.CompletionTokens += tokensOf(s)
		f.TokenSources[string(s.TokenSource)]++
		if !exactCount(s) {
			f.TokensUnverified++
		}
	}
	f.Counted = len(fulls)
	return fulls, st
}

// leaveOut records sequence i of class (not ClassFull) in f.LeftOut and its class count
// (zero-token and early-stopped ones also in f.Short).
func (f *Figures) leaveOut(i int, s *recording.Sequence, class string) {
	f.LeftOut = append(f.LeftOut, LeftOut{Sequence: i, Class: class, FinishReason: s.FinishReason, Tokens: tokensOf(s), Exact: exactCount(s)})
	switch class {
	case ClassZeroToken:
		f.ZeroToken++
	case ClassEarlyStop:
		f.EarlyStop++
	case ClassOverlong:
		f.Overlong++
	case ClassFailed:
		f.Failed++
	case ClassUnfinished:
		f.Unfinished++
	}
	if class == ClassZeroToken || class == ClassEarlyStop {
		f.Short++
	}
}

// add appends streamed sequence s's samples, its request sent at sent: TTFT = first mark −
// sent, E2E = max(finish, last mark) − sent, and every interval between consecutive marks.
func (st *streamSamples) add(s *recording.Sequence, sent time.Duration) {
	n := s.Marks.Len()
	first, last := s.Marks.At(0), s.Marks.At(n-1)
	st.ttft = append(st.ttft, first-sent)
	st.e2e = append(st.e2e, max(s.FinishAt, last)-sent)
	prev := first
	for k := 1; k < n; k++ {
		m := s.Marks.Get(k)
		st.itl = append(st.itl, m.At-prev)
		prev = m.At
		if t := m.Tokens; t >= 0 {
			st.knownTok += int(t)
			st.knownChunks++
		}
	}
	st.marks += n
}

// summarizeStreams sets f's histograms and Summaries of TTFT, ITL and E2E (recorded in the
// sequences' order, then sorted or, for the many ITLs, selected from), st.itlMedian,
// ITLTokens (known tokens ÷ intervals with a known delta)
// and TokensPerChunk (CompletionTokens ÷ marks).
func (f *Figures) summarizeStreams(st *streamSamples) {
	f.Hist = &Histograms{TTFT: histOf(st.ttft), ITL: histOf(st.itl), E2E: histOf(st.e2e)}
	f.TTFT, f.E2E = Summarize(st.ttft), Summarize(st.e2e)
	f.ITL, st.itlMedian = summarizeSelect(st.itl)
	if st.knownChunks > 0 {
		f.ITLTokens = float64(st.knownTok) / float64(st.knownChunks)
	}
	if st.marks > 0 {
		f.TokensPerChunk = float64(f.CompletionTokens) / float64(st.marks)
	}
}

// countTokenNotes counts the sequences of res by sse.Sequence.TokenNote in f.TokenNotes.
func (f *Figures) countTokenNotes(res *recording.Result) {
	for i := range res.Sequences {
		if n := res.Sequences[i].TokenNote; n != "" {
			if f.TokenNotes == nil {
				f.TokenNotes = map[string]int{}
			}
			f.TokenNotes[n]++
		}
	}
}

func errorKind(err error) string {
	var re *recording.RequestError
	if errors.As(err, &re) {
		if re.Kind == recording.KindTimeout {
			return "timeout:" + re.Timeout
		}
		return string(re.Kind)
	}
	return "other"
}

// String is a one-line human summary (per-forward mean and window, TTFT p50, errors).
func (f Figures) String() string {
	s := fmt.Sprintf("per-forward %.3f ms (window %.3f ms over %d steps), TTFT p50 %.1f ms, %d/%d sequences",
		Ms(f.PerForward.Mean), Ms(f.Window.PerStep), f.Window.Steps, Ms(f.TTFT.P50), f.Counted, f.Sequences)
	if len(f.Errors) > 0 {
		s += fmt.Sprintf(", %d errors", len(f.Errors))
	}
	return s
}
