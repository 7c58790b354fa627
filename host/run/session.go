package run

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/results"

	"github.com/genload/genload/host/config"
)

// Session is a run's setup without its loop and its results file: the corpus, tokenizer and
// prompts, the target (the built-in engine started when it is one), the probe, the matrix and
// the plugins, ready to plan cells and measure plans — the same plan on two sessions
// (genload ab: side B measures side A's exact prompts and request shape). Close it.
type Session struct {
	s  *setup
	cr *cellRunner
}

// Plan is a cell's plan (lengths, prompts, route: host/plan) built by a session, to be
// measured any number of times, by that session or another.
type Plan struct{ p planned }

// Cell is the plan's cell.
func (p *Plan) Cell() matrix.Cell { return p.p.rec.Cell }

// Prepare runs cfg's setup (as Run does before its first cell) and returns the session; the
// error carries an exit code. opt.Stdout, Resume, Shard, Repeats and RunID are not used.
func Prepare(ctx context.Context, cfg *config.Config, opt Options) (*Session, error) {
	if opt.Stderr == nil {
		opt.Stderr = io.Discard
	}
	if opt.Getenv == nil {
		opt.Getenv = os.Getenv
	}
	s := &setup{cfg: cfg, opt: opt, start: time.Now()}
	cr, err := s.run(ctx)
	if err != nil {
		s.close()
		return nil, err
	}
	cr.watcher = s.watcher(ctx)
	return &Session{s: s, cr: cr}, nil
}

// Close releases what Prepare started (the client, the engine, the plugins).
func (s *Session) Close() { s.s.close() }

// Cells are the session's matrix, in matrix order.
func (s *Session) Cells() []matrix.Cell { return s.s.cells }

// Header is what a results file of the session would record (config, target, engine, …).
func (s *Session) Header() results.Header { return s.s.header }

// Plan builds the plan of cell c with this session's lengths plugin, prompts and router; the
// error (lengths, prompts, route) carries an exit code.
func (s *Session) Plan(ctx context.Context, c matrix.Cell) (*Plan, error) {
	p, err := s.cr.plan(ctx, c)
	if err != nil {
		return nil, err
	}
	return &Plan{p}, nil
}

// MeasurePlan measures p (made by this session or another: the prompts and request shape are
// p's) on this session's target: its warmup, the measured requests and the figures, with this
// session's settings. The record is filled as far as the cell got; the error carries its exit
// code.
func (s *Session) MeasurePlan(ctx context.Context, p *Plan) (results.Cell, error) {
	return s.cr.measurePlan(ctx, p.p.again())
}
