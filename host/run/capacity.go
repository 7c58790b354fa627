package run

import (
	"fmt"
	"io"
	"strings"

	"github.com/genload/genload/host/cell"
	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/matrix"
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
		Source: "the built-in engine's kv_cache_tokens and max_num_seqs"}
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
func (r *cellRunner) capacityWarnings(plan *cell.Plan) []warning.Warning {
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
// hold at once ("" server: the cell's one server); ok is false when it fits.
func capacityWarning(c scrape.Capacity, lens []int, maxTokens int, shared bool, server string) (warning.Warning, bool) {
	f := c.Check(lens, maxTokens, shared)
	if f.Fits {
		return warning.Warning{}, false
	}
	who, what := "server capacity too small: the", "the server holds"
	if server != "" {
		who, what = fmt.Sprintf("server %s capacity too small: the", server), "it holds"
	}
	return warning.Newf(warning.CapacityShort, "%s %d sequences need %s tokens of KV cache at once (each prompt + max_tokens %d, in blocks of %d), %s %s: at most %d of them run at once, the others wait or are preempted and recomputed; the figures are kept, for a batch of at most %d",
		who, len(lens), warning.Thousands(f.Need), maxTokens, max(c.BlockSize, 1), what, c, f.At, f.At), true
}

// announceCapacity says, before the first cell is sent, which cells of the matrix a server
// cannot hold at once (each estimated with every prompt of length L; the cell's own warning
// uses the realised lengths).
func (r *cellRunner) announceCapacity(w io.Writer, cells []matrix.Cell) {
	byCap := map[string][]matrix.Cell{}
	var order []string
	for _, c := range cells {
		for _, g := range r.groups(roundRobin(c.Batch, len(r.capacity), r.cfg.Mode), c.Batch) {
			if !g.cap.Known() {
				continue
			}
			lens := make([]int, len(g.prompts))
			for i := range lens {
				lens[i] = c.SeqLen
			}
			if g.cap.Check(lens, r.cfg.MaxTokens, r.cfg.Mode == config.ModeN).Fits {
				continue
			}
			key := strings.TrimSpace(g.server + " " + g.cap.String())
			if _, ok := byCap[key]; !ok {
				order = append(order, key)
			}
			byCap[key] = append(byCap[key], c)
			break
		}
	}
	for _, k := range order {
		fmt.Fprintf(w, "server capacity: %s cannot hold all B sequences of %s at once (prompts of L tokens + max_tokens %d): their batch will not be reached, and the cells will say so\n",
			k, report.CellList(byCap[k], cells), r.cfg.MaxTokens)
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
