package scrape

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/scrape/metrics"
)

// The values a cell's scrape yields live in package metrics (host/scrape/metrics), which has no transport, so
// that readers of results (report, diff) need no HTTP client; these aliases keep their
// names here for the scraping side.
type (
	// Steps are the server-side step figures of one cell; see metrics.Steps.
	Steps = metrics.Steps
	// Occupancy summarises the running gauge during a cell; see metrics.Occupancy.
	Occupancy = metrics.Occupancy
	// CellMetrics are the server-side figures of one cell; see metrics.CellMetrics.
	CellMetrics = metrics.CellMetrics
	// ServerMetrics are one server's figures of a routed cell; see metrics.ServerMetrics.
	ServerMetrics = metrics.ServerMetrics
)

// Occupy computes the Occupancy of raw gauge samples for target batch size b; see
// metrics.Occupy.
func Occupy(samples []int, b int) Occupancy { return metrics.Occupy(samples, b) }

func secs(v float64) time.Duration { return time.Duration(math.Round(v * 1e9)) }

// Delta computes Steps between two snapshots of a server of family n. finished is the
// number of requests (sequences, for llama.cpp's slots) that ended between them, 0 when
// unknown; only llama.cpp's step time needs it. It reads, in order, the built-in engine's
// truth, the step time ([delta.stepTime]: the first usable of the dialect's ITL histogram,
// decode duration histogram, llama.cpp's decode seconds over tokens), the generated tokens
// and the tokens per forward pass.
func Delta(n Names, before, after Snapshot, finished int) Steps {
	d := delta{n: n, before: before, after: after}
	st := Steps{Dialect: n.Dialect}
	d.truth(&st)
	d.stepTime(&st, finished)
	if g, w := d.val(n.GenerationTokens); w == "" {
		st.GeneratedTokens = g
	}
	d.tokensPerStep(&st)
	return st
}

// delta reads the change of a server's metrics of family n from before to after.
type delta struct {
	n             Names
	before, after Snapshot
}

// hist is the change of a histogram's count and sum; why is "" when it is usable (the count
// grew), else why not.
func (d delta) hist(name string, match ...string) (dc, ds float64, why string) {
	c1, s1, ok1 := d.after.Hist(name, match...)
	if !ok1 {
		return 0, 0, name + " is not exposed"
	}
	c0, s0, _ := d.before.Hist(name, match...) // absent before: from zero
	switch {
	case c1 < c0:
		return 0, 0, name + " went down during the cell (server restarted?)"
	case c1 == c0:
		return 0, 0, name + " had no observation during the cell"
	}
	return c1 - c0, s1 - s0, ""
}

// val is the change of a counter; why is "" when it is usable, else why not.
func (d delta) val(name string) (float64, string) {
	if name == "" {
		return 0, "not exposed by " + d.n.Dialect
	}
	v1, ok1 := d.after.Value(name)
	if !ok1 {
		return 0, name + " is not exposed"
	}
	v0, _ := d.before.Value(name)
	if v1 < v0 {
		return 0, name + " went down during the cell (server restarted?)"
	}
	return v1 - v0, ""
}

// truth sets the built-in engine's true step times, how late its steps ran against their
// plan, and its step count, where it exposes them.
func (d delta) truth(st *Steps) {
	if dc, ds, why := d.hist(TruthStepDuration); why == "" {
		st.TruthStepTime, st.HasTruth = secs(ds/dc), true
		st.TruthSteps = dc
	}
	if dc, ds, why := d.hist(TruthDecodeStepDuration); why == "" {
		st.TruthDecodeStepTime, st.HasTruthDecode = secs(ds/dc), true
	}
	if dp, why := d.val(TruthPlannedSeconds); why == "" && dp > 0 {
		do, _ := d.val(TruthOverrunSeconds)
		o := &metrics.Overrun{Late: do / dp}
		if _, dw, w := d.hist(TruthStepDuration); w == "" {
			o.Share = max(0, dw-dp) / dp
		}
		o.Steps, o.P50, o.P99 = histDeltaQuantiles(d.before, d.after, TruthOverrunRatio, 0.5, 0.99)
		if ddp, why := d.val(TruthDecodePlanned); why == "" && ddp > 0 {
			if _, ddw, w := d.hist(TruthDecodeStepDuration); w == "" {
				o.Decode, o.HasDecode = ddw/ddp-1, true
			}
		}
		st.Overrun = o
	}
	if _, ok := d.after.Families[TruthSteps]; ok {
		if v, why := d.val(TruthSteps); why == "" {
			st.TruthSteps = v
		}
	}
}

