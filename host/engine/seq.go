package engine

import (
	"sync"
	"sync/atomic"
	"time"
)

// finish reasons of a sequence.
const (
	finNone uint8 = iota
	finLength
	finStop
	finAbort
)

// event is one generated token of one choice, handed from the scheduler to the HTTP handler.
type event struct {
	choice int32  // choice index = prompt·n + c
	vi     int32  // index into the output vocabulary, -1 for EOS
	fin    uint8  // finish reason when this is the choice's last token
	step   uint64 // engine step that produced it
	at     int64  // end of that step, ns since the engine started (monotonic)
	// noToken marks a finish without a token (Quirks.ZeroToken): no text, not counted.
	noToken bool
}

// request is one HTTP completion request: its sequences and the event queue its handler drains.
type request struct {
	id      string
	seqs    []*seq
	arrival time.Time
	num     uint64 // arrival number (Config.SeqLog)
	asked   int    // max_tokens the request gave, 0 if none (Config.SeqLog)

	mu     sync.Mutex
	events []event
	done   int // finished sequences
	notify chan struct{}

	aborted atomic.Bool

	admittedAt   atomic.Int64 // first admission of any sequence, ns since engine start
	specDrafted  atomic.Int64 // drafted tokens (speculative decoding)
	specAccepted atomic.Int64 // accepted drafted tokens
}

// push appends events and wakes the handler; called by the scheduler.
func (r *request) push(evs ...event) {
	r.mu.Lock()
	r.events = append(r.events, evs...)
	for _, e := range evs {
		if e.fin != finNone {
			r.done++
		}
	}
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// take returns the pending events and whether every sequence has finished.
func (r *request) take(buf []event) ([]event, bool) {
	r.mu.Lock()
	buf = append(buf[:0], r.events...)
	r.events = r.events[:0]
	all := r.done == len(r.seqs)
	r.mu.Unlock()
	return buf, all
}

// seq is one sequence (one prompt × one choice) in the scheduler.
type seq struct {
	req    *request
	choice int32
	order  uint64 // admission order, for preemption priority

	promptLen int
	hashes    []uint64 // chained hashes of the full prompt blocks
	lastTok   int32    // last prompt token id (routes the first decode step's experts)
	genSeed   uint64   // per-sequence stream of generated tokens
	maxTokens int
	minTokens int
	ignoreEOS bool
	zeroToken bool // Quirks.ZeroToken: finish with no token after prefill
	stopAt    int  // Quirks.EarlyStop: finish with "stop" after this many tokens (0 = never)

	generated int   // tokens generated so far
	lastVI    int32 // vocabulary index of the last generated token
	computed  int   // tokens whose KV is computed
	shared    []*cblock
	private   int       // private KV blocks held
	cached    int       // prefix-cache hit at first admission, in tokens
	firstEmit time.Time // when the first token was produced (metrics)
	firstStep uint64    // step of the first token (Config.SeqLog)
	firstAt   int64     // end of that step, ns since New
	lastEmit  time.Time // when the last token was produced (ITL metric)
	admitted  bool
	running   bool
	fin       uint8

	// per-step scratch
	sched int // tokens scheduled this step
	draft int // of which drafted tokens to verify (speculative decoding)
}

// known is the number of tokens of the sequence so far (prompt + generated).
func (s *seq) known() int { return s.promptLen + s.generated }

// blocks is the number of KV blocks the sequence holds.
func (s *seq) blocks() int { return len(s.shared) + s.private }

// currentToken is the token a decoding sequence feeds into this step: its last generated token,
// or its last prompt token before the first output. Generated tokens are keyed by vocabulary
// index offset past the prompt-id space so the two never collide.
func (s *seq) currentToken() int64 {
	if s.generated == 0 {
		return int64(s.lastTok)
	}
	return 1<<32 + int64(s.lastVI)
}
