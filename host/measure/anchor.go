package measure

import (
	"math"
	"slices"
	"time"

	"github.com/genload/genload/host/stats"
)

// Where a sequence's per-forward timing starts: its first consistent chunk.
//
// A chunk's arrival is consistent with the chunks after it when it is not later than they
// imply: each of the nearest predicting chunks after it, moved back by the forward passes
// between at the local forward pass, predicts when it should have arrived, and its residual
// (arrival − the earliest prediction) is at most the tolerance. The earliest, because what
// spoils a prediction makes it late, never early: a predicting chunk read late, or a slower
// step between it and the chunk judged — a first chunk late by half a step that a stall two
// chunks later would hide from the median of the predictions is still seen by the nearest. The local forward pass is the
// median time per forward pass over the consecutive intervals of the nearest predicting
// chunks: a slow step among them is one interval of several and moves it little, and it
// follows steps that grow with the context. The scan runs backward from the last chunk, which
// is consistent by definition, so that the chunks a held-back start delayed — however many —
// are judged against on-time chunks only, never against each other. The first consistent
// chunk is where the figure starts; its forward index is where its forward passes are counted
// from.
//
// The test is one-sided: a chunk earlier than the line (a slower step after it, or a first
// chunk sent before the decode steps began) is a real forward pass of the sequence and stays
// in the figure. Bunched starts (the first K chunks held and released together), a first chunk
// late by a fraction of a step (Nagle's algorithm with delayed ACK on slow steps) and starts
// coalesced into one read are one case: chunks later than the chunks after them imply.
//
// The tolerance is anchorK robust standard deviations of the residual, measured over the
// consistent chunks of every full sequence of the cell (1.4826 × their median absolute
// deviation), and at least anchorTolMin of the local forward pass (and anchorTolAbs), at most
// anchorTolMax of it: a first chunk late by more than a quarter step is always skipped, one
// late by less than the jitter can show cannot be told from jitter. Its bias on a figure over
// N forward passes is then at most the tolerance / N forward passes (0.25 / 47 ≈ 0.5 % at
// max_tokens 48, at the cap).
//
// The first consistent chunk is moved past the chunks read together with it (within a quarter
// of a forward pass of the next): a read takes whatever has arrived, so the first of a read
// was read the latest, and the last of it is the least late.
//
// A leading run of chunks the scan found late is kept when it is a stream of its own — at least
// three chunks keeping at least half a step's pace among themselves, consistent with the first
// consistent chunk at that pace (leadingRegime): steps that were faster before (a lighter
// batch, a host that got busier) look late against the chunks after them; held-back chunks
// arrive compressed, a fraction of a step apart.
//
// Limits: the last anchorNear chunks are taken to be on time (a stream whose held-back chunks
// reach its end has nothing on time to judge them by), and one or two chunks before a slowdown
// look late: the figure then starts after them and the warning says so.
const (
	// anchorNear is how many of the nearest predicting chunks predict a chunk's arrival
	// (the earliest counts).
	anchorNear = 3
	// anchorSlopeW is how many of the nearest predicting chunks give the local forward pass:
	// the median time per forward pass over their anchorSlopeW − 1 consecutive intervals. A
	// slow step is one interval: five of eleven leave the median among the others (pairs
	// farther apart average the jitter better, but two stalls in twelve chunks already span
	// half of the pairs four apart).
	anchorSlopeW, anchorSlopeGap = 12, 1
	// anchorSlack is how much shorter the forward passes a prediction is carried back over
	// may have been than the local forward pass, relative: steps vary and grow, and nearby
	// stretches differ by a few percent; carried back k forward passes, a prediction allows
	// k × anchorSlack of a step more, while a chunk held back is late by the same amount
	// whatever the distance.
	anchorSlack = 0.03
	// anchorRegime and anchorRegimeMin: a leading run of at least anchorRegime marks the scan
	// found late is kept when it keeps a pace of its own of at least anchorRegimeMin of the
	// local forward pass after it (see leadingRegime).
	anchorRegime, anchorRegimeMin = 3, 0.5
	// anchorK is the tolerance in robust standard deviations of the residual.
	anchorK = 3
	// anchorTolMin and anchorTolMax bound the tolerance, as fractions of the local forward
	// pass; anchorTolAbs is its absolute floor (the clock's and the reader's resolution).
	anchorTolMin, anchorTolMax = 0.05, 0.25
	anchorTolAbs               = float64(20 * time.Microsecond)
)

