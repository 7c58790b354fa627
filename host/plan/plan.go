// Package plan holds a cell's plan: the plain value that says everything about what is sent
// for one (L, B) cell of the matrix — the realised prompt lengths, the prompts, the worker of
// each prompt, the request shape and max_tokens — built by small stages from a matrix.Cell
// before anything is sent:
//
//	matrix.Cell ─► lengths (draw, clamp) ─► prompts (ids or texts) ─► route ─► requests
//
// host/dispatch takes a Plan and returns a recording; nothing in a Plan is a transport type,
// and no stage calls back into an earlier one (dispatch asks no router: the plan carries the
// worker of each prompt).
package plan

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/genload/genload/host/lengths"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/recording"
)

// Plan is one cell's requests, ready to send.
//
// Sequences: the plan yields Σ len(Request.Prompts)·Request.N sequences, B in every shape;
// sequence k of a request continues its prompt Prompts[k / N] (choice k mod N of it).
type Plan struct {
	// Cell is the matrix cell planned.
	Cell matrix.Cell
	// Shape is the request shape: recording.ModeArray, ModeRouted or ModeN.
	Shape recording.Mode
	// Lengths are the cell's realised lengths, one per sequence (B), in tokens.
	Lengths lengths.Realised
	// IDs are the prompts as token ids, or Texts as strings (exactly one of them is set).
	// There is one prompt per sequence, except in the legacy n shape: one prompt, continued
	// B times (n = B).
	IDs   [][]int32
	Texts []string
	// Built is each prompt's length in tokens as the server should count it (len(IDs[i]),
	// or the fitted count of Texts[i]), for the per-request prompt-token check.
	Built []int
	// Workers is the worker index of each prompt (routed shape); nil sends everything to
	// worker 0.
	Workers []int
	// Requests are the HTTP requests to make, in order.
	Requests []Request
	// MaxTokens is the body's max_tokens (tokens generated per sequence).
	MaxTokens int
	// Warmup marks the cell's warmup (see ForWarmup): dispatch then also retries an
	// in-stream 429 or 5xx, as it does a failed response.
	Warmup bool
	// SendAt, when not zero, is when dispatch sends the plan's requests: it builds their
	// bodies first and waits until then (a replay's schedule, host/replay), so that building
	// a long prompt's body does not delay the send. A time in the past sends at once.
	SendAt time.Time
}

// Request is one HTTP request of a plan.
type Request struct {
	// Worker is the index of the worker it goes to.
	Worker int
	// Prompts are the indices of the prompts it carries.
	Prompts []int
	// Array sends "prompt" as a JSON array of the prompts; otherwise it is the single prompt
	// Prompts[0].
	Array bool
	// N is the body's n: the sequences generated per prompt (B in the legacy n shape, else 1).
	N int
}

// Sequences returns how many sequences the request yields: len(Prompts)·N.
func (r Request) Sequences() int { return len(r.Prompts) * r.N }

// Prompts returns the number of prompts of the plan.
func (p *Plan) Prompts() int {
	if p.Texts != nil {
		return len(p.Texts)
	}
	return len(p.IDs)
}

// ForWarmup returns the plan's warmup: the same prompts, shape and workers with max_tokens 1
// (the prompts' prefill, and one token each), marked Warmup.
func (p *Plan) ForWarmup() *Plan {
	w := *p
	w.MaxTokens, w.Warmup = 1, true
	return &w
}

// Requests lays out the requests of a shape for a cell's prompts:
//
//	array   one request of every prompt, as a JSON array, n = 1, worker 0
//	routed  one request per prompt, n = 1, prompt i to workers[i] (worker 0 when workers is nil)
//	n       one request of prompt 0 alone, n = batch, worker 0 (the legacy shape)
//
// prompts is the number of prompts (1 in the n shape), batch the cell's B.
func Requests(shape recording.Mode, prompts, batch int, workers []int) ([]Request, error) {
	switch shape {
	case recording.ModeArray, "":
		all := make([]int, prompts)
		for i := range all {
			all[i] = i
		}
		return []Request{{Prompts: all, Array: true, N: 1}}, nil
	case recording.ModeN:
		if prompts != 1 {
			return nil, fmt.Errorf("cell: the n shape sends one prompt, not %d", prompts)
		}
		return []Request{{Prompts: []int{0}, N: batch}}, nil
	case recording.ModeRouted:
		if workers != nil && len(workers) != prompts {
			return nil, fmt.Errorf("cell: %d workers for %d prompts", len(workers), prompts)
		}
		rs := make([]Request, prompts)
		for i := range rs {
			w := 0
			if workers != nil {
				w = workers[i]
			}
			rs[i] = Request{Worker: w, Prompts: []int{i}, N: 1}
		}
		return rs, nil
	}
	return nil, fmt.Errorf("cell: unknown request shape %q (want array, routed or n)", shape)
}

