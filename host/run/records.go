package run

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/plan"
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

// add writes res's sequences as records of cell c in phase ("warmup", "measured", or
// "remeasured": an attempt sent again, see sendMeasured); a nil
// cellRecords writes nothing. A write error is kept by the writer and reported at its Close.
func (cr *cellRecords) add(c matrix.Cell, phase string, p *plan.Plan, res *recording.Result) {
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

// checkRecordsPath checks, before anything is started, that a records file can be created at
// path: it does not exist (a records file is never overwritten) and its directory exists and
// takes a new file (a probe file is created there and removed). Errors name the flag
// (exitcode.InvalidConfig).
func checkRecordsPath(path string) error {
	bad := func(format string, a ...any) error {
		return exitcode.Errorf(exitcode.InvalidConfig, "--records %s: "+format, append([]any{path}, a...)...)
	}
	if fi, err := os.Lstat(path); err == nil && fi.IsDir() {
		return bad("a directory: give the path of a file to create in it (%s)", filepath.Join(path, "<run-id>.records.jsonl"))
	} else if err == nil {
		return bad("the file exists: a records file is never overwritten (choose another path, or remove it)")
	} else if !errors.Is(err, fs.ErrNotExist) {
		return bad("%v", err)
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil {
		return bad("no directory %s to write it in", dir)
	} else if !fi.IsDir() {
		return bad("%s is not a directory", dir)
	}
	probe, err := os.CreateTemp(dir, ".genload-records-*")
	if err != nil {
		return bad("cannot create a file in %s: %v", dir, err)
	}
	probe.Close()
	_ = os.Remove(probe.Name())
	return nil
}

// createRecords creates the records file of a run whose header is h (Source "run", Started
// the origin of its times); nil for no path. Errors name the flag (exitcode.InvalidConfig).
func createRecords(path string, h records.Header) (*cellRecords, error) {
	if path == "" {
		return nil, nil
	}
	origin := time.Now()
	h.Source, h.Started = "run", origin.UTC()
	rw, err := records.Create(path, h)
	if err != nil {
		return nil, exitcode.With(exitcode.InvalidConfig, fmt.Errorf("--records: %w", err))
	}
	return &cellRecords{w: rw, origin: origin}, nil
}

// discard closes and removes a records file that holds no record yet (its run could not
// start), so that the same command can be run again; a nil cellRecords does nothing.
func (cr *cellRecords) discard() {
	if cr == nil {
		return
	}
	_ = cr.w.Close()
	if cr.w.Count() == 0 {
		_ = os.Remove(cr.w.Path())
	}
}
