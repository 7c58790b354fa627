package run

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/dispatch"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/gcphase"
	"github.com/genload/genload/host/lengths"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/plan"
	"github.com/genload/genload/host/plugin"
	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/scrape"
	"github.com/genload/genload/host/scrape/metrics"
	"github.com/genload/genload/host/warning"
)

// Dispatcher sends a cell's plan and returns its recording: the error only when nothing could
// be sent, each request's failure in the recording. host/dispatch's *Client satisfies it; tests
// fake it with a canned recording.
type Dispatcher interface {
	Do(ctx context.Context, p *plan.Plan) (*recording.Result, error)
}

// Completer is the optional half of a router: one that declared the "completions" capability
// is told how each request of a cell ended (host/plugin's *RouterPlugin satisfies it, a no-op
// for the others).
type Completer interface {
	Complete(ctx context.Context, done []plugin.Completion) error
}

// Watcher scrapes the servers' /metrics around a cell's measured requests (host/scrape's
// *Watcher satisfies it).
type Watcher interface {
	Begin(ctx context.Context) error
	EndRouted(ctx context.Context, batch int, assign []int) (scrape.CellMetrics, error)
}

var (
	_ Dispatcher      = (*dispatch.Client)(nil)
	_ lengths.Lengths = (*plugin.LengthsPlugin)(nil)
	_ lengths.Router  = (*plugin.RouterPlugin)(nil)
	_ Completer       = (*plugin.RouterPlugin)(nil)
	_ Watcher         = (*scrape.Watcher)(nil)
)

// cellRunner measures one cell after another, in stages that each take the previous one's
// value: plan (lengths, prompts, route: plan.Stages) → warmup → measured requests (with
// /metrics scraped around them) → figures (host/measure) → warnings. Nothing in it talks to
// a server but its Dispatcher and Watcher.
type cellRunner struct {
	cfg     *config.Config
	stages  plan.Stages
	client  Dispatcher
	router  Completer // nil unless routed with a router
	watcher Watcher   // nil when the servers have no /metrics
	// servers is the server of each routing worker (serverKeys) when they reach several,
	// workerNames the workers' names: each server's share gets figures of its own.
	servers, workerNames []string
	// capacity is what each worker's server can hold at once (capacities; nil or zero
	// entries: unknown), held against every cell before it is sent.
	capacity []scrape.Capacity
	// metrics is the run's /metrics step times so far (nil: not kept).
	metrics *metricHistory
	records *cellRecords // nil without --records
	// tok, when not nil, derives per-chunk token counts from the kept text (see
	// ChunkCountsKey).
	tok measure.TokenEnder
	// gauges is the run's cells whose running-requests gauge read one value throughout.
	gauges gaugeHistory
	// answered is set once a request of the run succeeded: a failure before it is of the
	// first request (firstHint).
	answered bool
}

// firstHint is summarize(err) with, for a failure of the run's first cell requests (before
// any succeeded), tokenPromptHint's fix; later failures get none, since token ids were
// accepted then.
func (r *cellRunner) firstHint(err error) error {
	s := summarize(err)
	if h := promptHint(err, r.cfg.Prompt.Format); h != "" && !r.answered {
		return fmt.Errorf("%w: %s", s, h)
	}
	return s
}

// replay repeats the routing call of a cell that the run being resumed measured already.
func (r *cellRunner) replay(ctx context.Context, c matrix.Cell) error {
	return r.stages.Replay(ctx, c)
}

// measure runs one cell: its plan, the warmup with the exact prompts and request shape
// (max_tokens = 1), the measured requests with /metrics scraped around them, and the
// figures. The record is filled as far as the cell got; the error carries its exit code.
func (r *cellRunner) measure(ctx context.Context, c matrix.Cell) (results.Cell, error) {
	p, err := r.plan(ctx, c)
	if err != nil {
		return p.rec, err
	}
	return r.measurePlan(ctx, p)
}

// planned is a cell's plan with the start of its record: the realised lengths and their
// warning, and when the cell started (t0, for its elapsed time).
type planned struct {
	rec  results.Cell
	plan *plan.Plan
	t0   time.Time
}

// again returns p restarted now, for measuring its plan once more (a repeat): the same plan
// and lengths, a new start time.
func (p planned) again() planned {
	p.rec.Started, p.t0 = time.Now().UTC(), time.Now()
	p.rec.Warnings, p.rec.WarningNames = slices.Clone(p.rec.Warnings), slices.Clone(p.rec.WarningNames)
	return p
}

