package engine

// tokenAt returns the vocabulary index of q's token at output position pos and whether it is
// EOS: a deterministic function of (seed, prompt, choice, position); EOS with probability
// EOSProbability when ignore_eos is off and pos ≥ min_tokens.
func (s *scheduler) tokenAt(q *seq, pos int) (vi int32, eos bool) {
	h := mix64(q.genSeed + uint64(pos+1)*0x9e3779b97f4a7c15)
	vi = int32(h % uint64(len(s.vocab.ids)))
	if !q.ignoreEOS && pos >= q.minTokens && s.cfg.EOSProbability > 0 &&
		float64(mix64(h^0xe05)>>11)/(1<<53) < s.cfg.EOSProbability {
		return -1, true
	}
	return vi, false
}

// accepted returns how many of q's draft drafted tokens the target model accepts: the run
// of leading successes, each with probability SpecAcceptance, decided by a hash of (sequence,
// position, draft index) so that runs are reproducible.
func (s *scheduler) accepted(q *seq, draft int) int {
	a := 0
	for a < draft {
		u := float64(mix64(q.genSeed^0xacce97+uint64(q.generated)<<8+uint64(a))>>11) / (1 << 53)
		if u >= s.cfg.SpecAcceptance {
			break
		}
		a++
	}
	return a
}

// sample generates q's next token (see tokenAt) and returns its event for the request's
// handler.
func (s *scheduler) sample(q *seq, at int64) event {
	if q.zeroToken {
		q.fin = finStop
		s.logSeq(q, 0, at)
		return event{choice: q.choice, vi: -1, fin: finStop, step: s.step, at: at, noToken: true}
	}
	pos := q.generated
	vi, eos := s.tokenAt(q, pos)
	fin := finNone
	if eos {
		fin = finStop
	}
	q.generated++
	q.lastVI = vi
	if fin == finNone && q.stopAt > 0 && q.generated >= q.stopAt {
		fin = finStop // Quirks.EarlyStop: despite ignore_eos
	}
	if fin == finNone && (q.generated >= q.maxTokens || q.known() >= s.cfg.MaxModelLen) {
		fin = finLength
	}
	q.fin = fin
	if q.generated == 1 {
		q.firstStep, q.firstAt = s.step, at
	}
	if fin != finNone {
		s.logSeq(q, s.step, at)
	}
	s.e.metrics.observeToken(q, fin != finNone)
	return event{choice: q.choice, vi: vi, fin: fin, step: s.step, at: at}
}