// stepTime sets the server's decode step time from the first usable of its ITL histogram
// (not when the server speculates: it is per token then), its decode duration histogram, and
// llama.cpp's decode seconds over the tokens of finished requests' n − 1 passes; else
// StepTimeReason says why each was not.
func (d delta) stepTime(st *Steps, finished int) {
	n := d.n
	var why []string
	if n.ITL != "" {
		if l, ok := d.after.Value(n.SpecAcceptLength); ok && n.SpecAcceptLength != "" && l > 1.0001 {
			why = append(why, fmt.Sprintf("%s is per token and the server speculates (%s %.2f tokens per forward pass)", n.ITL, n.SpecAcceptLength, l))
		} else if dc, ds, w := d.hist(n.ITL); w == "" {
			st.StepTime, st.HasStepTime = secs(ds/dc), true
		} else {
			why = append(why, w)
		}
	}
	if !st.HasStepTime && n.DecodeDuration != "" {
		if dc, ds, w := d.hist(n.DecodeDuration, "method=decode"); w == "" {
			st.StepTime, st.HasStepTime = secs(ds/dc), true
			st.Steps = dc
		} else {
			why = append(why, w)
		}
	}
	if !st.HasStepTime && n.Decodes != "" {
		dsec, w1 := d.val(n.DecodeSeconds)
		dtok, w2 := d.val(n.GenerationTokens)
		switch {
		case w1 != "" || w2 != "":
			why = append(why, strings.TrimSpace(w1+" "+w2))
		case finished <= 0:
			why = append(why, "the number of requests finished in the cell is unknown (llama.cpp's seconds span n − 1 forward passes of n tokens)")
		case dtok-float64(finished) <= 0:
			why = append(why, fmt.Sprintf("%s grew by %g for %d finished requests: no decode forward pass", n.GenerationTokens, dtok, finished))
		default:
			st.StepTime, st.HasStepTime = secs(dsec/(dtok-float64(finished))), true
		}
		if dn, w := d.val(n.Decodes); w == "" && dn > 0 {
			st.Steps = dn
		}
	}
	if !st.HasStepTime {
		if len(why) == 0 {
			why = append(why, "no step-time metric is known for "+n.Dialect)
		}
		st.StepTimeReason = strings.Join(why, "; ")
	}
}

// tokensPerStep sets the tokens per forward pass: the server's iteration-tokens histogram,
// else the generated tokens over the steps counted (the server's, else the engine's truth).
func (d delta) tokensPerStep(st *Steps) {
	if d.n.IterationTokens != "" {
		if dc, ds, w := d.hist(d.n.IterationTokens); w == "" {
			st.TokensPerStep, st.HasTokensPerStep = ds/dc, true
			st.Steps = dc
		}
	}
	if st.HasTokensPerStep {
		return
	}
	steps := st.Steps
	if steps == 0 {
		steps = st.TruthSteps
	}
	if steps > 0 && st.GeneratedTokens > 0 {
		st.TokensPerStep, st.HasTokensPerStep = st.GeneratedTokens/steps, true
		st.Steps = steps
	}
}

// Sampler polls the running gauge of one or more servers during a cell. Each tick scrapes
// every server at once (concurrently), so that the sum of a tick's values is the number
// of sequences running over all of them at that moment.
type Sampler struct {
	scrapers []*Scraper
	names    []Names
	interval time.Duration

	mu     sync.Mutex
	each   [][]int // per server, its samples
	sums   []int   // per tick at which every server answered, the sum
	errors []int   // per server, failed scrapes
	cancel context.CancelFunc
	done   chan struct{}
}