// plan builds a cell's plan (lengths, prompts, route); on an error the record is the failed
// cell's.
func (r *cellRunner) plan(ctx context.Context, c matrix.Cell) (planned, error) {
	p := planned{rec: results.Cell{Cell: c, Status: results.StatusError, Started: time.Now().UTC()}, t0: time.Now()}
	var built *plan.Plan
	var err error
	planning(func() { built, err = r.stages.Build(ctx, c) })
	if built != nil && built.Lengths.Each != nil {
		p.rec.Lengths = reportLengths(built.Lengths)
		if w := built.Lengths.Warning(); w != "" {
			p.rec.Warn(warning.New(warning.LengthsOffTarget, w))
		}
	}
	if err != nil {
		code := exitcode.PluginRejected // the lengths or the router plugin
		if se := (*plan.Error)(nil); errors.As(err, &se) && (se.Stage == "prompts" || se.Stage == "requests") {
			code = exitcode.InvalidConfig
		}
		p.rec.Error = err.Error()
		p.rec.Elapsed = results.Millis(time.Since(p.t0))
		return p, exitcode.With(code, err)
	}
	p.plan = built
	return p, nil
}

// planGCPercent is the collector's target (GOGC) while a cell is planned. Planning tokenizes
// every prompt's corpus row and keeps a fraction of what it allocates (1,024 rows of 128
// tokens: about 50 MB allocated, 18 MB live after), so at the default of 100 the heap grew
// to twice its live size while planning and that high-water mark stayed resident through the
// cell, the run's peak RSS: an array cell of N = 1,024 peaked at 66–70 MB, 60–61 MB at 50,
// for 6 more collections (15 ms of collector CPU) before the cell's first request; a run of
// the 13 cells of L = 16,000 collects 20 times instead of 15. The requests run at the
// process's own target. Collecting and returning the plan's garbage to the OS after planning
// as well (debug.FreeOSMemory) gave 58–60 MB, but 31 collections in that run and more cells
// of the built-in engine over their planned step time on a busy host: not done.
const planGCPercent = 50

// planning runs build, a cell's planning, at the collector target planGCPercent (or the
// process's, when that is lower or off), then restores the process's target.
func planning(build func()) {
	defer gcphase.Lower(planGCPercent)()
	build()
}

// measurePlan measures a planned cell: the warmup, the measured requests and the figures.
func (r *cellRunner) measurePlan(ctx context.Context, p planned) (results.Cell, error) {
	cfg := r.cfg
	plan, rec, t0 := p.plan, p.rec, p.t0
	fail := func(code exitcode.Code, err error) (results.Cell, error) {
		rec.Error = err.Error()
		rec.Elapsed = results.Millis(time.Since(t0))
		return rec, exitcode.With(code, err)
	}
	rec.Workers = plan.Workers
	short := r.capacityWarnings(plan) // said for the matrix before the first cell: announceCapacity

	if !cfg.Warmup.Disabled {
		if err := r.warmup(ctx, plan, &rec); err != nil {
			return fail(exitcode.TargetFailed, err)
		}
		r.answered = true
	}
	res, err := r.sendMeasured(ctx, plan, &rec)
	if err != nil {
		return fail(exitcode.TargetFailed, r.firstHint(err))
	}
	r.answered = true
	fig := r.figures(plan, res, &rec)
	rec.Elapsed = results.Millis(time.Since(t0))
	r.judge(plan, res, &rec, fig, short)
	if fig.Prompts != nil && fig.Prompts.TruncationError != "" {
		// The figures stay in the record; the cell is an error because the server did not
		// process the prompts genload sent.
		rec.Status = results.StatusError
		return fail(exitcode.TargetFailed, errors.New(fig.Prompts.TruncationError))
	}
	return rec, nil
}

// sendMeasured sends the measured requests of plan (send), and sends them again while the
// built-in engine says the host disturbed the attempt (its steps ran over the stated share,
// metrics.Overrun.Disturbed) with a few late steps (metrics.Overrun.Intermittent: a lateness
// of every step would recur), at most [run] remeasure_overrun times more. Each discarded
// attempt's lateness and wall time go to rec.Remeasured and its requests to the records file
// as phase "remeasured"; rec's figures are then the kept attempt's, its MeasuredElapsed the
// sum over all of them. An attempt that failed, or was interrupted, is kept (its error is the
// cell's). Attempts are independent draws of the host's delays: a stall of milliseconds lands
// in one 40 ms B = 1 cell and not in the next.
func (r *cellRunner) sendMeasured(ctx context.Context, plan *plan.Plan, rec *results.Cell) (*recording.Result, error) {
	var spent results.Millis
	for attempt := 0; ; attempt++ {
		res, err := r.send(ctx, plan, rec, attempt == 0)
		spent += rec.MeasuredElapsed
		var o *metrics.Overrun
		if rec.Server != nil {
			o = rec.Server.Steps.Overrun
		}
		if err != nil || ctx.Err() != nil || attempt >= r.cfg.Run.RemeasureOverrun || !o.Disturbed() || !o.Intermittent() {
			rec.MeasuredElapsed = spent
			r.records.add(plan.Cell, "measured", plan, res)
			return res, err
		}
		rec.Remeasured = append(rec.Remeasured, results.Remeasured{Overrun: *o, Measured: rec.MeasuredElapsed, Ended: time.Now().UTC()})
		r.records.add(plan.Cell, "remeasured", plan, res)
		rec.Server, rec.Client = nil, nil
	}
}

