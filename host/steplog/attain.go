package steplog

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/genload/genload/host/stats"
	"gonum.org/v1/gonum/stat"
)

// Span is one cell of a run as the step log sees it: [Start, End) in wall-clock time and the
// batch size B the cell asked for.
type Span struct {
	Start, End time.Time
	Batch      int
}

// Figures are one cell's step-log figures. Shares are of Forwards; a figure that cannot be
// given is zero with Reason saying why.
type Figures struct {
	// Records is the records inside the cell's span; Forwards those counted as forward
	// passes (Record.Forward: all records without a decode group; with one, those that
	// decode).
	Records  int `json:"records"`
	Forwards int `json:"forwards"`
	// Modal is the most frequent active count over the forwards (the larger on a tie) and
	// ModalShare its share; ModalAtTarget is Modal == B.
	Modal         int     `json:"modal_active"`
	ModalShare    float64 `json:"modal_share"`
	ModalAtTarget bool    `json:"modal_at_target"`
	// AtTarget is the forwards with active == B, AtTargetShare their share.
	AtTarget      int     `json:"at_target"`
	AtTargetShare float64 `json:"at_target_share"`
	// Above is the forwards with active > B and MaxActive the largest active count;
	// NeverAbove is Above == 0.
	Above      int  `json:"above_target"`
	MaxActive  int  `json:"max_active"`
	NeverAbove bool `json:"never_above_target"`
	// FwdN, FwdMeanMs and FwdCV are the count, mean (ms) and coefficient of variation
	// (sample standard deviation / mean) of the forward-pass time over the forwards at
	// exactly B that only decode (with a decode group: decode = active; a step that also
	// prefills is longer by its prefill work); FwdN = 0 when the format has no fwd_ms
	// (FwdReason says so). FwdCV is nil (absent) with FwdCVReason when FwdN < 2: one step
	// has no spread.
	FwdN        int      `json:"fwd_n"`
	FwdMeanMs   float64  `json:"fwd_mean_ms"`
	FwdCV       *float64 `json:"fwd_cv,omitempty"`
	FwdCVReason string   `json:"fwd_cv_reason,omitempty"`
	FwdReason   string   `json:"fwd_reason,omitempty"`
	// Reason explains absent or approximate figures: no record in the span, or timestamps
	// too coarse for the cell's length.
	Reason string `json:"reason,omitempty"`
}

// Attain summarises the records of one cell. recs must be sorted by time (Parser.Records
// is). A record belongs to the span when its time — the middle of its resolution interval,
// t + Res/2, since a logger truncates — is in [Start, End). hasFwd says whether the format
// carries forward-pass times.
//
// The share at target and the fwd CV follow the server-side check of a matrix: a cell ran
// its batch when B is the modal occupancy and the occupancy never exceeded B; the physical
// forward time is the mean over the steps at exactly B, and its CV is the spread of those
// steps (the server's own noise, without the client's).
func Attain(recs []Record, s Span, hasFwd bool) Figures {
	var f Figures
	lo := sort.Search(len(recs), func(i int) bool { return !mid(recs[i]).Before(s.Start.Add(-time.Second)) })
	counts := map[int]int{}
	var fwd []float64
	coarse := time.Duration(0)
	for _, r := range recs[lo:] {
		t := mid(r)
		if !t.Before(s.End) {
			if t.After(s.End.Add(time.Second)) {
				break
			}
			continue
		}
		if t.Before(s.Start) {
			continue
		}
		f.Records++
		coarse = max(coarse, r.Res)
		if !r.Forward() {
			continue
		}
		f.Forwards++
		counts[r.Active]++
		f.MaxActive = max(f.MaxActive, r.Active)
		switch {
		case r.Active == s.Batch:
			f.AtTarget++
			if !math.IsNaN(r.FwdMs) && (r.Decode < 0 || r.Decode == r.Active) {
				fwd = append(fwd, r.FwdMs)
			}
		case r.Active > s.Batch:
			f.Above++
		}
	}
	if f.Forwards == 0 {
		f.Reason = "no forward pass in the step log during the cell"
		if f.Records > 0 {
			f.Reason = fmt.Sprintf("%d records during the cell, none of them a forward pass that decodes", f.Records)
		}
		f.FwdReason = f.Reason
		return f
	}
	best := 0
	for a, n := range counts {
		if n > best || (n == best && a > f.Modal) {
			f.Modal, best = a, n
		}
	}
	f.ModalShare = float64(best) / float64(f.Forwards)
	f.ModalAtTarget = f.Modal == s.Batch
	f.AtTargetShare = float64(f.AtTarget) / float64(f.Forwards)
	f.NeverAbove = f.Above == 0
	if d := s.End.Sub(s.Start); coarse > 0 && d < 4*coarse {
		f.Reason = fmt.Sprintf("the log's timestamps have a resolution of %v for a cell of %v: records near its ends may belong to its neighbours", coarse, d.Round(time.Millisecond))
	}
	switch {
	case !hasFwd:
		f.FwdReason = "the step-log format has no forward-pass time (fwd_ms)"
	case len(fwd) == 0:
		f.FwdReason = fmt.Sprintf("no forward pass at exactly B = %d", s.Batch)
	default:
		f.FwdN = len(fwd)
		var cv float64
		f.FwdMeanMs, cv = meanCV(fwd)
		if f.FwdN >= 2 {
			f.FwdCV = &cv
		} else {
			f.FwdCVReason = fmt.Sprintf("one forward pass at exactly B = %d: a CV needs two", s.Batch)
		}
	}
	return f
}

func mid(r Record) time.Time { return r.Time.Add(r.Res / 2) }

// meanCV returns the mean and the CV (stats.CV; 0 for one value or a mean of 0, which Attain
// leaves absent).
func meanCV(xs []float64) (float64, float64) {
	m := stat.Mean(xs, nil)
	cv := stats.CV(xs)
	if math.IsNaN(cv) {
		cv = 0
	}
	return m, cv
}
