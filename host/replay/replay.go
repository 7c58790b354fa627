package replay

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	"github.com/genload/genload/host/internal/clock"
	"github.com/genload/genload/host/internal/gcphase"
	"github.com/genload/genload/host/plan"
	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/records"
)

// Sender sends one plan: host/dispatch's *Client satisfies it.
type Sender interface {
	Do(ctx context.Context, p *plan.Plan) (*recording.Result, error)
}

// Options configure [Run].
type Options struct {
	// Schedule is what to send (NewSchedule); Blocks the prompt source (host/prompt's
	// Builder).
	Schedule *Schedule
	Blocks   Blocks
	// Sender sends each request (host/dispatch's Client, made with the target's options).
	Sender Sender
	// MaxConcurrency caps the requests in flight (0: no cap, fully open loop).
	MaxConcurrency int
	// Records is the records file to create (host/records); Header its header (Source, Type
	// and Schema are set here, Started is the origin t₀).
	Records string
	Header  records.Header
	// Lead is how long before the first send the origin t₀ is put, after the prompts are
	// built (default 200 ms): the first requests' bodies are built and sent on time.
	Lead time.Duration
	// SLO bounds a request's TTFT and TPOT for goodput (0: no bound).
	SLOTTFT, SLOTPOT time.Duration
	// Stderr receives progress lines (nil: none).
	Stderr io.Writer
}

// SpareConns is the connections a replay's client keeps dialled ahead of need (dispatch's
// Options.SpareConns): a request that finds no idle connection takes one instead of waiting
// for a TCP connect after its send instant. New connections are needed as the requests in
// flight grow, one at a time or a few at once (requests logged at one instant); 8 covers a
// burst of 8 while their replacements are dialled, for 8 idle sockets. In
// BenchmarkReplaySendLag (600 requests at 200/s) 17–19 requests waited for a connect without
// them, adding it to their lag.
const SpareConns = 8

// prepare is how long before its send time an item's goroutine starts: it copies the
// prompt's blocks and dispatch builds the body, then waits for the instant.
const prepare = 25 * time.Millisecond

// sendGCPercent is the Go collector's GOGC while a replay sends (see sendPhaseGC).
const sendGCPercent = 400

// sendPhaseGC prepares the collector for the schedule and returns what restores it. The
// prompts are built and live before the first send; what the schedule allocates after that
// (bodies, streams, records) is short-lived. At the default GOGC = 100 a collection cycle
// starts every time the heap grows by its live size, and its mark assists fall on the
// goroutines that are building a body or waiting for their instant: in alternated runs of
// BenchmarkReplaySendLag (600 requests at 200/s on the built-in engine, load average 6–7 on 2
// cores) the send lag p99 was 10–21 ms at GOGC 100 and 0.94–0.98 ms at 400 or with the
// collector off (other runs on the same host, under other load, read 0.7–1.6 ms either way:
// the collector's cycles hurt when the cores are short). So one
// collection runs now, at the live heap of the built prompts, and GOGC is raised to
// sendGCPercent (never lowered) until the schedule ends: the heap may grow to 5× its live
// size between cycles instead of 2×.
func sendPhaseGC() (restore func()) {
	runtime.GC()
	return gcphase.Raise(sendGCPercent)
}

// Run builds the schedule's prompts, then sends every item at t₀ + At and appends each
// request's record as it finishes; it returns when every request sent has finished. Canceling
// ctx (Ctrl-C) stops sending, aborts the requests in flight (their records say so) and returns
// the summary of what was sent, with Interrupted set; the records file keeps every record
// written. Errors: prompts that cannot be built, a records file that cannot be created or
// written (the summary so far is returned with it).
func Run(ctx context.Context, o Options) (*Summary, error) {
	if o.Lead <= 0 {
		o.Lead = 200 * time.Millisecond
	}
	s := o.Schedule
	ps, err := buildPrompts(s, o.Blocks)
	if err != nil {
		return nil, err
	}
	if o.Stderr != nil {
		fmt.Fprintf(o.Stderr, "replay: prompts built (%s); sending %s\n", plural(len(ps.blocks), "prefix block"), plural(len(s.Items), "request"))
	}
	defer sendPhaseGC()()
	t0 := time.Now().Add(o.Lead)
	h := o.Header
	h.Source, h.Started = "replay", t0.UTC()
	w, err := records.Create(o.Records, h)
	if err != nil {
		return nil, err
	}
	acc := newAccumulator(o, t0)
	var sem chan struct{}
	if o.MaxConcurrency > 0 {
		sem = make(chan struct{}, o.MaxConcurrency)
	}
	var wg sync.WaitGroup
	var werr error
	var werrOnce sync.Once
	sent := 0
	for i := range s.Items {
		it := &s.Items[i]
		at := t0.Add(it.At)
		if !clock.SleepUntilContext(ctx, at.Add(-prepare)) {
			break
		}
		if sem != nil {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				break
			}
		}
		sent++
		wg.Go(func() {
			if sem != nil {
				defer func() { <-sem }()
			}
			prompt := ps.prompt(it)
			plan, err := plan.ForPrompts(recording.ModeRouted, [][]int32{prompt}, nil, 1, it.Output)
			if err != nil {
				acc.failed(it, err)
				return
			}
			plan.SendAt = at
			res, err := o.Sender.Do(ctx, plan)
			if err != nil {
				acc.failed(it, err)
				return
			}
			rs := records.FromResult(res, t0, []int{len(prompt)}, func(r *records.Record) {
				r.Index, r.Src = it.Index, it.Src
				sched := records.Ms(it.At)
				lag := r.SentMs - sched // + the wait for a new connection: no byte left before it
				if r.ConnectMs != nil {
					lag += *r.ConnectMs
				}
				r.ScheduledMs, r.LagMs = &sched, &lag
			})
			acc.add(it, rs)
			if err := w.Write(rs...); err != nil {
				werrOnce.Do(func() { werr = err })
			}
		})
	}
	wg.Wait()
	cerr := w.Close()
	sum := acc.summary(s, sent, ctx.Err() != nil)
	sum.Records = w.Path()
	if werr == nil {
		werr = cerr
	}
	return sum, werr
}
