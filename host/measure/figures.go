package measure

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/genload/genload/host/dispatch"
)

// Options are the cell parameters measure needs besides the Result.
type Options struct {
	// MaxTokens is the max_tokens asked per sequence; sequences with fewer completion
	// tokens are counted in Figures.Short. 0 uses Result.MaxTokens.
	MaxTokens int
	// GenerationDurationHeader and SpeculationAcceptanceHeader are the response header
	// names (as given to dispatch.Options) used for the header-based figure; "" disables.
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
}

// Figures are one cell's client-side measurements. All durations are time.Duration
// internally and milliseconds in JSON (via Summary, or the *_ms fields).
//
// A sequence is "counted" when its request succeeded (no transport, HTTP, in-stream,
// truncation or timeout error), it finished, and it has at least one token-bearing chunk
// (sse.Mark). Failed requests count in Errors and in no latency or throughput figure.
// Offsets below are the sse.Mark arrival times; Sent is the request's send time.
type Figures struct {
	// Sequences is the number of sequences asked for (B); Counted how many were counted.
	Sequences int `json:"sequences"`
	Counted   int `json:"counted"`
	// PerForward is, over counted sequences with ≥ 2 tokens, the per-sequence latency per
	// forward pass: (last mark − first mark) / (completion_tokens − 1), which assumes one
	// token per forward pass per sequence; with Options.ChunkForwards (speculative decoding)
	// it is (last mark − first mark) / (marks − 1). Without ChunkForwards on a speculating
	// server it is the time per output token (TPOT), not per forward pass.
	PerForward Summary `json:"per_forward"`
	// Window is the full-occupancy figure (every sequence decoding): see Window.
	Window Window `json:"window"`
	// TTFT is first mark − Sent over counted sequences.
	TTFT Summary `json:"ttft"`
	// ITL is the interval between consecutive marks of a sequence, per chunk (never
	// divided per token), over counted sequences; ITLTokens is the mean token delta of
	// those chunks where continuous usage gave it (0 when never known).
	ITL       Summary `json:"itl"`
	ITLTokens float64 `json:"itl_tokens_per_chunk"`
	// E2E is (finish chunk arrival − Sent) over counted sequences.
	E2E Summary `json:"e2e"`
	// CompletionTokens sums completion tokens over counted sequences; TokenSources counts
	// sequences per sse.TokenSource; Short counts counted sequences with fewer than
	// MaxTokens tokens (a cell that did not generate what it asked for).
	CompletionTokens int            `json:"completion_tokens"`
	TokenSources     map[string]int `json:"token_sources"`
	Short            int            `json:"short_sequences"`
	// TokensPerChunk is CompletionTokens / marks over counted sequences.
	TokensPerChunk float64 `json:"tokens_per_chunk"`
	// PromptTokens and CachedTokens sum the server-reported usage over succeeded
	// requests (CachedTokens only where prompt_tokens_details.cached_tokens was sent).
	PromptTokens    int  `json:"prompt_tokens"`
	HasPromptTokens bool `json:"has_prompt_tokens"`
	CachedTokens    int  `json:"cached_tokens"`
	HasCachedTokens bool `json:"has_cached_tokens"`
	// Errors are the failed requests' messages; ErrorKinds counts them by
	// dispatch.ErrorKind (timeouts as "timeout:<which>").
	Errors     []string       `json:"errors,omitempty"`
	ErrorKinds map[string]int `json:"error_kinds,omitempty"`
	// Header is the server-header figure; nil when the headers were absent.
	Header *HeaderFigure `json:"header,omitempty"`
	// Hist holds the same samples as PerForward, TTFT, ITL and E2E in mergeable HDR
	// histograms, to combine repeats and shards exactly (see Histogram).
	Hist *Histograms `json:"hist,omitempty"`
}

// Window is the full-occupancy window: from Start = the latest first mark over counted
// sequences (every sequence has its first token) to End = the earliest last mark (the
// first sequence finishes). Steps is the number of forward passes in it, counted on the
// reference sequence r that finishes first: r's tokens after its mark nearest to Start,
// up to and including its last mark (token deltas from continuous usage, else 1 per
// mark). Counting on one sequence's token index, not on arrivals inside [Start, End],
// makes Steps immune to the sub-step jitter between sequences of the same step.
// PerStep = (End − Start) / Steps.
type Window struct {
	Valid   bool          `json:"valid"`
	Reason  string        `json:"reason,omitempty"`
	Start   time.Duration `json:"-"`
	End     time.Duration `json:"-"`
	Steps   int           `json:"steps"`
	PerStep time.Duration `json:"-"`
}

type windowJSON struct {
	Valid     bool    `json:"valid"`
	Reason    string  `json:"reason,omitempty"`
	StartMs   float64 `json:"start_ms"`
	EndMs     float64 `json:"end_ms"`
	Steps     int     `json:"steps"`
	PerStepMs float64 `json:"per_step_ms"`
}

