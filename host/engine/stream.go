package engine

import (
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/genload/genload/host/internal/jsonenc"
)

// streamFrames formats one request's SSE frames in the engine's dialect.
type streamFrames struct {
	e       *Engine
	spec    completionSpec
	created int64
	pre     []byte // `data: {"id":…,"object":…,"created":…,"model":…,"choices":[`
	// promptTotal and reqTokens are the request's prompt tokens and its tokens streamed so
	// far over all choices (Quirks.UsageEveryChunk).
	promptTotal, reqTokens int
	// choicePre caches SGLang's per-choice prefixes (the id varies per sub-request).
	choicePre map[int32][]byte
	// native writes ollama's /api/generate objects, one per line, instead of SSE chunks
	// (native.go): every chunk is {"model","created_at","response","done":false}, the
	// stream ends with nativeDone's object, an error is {"error"} alone.
	native bool
}

func newStreamFrames(e *Engine, spec completionSpec) *streamFrames {
	f := &streamFrames{e: e, spec: spec, created: time.Now().Unix()}
	for _, n := range spec.promptLens {
		f.promptTotal += n
	}
	p := []byte(`data: {"id":`)
	p = jsonenc.AppendString(p, spec.id)
	p = append(p, `,"object":"text_completion","created":`...)
	p = strconv.AppendInt(p, f.created, 10)
	p = append(p, `,"model":`...)
	p = jsonenc.AppendString(p, spec.model)
	p = e.wire.appendFingerprint(p)
	p = append(p, `,"choices":[`...)
	f.pre = p
	return f
}

// token appends the chunks carrying choice's pending text: one chunk, final when c.fin is set
// and the dialect puts the finish reason on the last-token chunk; with a separate finish
// (llama.cpp, Quirks.SeparateFinish) the finish reason follows on a chunk of its own.
func (f *streamFrames) token(b []byte, choice int32, c *choiceState, cr *request) []byte {
	d := &f.e.wire
	sep := d.separateFinish
	fin := c.fin
	if sep {
		fin = finNone
	}
	b = f.chunk(b, choice, c.text, fin, c, true)
	if !sep || c.fin == finNone {
		return b
	}
	if !d.finalChunk {
		return f.chunk(b, choice, nil, c.fin, c, false)
	}
	// llama.cpp final chunk: empty text, finish reason, usage and timings of this task
	seq := cr.seqs[choice]
	b = append(b, f.pre...)
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(choice), 10)
	b = append(b, `,"text":"","logprobs":null,"finish_reason":`...)
	b = jsonenc.AppendString(b, d.finishString(c.fin))
	b = append(b, `}]`...)
	switch d.usage {
	case usageZero:
		b = append(b, `,"usage":`...)
		b = d.appendUsage(b, 0, 0, 0, detailsNone)
	case usageReal:
		b = append(b, `,"usage":`...)
		b = d.appendUsage(b, c.promptLen, c.tokens, seq.cached, d.streamDetails)
	}
	b = append(b, `,"timings":`...)
	b = f.e.appendTimings(b, cr, c, c.promptLen, seq.cached)
	return append(b, "}\n\n"...)
}

