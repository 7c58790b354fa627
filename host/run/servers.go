package run

import (
	"fmt"
	"slices"
	"strings"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/measure"
	"github.com/genload/genload/host/plan"
	"github.com/genload/genload/host/recording"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/scrape"
	"github.com/genload/genload/host/warning"
)

// ServerSpread is the largest relative gap between the fastest and the slowest server's
// fwd of a routed cell that is not a warning: beyond it the cell's fwd, one mean over every
// server's sequences, is a mix that describes none of them.
const ServerSpread = 0.05

// serverKeys labels each routing worker (by index) with the server it reaches: its base URL,
// and for a [worker_grid] behind one URL the server header's value too ("URL x-service-index=1").
// It returns nil unless the workers reach at least two servers (per-server figures would
// repeat the cell's).
func serverKeys(cfg *config.Config, workers []config.Worker) []string {
	keys := make([]string, len(workers))
	distinct := map[string]bool{}
	for i, w := range workers {
		keys[i] = w.URL
		if g := cfg.Grid; g.Servers > 0 && len(g.ServerURLs) == 0 {
			keys[i] = fmt.Sprintf("%s %s=%s", w.URL, g.ServerHeader, w.Headers[g.ServerHeader])
		}
		distinct[keys[i]] = true
	}
	if len(distinct) < 2 {
		return nil
	}
	return keys
}

// perServer computes each server's figures over the sequences routed to it (keys: the server
// of each worker index, serverKeys), in order of first appearance; m gives each server's
// running gauge when its /metrics was watched; tok derives per-chunk counts as for the cell
// (see cellRunner). A server's full-batch window is kept only
// where it ran its whole share together: its gauge reached its share (scrape.Occupancy.Judge),
// and the client's marks saw all of them decoding at once. nil for fewer than two servers.
func perServer(cfg *config.Config, plan *plan.Plan, res *recording.Result, keys []string, workerNames []string, m *scrape.CellMetrics, tok measure.TokenEnder) []results.ServerFigures {
	if len(keys) == 0 || res == nil {
		return nil
	}
	var order []string
	reqs := map[string][]int{}
	for qi, q := range res.Requests {
		if q.Worker < 0 || q.Worker >= len(keys) {
			return nil
		}
		k := keys[q.Worker]
		if _, ok := reqs[k]; !ok {
			order = append(order, k)
		}
		reqs[k] = append(reqs[k], qi)
	}
	if len(order) < 2 {
		return nil
	}
	out := make([]results.ServerFigures, 0, len(order))
	for _, k := range order {
		sub := subResult(res, reqs[k])
		f := figures(cfg, plan, sub, 0, tok)
		sf := results.ServerFigures{Server: k, Sequences: len(sub.Sequences), Counted: f.Counted, PerForward: f.PerForward,
			PerForwardReason: f.PerForwardReason, Window: f.Window, Attainment: *f.Attainment}
		lens := 0
		for _, s := range sub.Sequences {
			if s.Prompt < len(plan.Lengths.Each) {
				lens += plan.Lengths.Each[s.Prompt]
			}
		}
		if n := len(sub.Sequences); n > 0 {
			sf.MeanPromptLen = float64(lens) / float64(n)
		}
		for wi, wk := range keys {
			if wk == k && wi < len(workerNames) {
				sf.Workers = append(sf.Workers, workerNames[wi])
			}
		}
		if sm := serverOf(m, sf.Workers); sm != nil {
			o := sm.Occupancy
			o.Target = sf.Sequences
			sf.Occupancy = &o
		}
		if sf.Window.Valid {
			if why := notTogether(sf); why != "" {
				sf.Window.Valid, sf.Window.Reason = false, why
			}
		}
		out = append(out, sf)
	}
	return out
}

