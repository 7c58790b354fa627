package engine

import (
	"math/bits"
	"sync"
	"time"

	"github.com/genload/genload/host/internal/clock"
)

// scheduler runs engine steps: continuous batching with chunked prefill, a token budget,
// max_num_seqs, a waiting queue, a prefix cache and recompute preemption (vLLM v1 style).
type scheduler struct {
	e   *Engine
	cfg Config
	p   Profile
	kv  *kvCache

	mu    sync.Mutex // guards inbox
	inbox []*seq
	wake  chan struct{}

	waiting []*seq
	running []*seq
	order   uint64
	step    uint64

	experts   []uint64           // bitset of (layer, expert) pairs, per step
	expertMap map[int64][]uint64 // token → its bitset (cached)
	vocab     vocab

	resetReq chan chan struct{}
	evBuf    []event // scratch: one sequence's events of a step
	noise    *noiser // Config.Noise; nil when off
}

func newScheduler(e *Engine) *scheduler {
	s := &scheduler{
		e: e, cfg: e.cfg, p: e.profile,
		kv:        newKVCache(e.cfg.KVCacheTokens/e.cfg.BlockSize, !e.cfg.DisablePrefixCaching),
		wake:      make(chan struct{}, 1),
		expertMap: map[int64][]uint64{},
		vocab:     e.vocab,
		resetReq:  make(chan chan struct{}),
	}
	if s.p.IsMoE() {
		s.experts = make([]uint64, (s.p.MoELayers*s.p.MoEExperts+63)/64)
	}
	if e.cfg.Noise.On() {
		s.noise = newNoiser(e.cfg.Noise)
	}
	return s
}

