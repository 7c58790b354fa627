package run

import (
	"fmt"
	"io"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/plan"
	"github.com/genload/genload/host/report"
	"github.com/genload/genload/host/scrape"
	"github.com/genload/genload/host/warning"
)

// capacityReader is the part of a Watcher that knows what each worker's server can hold
// (host/scrape's *Watcher: from the server's /metrics).
type capacityReader interface {
	Capacity(worker int) (scrape.Capacity, bool)
}

var _ capacityReader = (*scrape.Watcher)(nil)

// builtinCapacity is what the built-in engine eng can hold at once: its KV cache in whole
// blocks and its max_num_seqs.
func builtinCapacity(eng *engine.Engine) scrape.Capacity {
	c := eng.Config()
	return scrape.Capacity{KVTokens: c.KVCacheTokens / c.BlockSize * c.BlockSize, BlockSize: c.BlockSize, MaxSeqs: c.MaxNumSeqs,
		KVSource: "the built-in engine's kv_cache_tokens", SeqsSource: "the built-in engine's max_num_seqs"}
}

// capacities returns the capacity of each worker's server (by worker index; one entry, the
// target's, outside routed mode): the built-in engine's own settings for workers on it, else
// what the server's /metrics says (w; nil without one). A zero entry is unknown.
func capacities(cfg *config.Config, eng *engine.Engine, target string, workers []config.Worker, w Watcher) []scrape.Capacity {
	n := 1
	if cfg.Mode == config.ModeRouted {
		n = len(workers)
	}
	out := make([]scrape.Capacity, n)
	cr, _ := w.(capacityReader)
	for i := range out {
		url := target
		if cfg.Mode == config.ModeRouted {
			url = workers[i].URL
		}
		switch {
		case eng != nil && url == target:
			out[i] = builtinCapacity(eng)
		case cr != nil:
			out[i], _ = cr.Capacity(i)
		}
	}
	return out
}

// capacityGroup is one server's part of a cell: the prompts routed to it and its capacity.
type capacityGroup struct {
	server  string // "" outside routed mode over several servers
	prompts []int
	cap     scrape.Capacity
}

// groups splits a cell of the given prompts' workers (nil: every prompt to worker 0) by
// server: servers gives each worker's (serverKeys; nil when they reach one).
func (r *cellRunner) groups(workers []int, prompts int) []capacityGroup {
	var out []capacityGroup
	index := map[string]int{}
	for p := range prompts {
		wk := 0
		if p < len(workers) {
			wk = workers[p]
		}
		key := ""
		if wk < len(r.servers) {
			key = r.servers[wk]
		}
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			c := scrape.Capacity{}
			if wk < len(r.capacity) {
				c = r.capacity[wk]
			}
			out = append(out, capacityGroup{server: key, cap: c})
		}
		out[i].prompts = append(out[i].prompts, p)
	}
	return out
}

// capacityWarnings holds a planned cell against its servers' capacity (scrape.Capacity.Check
// over the realised prompt lengths): a server that cannot hold every sequence of its share at
// once — its KV cache cannot, or it runs fewer sequences at once — gets a warning saying how
// many it can hold, and the cell's batch is not reached.
func (r *cellRunner) capacityWarnings(plan *plan.Plan) []warning.Warning {
	lens := plan.Lengths.Each
	shared := r.cfg.Mode == config.ModeN
	var ws []warning.Warning
	for _, g := range r.groups(plan.Workers, len(lens)) {
		if !g.cap.Known() {
			continue
		}
		gl := make([]int, len(g.prompts))
		for i, p := range g.prompts {
			gl[i] = lens[p]
		}
		if shared && len(gl) > 0 {
			gl = make([]int, plan.Cell.Batch)
			for i := range gl {
				gl[i] = lens[0]
			}
		}
		if w, ok := capacityWarning(g.cap, gl, r.cfg.MaxTokens, shared, g.server); ok {
			ws = append(ws, w)
		}
	}
	return ws
}