// notTogether says why a server did not run every sequence routed to it at once ("" when
// nothing says so): its gauge never read its share, or the client saw fewer decoding at once.
func notTogether(sf results.ServerFigures) string {
	if o := sf.Occupancy; o != nil {
		if w, ok := o.Judge("it", fmt.Sprintf("the %d routed to it", sf.Sequences)); ok && w.Name == warning.BatchNotReached {
			return fmt.Sprintf("its gauge read at most %d of the %d sequences routed to it", o.Max, sf.Sequences)
		}
	}
	if a := sf.Attainment; a.Concurrency < sf.Counted {
		return fmt.Sprintf("the client saw at most %d of its %d sequences decoding at once", a.Concurrency, sf.Counted)
	}
	return ""
}

// serverOf is the scraped server whose workers are exactly names (nil when none is, or
// without per-server metrics).
func serverOf(m *scrape.CellMetrics, names []string) *scrape.ServerMetrics {
	if m == nil {
		return nil
	}
	for i := range m.Servers {
		s := &m.Servers[i]
		if s.Error == "" && len(s.Workers) == len(names) && !slices.ContainsFunc(names, func(n string) bool { return !slices.Contains(s.Workers, n) }) {
			return s
		}
	}
	return nil
}

// subResult is the part of res carried by the requests reqs (indices into res.Requests):
// those requests, renumbered in that order, and their sequences, in res's order.
func subResult(res *recording.Result, reqs []int) *recording.Result {
	out := &recording.Result{Mode: res.Mode, MaxTokens: res.MaxTokens, Start: res.Start}
	idx := map[int]int{}
	for _, qi := range reqs {
		idx[qi] = len(out.Requests)
		out.Requests = append(out.Requests, res.Requests[qi])
	}
	for _, s := range res.Sequences {
		if j, ok := idx[s.Request]; ok {
			s.Request = j
			out.Sequences = append(out.Sequences, s)
		}
	}
	return out
}

// serverWarnings compares the servers of a routed cell (per: perServer's figures; cellFwd
// the cell's fwd over all of them): a gap above ServerSpread between the fastest and the
// slowest server's fwd is a warning naming every server's figure; and without a running
// gauge, a server whose share the client saw decoding at most k < its share at once did not
// reach its batch (notReached).
func serverWarnings(per []results.ServerFigures, cellFwd measure.Summary) (ws []warning.Warning, notReached bool) {
	var lo, hi *results.ServerFigures
	var parts []string
	for i := range per {
		s := &per[i]
		if s.Occupancy == nil && s.Sequences > 1 && s.Counted > 0 && s.Attainment.Concurrency < s.Counted {
			ws = append(ws, warning.Newf(warning.BatchNotReached, "batch not reached: server %s (no running-requests gauge; the client's marks): at most %d of the %d sequences routed to it decoded at once; the figures are kept, for a batch of at most %d",
				s.Server, s.Attainment.Concurrency, s.Sequences, s.Attainment.Concurrency))
			notReached = true
		}
		if s.PerForward.N == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.3f ms (%s, mean prompt %.0f)", s.Server, measure.Ms(s.PerForward.Mean), plural(s.PerForward.N, "sequence"), s.MeanPromptLen))
		if lo == nil || s.PerForward.Mean < lo.PerForward.Mean {
			lo = s
		}
		if hi == nil || s.PerForward.Mean > hi.PerForward.Mean {
			hi = s
		}
	}
	if lo == nil || lo == hi || lo.PerForward.Mean <= 0 {
		return ws, notReached
	}
	if gap := float64(hi.PerForward.Mean)/float64(lo.PerForward.Mean) - 1; gap > ServerSpread {
		ws = append(ws, warning.Newf(warning.ServersDiffer, "servers differ: fwd %s; %s is %+.0f %% of %s, and the cell's fwd %.3f ms mixes them, a figure of neither (each server's is in --wide, the CSV and the JSON)",
			strings.Join(parts, ", "), hi.Server, 100*gap, lo.Server, measure.Ms(cellFwd.Mean)))
	}
	return ws, notReached
}