// chunk appends one chunk event of choice with text and finish reason fin in the dialect's
// shape, with the usage the request and the quirks ask for, and the logprobs of c's pending
// tokens when withLogprobs and the request asked for them.
func (f *streamFrames) chunk(b []byte, choice int32, text []byte, fin uint8, c *choiceState, withLogprobs bool) []byte {
	d := &f.e.wire
	if f.native { // the final object comes at the end of the stream
		b = f.e.nativeHead(b, f.spec.model)
		b = append(b, `"response":`...)
		b = jsonenc.AppendString(b, string(text))
		return append(b, `,"done":false}`+"\n"...)
	}
	pre := f.pre
	if d.idPerChoice { // SGLang: the id varies per sub-request (choice)
		if pre = f.choicePre[choice]; pre == nil {
			pre = []byte(strings.Replace(string(f.pre), `"id":`+string(jsonenc.AppendString(nil, f.spec.id)),
				`"id":`+string(jsonenc.AppendString(nil, f.spec.id+"-"+strconv.Itoa(int(choice)))), 1))
			if f.choicePre == nil {
				f.choicePre = map[int32][]byte{}
			}
			f.choicePre[choice] = pre
		}
	}
	b = append(b, pre...)
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(choice), 10)
	b = append(b, `,"text":`...)
	b = jsonenc.AppendString(b, string(text))
	b = append(b, `,"logprobs":`...)
	if withLogprobs {
		b = f.e.appendLogprobs(b, f.spec.logprobs, c)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"finish_reason":`...)
	if fin != finNone {
		b = jsonenc.AppendString(b, d.finishString(fin))
	} else {
		b = append(b, d.pendingFinish...)
	}
	b = append(b, d.streamChoiceTail...)
	if d.matchedStop {
		b = append(b, `,"matched_stop":`...)
		b = appendMatchedStop(b, fin)
	}
	b = append(b, `}]`...)
	switch {
	case d.usage == usageZero:
		b = append(b, `,"usage":`...)
		b = d.appendUsage(b, 0, 0, 0, detailsNone)
	case d.usage == usageNone:
		if d.chunkUsageNull {
			b = append(b, `,"usage":null`...)
		}
	case d.usageEveryChunk && f.spec.includeUsage:
		// the request's running totals over all choices, on every chunk
		b = append(b, `,"usage":`...)
		b = d.appendUsage(b, f.promptTotal, f.reqTokens, 0, detailsNone)
	case f.spec.continuous:
		b = append(b, `,"usage":`...)
		b = d.appendUsage(b, c.promptLen, c.tokens, 0, detailsNone)
	case d.chunkUsageNull:
		b = append(b, `,"usage":null`...)
	case d.usageOnFinishChunk && fin != finNone:
		b = append(b, `,"usage":`...)
		b = d.appendUsage(b, c.promptLen, c.tokens, 0, detailsNone)
	}
	return append(b, "}\n\n"...)
}

// usageChunk appends the trailing choices:[] usage chunk (dialect.usageChunk).
func (f *streamFrames) usageChunk(b []byte, prompt, completion, cached int, gen time.Duration, acc float64) []byte {
	b = append(b, f.pre...)
	b = append(b, `],"usage":`...)
	b = f.e.wire.appendUsage(b, prompt, completion, cached, f.e.wire.streamDetails)
	if f.spec.perfMetrics {
		b = f.appendPerf(b, gen, acc)
	}
	return append(b, "}\n\n"...)
}

// appendPerf appends Fireworks-style "perf_metrics".
func (f *streamFrames) appendPerf(b []byte, gen time.Duration, acc float64) []byte {
	b = append(b, `,"perf_metrics":{"generation-duration":`...)
	b = strconv.AppendFloat(b, gen.Seconds(), 'f', 6, 64)
	if acc >= 0 {
		b = append(b, `,"speculation-acceptance":`...)
		b = strconv.AppendFloat(b, acc, 'f', 4, 64)
	}
	return append(b, '}')
}

// errorEvent appends an in-stream error event and, where the dialect does, [DONE].
func (f *streamFrames) errorEvent(b []byte, status int, msg string) []byte {
	if f.native {
		return append(jsonenc.AppendString(append(b, `{"error":`...), msg), "}\n"...)
	}
	typ, _ := f.e.statusError(status)
	b = append(b, "data: "...)
	b = f.e.wire.appendStreamError(b, status, typ, msg)
	b = append(b, "\n\n"...)
	if f.e.wire.doneAfterError {
		b = append(b, "data: [DONE]\n\n"...)
	}
	return b
}

// stream serves a streaming completion: one chunk per choice per engine step (or per
// stream_interval tokens), the finish reason on the last-token chunk, the usage chunk when
// requested, then "data: [DONE]" — each in the dialect's shape — with the faults of spec and
// the engine's quirks.
func (e *Engine) stream(w http.ResponseWriter, r *http.Request, spec completionSpec, cr *request) {
	e.streamAs(w, r, spec, cr, false)
}

// streamNative serves ollama's /api/generate stream: stream's writer in its ndjson form
// (streamFrames.native), without the timing trailers.
func (e *Engine) streamNative(w http.ResponseWriter, r *http.Request, spec completionSpec, cr *request) {
	e.streamAs(w, r, spec, cr, true)
}

// streamAs is stream, writing ollama's native objects when native. A stream lives through
// four steps: the headers (setStreamHeaders), the dialect's empty first chunks
// (streamRun.emptyFirstChunks), one streamRun.next per wake-up of the scheduler's events,
// and the end (streamRun.finish).
func (e *Engine) streamAs(w http.ResponseWriter, r *http.Request, spec completionSpec, cr *request, native bool) {
	timingHeaders := e.setStreamHeaders(w.Header(), spec, native)
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	rc.Flush()
	s := &streamRun{
		e: e, w: w, rc: rc, r: r, cr: cr, spec: spec, q: e.cfg.Quirks,
		frames: newStreamFrames(e, spec),
		st:     newChoiceStates(spec, cr),
		b:      make([]byte, 0, 4096),
		first:  true, native: native, timingHeaders: timingHeaders,
	}
	s.frames.native = native
	if e.wire.emptyFirstChunk && !s.emptyFirstChunks() {
		return
	}
	for s.next() {
	}
}

// setStreamHeaders sets a stream's response headers in h: the content type (SSE, or ndjson
// when native), the dialect's own stream headers, and, when Config.TimingHeaders asks for
// them and the stream is not native, the Trailer line announcing Generation-Duration (and
// Speculation-Acceptance with Config.SpecTokens > 0). It reports whether it announced them.
func (e *Engine) setStreamHeaders(h http.Header, spec completionSpec, native bool) (timingHeaders bool) {
	if native {
		h.Set("Content-Type", "application/x-ndjson")
	} else {
		h.Set("Content-Type", "text/event-stream; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
	}
	if e.wire.streamHeaders != nil {
		e.wire.streamHeaders(h, spec)
	}
	timingHeaders = e.cfg.TimingHeaders && !native
	if timingHeaders {
		tr := "Generation-Duration"
		if e.cfg.SpecTokens > 0 {
			tr += ", Speculation-Acceptance"
		}
		h.Set("Trailer", tr)
	}
	return timingHeaders
}

// streamRun is one streaming response in progress (streamAs): its writer, the request's
// choice states, the frames gathered since the last write, and the count of tokens sent
// that the injected faults key on.
type streamRun struct {
	e      *Engine
	w      http.ResponseWriter
	rc     *http.ResponseController
	r      *http.Request
	cr     *request
	spec   completionSpec
	q      Quirks
	frames *streamFrames
	st     []choiceState // one per choice (prompt·n + c)
	evs    []event       // the events of the current wake-up (reused)
	b      []byte        // frames not yet written (write sends and empties it)
	seen   int           // tokens taken from the scheduler so far
	first  bool          // no token wake-up yet (Faults.FirstTokenDelay)
	until  time.Time     // the earliest held chunk's release (zero: none held)
	// native writes ollama's objects; timingHeaders sets the announced trailers at the end.
	native, timingHeaders bool
}

// write sends the gathered frames and flushes them; on a write error (the client left) it
// aborts the request and returns false.
func (s *streamRun) write() bool {
	if len(s.b) == 0 {
		return true
	}
	_, err := s.w.Write(s.b)
	s.b = s.b[:0]
	if err == nil {
		err = s.rc.Flush()
	}
	if err != nil {
		s.e.abort(s.cr)
		return false
	}
	return true
}

// emit appends choice's chunks (built by add) to the stream, or holds them while the
// choice's first chunk is late (Quirks.LateFirstChunk, LateFirstSteps) or its first K
// are bunched (Quirks.BunchFirst); held chunks always go first.
func (s *streamRun) emit(c *choiceState, add func([]byte) []byte) {
	q := &s.q
	if q.BunchFirst > 0 && c.bunched < q.BunchFirst {
		c.held = add(c.held)
		if c.bunched++; c.bunched == q.BunchFirst || c.fin != finNone {
			s.b = append(s.b, c.held...)
			c.held = c.held[:0]
		}
		return
	}
	if q.LateFirstChunk <= 0 && q.LateFirstSteps <= 0 {
		s.b = add(s.b)
		return
	}
	now := time.Now()
	if !c.started {
		hold := q.LateFirstChunk + time.Duration(q.LateFirstSteps*float64(s.e.metrics.lastDecodeStep()))
		c.started, c.holdUntil = true, now.Add(hold)
	}
	if now.Before(c.holdUntil) {
		c.held = add(c.held)
		return
	}
	s.b = append(s.b, c.held...)
	c.held = c.held[:0]
	s.b = add(s.b)
}

// release moves held chunks whose time has come (all of them with all) to the stream
// and returns the earliest time a chunk is still held until (zero when none is).
func (s *streamRun) release(all bool) time.Time {
	var next time.Time
	now := time.Now()
	for i := range s.st {
		c := &s.st[i]
		if len(c.held) == 0 || !all && c.bunched > 0 && c.bunched < s.q.BunchFirst {
			continue // empty, or a bunch still gathering (emit releases it)
		}
		if all || !now.Before(c.holdUntil) {
			s.b = append(s.b, c.held...)
			c.held = c.held[:0]
			continue
		}
		if next.IsZero() || c.holdUntil.Before(next) {
			next = c.holdUntil
		}
	}
	return next
}

// emptyFirstChunks writes one chunk with empty text per choice before any token
// (dialect.emptyFirstChunk); it returns false when the client has left.
func (s *streamRun) emptyFirstChunks() bool {
	for i := range s.st {
		s.emit(&s.st[i], func(b []byte) []byte { return s.frames.chunk(b, int32(i), nil, finNone, &s.st[i], false) })
	}
	return s.write()
}

// next handles one wake-up: it waits for the scheduler's events, a keep-alive tick
// (Faults.KeepAlive: an SSE comment, or a blank ndjson line) or a held chunk's release
// time, and writes what they make. It returns false once the stream has ended: finished
// (finish), cut by an injected fault, or left by the client.
func (s *streamRun) next() bool {
	flt := &s.spec.faults
	ok, ka, due := s.e.waitEvents(s.r, s.cr, flt.KeepAlive, s.until)
	switch {
	case !ok:
		return false
	case due:
		s.until = s.release(false)
		return s.write()
	case ka:
		if s.native {
			s.b = append(s.b, '\n') // a blank line: ndjson has no comments
		} else {
			s.b = append(s.b, ": keep-alive\n\n"...)
		}
		return s.write()
	}
	if s.first && flt.FirstTokenDelay > 0 {
		time.Sleep(flt.FirstTokenDelay)
	}
	s.first = false
	s.until = s.release(false)
	var all bool
	s.evs, all = s.cr.take(s.evs)
	for i, ev := range s.evs {
		if s.fault(ev) {
			return false
		}
		s.token(i, ev)
	}
	if all {
		s.finish()
		return false
	}
	return s.write()
}

// fault applies, before event ev, the faults keyed on the count of tokens sent so far:
// Faults.ErrorAfter (an in-stream error event), ResetAfter (a TCP RST), CutAfter (half of
// ev's chunk, then close) and Quirks.Stall (silence on an open connection) end the stream
// and return true; Faults.StallFor pauses it for that long.
func (s *streamRun) fault(ev event) (ended bool) {
	flt := &s.spec.faults
	switch s.seen {
	case flt.ErrorAfter:
		s.release(true)
		s.b = s.frames.errorEvent(s.b, 500, "injected error after "+strconv.Itoa(s.seen)+" tokens")
		s.write()
		s.e.abort(s.cr)
		return true
	case flt.ResetAfter:
		s.write()
		s.e.abort(s.cr)
		hijackClose(s.w, true)
		return true
	case flt.CutAfter:
		c := s.e.applyEvent(s.st, ev)
		half := s.frames.token(nil, ev.choice, c, s.cr)
		s.b = append(s.b, half[:len(half)/2]...)
		s.write()
		s.e.abort(s.cr)
		hijackClose(s.w, false)
		return true
	}
	if s.q.Stall > 0 && s.seen == s.q.Stall && !ev.noToken {
		// a hung server: nothing more is sent, the connection stays open
		s.write()
		s.e.abort(s.cr)
		select {
		case <-s.r.Context().Done():
		case <-s.e.stop:
		}
		return true
	}
	if flt.StallFor > 0 && s.seen == flt.StallAfter {
		if !s.write() {
			return true
		}
		time.Sleep(flt.StallFor)
	}
	return false
}

// token adds ev, the i-th event of this wake-up, to its choice and emits the choice's
// pending tokens as one chunk when chunkDue says so.
func (s *streamRun) token(i int, ev event) {
	if !ev.noToken {
		s.seen++
		s.frames.reqTokens++
	}
	c := s.e.applyEvent(s.st, ev)
	if !s.chunkDue(i, ev, c) {
		return
	}
	s.emit(c, func(b []byte) []byte { return s.frames.token(b, ev.choice, c, s.cr) })
	c.textOff += utf8.RuneCount(c.text)
	c.text = c.text[:0]
	c.toks = c.toks[:0]
	c.pending = 0
}

// chunkDue reports whether choice c, just given the i-th event ev, sends its pending
// tokens now: always at its finish; otherwise once stream_interval tokens are pending and
// the next event is not the same choice's in the same step (unless the dialect sends a
// chunk per token), and not while the dialect's chunk mix (ollama: 1–3 tokens) or
// Quirks.Coalesce (a fraction of chunks, drawn from the response id's hash) merges it with
// the choice's next chunk.
func (s *streamRun) chunkDue(i int, ev event, c *choiceState) bool {
	if c.fin != finNone {
		return true
	}
	sameStepNext := !s.e.wire.perTokenChunks && i+1 < len(s.evs) && s.evs[i+1].choice == ev.choice && s.evs[i+1].step == ev.step
	if c.pending < s.spec.streamInterval || sameStepNext {
		return false
	}
	if s.e.wire.chunkMix && c.pending < chunkMixTarget(&s.spec, ev.choice, c.tokens-c.pending) {
		return false
	}
	if s.q.Coalesce > 0 &&
		float64(mix64(s.spec.hash^uint64(ev.choice)<<32^uint64(c.tokens))>>11)/(1<<53) < s.q.Coalesce {
		return false // merged with the choice's next chunk
	}
	return true
}

// finish ends a stream whose sequences have all finished: late first chunks still held
// leave when due, then the dialect's end (ollama's final object; or the usage chunk when
// requested and "data: [DONE]"), then the announced trailers: Generation-Duration in
// seconds (first to last token) and Speculation-Acceptance (accepted / drafted).
func (s *streamRun) finish() {
	for next := s.release(false); !next.IsZero(); next = s.release(false) {
		if !s.write() {
			return
		}
		if ok, _, _ := s.e.waitEvents(s.r, s.cr, 0, next); !ok {
			return
		}
	}
	prompt, completion, cached := s.e.usage(s.spec, s.cr, s.st)
	gen, acc := timing(s.cr, s.st)
	switch {
	case s.native:
		s.b = s.e.nativeDone(s.b, s.spec.model, &s.st[0], s.cr, nil)
	default:
		if s.spec.includeUsage && s.e.wire.usageChunk {
			s.b = s.frames.usageChunk(s.b, prompt, completion, cached, gen, acc)
		}
		if s.e.wire.done {
			s.b = append(s.b, "data: [DONE]\n\n"...)
		}
	}
	if !s.write() {
		return
	}
	if s.timingHeaders {
		h := s.w.Header()
		h.Set("Generation-Duration", strconv.FormatFloat(gen.Seconds(), 'f', 6, 64))
		if acc >= 0 {
			h.Set("Speculation-Acceptance", strconv.FormatFloat(acc, 'f', 4, 64))
		}
	}
}
