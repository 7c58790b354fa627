package engine

import (
	"net"
	"net/http"
	"time"
)

// A completion request's sequences and what its handler gathers of their tokens: the
// scheduler sequences of a spec, one choiceState per choice, and the waits and aborts
// between handler and scheduler.

// newRequest builds the scheduler sequences of spec: prompt i, choice c has index i·n + c.
// Prompt hashing (O(prompt)) happens here, in the handler goroutine, not in the scheduler.
func (e *Engine) newRequest(spec completionSpec, arrival time.Time) *request {
	r := &request{id: spec.id, arrival: arrival, notify: make(chan struct{}, 1), num: e.reqNum.Add(1), asked: spec.asked}
	r.seqs = make([]*seq, 0, len(spec.prompts)*spec.n)
	q := e.cfg.Quirks
	counts := spec.maxTokens[0] >= 2 // ZeroToken and EarlyStop leave one-token warmups alone
	stopAt := 0
	if q.EarlyStop > 0 && spec.maxTokens[0] > q.EarlyStop {
		if k := e.quirkEarly.Add(1); k%uint64(max(q.EarlyStopEvery, 1)) == 0 {
			stopAt = q.EarlyStop
		}
	}
	for i, p := range spec.prompts {
		hashes, whole := hashBlocks(p, e.cfg.BlockSize)
		for c := 0; c < spec.n; c++ {
			gs := mix64(spec.seed ^ mix64(whole))
			if spec.temperature > 0 {
				gs = mix64(gs ^ uint64(c+1)*0xd6e8feb86659fd93)
			}
			sq := &seq{
				req: r, choice: int32(i*spec.n + c),
				promptLen: len(p), hashes: hashes, lastTok: p[len(p)-1], genSeed: gs,
				maxTokens: spec.maxTokens[i], minTokens: spec.minTokens, ignoreEOS: spec.ignoreEOS,
			}
			if q.ZeroToken > 0 && counts {
				sq.zeroToken = seqPicked(e.quirkSeqs.Add(1), q.ZeroToken)
			}
			if len(r.seqs) == 0 {
				sq.stopAt = stopAt
			}
			r.seqs = append(r.seqs, sq)
		}
	}
	return r
}

// choiceState accumulates one choice's output in the handler.
type choiceState struct {
	text            []byte // pending (stream) or whole (non-stream) text
	lastText        []byte // text of the last token (TGI final chunk)
	tokens          int
	pending         int // tokens not yet sent
	fin             uint8
	promptLen       int
	firstAt, lastAt int64
	toks            []int32 // vocabulary index (−1 EOS) of each token in text (logprobs)
	textOff         int     // characters of this choice already sent (logprobs text_offset)
	// Quirks.LateFirstChunk, LateFirstSteps: the choice's chunks are held until holdUntil
	// after its first; Quirks.BunchFirst: until bunched reaches K
	held      []byte
	holdUntil time.Time
	started   bool
	bunched   int
}

// usage returns prompt tokens (each prompt once), completion tokens and cached prompt tokens
// (of each prompt's first choice, as vLLM sums num_cached_tokens per prompt).
func (e *Engine) usage(spec completionSpec, cr *request, st []choiceState) (prompt, completion, cached int) {
	for i, n := range spec.promptLens {
		prompt += n
		cached += cr.seqs[i*spec.n].cached
	}
	for _, c := range st {
		completion += c.tokens
	}
	return
}

// waitEvents blocks until cr has events, the keep-alive interval passes (ka), the time until
// comes (due; zero until = never), or the client goes away (ok false; the request is aborted).
func (e *Engine) waitEvents(r *http.Request, cr *request, keepAlive time.Duration, until time.Time) (ok, ka, due bool) {
	var tc, uc <-chan time.Time
	if keepAlive > 0 {
		t := time.NewTimer(keepAlive)
		defer t.Stop()
		tc = t.C
	}
	if !until.IsZero() {
		t := time.NewTimer(time.Until(until))
		defer t.Stop()
		uc = t.C
	}
	select {
	case <-cr.notify:
		return true, false, false
	case <-tc:
		return true, true, false
	case <-uc:
		return true, false, true
	case <-r.Context().Done():
		e.abort(cr)
		return false, false, false
	case <-e.stop:
		cr.aborted.Store(true)
		return false, false, false
	}
}

func (e *Engine) abort(cr *request) {
	cr.aborted.Store(true)
	e.sched.poke()
}

// timing returns the generation duration (first to last token over all choices, server
// clock) and the speculative acceptance (accepted / drafted, −1 without drafts).
func timing(cr *request, st []choiceState) (gen time.Duration, acc float64) {
	var first, last int64 = -1, 0
	for _, c := range st {
		if c.tokens == 0 {
			continue
		}
		if first < 0 || c.firstAt < first {
			first = c.firstAt
		}
		last = max(last, c.lastAt)
	}
	if first >= 0 {
		gen = time.Duration(last - first)
	}
	acc = -1
	if d := cr.specDrafted.Load(); d > 0 {
		acc = float64(cr.specAccepted.Load()) / float64(d)
	}
	return
}

// newChoiceStates returns one state per choice, its text starting with the echoed prompt.
func newChoiceStates(spec completionSpec, cr *request) []choiceState {
	st := make([]choiceState, len(cr.seqs))
	for i := range st {
		st[i].promptLen = cr.seqs[i].promptLen
		if spec.echo != nil {
			st[i].text = append(st[i].text, spec.echo[i/spec.n]...)
		}
	}
	return st
}

// applyEvent adds one token event to its choice's state.
func (e *Engine) applyEvent(st []choiceState, ev event) *choiceState {
	c := &st[ev.choice]
	if ev.noToken { // Quirks.ZeroToken: a finish without a token
		c.fin = ev.fin
		return c
	}
	if c.tokens == 0 {
		c.firstAt = ev.at
	}
	c.toks = append(c.toks, ev.vi)
	c.lastAt = ev.at
	c.tokens++
	c.pending++
	c.lastText = c.lastText[:0]
	if ev.vi >= 0 {
		t := e.vocab.texts[ev.vi]
		c.text = append(c.text, t...)
		c.lastText = append(c.lastText, t...)
	}
	c.fin = ev.fin
	return c
}

// hijackClose takes over the connection and closes it: with reset, by a TCP RST (linger 0).
func hijackClose(w http.ResponseWriter, reset bool) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		tc.SetLinger(0)
	}
	conn.Close()
}