// capacityWarning is the warning of a share of lens (prompt lengths, tokens) that c cannot
// hold at once ("" server: the cell's one server); ok is false when it fits. It names the
// limit that binds with its figure: the sequences the server runs at once (the KV cache then
// said to hold them, when it is known), or its KV cache against what the sequences need.
func capacityWarning(c scrape.Capacity, lens []int, maxTokens int, shared bool, server string) (warning.Warning, bool) {
	f := c.Check(lens, maxTokens, shared)
	if f.Fits {
		return warning.Warning{}, false
	}
	who, them := "server capacity too small:", fmt.Sprintf("the %s of the batch", warning.Thousands(len(lens)))
	if server != "" {
		who, them = fmt.Sprintf("server %s capacity too small:", server), fmt.Sprintf("the %s routed to it", warning.Thousands(len(lens)))
	}
	need := fmt.Sprintf("%s tokens of KV cache at once (each prompt + max_tokens %d, in blocks of %d)", warning.Thousands(f.Need), maxTokens, max(c.BlockSize, 1))
	if f.Binds == scrape.LimitSeqs {
		kv := ""
		switch {
		case c.KVTokens > 0 && f.KVAt == len(lens):
			kv = fmt.Sprintf("; the KV cache is not the limit: they need %s, it holds %s", need, warning.Thousands(c.KVTokens))
		case c.KVTokens > 0:
			kv = fmt.Sprintf("; its KV cache would hold %s of them (they need %s, it holds %s)", warning.Thousands(f.KVAt), need, warning.Thousands(c.KVTokens))
		}
		return warning.Newf(warning.CapacityShort, "%s it %s, fewer than %s%s: the others wait for a free slot; the figures are kept, for a batch of at most %s",
			who, c.Limit(scrape.LimitSeqs), them, kv, warning.Thousands(f.At)), true
	}
	return warning.Newf(warning.CapacityShort, "%s its KV cache is the limit: %s need %s, it %s: at most %s of them run at once, the others wait or are preempted and recomputed; the figures are kept, for a batch of at most %s",
		who, them, need, c.Limit(scrape.LimitKV), warning.Thousands(f.At), warning.Thousands(f.At)), true
}

// announceCapacity says, before the first cell is sent, which cells of the matrix a server
// cannot hold at once and which of its limits binds (each cell estimated with every prompt of
// length L; the cell's own warning uses the realised lengths), wrapped within the table's
// width.
func (r *cellRunner) announceCapacity(w io.Writer, cells []matrix.Cell) {
	type limit struct {
		server string
		binds  scrape.Limit
		words  string
	}
	byLimit := map[limit][]matrix.Cell{}
	var order []limit
	for _, c := range cells {
		for _, g := range r.groups(roundRobin(c.Batch, len(r.capacity), r.cfg.Mode), c.Batch) {
			if !g.cap.Known() {
				continue
			}
			lens := make([]int, len(g.prompts))
			for i := range lens {
				lens[i] = c.SeqLen
			}
			f := g.cap.Check(lens, r.cfg.MaxTokens, r.cfg.Mode == config.ModeN)
			if f.Fits {
				continue
			}
			k := limit{g.server, f.Binds, g.cap.Limit(f.Binds)}
			if _, ok := byLimit[k]; !ok {
				order = append(order, k)
			}
			byLimit[k] = append(byLimit[k], c)
			break
		}
	}
	for _, k := range order {
		who := "the server"
		if k.server != "" {
			who = "server " + k.server
		}
		var s string
		if k.binds == scrape.LimitSeqs {
			s = fmt.Sprintf("server capacity: %s %s, fewer than the B sequences of %s: their batch will not be reached (the others wait for a free slot), and the cells will say so",
				who, k.words, report.CellList(byLimit[k], cells))
		} else {
			s = fmt.Sprintf("server capacity: %s %s, too few for the B sequences of %s at once (prompts of L tokens + max_tokens %d): their batch will not be reached, and the cells will say so",
				who, k.words, report.CellList(byLimit[k], cells), r.cfg.MaxTokens)
		}
		report.Prose(w, "", "  ", s)
	}
}

// roundRobin is the worker of each of b prompts dealt over workers (the default routing; nil
// outside routed mode).
func roundRobin(b, workers int, mode string) []int {
	if mode != config.ModeRouted || workers < 1 {
		return nil
	}
	out := make([]int, b)
	for i := range out {
		out[i] = i % workers
	}
	return out
}
