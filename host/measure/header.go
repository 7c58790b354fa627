package measure

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/genload/genload/host/dispatch"
)

// HeaderFigure is the per-forward latency from server headers, per succeeded request
// carrying the generation-duration header:
//
//	D = generation duration (header value; unit per Options.GenerationDurationUnit),
//	    taken to span the request's first to last token (the built-in engine's
//	    definition), i.e. the decode forward passes after the first token
//	T = completion tokens of the request / sequences in the request (tokens per sequence)
//	a = speculation-acceptance header value (absent → no speculation)
//	τ = tokens per forward pass:
//	      no acceptance header          τ = 1
//	      DraftTokens k > 0             τ = 1 + a·k   (a = accepted fraction of the k
//	                                    drafted tokens; each forward also yields one
//	                                    verified token — exact in expectation)
//	      k unknown and a ≥ 1           τ = a         (a is already the mean accepted
//	                                    length per forward, as SGLang's spec_accept_length)
//	      k unknown and 0 ≤ a < 1       τ = 1/(1−a)   (the limit k → ∞ of the i.i.d.
//	                                    expectation (1−a^(k+1))/(1−a), Leviathan et al. 2023)
//	F = (T − 1) / τ forward passes after the first token;  PerForward = D / F
type HeaderFigure struct {
	Requests         int     `json:"requests"`
	TokensPerForward float64 `json:"tokens_per_forward"`
	PerForward       Summary `json:"per_forward"`
}

// headerFigure computes the HeaderFigure (see its doc comment), nil without headers.
func headerFigure(res *dispatch.Result, o Options) *HeaderFigure {
	if o.GenerationDurationHeader == "" {
		return nil
	}
	unit := o.GenerationDurationUnit
	if unit == 0 {
		unit = time.Second
	}
	perSeq := map[int]int{}
	for i := range res.Sequences {
		perSeq[res.Sequences[i].Request]++
	}
	var per []time.Duration
	var tauSum float64
	for i := range res.Requests {
		r := &res.Requests[i]
		if r.Err != nil || !r.HasUsage || perSeq[i] == 0 {
			continue
		}
		d, ok := parseDuration(r.Headers[o.GenerationDurationHeader], unit)
		if !ok {
			continue
		}
		tau := 1.0
		if o.SpeculationAcceptanceHeader != "" {
			if a, err := strconv.ParseFloat(strings.TrimSpace(r.Headers[o.SpeculationAcceptanceHeader]), 64); err == nil && a >= 0 {
				switch {
				case o.DraftTokens > 0:
					tau = 1 + a*float64(o.DraftTokens)
				case a >= 1:
					tau = a
				default:
					tau = 1 / (1 - a)
				}
			}
		}
		tokens := float64(r.Usage.CompletionTokens) / float64(perSeq[i])
		forwards := (tokens - 1) / tau
		if forwards <= 0 {
			continue
		}
		per = append(per, time.Duration(math.Round(float64(d)/forwards)))
		tauSum += tau
	}
	if len(per) == 0 {
		return nil
	}
	return &HeaderFigure{Requests: len(per), TokensPerForward: tauSum / float64(len(per)), PerForward: Summarize(per)}
}

// parseDuration reads "1.5", "1500ms", "1.5s", "1500000us" (bare numbers in unit).
func parseDuration(v string, unit time.Duration) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	mult := float64(unit)
	switch {
	case strings.HasSuffix(v, "ms"):
		v, mult = v[:len(v)-2], float64(time.Millisecond)
	case strings.HasSuffix(v, "us"):
		v, mult = v[:len(v)-2], float64(time.Microsecond)
	case strings.HasSuffix(v, "s"):
		v, mult = v[:len(v)-1], float64(time.Second)
	}
	x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || x < 0 {
		return 0, false
	}
	return time.Duration(x * mult), true
}
