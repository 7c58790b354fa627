package engine

import (
	"fmt"
	"time"
)

// logStep writes one Config.StepLog line for the step that ended at end; one Fprintf, so that
// a line reaches the writer whole.
// It runs before commit, while each sequence's sched still holds the step's work.
func (s *scheduler) logStep(end time.Time, batch []*seq, shape StepShape, sim, planned, actual time.Duration, noise float64) {
	decoding := 0 // sequences with output that decode their next token (not a 1-token prefill rest)
	for _, q := range batch {
		if q.generated > 0 && q.sched-q.draft == 1 && q.computed > 0 {
			decoding++
		}
	}
	buf := make([]byte, 0, 256)
	buf = append(buf, "time="...)
	buf = end.UTC().AppendFormat(buf, "2006-01-02T15:04:05.000000Z07:00")
	buf = fmt.Appendf(buf, " step=%d active=%d decode=%d decoding=%d prefill_tokens=%d spec_tokens=%d waiting=%d kv_blocks=%d experts=%d sum_ctx=%d max_ctx=%d fwd_ms=%.3f wall_ms=%.3f",
		s.step, len(batch), shape.DecodeSeqs, decoding, shape.PrefillTokens, shape.SpecTokens, len(s.waiting), s.kv.used, shape.Experts,
		shape.SumCtx, shape.MaxCtx, float64(sim)/1e6, float64(actual)/1e6)
	if planned > 0 {
		buf = fmt.Appendf(buf, " planned_ms=%.3f", float64(planned)/1e6)
	}
	if s.noise != nil {
		buf = fmt.Appendf(buf, " noise=%.6f", noise)
	}
	buf = append(buf, '\n')
	_, _ = s.cfg.StepLog.Write(buf)
}

// logSeq writes q's Config.SeqLog line; last is the step of its last token at time at.
func (s *scheduler) logSeq(q *seq, last uint64, at int64) {
	if s.cfg.SeqLog == nil {
		return
	}
	firstMs, lastMs := -1.0, -1.0
	if q.generated > 0 {
		firstMs, lastMs = float64(q.firstAt)/1e6, float64(at)/1e6
	}
	fmt.Fprintf(s.cfg.SeqLog, "seq req=%d id=%s choice=%d prompt=%d max_tokens=%d tokens=%d finish=%s arrival_ms=%.4f first_step=%d last_step=%d first_ms=%.4f last_ms=%.4f\n",
		q.req.num, q.req.id, q.choice, q.promptLen, q.req.asked, q.generated, s.e.wire.finishString(q.fin),
		float64(q.req.arrival.Sub(s.e.startedAt))/1e6, q.firstStep, last, firstMs, lastMs)
}