// ForPrompts is the plan of prompts in a request shape, for callers that have prompts but no
// cell (probes, tests): token ids (texts nil) or texts, sent in shape (array when ""), routed
// round robin over workers (prompt i to worker i mod workers). The n shape sends the first
// prompt with n = the number of prompts, as the legacy shape does. Errors: no prompts, or a
// shape Requests does not know.
func ForPrompts(shape recording.Mode, ids [][]int32, texts []string, workers, maxTokens int) (*Plan, error) {
	p := &Plan{Shape: shape, IDs: ids, Texts: texts, MaxTokens: maxTokens}
	if p.Shape == "" {
		p.Shape = recording.ModeArray
	}
	n := p.Prompts()
	if n == 0 {
		return nil, errors.New("no prompts")
	}
	prompts := n
	switch p.Shape {
	case recording.ModeN:
		prompts = 1
		if texts != nil {
			p.Texts = texts[:1]
		} else {
			p.IDs = ids[:1]
		}
	case recording.ModeRouted:
		p.Workers = make([]int, n)
		for i := range p.Workers {
			p.Workers[i] = i % max(workers, 1)
		}
	}
	rs, err := Requests(p.Shape, prompts, n, p.Workers)
	if err != nil {
		return nil, err
	}
	p.Requests = rs
	return p, nil
}

// Prompter builds a cell's prompts for its realised lengths (one per prompt, in tokens):
// token ids, or texts fitted to the lengths as the server counts them; built is each prompt's
// length as the server should count it. one asks for the legacy n shape's single prompt, of
// length lens[0].
type Prompter interface {
	Prompts(ctx context.Context, c matrix.Cell, lens []int, one bool) (ids [][]int32, texts []string, built []int, err error)
}

// Stages are the stages a plan is built with; Build runs them in order.
type Stages struct {
	// Shape is the request shape of every cell.
	Shape recording.Mode
	// Lengths draws and clamps the lengths (its Source nil in the n shape).
	Lengths lengths.Stage
	// Prompts builds the prompts.
	Prompts Prompter
	// Router picks the worker of each prompt in the routed shape over Workers workers (nil:
	// round robin, prompt i to worker i mod Workers).
	Router  lengths.Router
	Workers int
	// MaxTokens is max_tokens of the measured requests.
	MaxTokens int
}

// Error is a failed stage of Build: Stage names it ("lengths", "prompts", "route",
// "requests"), so that the caller can tell a plugin's failure from the prompt builder's.
type Error struct {
	Stage string
	Err   error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Build plans cell c: lengths, prompts, route, requests. The routing call is made once per
// cell, so that the warmup and the measured requests go to the same workers. A failed stage
// returns an *Error and the plan as far as it got (its Lengths at least, once drawn).
func (s Stages) Build(ctx context.Context, c matrix.Cell) (*Plan, error) {
	p := &Plan{Cell: c, Shape: s.Shape, MaxTokens: s.MaxTokens}
	if p.Shape == "" {
		p.Shape = recording.ModeArray
	}
	var err error
	if p.Lengths, err = s.Lengths.Cell(ctx, c); err != nil {
		return p, &Error{"lengths", err}
	}
	lens := p.Lengths.Each
	one := p.Shape == recording.ModeN
	if p.IDs, p.Texts, p.Built, err = s.Prompts.Prompts(ctx, c, lens, one); err != nil {
		return p, &Error{"prompts", err}
	}
	if p.Workers, err = s.route(ctx, lens); err != nil {
		return p, &Error{"route", err}
	}
	if p.Requests, err = Requests(p.Shape, p.Prompts(), c.Batch, p.Workers); err != nil {
		return p, &Error{"requests", err}
	}
	return p, nil
}

// route returns the worker of each prompt (nil unless the shape is routed).
func (s Stages) route(ctx context.Context, lens []int) ([]int, error) {
	if s.Shape != recording.ModeRouted {
		return nil, nil
	}
	if s.Router == nil {
		ws := make([]int, len(lens))
		for i := range ws {
			ws[i] = i % max(s.Workers, 1)
		}
		return ws, nil
	}
	return lengths.Route(ctx, s.Router, lens, s.Workers)
}

// Replay repeats the routing call of cell c without building prompts or sending anything, for
// a cell measured by the run being resumed: a stateful router (round robin) must see the same
// calls in the same order as in the first run, so that the cells measured now are routed as
// they would have been. It does nothing unless the shape is routed with a Router.
func (s Stages) Replay(ctx context.Context, c matrix.Cell) error {
	if s.Shape != recording.ModeRouted || s.Router == nil {
		return nil
	}
	r, err := s.Lengths.Cell(ctx, c)
	if err != nil {
		return err
	}
	_, err = s.Router.Route(ctx, r.Each, s.Workers)
	return err
}
