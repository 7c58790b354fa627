package latmodel

import (
	"fmt"
	"io"
	"strconv"
)

// ProfileFigures are a built-in engine profile's cost figures in simulated time, in the units
// of the profile file, mapped onto the model's terms: FixedMs (ms), PerSeqMs (ms/sequence),
// KVReadNs and KVTailNs (ns/token), MoEUs = moe_expert_us × moe_layers (µs per expert
// activated, summed over the layers); Experts and TopK are 0 for a dense profile.
type ProfileFigures struct {
	Name                                  string
	FixedMs, PerSeqMs, KVReadNs, KVTailNs float64
	MoEUs                                 float64
	Experts, TopK                         int
}

// WriteProfileComparison writes, for a model of the built-in engine, each fitted term beside
// the profile's figure it estimates, in simulated time (fitted ÷ the run's time scale), and
// their ratio. It writes nothing for a model of another target or without a time scale.
func (m *Model) WriteProfileComparison(w io.Writer, p ProfileFigures) {
	ts, _ := m.Engine["time_scale"].(float64)
	if m.Engine == nil || ts <= 0 {
		return
	}
	want := map[string]struct {
		v   float64
		src string
	}{
		TermFixed:  {p.FixedMs, "fixed_ms"},
		TermPerSeq: {p.PerSeqMs, "per_seq_ms"},
		TermKVRead: {p.KVReadNs, "kv_read_ns_per_token"},
		TermKVTail: {p.KVTailNs, "kv_tail_ns_per_token"},
		TermMoE:    {p.MoEUs, "moe_expert_us × moe_layers"},
	}
	fmt.Fprintf(w, "\nbuilt-in engine profile %s at time scale %g: fitted terms in simulated time (÷ %g)\n\n", p.Name, ts, ts)
	rows := [][]string{{"term", "fitted (simulated)", "95 % interval", "profile", "parameter", "fitted/profile"}}
	for _, t := range m.Terms {
		c, lo, hi := t.Display()
		wv := want[t.Name]
		ratio := "–"
		if wv.v > 0 {
			ratio = strconv.FormatFloat(c/ts/wv.v, 'f', 3, 64)
		}
		rows = append(rows, []string{t.Name, sig(c/ts) + " " + t.Unit, "[" + sig(lo/ts) + ", " + sig(hi/ts) + "]", sig(wv.v), wv.src, ratio})
	}
	table(w, rows)
	if p.Experts > 0 && m.Experts == nil {
		fmt.Fprintf(w, "\nthe profile is a mixture of experts (%d experts, %d active) but the dense form was fitted (%s): drop --experts 0, or give --experts %d --active %d\n",
			p.Experts, p.TopK, m.Structure, p.Experts, p.TopK)
	}
}
