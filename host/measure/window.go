package measure

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/genload/genload/host/recording"
)

// fullSeq is a full sequence with each mark's forward index (nil when unknown; see Figures).
type fullSeq struct {
	s   *recording.Sequence
	fwd []float64
}

// window computes the full-occupancy Window (see its doc comment) over the full sequences.
// tokensPerChunk is only used to say why forward indices are unknown.
func window(seqs []fullSeq, tokensPerChunk float64) Window {
	if len(seqs) == 0 {
		return Window{Reason: "no counted sequences"}
	}
	start := seqs[0].s.Marks.At(0)
	ref := seqs[0]
	end := ref.s.Marks.At(ref.s.Marks.Len() - 1)
	for _, s := range seqs[1:] {
		start = max(start, s.s.Marks.At(0))
		if l := s.s.Marks.At(s.s.Marks.Len() - 1); l < end {
			end, ref = l, s
		}
	}
	w := Window{Start: start, End: end}
	for _, s := range seqs {
		if s.s.Marks.Len() < 2 {
			w.Reason = "a sequence received all its tokens in one chunk: when it decoded is unknown"
			return w
		}
	}
	if end <= start {
		w.Reason = "a sequence finished before the last one received its first token"
		return w
	}
	for _, s := range seqs {
		if s.fwd == nil && !exactCount(s.s) {
			w.Reason = "token counts unverified (no usable usage, chunks may carry several tokens): the forward passes in the window cannot be counted"
			return w
		}
		if s.fwd == nil {
			w.Reason = fmt.Sprintf("per-chunk token counts unknown (chunks carry %.2f tokens on average, no per-chunk usage): the forward passes in the window cannot be counted", tokensPerChunk)
			return w
		}
	}
	// mark of ref nearest to start
	ms, n := ref.s.Marks, ref.s.Marks.Len()
	k := sort.Search(n, func(i int) bool { return ms.At(i) >= start }) // first mark at or after start
	if k == n || (k > 0 && start-ms.At(k-1) <= ms.At(k)-start) {
		k--
	}
	ps := make([]point, n)
	for i := range n {
		ps[i] = point{float64(ms.At(i)), ref.fwd[i]}
	}
	k2 := k
	if line, icpt, ok := theilSen(ps); ok && n >= 3 {
		k2 = max(k, lateAnchor(ps, line, icpt))
	}
	w.Steps = int(math.Round(ref.fwd[n-1] - ref.fwd[k2]))
	if w.Steps == 0 {
		w.Reason = "no forward pass inside the window"
		return w
	}
	if d := ref.fwd[n-1] - ref.fwd[k]; d > 0 {
		w.Endpoints = time.Duration(math.Round(float64(end-start) / d))
	}
	if bunched(ms, ref.fwd, k2) {
		w.Reason = "the chunks of the window's reference sequence arrived mostly together (over half of their intervals under a tenth of its mean forward pass): the forward passes cannot be timed"
		return w
	}
	if w.Steps < MinWindowSteps {
		w.Reason = fmt.Sprintf("the window where all %d counted sequences decode together holds %d forward passes, fewer than the %d a figure needs", len(seqs), w.Steps, MinWindowSteps)
		return w
	}
	w.Valid = true
	w.PerStep = time.Duration(math.Round((ps[n-1].t - ps[k2].t) / (ps[n-1].f - ps[k2].f)))
	pts := make([][]point, 0, len(seqs))
	for _, s := range seqs {
		var in []point
		for i := range s.s.Marks.Len() {
			if t := s.s.Marks.At(i); t >= start && t <= end {
				in = append(in, point{float64(t), s.fwd[i]})
			}
		}
		pts = append(pts, in)
	}
	if slope, ok := pooledTheilSen(pts); ok && slope > 0 {
		w.Fit = time.Duration(math.Round(slope))
	}
	return w
}