// consistency is the outcome of scan over one sequence's marks.
type consistency struct {
	// first is the index of the first consistent mark; member marks every consistent one.
	first  int
	member []bool
	// firstRes is the first mark's residual (ns; positive: later than the chunks after it
	// imply).
	firstRes float64
}

// scanScratch is the working memory of the scans of one Compute, reused from one sequence
// to the next: the predicting marks, the seed's indices, the local forward pass's rates and
// its sliding window, and the consistency flags of a scan whose flags are not kept. The zero
// value is ready to use.
type scanScratch struct {
	mem, raw []int
	rates    []float64
	pass     passWindow
	member   []bool
}

// scan judges the marks ps (arrival t, forward index f strictly increasing) from the last
// backward (see the comment above): a mark is consistent when its residual is at most
// tol(local forward pass). The marks that predict the earlier ones are those within
// refTol(local forward pass), a looser bound: jitter that the strict tolerance rejects now and
// then must not leave the marks before it to be predicted from ever farther away, where an
// error in the local forward pass grows with the distance, while chunks a held-back start
// delayed by a step or more never predict. When resid is not nil, each predicting mark's
// residual is appended to it. member, when not nil, is the storage (len(ps) flags) of the
// result's member, else sc's is used, valid until the next scan on sc.
func scan(ps []point, tol, refTol func(slope float64) float64, resid *[]float64, sc *scanScratch, member []bool) consistency {
	n := len(ps)
	if member == nil {
		sc.member = grown(sc.member, n)
		member = sc.member
	}
	clear(member)
	c := consistency{member: member}
	if n == 0 {
		return c
	}
	// the last anchorNear marks are taken to be on time: they seed the predictions (a late
	// one among them predicts late, and the earliest prediction counts); their local forward pass, until
	// anchorSlopeW consistent marks give one, is the same median over the last
	// anchorSlopeW marks
	seedN := min(n, anchorNear)
	mem := sc.mem[:0] // the predicting marks, nearest to the scan last
	for i := n - 1; i >= n-seedN; i-- {
		mem = append(mem, i)
		c.member[i] = true
		c.first = i
	}
	raw := sc.raw[:0]
	for i := n - 1; i >= max(n-anchorSlopeW, 0); i-- {
		raw = append(raw, i)
	}
	sc.raw = raw
	seed := localPass(ps, raw, &sc.rates)
	// the local forward pass over the last anchorSlopeW predicting marks, kept as they
	// change by one mark at a time (localPass over mem[len(mem)−anchorSlopeW:])
	sc.pass.reset()
	var preds [anchorNear]float64
	for a := n - seedN - 1; a >= 0; a-- {
		s := seed
		if len(mem) >= anchorSlopeW {
			s = sc.pass.follow(ps, mem)
		}
		k := 0
		for j := len(mem) - 1; j >= 0 && k < anchorNear; j-- {
			p := ps[mem[j]]
			preds[k] = p.t - (1-anchorSlack)*s*(p.f-ps[a].f)
			k++
		}
		r := ps[a].t - slices.Min(preds[:k])
		if a == 0 {
			c.firstRes = r
		}
		if s <= 0 || r <= refTol(s) {
			mem = append(mem, a)
			if resid != nil {
				*resid = append(*resid, r)
			}
		}
		if s <= 0 || r <= tol(s) {
			c.member[a] = true
			c.first = a
		}
	}
	sc.mem = mem
	if first, ok := leadingRegime(ps, c.first, tol, refTol, sc); ok {
		for i := first; i < c.first; i++ {
			c.member[i] = true
		}
		c.first = first
	}
	// a first chunk read together with the next (within a quarter of a forward pass) was
	// read late, as a read takes whatever has arrived: the timing starts at the last chunk of
	// that read, the least late of it
	if s := medianPass(ps[c.first:min(c.first+anchorSlopeW+1, n)], &sc.rates); s > 0 {
		for c.first+1 < n-anchorNear && ps[c.first+1].t-ps[c.first].t < anchorTolMax*s*(ps[c.first+1].f-ps[c.first].f) {
			c.first++
			c.member[c.first] = true
		}
	}
	return c
}

// passWindow is localPass over the last anchorSlopeW predicting marks of a scan, mem[len(mem)
// − anchorSlopeW:], kept up to date as mem grows by one mark at a time: the rates (time per
// forward pass, ns) of its anchorSlopeW − 1 consecutive pairs in ascending order, one rate
// dropped and one added per new mark instead of all of them computed and sorted again. The
// median of the same rates is the same number (a median is a function of the multiset).
type passWindow struct {
	n      int // len(mem) the rates are of; 0: none yet
	sorted []float64
}