// NewSampler returns a Sampler that scrapes s every interval (default 20 ms) and reads
// names.Running.
func NewSampler(s *Scraper, names Names, interval time.Duration) *Sampler {
	return newSampler([]*Scraper{s}, []Names{names}, interval)
}

func newSampler(scs []*Scraper, names []Names, interval time.Duration) *Sampler {
	if interval <= 0 {
		interval = 20 * time.Millisecond
	}
	return &Sampler{scrapers: scs, names: names, interval: interval}
}

// Start begins sampling in a goroutine until Stop or ctx ends.
func (sp *Sampler) Start(ctx context.Context) {
	ctx, sp.cancel = context.WithCancel(ctx)
	sp.done = make(chan struct{})
	n := len(sp.scrapers)
	sp.each, sp.sums, sp.errors = make([][]int, n), sp.sums[:0], make([]int, n)
	go func() {
		defer exitcode.Recover()
		defer close(sp.done)
		t := time.NewTicker(sp.interval)
		defer t.Stop()
		vals, oks := make([]int, n), make([]bool, n)
		for {
			var wg sync.WaitGroup
			for i, sc := range sp.scrapers {
				wg.Go(func() {
					snap, err := sc.ScrapeFamily(ctx, sp.names[i].Running)
					oks[i] = false
					if err != nil {
						if ctx.Err() == nil {
							sp.mu.Lock()
							sp.errors[i]++
							sp.mu.Unlock()
						}
					} else if v, ok := snap.Value(sp.names[i].Running); ok {
						vals[i], oks[i] = int(math.Round(v)), true
					}
				})
			}
			wg.Wait()
			sp.mu.Lock()
			sum, all := 0, true
			for i := range vals {
				if oks[i] {
					sp.each[i] = append(sp.each[i], vals[i])
					sum += vals[i]
				} else {
					all = false
				}
			}
			if all {
				sp.sums = append(sp.sums, sum)
			}
			sp.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// Stop ends sampling and returns the Occupancy of the running sum over every server for
// target batch size b.
func (sp *Sampler) Stop(b int) Occupancy {
	_, all := sp.stopEach(nil, b)
	return all
}

// stopEach ends sampling and returns each server's Occupancy against its target (targets[i],
// 0 = unknown) and that of their sum against b.
func (sp *Sampler) stopEach(targets []int, b int) ([]Occupancy, Occupancy) {
	if sp.cancel == nil {
		return make([]Occupancy, len(sp.scrapers)), Occupancy{Target: b}
	}
	sp.cancel()
	<-sp.done
	sp.cancel = nil
	sp.mu.Lock()
	defer sp.mu.Unlock()
	each := make([]Occupancy, len(sp.scrapers))
	errs := 0
	for i := range each {
		t := 0
		if i < len(targets) {
			t = targets[i]
		}
		each[i] = Occupy(sp.each[i], t)
		each[i].Errors = sp.errors[i]
		errs += sp.errors[i]
	}
	all := Occupy(sp.sums, b)
	all.Errors = errs
	return each, all
}

// Watcher scrapes one server, or each server of a routed run, around each cell: Begin
// before the measured requests, End (or EndRouted) after them. Not safe for concurrent
// cells.
type Watcher struct {
	// Names is the detected server family (the first server's when several).
	Names   Names
	servers []*watched
	worker  []int // worker index → index into servers (routed watchers)
	sampler *Sampler
}

// watched is one server of a Watcher.
type watched struct {
	url      string
	workers  []string
	names    Names
	scraper  *Scraper
	before   Snapshot
	capacity Capacity // from its first scrape (CapacityOf); zero when it says none
}

// NewWatcher scrapes metricsURL once and detects the server family from its running
// gauge. It fails (naming the URL) when the endpoint is unreachable or exposes none of
// the known running gauges. interval is the occupancy sampling period (0 = 20 ms).
func NewWatcher(ctx context.Context, metricsURL, apiKey string, interval time.Duration) (*Watcher, error) {
	return NewRoutedWatcher(ctx, []Worker{{Name: "w0", MetricsURL: metricsURL}}, apiKey, interval)
}

// Worker is a routed worker as a Watcher sees it.
type Worker struct {
	// Name labels it in ServerMetrics.Workers; MetricsURL is its server's /metrics URL.
	Name, MetricsURL string
}

// NewRoutedWatcher watches the distinct servers of workers (those with the same
// MetricsURL share one): it scrapes each once and detects its family, failing — naming
// the URL — as NewWatcher does for any of them.
func NewRoutedWatcher(ctx context.Context, workers []Worker, apiKey string, interval time.Duration) (*Watcher, error) {
	if len(workers) == 0 {
		return nil, fmt.Errorf("scrape: no server to watch")
	}
	w := &Watcher{worker: make([]int, len(workers))}
	byURL := map[string]int{}
	for i, wk := range workers {
		k, ok := byURL[wk.MetricsURL]
		if !ok {
			sc := &Scraper{URL: wk.MetricsURL, APIKey: apiKey}
			snap, err := sc.Scrape(ctx)
			if err != nil {
				return nil, err
			}
			n, ok := Detect(snap.Families)
			if !ok {
				return nil, fmt.Errorf("scrape: %s exposes no known running-requests gauge (%s, %s, %s, %s)",
					wk.MetricsURL, VLLM.Running, SGLang.Running, LlamaCpp.Running, TGI.Running)
			}
			k = len(w.servers)
			byURL[wk.MetricsURL] = k
			c, _ := CapacityOf(snap)
			w.servers = append(w.servers, &watched{url: wk.MetricsURL, names: n, scraper: sc, before: snap, capacity: c})
		}
		w.servers[k].workers = append(w.servers[k].workers, wk.Name)
		w.worker[i] = k
	}
	w.Names = w.servers[0].names
	scs, names := make([]*Scraper, len(w.servers)), make([]Names, len(w.servers))
	for i, s := range w.servers {
		scs[i], names[i] = s.scraper, s.names
	}
	w.sampler = newSampler(scs, names, interval)
	return w, nil
}

// Capacity returns the capacity that the server of worker (an index into the workers given
// to NewRoutedWatcher; 0 for NewWatcher's) reported in its /metrics when the watcher was made
// (CapacityOf); ok is false when it reported none.
func (w *Watcher) Capacity(worker int) (c Capacity, ok bool) {
	if worker < 0 || worker >= len(w.worker) {
		return c, false
	}
	c = w.servers[w.worker[worker]].capacity
	return c, c.Known()
}

// Servers returns the number of distinct servers watched.
func (w *Watcher) Servers() int { return len(w.servers) }

// Begin takes every server's "before" snapshot and starts sampling occupancy.
func (w *Watcher) Begin(ctx context.Context) error {
	for _, s := range w.servers {
		snap, err := s.scraper.Scrape(ctx)
		if err != nil {
			return err
		}
		s.before = snap
	}
	w.sampler.Start(ctx)
	return nil
}

// End stops sampling, takes the "after" snapshots and returns the cell's metrics for
// target batch size b, taken to be the number of sequences that finished in the cell (a
// cell with a failed request is an error cell, whose server figures are not used). On a
// watcher of several servers, use EndRouted: End knows no server's share.
func (w *Watcher) End(ctx context.Context, b int) (CellMetrics, error) {
	return w.EndRouted(ctx, b, nil)
}

// EndRouted is End for a routed cell: assign[i] is the worker index (in the workers given
// to NewRoutedWatcher) of sequence i, from which each server's share of b follows; nil
// gives a single server all of b and leaves the shares of several unknown. With several
// servers the result has one ServerMetrics each and their combination (see CellMetrics);
// the error joins the failed scrapes, each naming its URL.
func (w *Watcher) EndRouted(ctx context.Context, b int, assign []int) (CellMetrics, error) {
	shares := make([]int, len(w.servers))
	switch {
	case assign != nil:
		for _, wk := range assign {
			if wk >= 0 && wk < len(w.worker) {
				shares[w.worker[wk]]++
			}
		}
	case len(w.servers) == 1:
		shares[0] = b
	default:
		for i := range shares {
			shares[i] = -1
		}
	}
	targets := make([]int, len(shares))
	for i, s := range shares {
		targets[i] = max(s, 0)
	}
	occ, all := w.sampler.stopEach(targets, b)
	afters := make([]Snapshot, len(w.servers))
	per := make([]ServerMetrics, len(w.servers))
	var errs []error
	for i, s := range w.servers {
		per[i] = ServerMetrics{URL: s.url, Workers: s.workers, Sequences: shares[i], Occupancy: occ[i]}
		after, err := s.scraper.Scrape(ctx)
		if err != nil {
			per[i].Error = err.Error()
			errs = append(errs, err)
			continue
		}
		afters[i] = after
		per[i].Steps = Delta(s.names, s.before, after, max(shares[i], 0))
	}
	if len(w.servers) == 1 {
		return CellMetrics{Steps: per[0].Steps, Occupancy: all}, errors.Join(errs...)
	}
	m := CellMetrics{Occupancy: all, Servers: per}
	m.Steps = w.combined(afters, b, len(errs) > 0)
	return m, errors.Join(errs...)
}

// combined is the Steps of several servers' summed snapshots.
func (w *Watcher) combined(afters []Snapshot, b int, failed bool) Steps {
	n := w.servers[0].names
	for _, s := range w.servers[1:] {
		if s.names.Dialect != n.Dialect {
			return Steps{Dialect: "mixed", StepTimeReason: fmt.Sprintf("servers of different families (%s, %s): nothing to combine", n.Dialect, s.names.Dialect)}
		}
	}
	if failed {
		return Steps{Dialect: n.Dialect, StepTimeReason: "a server's scrape after the cell failed"}
	}
	befores := make([]Snapshot, len(w.servers))
	for i, s := range w.servers {
		befores[i] = s.before
	}
	return Delta(n, Merge(befores...), Merge(afters...), b)
}

// Merge returns one Snapshot holding every series of snaps (a family present in several
// gets all their series), so that Value and Hist sum over the servers. At is the latest.
// The inputs are not modified.
func Merge(snaps ...Snapshot) Snapshot {
	out := Snapshot{Families: map[string]*dto.MetricFamily{}}
	for _, s := range snaps {
		if s.At.After(out.At) {
			out.At = s.At
		}
		for name, f := range s.Families {
			m, ok := out.Families[name]
			if !ok {
				m = &dto.MetricFamily{Name: f.Name, Help: f.Help, Type: f.Type}
				out.Families[name] = m
			}
			m.Metric = append(m.Metric, f.Metric...)
		}
	}
	return out
}

// URLs returns the /metrics URLs watched, one per distinct server.
func (w *Watcher) URLs() []string {
	u := make([]string, len(w.servers))
	for i, s := range w.servers {
		u[i] = s.url
	}
	return u
}

// histDeltaQuantiles returns the observations of histogram name between two snapshots and the
// upper bounds of the buckets holding its q1 and q2 quantiles (the largest finite bound for
// an observation above it); zeros when it is absent or had no observation.
func histDeltaQuantiles(before, after Snapshot, name string, q1, q2 float64) (n, v1, v2 float64) {
	// cumulative counts by upper bound, summed over the family's series
	buckets := func(s Snapshot) (map[float64]float64, float64) {
		cum, total := map[float64]float64{}, 0.0
		f, ok := s.Families[name]
		if !ok {
			return cum, 0
		}
		for _, m := range f.GetMetric() {
			h := m.GetHistogram()
			if h == nil {
				continue
			}
			for _, b := range h.GetBucket() {
				cum[b.GetUpperBound()] += float64(b.GetCumulativeCount())
			}
			total += float64(h.GetSampleCount())
		}
		return cum, total
	}
	c1, t1 := buckets(after)
	c0, t0 := buckets(before)
	n = t1 - t0
	if n <= 0 {
		return 0, 0, 0
	}
	var bounds []float64
	for b := range c1 {
		if !math.IsInf(b, 1) {
			bounds = append(bounds, b)
		}
	}
	slices.Sort(bounds)
	q := func(p float64) float64 {
		rank := math.Max(1, math.Round(p*n))
		for _, b := range bounds {
			if c1[b]-c0[b] >= rank {
				return b
			}
		}
		if len(bounds) == 0 {
			return 0
		}
		return bounds[len(bounds)-1]
	}
	return n, q(q1), q(q2)
}