// submit queues the sequences of r; they join the batch at the next step boundary.
func (s *scheduler) submit(r *request) {
	s.mu.Lock()
	s.inbox = append(s.inbox, r.seqs...)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// poke wakes the scheduler (e.g. so that it drops an aborted request's sequences).
func (s *scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// expertSet returns the (layer, expert) bitset a token activates: per layer, top_k distinct
// experts drawn from a hash of (token, layer). Cached per token; the vocabulary is small.
func (s *scheduler) expertSet(tok int64) []uint64 {
	if b := s.expertMap[tok]; b != nil {
		return b
	}
	b := make([]uint64, len(s.experts))
	ne := s.p.MoEExperts
	for l := 0; l < s.p.MoELayers; l++ {
		h := mix64(uint64(tok)*0x9e3779b97f4a7c15 ^ uint64(l+1)<<40)
		picked := 0
		for picked < s.p.MoETopK {
			h = mix64(h + 0x9e3779b97f4a7c15)
			bit := l*ne + int(h%uint64(ne))
			if b[bit/64]&(1<<(bit%64)) == 0 {
				b[bit/64] |= 1 << (bit % 64)
				picked++
			}
		}
	}
	if len(s.expertMap) > 1<<16 {
		clear(s.expertMap)
	}
	s.expertMap[tok] = b
	return b
}

// maxDebt is the most lateness the scheduler repays (see run): a busy host preempts the
// engine's thread for a few ms at a time, which steps of a fraction of a ms at the default time
// scale cannot absorb one step at a time.
const maxDebt = 20 * time.Millisecond

// nextDeadline returns the planned end of a step of planned wall duration wall that starts at
// now, the previous step having been planned to end at prev (the schedule), and when to end
// it. After idle, or when behind the schedule by more than one step and more than maxDebt (a
// stall of the host, a slow prefill bookkeeping pass), the debt is forgiven: the schedule
// restarts from now, and later steps keep their own durations. A smaller debt — a timer woken
// late, the engine's thread preempted by a busy host — is repaid by the next steps, each
// ending on schedule but at least half its planned duration after it starts (so that the
// stream does not become a burst a client cannot time): the steps keep the cost model's mean
// duration, host lateness not being part of the simulation (injected slow steps are, in sim).
func nextDeadline(idle bool, now, prev time.Time, wall time.Duration) (plan, end time.Time) {
	if idle || now.Sub(prev) > max(wall, maxDebt) {
		plan = now.Add(wall)
		return plan, plan
	}
	plan, end = prev.Add(wall), prev.Add(wall)
	if floor := now.Add(wall / 2); end.Before(floor) {
		end = floor
	}
	return plan, end
}

// run is the scheduler goroutine. It returns when stop is closed.
func (s *scheduler) run(stop <-chan struct{}) {
	var deadline, prevEnd time.Time
	idle := true
	for {
		s.mu.Lock()
		s.waiting = append(s.waiting, s.inbox...)
		for i := range s.inbox {
			s.inbox[i] = nil
		}
		s.inbox = s.inbox[:0]
		s.mu.Unlock()
		s.dropAborted()
		if len(s.running) == 0 && len(s.waiting) == 0 {
			s.e.metrics.setQueue(0, 0, s.kv, s.cfg.BlockSize)
			idle = true
			select {
			case <-stop:
				return
			case <-s.wake:
			case done := <-s.resetReq:
				s.kv.reset()
				close(done)
			}
			continue
		}
		select {
		case done := <-s.resetReq:
			s.kv.reset()
			close(done)
		default:
		}
		fresh := len(s.running) == 0 // no sequence left from the previous step: a burst begins (see Noise)
		shape, batch := s.plan()
		sim := s.p.StepTime(shape)
		noise := 1.0
		if s.noise != nil {
			if fresh {
				s.noise.newBurst()
			}
			noise = s.noise.factor()
			sim = time.Duration(float64(sim) * noise)
		}
		wall := time.Duration(float64(sim) * s.cfg.TimeScale)
		now := time.Now()
		stepStart := prevEnd // back-to-back steps: the loop overhead belongs to the step
		if idle {
			stepStart = now
		}
		var end time.Time
		deadline, end = nextDeadline(idle, now, deadline, wall)
		idle = false
		if !clock.SleepUntilSpin(end, min(s.cfg.SpinWait, wall/4), stop) {
			return
		}
		// Record and log the step before handing out its tokens, so that a client holding
		// a token can already see the step in /metrics and the step log.
		s.step++
		prevEnd = time.Now()
		actual := prevEnd.Sub(stepStart) // the measured wall duration (≈ wall on average)
		s.e.metrics.observeStep(shape, sim, wall, actual)
		if s.cfg.StepLog != nil {
			s.logStep(prevEnd, batch, shape, sim, wall, actual, noise)
		}
		s.commit(batch, prevEnd)
		s.e.metrics.setQueue(len(s.running), len(s.waiting), s.kv, s.cfg.BlockSize)
	}
}

// dropAborted removes sequences of aborted requests from both queues, freeing their blocks.
func (s *scheduler) dropAborted() {
	keep := s.running[:0]
	for _, q := range s.running {
		if q.req.aborted.Load() {
			s.freeSeq(q)
			continue
		}
		keep = append(keep, q)
	}
	clear(s.running[len(keep):])
	s.running = keep
	kw := s.waiting[:0]
	for _, q := range s.waiting {
		if q.req.aborted.Load() {
			s.freeSeq(q)
			continue
		}
		kw = append(kw, q)
	}
	clear(s.waiting[len(kw):])
	s.waiting = kw
}

func (s *scheduler) freeSeq(q *seq) {
	s.kv.unref(q.shared)
	q.shared = q.shared[:0]
	s.kv.release(q.private)
	q.private = 0
	q.running = false
}

// preempt frees q's KV and puts it at the head of the waiting queue (recompute preemption).
func (s *scheduler) preempt(q *seq) {
	s.freeSeq(q)
	q.computed = 0
	q.sched, q.draft = 0, 0
	s.waiting = append([]*seq{q}, s.waiting...)
	s.e.metrics.preemptions.Add(1)
}

// grow allocates the blocks q needs to hold `tokens` computed tokens.
func (s *scheduler) grow(q *seq, tokens int) bool {
	bs := s.cfg.BlockSize
	need := (tokens+bs-1)/bs - q.blocks()
	if !s.kv.alloc(need) {
		return false
	}
	if need > 0 {
		q.private += need
	}
	return true
}

// plan chooses this step's work: running sequences first (decode or continuing prefill, in
// admission order, preempting the newest when the KV cache is full), then waiting sequences
// while the token budget (Config.MaxNumBatchedTokens), max_num_seqs and the KV cache allow,
// none in a step that preempted (as vLLM). It returns the step's shape for the cost model and
// its batch, each sequence's tokens of the step in q.sched (of them q.draft drafted).
func (s *scheduler) plan() (StepShape, []*seq) {
	batch := make([]*seq, 0, len(s.running)+4)
	batch, budget, preempted := s.scheduleRunning(batch, s.cfg.MaxNumBatchedTokens)
	if !preempted {
		batch = s.admitWaiting(batch, budget)
	}
	return s.shape(batch), batch
}

// scheduleRunning appends to batch the running sequences that get tokens this step, in
// admission order, each taking its remaining prompt tokens (chunked prefill) or one decode
// token plus drafts (draftTokens) out of budget, in tokens. When the KV cache cannot hold a
// sequence's tokens, the newest running sequence is preempted (recomputed later) until it
// can. It returns the batch, the budget left and whether it preempted.
func (s *scheduler) scheduleRunning(batch []*seq, budget int) ([]*seq, int, bool) {
	preempted := false
	for i := 0; i < len(s.running) && budget > 0; i++ {
		q := s.running[i]
		n := q.known() - q.computed
		q.draft = 0
		if n == 1 && q.computed > 0 {
			if k := s.draftTokens(q, budget); k > 0 {
				q.draft = k
				n += k
			}
		}
		if n > budget {
			n = budget
		}
		for !s.grow(q, q.computed+n) {
			// preempt the lowest-priority running sequence (the last one)
			last := s.running[len(s.running)-1]
			s.running = s.running[:len(s.running)-1]
			s.preempt(last)
			preempted = true
			if last == q {
				n, q.draft = 0, 0
				break
			}
		}
		if n == 0 {
			continue
		}
		q.sched = n
		budget -= n
		batch = append(batch, q)
	}
	return batch, budget, preempted
}

// draftTokens returns how many tokens the draft model proposes for decoding sequence q
// (speculative decoding, Config.SpecTokens; 0 when off): never past q's max_tokens, the
// context (Config.MaxModelLen) or budget − 1 tokens.
func (s *scheduler) draftTokens(q *seq, budget int) int {
	if s.cfg.SpecTokens <= 0 {
		return 0
	}
	return min(s.cfg.SpecTokens, q.maxTokens-q.generated-1, s.cfg.MaxModelLen-q.known()-1, budget-1)
}

// admitWaiting moves waiting sequences, in queue order, into the running set and batch
// while budget (tokens) and Config.MaxNumSeqs allow: each first looks up its prompt in the
// prefix cache (lookupPrefix), then takes its uncached prompt tokens, up to the budget. It
// stops at the first sequence whose blocks the KV cache cannot hold, which gives back its
// prefix hits and waits for running sequences to finish.
func (s *scheduler) admitWaiting(batch []*seq, budget int) []*seq {
	for len(s.waiting) > 0 && budget > 0 && len(s.running) < s.cfg.MaxNumSeqs {
		q := s.waiting[0]
		q.draft = 0
		if !q.running && q.blocks() == 0 {
			s.lookupPrefix(q)
		}
		n := q.known() - q.computed
		if n > budget {
			n = budget
		}
		if !s.grow(q, q.computed+n) {
			s.kv.unref(q.shared)
			q.shared = q.shared[:0]
			q.computed = 0
			break
		}
		s.waiting[0] = nil
		s.waiting = s.waiting[1:]
		if !q.admitted {
			q.admitted = true
			s.e.metrics.observeQueue(time.Since(q.req.arrival))
			q.req.admittedAt.CompareAndSwap(0, int64(time.Since(s.e.startedAt)))
		}
		q.running = true
		s.order++
		q.order = s.order
		s.running = append(s.running, q)
		q.sched = n
		budget -= n
		batch = append(batch, q)
	}
	return batch
}

// lookupPrefix shares the cached blocks of q's prompt prefix (whole blocks, at most up to
// its last token so that at least one token is computed) and counts them as computed; on
// q's first admission they are its cached tokens, counted in the prefix-cache metrics.
func (s *scheduler) lookupPrefix(q *seq) {
	maxHit := (q.known() - 1) / s.cfg.BlockSize
	q.shared = append(q.shared[:0], s.kv.lookup(q.hashes, maxHit)...)
	q.computed = len(q.shared) * s.cfg.BlockSize
	if !q.admitted {
		q.cached = q.computed
		s.e.metrics.prefixQueries.Add(int64(q.known()))
		s.e.metrics.prefixHits.Add(int64(q.computed))
	}
}

// shape sums what the cost model needs of batch (StepShape): per decoding sequence its
// context (computed + 1 tokens) and drafts, per prefill chunk of c tokens after
// computed ones its tokens and causal attention pairs c·(computed + (c+1)/2), and for a
// MoE profile the distinct (layer, expert) pairs that the decode tokens route to
// (routeExperts) plus the prefill's estimate.
func (s *scheduler) shape(batch []*seq) StepShape {
	var sh StepShape
	if s.experts != nil {
		clear(s.experts)
	}
	for _, q := range batch {
		sh.Seqs++
		if q.sched-q.draft == 1 && q.computed > 0 {
			sh.DecodeSeqs++
			if q.draft > 0 {
				sh.SpecTokens += int64(q.draft)
				sh.DraftMs = float64(s.cfg.SpecTokens) * s.cfg.SpecDraftMs
			}
			ctx := int64(q.computed + 1)
			sh.SumCtx += ctx
			if ctx > sh.MaxCtx {
				sh.MaxCtx = ctx
			}
			if s.experts != nil {
				s.routeExperts(q)
			}
			continue
		}
		c := int64(q.sched)
		sh.PrefillTokens += c
		sh.PrefillPairs += float64(c) * (float64(q.computed) + float64(c+1)/2)
	}
	if s.experts != nil {
		for _, w := range s.experts {
			sh.Experts += bits.OnesCount64(w)
		}
		sh.Experts += s.p.prefillExperts(sh.Experts, sh.PrefillTokens)
	}
	return sh
}

// routeExperts marks in s.experts the (layer, expert) pairs that decoding sequence q's
// current token and its drafted tokens route to.
func (s *scheduler) routeExperts(q *seq) {
	for i, w := range s.expertSet(q.currentToken()) {
		s.experts[i] |= w
	}
	for d := 0; d < q.draft; d++ { // drafted tokens route to experts too
		vi, _ := s.tokenAt(q, q.generated+d)
		for i, w := range s.expertSet(1<<32 + int64(vi)) {
			s.experts[i] |= w
		}
	}
}

// commit applies a finished step: computed tokens advance, completed prompt blocks enter the
// prefix cache, sequences whose context is fully computed sample one token, finished
// sequences leave the batch.
//
// end is when the step ended — the time its tokens carry, the same clock reading as the step
// log's, so that the sequence log and the step log agree to the µs.
func (s *scheduler) commit(batch []*seq, end time.Time) {
	bs := s.cfg.BlockSize
	at := int64(end.Sub(s.e.startedAt))
	finished := false
	for _, q := range batch {
		if !q.running {
			continue
		}
		draft := q.draft
		accepted := 0
		if draft > 0 {
			accepted = s.accepted(q, draft)
			q.computed += q.sched - draft + accepted
			q.req.specDrafted.Add(int64(draft))
			q.req.specAccepted.Add(int64(accepted))
			s.e.metrics.specDrafts.Add(1)
			s.e.metrics.specDraftTok.Add(int64(draft))
			s.e.metrics.specAccepted.Add(int64(accepted))
		} else {
			q.computed += q.sched
		}
		q.sched, q.draft = 0, 0
		// promote newly completed full prompt blocks to shared cached blocks
		full := q.computed / bs
		if full > len(q.hashes) {
			full = len(q.hashes)
		}
		for len(q.shared) < full {
			b := s.kv.promote(q.hashes[len(q.shared)])
			if b == nil {
				break
			}
			q.shared = append(q.shared, b)
			q.private--
		}
		if q.computed < q.known() {
			continue // prefill continues next step
		}
		// the step's tokens of q (1 + accepted drafts) reach the handler together, so that
		// they leave in one chunk as a server streams one forward pass's output
		evs := s.evBuf[:0]
		for t := 0; t <= accepted && q.fin == finNone; t++ {
			evs = append(evs, s.sample(q, at))
		}
		q.req.push(evs...)
		s.evBuf = evs
		if q.fin != finNone {
			finished = true
		}
	}
	if finished {
		keep := s.running[:0]
		for _, q := range s.running {
			if q.fin != finNone {
				s.freeSeq(q)
				continue
			}
			keep = append(keep, q)
		}
		clear(s.running[len(keep):])
		s.running = keep
	}
}