func (w *passWindow) reset() { w.n, w.sorted = 0, w.sorted[:0] }

// pairRate is the rate of the pair of predicting marks mem[j], mem[j+1] (mem decreasing:
// mem[j+1] is the earlier mark), localPass's rate of that pair; ok is false when they span no
// forward pass.
func pairRate(ps []point, mem []int, j int) (rate float64, ok bool) {
	p, q := ps[mem[j+1]], ps[mem[j]]
	if df := q.f - p.f; df > 0 {
		return (q.t - p.t) / df, true
	}
	return 0, false
}

// follow returns localPass(ps, mem[len(mem)−anchorSlopeW:], …) for len(mem) ≥ anchorSlopeW,
// mem having grown by at most one mark since the last call (after reset: by any number).
func (w *passWindow) follow(ps []point, mem []int) float64 {
	switch L := len(mem); {
	case w.n == L:
	case w.n == 0 || L != w.n+1:
		w.sorted = w.sorted[:0]
		for j := L - anchorSlopeW; j+1 < L; j++ {
			if r, ok := pairRate(ps, mem, j); ok {
				w.insert(r)
			}
		}
		w.n = L
	default: // the pair leaving the window, and the pair the new mark makes
		out, okOut := pairRate(ps, mem, L-1-anchorSlopeW)
		in, okIn := pairRate(ps, mem, L-2)
		switch {
		case okOut && okIn:
			w.replace(out, in)
		case okOut:
			w.remove(out)
		case okIn:
			w.insert(in)
		}
		w.n = L
	}
	v := w.sorted
	switch n := len(v); {
	case n == 0:
		return 0
	case n%2 == 1:
		return v[n/2]
	default:
		return (v[n/2-1] + v[n/2]) / 2
	}
}

func (w *passWindow) insert(r float64) {
	i := len(w.sorted)
	for i > 0 && w.sorted[i-1] > r {
		i--
	}
	w.sorted = slices.Insert(w.sorted, i, r)
}

// replace removes one rate equal to out from the window and inserts in, in one pass: the
// rates between the two places shift by one.
func (w *passWindow) replace(out, in float64) {
	v := w.sorted
	i := slices.Index(v, out)
	if i < 0 {
		w.insert(in)
		return
	}
	for i > 0 && v[i-1] > in { // in goes lower: shift the rates between up
		v[i] = v[i-1]
		i--
	}
	for i+1 < len(v) && v[i+1] < in { // in goes higher: shift the rates between down
		v[i] = v[i+1]
		i++
	}
	v[i] = in
}

func (w *passWindow) remove(r float64) {
	if i := slices.Index(w.sorted, r); i >= 0 {
		w.sorted = slices.Delete(w.sorted, i, i+1)
	}
}

// leadingRegime judges the marks before first, which the scan found late, as a stream of
// their own: when there are at least anchorRegime of them and they keep a pace (from the first
// mark to first, per forward pass) of at least anchorRegimeMin of the local forward pass after
// first, they are
// scanned again on their own (scan over ps[:first+1], whose local forward passes are then
// theirs), and the first consistent mark of that scan is returned with ok. Steps that were
// faster before (a lighter batch, a host that got busier) look late against the chunks after
// them, but keep a step's pace among themselves; chunks held back arrive compressed, at a
// fraction of it, and a late first chunk or two have no pace of their own to show.
func leadingRegime(ps []point, first int, tol, refTol func(float64) float64, sc *scanScratch) (int, bool) {
	if first < anchorRegime || first+1 >= len(ps) {
		return 0, false
	}
	after := make([]float64, 0, anchorSlopeW)
	for i := first + 1; i < len(ps) && len(after) < anchorSlopeW; i++ {
		if df := ps[i].f - ps[i-1].f; df > 0 {
			after = append(after, (ps[i].t-ps[i-1].t)/df)
		}
	}
	df := ps[first].f - ps[0].f
	if len(after) == 0 || df <= 0 {
		return 0, false
	}
	// the pace over the whole run, first to last: a read late inside it leaves it as it was
	if rho, s := (ps[first].t-ps[0].t)/df, stats.MedianInPlace(after); rho <= 0 || rho < anchorRegimeMin*s {
		return 0, false
	}
	return scan(ps[:first+1], tol, refTol, nil, sc, nil).first, true
}

