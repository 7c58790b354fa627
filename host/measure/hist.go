package measure

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram range and precision: 1 µs to 1 h, 3 significant digits (a recorded value is
// known to within 0.1 %). Values outside the range are clamped into it.
const (
	histLowest  = int64(time.Microsecond)
	histHighest = int64(time.Hour)
	histDigits  = 3
)

// Histogram is a mergeable latency distribution (HDR histogram of nanoseconds), so that
// repeated and sharded runs combine exactly: merging the histograms of two cells gives
// the histogram of the union of their samples.
//
// Summary reads percentiles with HDR's rule — the rank ⌊q·N + 0.5⌋ (at least 1), reported
// as the highest value equivalent to that sample — then clamps them to the exact
// [Min, Max] tracked alongside, so a percentile never lies outside the recorded range.
// Mean is the exact mean (sum tracked alongside).
type Histogram struct {
	h        *hdrhistogram.Histogram
	min, max time.Duration
	sum      float64
}

// NewHistogram returns an empty Histogram.
func NewHistogram() *Histogram {
	return &Histogram{h: hdrhistogram.New(histLowest, histHighest, histDigits)}
}

// Record adds one sample.
func (h *Histogram) Record(d time.Duration) {
	if h.h.TotalCount() == 0 || d < h.min {
		h.min = d
	}
	if h.h.TotalCount() == 0 || d > h.max {
		h.max = d
	}
	h.sum += float64(d)
	_ = h.h.RecordValue(min(max(int64(d), histLowest), histHighest))
}

// Merge adds every sample of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o == nil || o.h.TotalCount() == 0 {
		return
	}
	if h.h.TotalCount() == 0 || o.min < h.min {
		h.min = o.min
	}
	if h.h.TotalCount() == 0 || o.max > h.max {
		h.max = o.max
	}
	h.sum += o.sum
	h.h.Merge(o.h)
}

// Count returns the number of samples.
func (h *Histogram) Count() int { return int(h.h.TotalCount()) }

// Summary returns N, Mean, P50, P90, P99, Min and Max (see the type's doc comment).
func (h *Histogram) Summary() Summary {
	n := h.h.TotalCount()
	if n == 0 {
		return Summary{}
	}
	q := func(p float64) time.Duration {
		return min(max(time.Duration(h.h.ValueAtPercentile(p)), h.min), h.max)
	}
	return Summary{
		N: int(n), Mean: time.Duration(math.Round(h.sum / float64(n))),
		P50: q(50), P90: q(90), P99: q(99), Min: h.min, Max: h.max,
	}
}

type histJSON struct {
	HDR   string  `json:"hdr"` // base64 V2-compressed HDR encoding
	MinNs int64   `json:"min_ns"`
	MaxNs int64   `json:"max_ns"`
	SumNs float64 `json:"sum_ns"`
}

// MarshalJSON writes {"hdr": base64 V2-compressed HDR histogram, "min_ns", "max_ns",
// "sum_ns"}; UnmarshalJSON reads it back exactly.
func (h *Histogram) MarshalJSON() ([]byte, error) {
	enc, err := h.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil, fmt.Errorf("measure: histogram encode: %w", err)
	}
	return json.Marshal(histJSON{string(enc), int64(h.min), int64(h.max), h.sum})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (h *Histogram) UnmarshalJSON(b []byte) error {
	var j histJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	hh, err := hdrhistogram.Decode([]byte(j.HDR))
	if err != nil {
		return fmt.Errorf("measure: histogram decode: %w", err)
	}
	*h = Histogram{h: hh, min: time.Duration(j.MinNs), max: time.Duration(j.MaxNs), sum: j.SumNs}
	return nil
}

// Histograms are a cell's mergeable distributions (per-sequence per-forward latency,
// TTFT, ITL per chunk, E2E).
type Histograms struct {
	PerForward *Histogram `json:"per_forward"`
	TTFT       *Histogram `json:"ttft"`
	ITL        *Histogram `json:"itl"`
	E2E        *Histogram `json:"e2e"`
}

// NewHistograms returns empty Histograms.
func NewHistograms() *Histograms {
	return &Histograms{NewHistogram(), NewHistogram(), NewHistogram(), NewHistogram()}
}

// Merge adds o's samples to hs.
func (hs *Histograms) Merge(o *Histograms) {
	hs.PerForward.Merge(o.PerForward)
	hs.TTFT.Merge(o.TTFT)
	hs.ITL.Merge(o.ITL)
	hs.E2E.Merge(o.E2E)
}

func histOf(samples []time.Duration) *Histogram {
	h := NewHistogram()
	for _, s := range samples {
		h.Record(s)
	}
	return h
}