// send sends the measured requests of plan, the servers' metrics scraped around them, and
// records what came back in rec (elapsed time, metrics, retries, the client's figures; what
// the server had cached before them only on the first attempt, since a later one finds its
// own prompts): the result, and the error that fails the cell (a request's, or the router's
// on completion).
func (r *cellRunner) send(ctx context.Context, plan *plan.Plan, rec *results.Cell, first bool) (*recording.Result, error) {
	if r.watcher != nil {
		if err := r.watcher.Begin(ctx); err != nil {
			rec.Warn(warning.New(warning.MetricsFailed, "metrics: "+err.Error()))
		}
	}
	tm := time.Now()
	res, err := r.client.Do(ctx, plan)
	rec.MeasuredElapsed = results.Millis(time.Since(tm))
	if r.watcher != nil {
		m, werr := r.watcher.EndRouted(ctx, plan.Cell.Batch, rec.Workers)
		if werr != nil && ctx.Err() == nil { // an interrupted cell says so; its scrape's "context canceled" is not the server's
			rec.Warn(warning.New(warning.MetricsFailed, "metrics: "+werr.Error()))
		}
		if werr == nil || len(m.Servers) > 0 { // one failed server keeps the others' figures
			rec.Server = &m
		}
	}
	if res != nil {
		addRetries(rec, res.Retried(), false)
		if r.cfg.Warmup.Disabled && first {
			rec.CacheBefore = cacheBefore(res, false)
		}
		load := res.Client // a copy: a pointer into res would keep the whole recording alive with rec
		rec.Client = &load
	}
	if err == nil && r.router != nil {
		err = r.router.Complete(ctx, completions(res, plan.Lengths.Each))
	}
	if err == nil && !keepsOthers(ctx, r.cfg, res) {
		err = res.Err()
	}
	return res, err
}

// figures computes the cell's figures from res into rec (the whole cell's and each server's)
// and returns rec.Figures; the status is ok, or partial when a figure is.
func (r *cellRunner) figures(plan *plan.Plan, res *recording.Result, rec *results.Cell) *measure.Figures {
	routedOver := 0
	if r.stages.Router != nil {
		routedOver = r.stages.Workers
	}
	fig := figures(r.cfg, plan, res, routedOver, r.tok)
	rec.Figures = &fig
	rec.PerServer = perServer(r.cfg, plan, res, r.servers, r.workerNames, rec.Server, r.tok)
	if len(rec.PerServer) > 0 && !fig.Window.Valid {
		fig.Window.Reason += "; each server's full-batch fwd over its share is in --wide, the CSV and the JSON"
	}
	rec.Status = results.StatusOK
	if fig.Partial() {
		rec.Status = results.StatusPartial
	}
	if fig.Prompts != nil {
		rec.PromptTokenDeviation = fig.Prompts.Sum
	}
	return &fig
}

// judge warns about what makes the cell's figures suspect (short capacity, fixed metrics or
// gauges, requests resent after the batch, the cell warnings) and sets the cell partial when
// one of them means the batch was not reached.
func (r *cellRunner) judge(plan *plan.Plan, res *recording.Result, rec *results.Cell, fig *measure.Figures, short []warning.Warning) {
	c := plan.Cell
	fixed, metricsFixed := r.metrics.observe(c.Key(), fig, rec.Server)
	gauge, gaugeFixed := r.gauges.observe(c.Key(), c.Batch, rec.Server)
	ws, notReached := cellWarnings(r.cfg, c, rec, metricsFixed)
	if metricsFixed {
		ws = append(ws, fixed)
	}
	if gaugeFixed {
		ws = append(ws, gauge)
	}
	ws, notReached = append(short, ws...), notReached || len(short) > 0
	if late := resentAfterBatch(res); len(late) > 0 {
		ws, notReached = append(ws, late...), true
	}
	rec.Warn(ws...)
	if notReached {
		rec.Status = results.StatusPartial
	}
}

