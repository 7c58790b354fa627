package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/genload/genload/host/plan"
	"github.com/genload/genload/host/sse"
)

// call is one HTTP request of a plan, with its body.
type call struct {
	worker  int
	prompts []int
	n       int
	body    []byte
	// stream, when not nil, replaces body: a large body generated as it is sent.
	stream *bodyStream
	// seqs are the request's records in Result.Sequences (set by Do, filled by do).
	seqs []Sequence
	// small: the Do has at least smallReaderStreams requests, its streams read through
	// small SSE buffers (stream.go).
	small bool
}

// bodyBytes is the size of the request body.
func (p *call) bodyBytes() int {
	if p.stream != nil {
		return p.stream.size
	}
	return len(p.body)
}

// want is the number of sequences the request yields: n per prompt.
func (p *call) want() int { return len(p.prompts) * p.n }

// Do sends plan p's requests (each to its worker, with max_tokens = p.MaxTokens) and streams
// them to the end. The error is non-nil only when nothing could be sent (no prompts, an empty
// prompt, a request naming a worker or prompt that does not exist); failures of individual
// requests are in Result.Requests[i].Err (see Result.Err) and their sequences stay in the
// Result, B of them in request order (sequence k of a request continues its prompt
// Prompts[k / N]). Failures before a response body started (transport, 429, 5xx) are retried
// (Options.Retries, RetryDelay); a warmup plan (p.Warmup) also retries an in-stream error with
// code 429 or ≥ 500.
//
// Result.Client records the client's own load: the time to build the bodies, each request's
// write time (Request.Write) against its TTFT, the process's CPU share and the scheduler's
// latency while the streams ran (recording.ClientLoad.Bottleneck says when they limited the
// figures).
//
// Canceling ctx aborts the streams at once (Kind KindCanceled) and closes every
// connection of the Client, including idle ones. After [DONE] a stream is read to its
// end so that its connection can be reused; TotalTimeout bounds that too.
func (c *Client) Do(ctx context.Context, p *plan.Plan) (*Result, error) {
	tb := time.Now()
	ps, err := c.calls(p)
	if err != nil {
		return nil, err
	}
	build := time.Since(tb)
	defer c.putBufs(ps)
	mode := p.Shape
	if mode == "" {
		mode = ModeArray
	}
	maxTokens, warm := p.MaxTokens, p.Warmup

	// Sequences: each request owns a contiguous range of them (call.seqs) and fills it when it
	// ends (do). A request that failed before its stream leaves empty records; indices a
	// request did not ask for are dropped.
	total := 0
	for ri := range ps {
		total += ps[ri].want()
	}
	res := &Result{Mode: mode, MaxTokens: maxTokens, Requests: make([]Request, len(ps)), Sequences: make([]Sequence, total)}
	off := 0
	for ri := range ps {
		q := &ps[ri]
		for k := range q.want() {
			res.Sequences[off+k] = Sequence{Sequence: sse.Sequence{Index: k}, Prompt: q.prompts[k/q.n], Request: ri}
		}
		q.seqs = res.Sequences[off : off+q.want()]
		q.small = len(ps) >= smallReaderStreams
		off += len(q.seqs)
	}

	// One context watch for the whole Do (not one per request): canceling ctx aborts the
	// streams under way, then closes every connection, which unblocks requests still
	// waiting for headers.
	aborts := make([]abortState, len(ps))
	if stallEnabled(&c.opts) {
		// A stream is stalled only when no stream of the Do received a byte: a server
		// that prefills other requests' prompts pauses this one but sends their tokens.
		anyByte := new(atomic.Int64)
		for i := range aborts {
			aborts[i].anyByte, aborts[i].streams = anyByte, len(ps)
		}
	}
	stop := context.AfterFunc(ctx, func() {
		for i := range aborts {
			aborts[i].cancel(ctx.Err())
		}
		c.conns.closeAll()
	})
	defer stop()

	if !p.SendAt.IsZero() {
		waitUntil(ctx, p.SendAt)
	}
	load := startLoad()
	res.Start = time.Now()
	var wg sync.WaitGroup
	for i := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.do(ctx, res.Start, &ps[i], &res.Requests[i], &aborts[i], maxTokens, warm)
		}()
	}
	wg.Wait()
	load.finish(res, build)
	for i := range aborts {
		if aborts[i].stall != nil {
			stallPool.Put(aborts[i].stall)
		}
	}
	addHints(res, p.Texts != nil)
	return res, nil
}

// promptsOf returns the plan's prompts as the body writer reads them, after checking there are
// some and none is empty.
func promptsOf(p *plan.Plan) (promptSet, error) {
	var ps promptSet = idPrompts(p.IDs)
	if p.Texts != nil {
		ps = textPrompts(p.Texts)
	}
	if ps.Len() == 0 {
		return nil, errors.New("dispatch: no prompts")
	}
	for i := range ps.Len() {
		if ps.Empty(i) {
			return nil, fmt.Errorf("dispatch: prompt %d is empty", i)
		}
	}
	return ps, nil
}