// MarshalJSON writes start_ms, end_ms and per_step_ms in milliseconds.
func (w Window) MarshalJSON() ([]byte, error) {
	return json.Marshal(windowJSON{w.Valid, w.Reason, Ms(w.Start), Ms(w.End), w.Steps, Ms(w.PerStep)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (w *Window) UnmarshalJSON(b []byte) error {
	var j windowJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*w = Window{j.Valid, j.Reason, fromMs(j.StartMs), fromMs(j.EndMs), j.Steps, fromMs(j.PerStepMs)}
	return nil
}

// Compute returns the Figures of one cell's Result.
func Compute(res *dispatch.Result, o Options) Figures {
	maxTok := o.MaxTokens
	if maxTok == 0 {
		maxTok = res.MaxTokens
	}
	f := Figures{Sequences: len(res.Sequences), TokenSources: map[string]int{}}
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
	var perFwd, ttft, itl, e2e []time.Duration
	var counted []*dispatch.Sequence
	marks, knownTok, knownChunks := 0, 0, 0
	for i := range res.Sequences {
		s := &res.Sequences[i]
		n := s.Marks.Len()
		if s.Request >= len(res.Requests) || res.Requests[s.Request].Err != nil || !s.Finished || n == 0 {
			continue
		}
		counted = append(counted, s)
		sent := res.Requests[s.Request].Sent
		first, last := s.Marks.At(0), s.Marks.At(n-1)
		ttft = append(ttft, first-sent)
		e2e = append(e2e, max(s.FinishAt, last)-sent)
		switch {
		case o.ChunkForwards && n >= 2:
			perFwd = append(perFwd, (last-first)/time.Duration(n-1))
		case !o.ChunkForwards && s.CompletionTokens >= 2:
			perFwd = append(perFwd, (last-first)/time.Duration(s.CompletionTokens-1))
		}
		prev := first
		for k := 1; k < n; k++ {
			m := s.Marks.Get(k)
			itl = append(itl, m.At-prev)
			prev = m.At
			if t := m.Tokens; t >= 0 {
				knownTok += int(t)
				knownChunks++
			}
		}
		marks += n
		f.CompletionTokens += s.CompletionTokens
		f.TokenSources[string(s.TokenSource)]++
		if maxTok > 0 && s.CompletionTokens < maxTok {
			f.Short++
		}
	}
	f.Counted = len(counted)
	f.Hist = &Histograms{PerForward: histOf(perFwd), TTFT: histOf(ttft), ITL: histOf(itl), E2E: histOf(e2e)}
	f.PerForward, f.TTFT, f.ITL, f.E2E = Summarize(perFwd), Summarize(ttft), Summarize(itl), Summarize(e2e)
	if knownChunks > 0 {
		f.ITLTokens = float64(knownTok) / float64(knownChunks)
	}
	if marks > 0 {
		f.TokensPerChunk = float64(f.CompletionTokens) / float64(marks)
	}
	f.Window = window(counted, o.ChunkForwards)
	f.Header = headerFigure(res, o)
	return f
}

func errorKind(err error) string {
	var re *dispatch.RequestError
	if errors.As(err, &re) {
		if re.Kind == dispatch.KindTimeout {
			return "timeout:" + re.Timeout
		}
		return string(re.Kind)
	}
	return "other"
}

// window computes the full-occupancy Window (see its doc comment).
func window(seqs []*dispatch.Sequence, chunkForwards bool) Window {
	if len(seqs) == 0 {
		return Window{Reason: "no counted sequences"}
	}
	start := seqs[0].Marks.At(0)
	ref := seqs[0]
	end := ref.Marks.At(ref.Marks.Len() - 1)
	for _, s := range seqs[1:] {
		start = max(start, s.Marks.At(0))
		if l := s.Marks.At(s.Marks.Len() - 1); l < end {
			end, ref = l, s
		}
	}
	w := Window{Start: start, End: end}
	if end <= start {
		w.Reason = "a sequence finished before the last one received its first token"
		return w
	}
	// mark of ref nearest to start
	ms := ref.Marks
	k := sort.Search(ms.Len(), func(i int) bool { return ms.At(i) >= start }) // first mark at or after start
	if k == ms.Len() || (k > 0 && start-ms.At(k-1) <= ms.At(k)-start) {
		k--
	}
	for i := k + 1; i < ms.Len(); i++ {
		if m := ms.Get(i); m.Tokens >= 0 && !chunkForwards {
			w.Steps += int(m.Tokens)
		} else {
			w.Steps++
		}
	}
	if w.Steps == 0 {
		w.Reason = "no forward pass inside the window"
		return w
	}
	w.Valid = true
	w.PerStep = (end - start) / time.Duration(w.Steps)
	return w
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
