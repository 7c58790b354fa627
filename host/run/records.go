package run

import (
	"sync"
	"time"

	"github.com/genload/genload/host/cell"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/records"
)

// cellRecords writes the per-request records of a run's cells (genload run --records): one
// record per sequence of every warmup and measured plan, times from the file's origin.
type cellRecords struct {
	w      *records.Writer
	origin time.Time
	mu     sync.Mutex
	next   int
}

// add writes res's sequences as records of cell c in phase ("warmup" or "measured"); a nil
// cellRecords writes nothing. A write error is kept by the writer and reported at its Close.
func (cr *cellRecords) add(c matrix.Cell, phase string, p *cell.Plan, res *recording.Result) {
	if cr == nil || res == nil {
		return
	}
	built := p.Built
	if len(built) == 0 {
		for _, ids := range p.IDs {
			built = append(built, len(ids))
		}
	}
	rs := records.FromResult(res, cr.origin, built, func(r *records.Record) { r.Cell, r.Phase = c.Key(), phase })
	cr.mu.Lock()
	for i := range rs {
		rs[i].Index = cr.next
		cr.next++
	}
	cr.mu.Unlock()
	_ = cr.w.Write(rs...)
}