// calls checks plan p's prompts and builds the body of every request of it (in buffers from
// the Client's pool: give them back with putBufs).
func (c *Client) calls(p *plan.Plan) ([]call, error) {
	prompts, err := promptsOf(p)
	if err != nil {
		return nil, err
	}
	if len(p.Requests) == 0 {
		return nil, errors.New("dispatch: the plan has no requests")
	}
	if _, ids := prompts.(idPrompts); c.ollama() && ids {
		return nil, errors.New(`dispatch: ollama's native API takes text prompts only (prompt.format = "text")`)
	}
	ps := make([]call, len(p.Requests))
	for i, r := range p.Requests {
		switch {
		case r.Worker < 0 || r.Worker >= len(c.workers):
			c.putBufs(ps[:i])
			return nil, fmt.Errorf("dispatch: request %d goes to worker %d, want [0, %d)", i, r.Worker, len(c.workers))
		case len(r.Prompts) == 0 || r.N < 1 || !r.Array && len(r.Prompts) != 1:
			c.putBufs(ps[:i])
			return nil, fmt.Errorf("dispatch: request %d has %d prompts and n = %d, want at least one (one unless sent as an array) and n ≥ 1", i, len(r.Prompts), r.N)
		case c.ollama() && (r.Array || r.N != 1):
			c.putBufs(ps[:i])
			return nil, fmt.Errorf(`dispatch: request %d: ollama's native API takes one prompt per request and n = 1 (mode = "routed"), got %d prompts as an array, n = %d`, i, len(r.Prompts), r.N)
		}
		for _, k := range r.Prompts {
			if k < 0 || k >= prompts.Len() {
				c.putBufs(ps[:i])
				return nil, fmt.Errorf("dispatch: request %d carries prompt %d of %d", i, k, prompts.Len())
			}
		}
		size := bodySize(prompts, r.Prompts)
		if ids, ok := prompts.(idPrompts); ok && size > streamBodyOver {
			ps[i] = call{worker: r.Worker, prompts: r.Prompts, n: r.N, stream: newBodyStream(c.tmpl, ids, r.Prompts, r.Array, r.N, p.MaxTokens)}
			continue
		}
		b := c.getBuf(size)
		ps[i] = call{worker: r.Worker, prompts: r.Prompts, n: r.N, body: c.tmpl.appendBody(b, prompts, r.Prompts, r.Array, r.N, p.MaxTokens)}
	}
	return ps, nil
}

func (c *Client) getBuf(size int) []byte {
	c.bufMu.Lock()
	defer c.bufMu.Unlock()
	best := -1
	for i, b := range c.bufs {
		if cap(b) >= size && (best < 0 || cap(b) < cap(c.bufs[best])) {
			best = i
		}
	}
	if best < 0 {
		if len(c.bufs) == 0 {
			return make([]byte, 0, size)
		}
		best = len(c.bufs) - 1
	}
	b := c.bufs[best]
	c.bufs = append(c.bufs[:best], c.bufs[best+1:]...)
	return b[:0]
}

func (c *Client) putBufs(ps []call) {
	c.bufMu.Lock()
	defer c.bufMu.Unlock()
	for _, p := range ps {
		if p.body != nil {
			c.bufs = append(c.bufs, p.body[:0])
		}
	}
	// keep at most 1024 buffers
	if len(c.bufs) > 1024 {
		c.bufs = c.bufs[len(c.bufs)-1024:]
	}
}

// shaped is plan.ForPrompts over the Client's workers.
func (c *Client) shaped(mode Mode, ids [][]int32, texts []string, maxTokens int, warm bool) (*plan.Plan, error) {
	p, err := plan.ForPrompts(mode, ids, texts, len(c.workers), maxTokens)
	if err != nil {
		return nil, fmt.Errorf("dispatch: %w", err)
	}
	p.Warmup = warm
	return p, nil
}

// Send is Do of the plan plan.ForPrompts(mode, prompts) over the Client's workers: the measured
// request(s) of token-id prompts with max_tokens = maxTokens.
func (c *Client) Send(ctx context.Context, mode Mode, prompts [][]int32, maxTokens int) (*Result, error) {
	p, err := c.shaped(mode, prompts, nil, maxTokens, false)
	if err != nil {
		return nil, err
	}
	return c.Do(ctx, p)
}

// SendText is Send with string prompts, JSON-escaped (invalid UTF-8 becomes U+FFFD).
func (c *Client) SendText(ctx context.Context, mode Mode, prompts []string, maxTokens int) (*Result, error) {
	if prompts == nil {
		prompts = []string{}
	}
	p, err := c.shaped(mode, nil, prompts, maxTokens, false)
	if err != nil {
		return nil, err
	}
	return c.Do(ctx, p)
}

// Warmup sends the prompts as Send would, with max_tokens = 1, as a warmup (in-stream 429
// and 5xx retried too), and waits for every stream to end. The returned error joins the
// failures (each a *RequestError).
func (c *Client) Warmup(ctx context.Context, mode Mode, prompts [][]int32) error {
	p, err := c.shaped(mode, prompts, nil, 1, true)
	if err != nil {
		return err
	}
	res, err := c.Do(ctx, p)
	if err != nil {
		return err
	}
	return res.Err()
}

// WarmupText is Warmup with string prompts (for servers that accept only strings, such
// as TGI).
func (c *Client) WarmupText(ctx context.Context, mode Mode, prompts []string) error {
	if prompts == nil {
		prompts = []string{}
	}
	p, err := c.shaped(mode, nil, prompts, 1, true)
	if err != nil {
		return err
	}
	res, err := c.Do(ctx, p)
	if err != nil {
		return err
	}
	return res.Err()
}

// Body returns the exact request bodies Do would post for plan p (one per request), for
// inspection and tests.
func (c *Client) Body(p *plan.Plan) ([][]byte, error) {
	ps, err := c.calls(p)
	if err != nil {
		return nil, err
	}
	defer c.putBufs(ps)
	out := make([][]byte, len(ps))
	for i, q := range ps {
		if q.stream != nil {
			b, err := io.ReadAll(q.stream)
			if err != nil {
				return nil, err
			}
			out[i] = b
			continue
		}
		out[i] = append([]byte(nil), q.body...)
	}
	return out, nil
}
