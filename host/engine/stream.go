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

// streamAs is stream, writing ollama's native objects when native.
func (e *Engine) streamAs(w http.ResponseWriter, r *http.Request, spec completionSpec, cr *request, native bool) {
	h := w.Header()
	if native {
		h.Set("Content-Type", "application/x-ndjson")
	} else {
		h.Set("Content-Type", "text/event-stream; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
	}
	if e.wire.streamHeaders != nil {
		e.wire.streamHeaders(h, spec)
	}
	timingHeaders := e.cfg.TimingHeaders && !native
	if timingHeaders {
		tr := "Generation-Duration"
		if e.cfg.SpecTokens > 0 {
			tr += ", Speculation-Acceptance"
		}
		h.Set("Trailer", tr)
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	rc.Flush()
	frames := newStreamFrames(e, spec)
	frames.native = native
	flt := spec.faults
	q := e.cfg.Quirks
	st := newChoiceStates(spec, cr)
	var evs []event
	b := make([]byte, 0, 4096)
	seen := 0 // tokens taken from the scheduler
	first := true
	write := func() bool {
		if len(b) == 0 {
			return true
		}
		_, err := w.Write(b)
		b = b[:0]
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			e.abort(cr)
			return false
		}
		return true
	}
	// emit appends choice's chunks (built by add) to the stream, or holds them while the
	// choice's first chunk is late (Quirks.LateFirstChunk, LateFirstSteps) or its first K
	// are bunched (Quirks.BunchFirst); held chunks always go first.
	emit := func(c *choiceState, add func([]byte) []byte) {
		if q.BunchFirst > 0 && c.bunched < q.BunchFirst {
			c.held = add(c.held)
			if c.bunched++; c.bunched == q.BunchFirst || c.fin != finNone {
				b = append(b, c.held...)
				c.held = c.held[:0]
			}
			return
		}
		if q.LateFirstChunk <= 0 && q.LateFirstSteps <= 0 {
			b = add(b)
			return
		}
		now := time.Now()
		if !c.started {
			hold := q.LateFirstChunk + time.Duration(q.LateFirstSteps*float64(e.metrics.lastDecodeStep()))
			c.started, c.holdUntil = true, now.Add(hold)
		}
		if now.Before(c.holdUntil) {
			c.held = add(c.held)
			return
		}
		b = append(b, c.held...)
		c.held = c.held[:0]
		b = add(b)
	}
	// release moves held chunks whose time has come (all of them with all) to the stream
	// and returns the earliest time a chunk is still held until (zero when none is).
	release := func(all bool) time.Time {
		var next time.Time
		now := time.Now()
		for i := range st {
			c := &st[i]
			if len(c.held) == 0 || !all && c.bunched > 0 && c.bunched < q.BunchFirst {
				continue // empty, or a bunch still gathering (emit releases it)
			}
			if all || !now.Before(c.holdUntil) {
				b = append(b, c.held...)
				c.held = c.held[:0]
				continue
			}
			if next.IsZero() || c.holdUntil.Before(next) {
				next = c.holdUntil
			}
		}
		return next
	}
	if e.wire.emptyFirstChunk {
		for i := range st {
			emit(&st[i], func(b []byte) []byte { return frames.chunk(b, int32(i), nil, finNone, &st[i], false) })
		}
		if !write() {
			return
		}
	}
	perToken := e.wire.perTokenChunks
	var until time.Time // the earliest held chunk's release
	for {
		ok, ka, due := e.waitEvents(r, cr, flt.KeepAlive, until)
		if !ok {
			return
		}
		if due {
			until = release(false)
			if !write() {
				return
			}
			continue
		}
		if ka {
			if native {
				b = append(b, '\n') // a blank line: ndjson has no comments
			} else {
				b = append(b, ": keep-alive\n\n"...)
			}
			if !write() {
				return
			}
			continue
		}
		if first && flt.FirstTokenDelay > 0 {
			time.Sleep(flt.FirstTokenDelay)
		}
		first = false
		until = release(false)
		var all bool
		evs, all = cr.take(evs)
		for i, ev := range evs {
			switch seen {
			case flt.ErrorAfter:
				release(true)
				b = frames.errorEvent(b, 500, "injected error after "+strconv.Itoa(seen)+" tokens")
				write()
				e.abort(cr)
				return
			case flt.ResetAfter:
				write()
				e.abort(cr)
				hijackClose(w, true)
				return
			case flt.CutAfter:
				c := e.applyEvent(st, ev)
				half := frames.token(nil, ev.choice, c, cr)
				b = append(b, half[:len(half)/2]...)
				write()
				e.abort(cr)
				hijackClose(w, false)
				return
			}
			if q.Stall > 0 && seen == q.Stall && !ev.noToken {
				// a hung server: nothing more is sent, the connection stays open
				write()
				e.abort(cr)
				select {
				case <-r.Context().Done():
				case <-e.stop:
				}
				return
			}
			if flt.StallFor > 0 && seen == flt.StallAfter {
				if !write() {
					return
				}
				time.Sleep(flt.StallFor)
			}
			if !ev.noToken {
				seen++
				frames.reqTokens++
			}
			c := e.applyEvent(st, ev)
			sameStepNext := !perToken && i+1 < len(evs) && evs[i+1].choice == ev.choice && evs[i+1].step == ev.step
			if c.fin == finNone && (c.pending < spec.streamInterval || sameStepNext) {
				continue
			}
			if c.fin == finNone && e.wire.chunkMix && c.pending < chunkMixTarget(&spec, ev.choice, c.tokens-c.pending) {
				continue
			}
			if c.fin == finNone && q.Coalesce > 0 &&
				float64(mix64(spec.hash^uint64(ev.choice)<<32^uint64(c.tokens))>>11)/(1<<53) < q.Coalesce {
				continue // merged with the choice's next chunk
			}
			emit(c, func(b []byte) []byte { return frames.token(b, ev.choice, c, cr) })
			c.textOff += utf8.RuneCount(c.text)
			c.text = c.text[:0]
			c.toks = c.toks[:0]
			c.pending = 0
		}
		if all {
			// late first chunks still held leave when due, then the end of the stream
			for next := release(false); !next.IsZero(); next = release(false) {
				if !write() {
					return
				}
				if ok, _, _ := e.waitEvents(r, cr, 0, next); !ok {
					return
				}
			}
			prompt, completion, cached := e.usage(spec, cr, st)
			gen, acc := timing(cr, st)
			switch {
			case native:
				b = e.nativeDone(b, spec.model, &st[0], cr, nil)
			default:
				if spec.includeUsage && e.wire.usageChunk {
					b = frames.usageChunk(b, prompt, completion, cached, gen, acc)
				}
				if e.wire.done {
					b = append(b, "data: [DONE]\n\n"...)
				}
			}
			if !write() {
				return
			}
			if timingHeaders {
				h.Set("Generation-Duration", strconv.FormatFloat(gen.Seconds(), 'f', 6, 64))
				if acc >= 0 {
					h.Set("Speculation-Acceptance", strconv.FormatFloat(acc, 'f', 4, 64))
				}
			}
			return
		}
		if !write() {
			return
		}
	}
}