// warmup sends the cell's warmup (plan.ForWarmup: its exact prompts, max_tokens = 1) and
// records in rec its wall time, its retries, what the server had cached before it, and its
// per-request records; the error (the warmup's, summarized) fails the cell.
func (r *cellRunner) warmup(ctx context.Context, p *plan.Plan, rec *results.Cell) error {
	tw := time.Now()
	wres, err := r.client.Do(ctx, p.ForWarmup())
	rec.WarmupElapsed = results.Millis(time.Since(tw))
	if err == nil {
		err = wres.Err()
	}
	if wres != nil {
		addRetries(rec, wres.Retried(), true)
		rec.CacheBefore = cacheBefore(wres, true)
		r.records.add(p.Cell, "warmup", p, wres)
	}
	if err != nil {
		return fmt.Errorf("warmup: %w", r.firstHint(err))
	}
	return nil
}

// keepsOthers reports whether a routed cell some of whose requests failed is measured over
// the others (partial: the failed requests' sequences are left out, measure.ClassFailed)
// rather than failed: at least one request succeeded and none was cut by the run ending.
func keepsOthers(ctx context.Context, cfg *config.Config, res *recording.Result) bool {
	if cfg.Mode != config.ModeRouted || ctx.Err() != nil {
		return false
	}
	ok := false
	for i := range res.Requests {
		var re *recording.RequestError
		switch err := res.Requests[i].Err; {
		case err == nil:
			ok = true
		case errors.As(err, &re) && re.Kind == recording.KindCanceled:
			return false
		}
	}
	return ok
}

// figures computes the cell's figures from its recording (host/measure) with the run's
// settings (tok: see cellRunner). Sequences routed over routedOver > 1 workers share no batch:
// the full-batch window is then invalid, with that reason.
func figures(cfg *config.Config, plan *plan.Plan, res *recording.Result, routedOver int, tok measure.TokenEnder) measure.Figures {
	fig := measure.Compute(res, measure.Options{MaxTokens: cfg.MaxTokens, DraftTokens: cfg.DraftTokens, ChunkForwards: cfg.DraftTokens > 0, Tokenizer: tok,
		GenerationDurationHeader: cfg.Headers.GenerationDuration, SpeculationAcceptanceHeader: cfg.Headers.SpeculationAcceptance,
		PromptLengths: plan.Built, TextPrompts: plan.Texts != nil, TruncationWarns: cfg.Truncation == "warn"})
	if routedOver > 1 && fig.Window.Valid {
		fig.WithoutWindow(fmt.Sprintf("routed over %d workers: the sequences share no single batch", routedOver))
	}
	return fig
}

// completions are the records a router's Complete receives, one per request: its worker, its
// prompts' lengths (lens: each prompt's realised length, in tokens) and its sequences' reconciled completion
// tokens (a server's request usage may be zero or absent while its sequences' counts are
// known), and whether it failed.
func completions(res *recording.Result, lens []int) []plugin.Completion {
	done := make([]plugin.Completion, 0, len(res.Requests))
	for qi, q := range res.Requests {
		c := plugin.Completion{Worker: q.Worker, Failed: q.Err != nil}
		for _, p := range q.Prompts {
			c.PromptLen += lens[p]
		}
		for i := range res.Sequences {
			if s := &res.Sequences[i]; s.Request == qi {
				c.CompletionTokens += s.CompletionTokens
			}
		}
		done = append(done, c)
	}
	return done
}

// cacheBefore sums the prompt and cached tokens of res's succeeded requests whose usage
// counted cached tokens (nil when none did): what the server already held of the prompts
// when they were first sent in the cell (warmup tells whose requests they were).
func cacheBefore(res *recording.Result, warmup bool) *results.PromptCache {
	var p *results.PromptCache
	for i := range res.Requests {
		q := &res.Requests[i]
		if q.Err != nil || !q.HasUsage || !q.Usage.HasCached {
			continue
		}
		if p == nil {
			p = &results.PromptCache{Warmup: warmup}
		}
		p.Cached += q.Usage.CachedTokens
		p.Prompt += q.Usage.PromptTokens
	}
	return p
}

// reportLengths is the results record of a cell's realised lengths.
func reportLengths(l lengths.Realised) results.Lengths {
	return results.Lengths{Target: l.Target, Min: l.Min, Mean: l.Mean, Max: l.Max, Clamped: l.Clamped, Each: l.Each}
}

// addRetries adds a recording's resends to the cell's record (warmup or measured).
func addRetries(rec *results.Cell, st recording.RetryStats, warmup bool) {
	if st.Count == 0 && st.Free == 0 {
		return
	}
	if rec.Retries == nil {
		rec.Retries = &results.Retries{}
	}
	if warmup {
		rec.Retries.Warmup += st.Count
	} else {
		rec.Retries.Measured += st.Count
	}
	rec.Retries.Free += st.Free
	for k, n := range st.Reasons {
		if rec.Retries.Reasons == nil {
			rec.Retries.Reasons = map[string]int{}
		}
		rec.Retries.Reasons[k] += n
	}
}