// localPass returns the median time per forward pass between the pairs of marks idx (indices
// into ps, in decreasing order) at most anchorSlopeGap apart in idx, 0 without a pair; scratch is
// scratch space, kept for the next call.
func localPass(ps []point, idx []int, scratch *[]float64) float64 {
	rates := (*scratch)[:0]
	defer func() { *scratch = rates }()
	for j := 0; j < len(idx); j++ {
		for g := 1; g <= anchorSlopeGap && j+g < len(idx); g++ {
			p, q := ps[idx[j+g]], ps[idx[j]]
			if df := q.f - p.f; df > 0 {
				rates = append(rates, (q.t-p.t)/df)
			}
		}
	}
	if len(rates) == 0 {
		return 0
	}
	return stats.MedianInPlace(rates)
}

// provisionalTol is the strict tolerance of the first scan, which measures the jitter (a
// quarter of the local forward pass); looseTol the bound of the predicting marks there.
func provisionalTol(s float64) float64 { return anchorTolMax * s }

// anchorRefMin is the least bound of the predicting marks, as a fraction of the local forward
// pass: half a step, under which the last chunk of a held-back bunch still predicts and every
// earlier one (a step or more late) does not.
const anchorRefMin = 0.5

func looseTol(s float64) float64 { return anchorRefMin * s }

// jitter is a cell's measured arrival jitter: the median residual of the predicting marks of
// the first scan (offset: a bias the predictions share — steps that grow make every mark look
// a little late, and the earliest of several predictions is early by their spread) and σ =
// 1.4826 × their median absolute deviation, both in ns.
type jitter struct{ offset, sigma float64 }

// measureJitter returns the jitter of the residuals resid (reordered in place).
func measureJitter(resid []float64) jitter {
	var j jitter
	if len(resid) > 0 {
		j.offset = stats.MedianInPlace(resid)
		j.sigma = stats.RobustSigmaInPlace(resid, j.offset)
	}
	return j
}

// beyond is how far past the offset a residual may lie at local forward pass s: anchorK·σ
// clamped to [max(anchorTolMin·s, anchorTolAbs), anchorTolMax·s].
func (j jitter) beyond(s float64) float64 {
	return min(max(anchorK*j.sigma, anchorTolMin*s, anchorTolAbs), anchorTolMax*s)
}

// tol is the strict tolerance of the second scan: offset + beyond(s).
func (j jitter) tol(s float64) float64 { return j.offset + j.beyond(s) }

// ref is the bound of the predicting marks of the second scan: offset + max(anchorRefMin·s,
// 2·anchorK·σ).
func (j jitter) ref(s float64) float64 { return j.offset + max(anchorRefMin*s, 2*anchorK*j.sigma) }

// Where a sequence's per-forward timing ends: its last chunk, unless the chunks at its end
// arrived later than the chunks before them imply.
//
// The chunks that arrived together at the end (each within anchorTolMax of a forward pass of
// the next, per forward pass: one late read, or a final flush that released them at once) are
// one group; its first chunk is predicted from each of the anchorNear chunks before the group,
// carried forward at the local forward pass (the median of the last anchorSlopeW intervals
// before the group, allowed to have been anchorSlack longer), and the latest prediction
// counts — a chunk read late before the group, or a slower step, makes a prediction early,
// never late. When the group's first chunk is later than every prediction by more than the
// strict tolerance, the timing ends at the chunk before the group. Only the end group is
// judged: a slower step in the middle shifts every chunk after it and stays in the figure.
// Limit: a slow last step looks like a late last chunk and is left out (the figure then
// reads low by its excess over the mean forward pass, divided by the passes timed).

// scanEnd returns the index of the last consistent mark of ps (arrival t, forward index f
// strictly increasing) after from, under jitter j.
func scanEnd(ps []point, from int, j jitter) int {
	n := len(ps)
	last := n - 1
	if n-from < anchorNear+2 {
		return last
	}
	rates := make([]float64, 0, anchorSlopeW)
	for i := last; i > from && len(rates) < anchorSlopeW; i-- {
		if df := ps[i].f - ps[i-1].f; df > 0 {
			rates = append(rates, (ps[i].t-ps[i-1].t)/df)
		}
	}
	s := stats.MedianInPlace(rates)
	if s <= 0 {
		return last
	}
	g := last
	for g-1 > from && ps[g].t-ps[g-1].t < anchorTolMax*s*(ps[g].f-ps[g-1].f) {
		g--
	}
	if g-anchorNear <= from {
		return last
	}
	pred := math.Inf(-1)
	for k := g - 1; k >= g-anchorNear; k-- {
		pred = max(pred, ps[k].t+(1+anchorSlack)*s*(ps[g].f-ps[k].f))
	}
	if ps[g].t-pred > j.beyond(s) {
		return g - 1
	}
	return last
}
