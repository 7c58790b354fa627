package perf

import "fmt"

// Goals of the binary rows (PERF.md row 9).
const (
	FixedGoalCPU   = 0.15 // CPU-s of a one-cell run of one sequence and two tokens
	FixedGoalRSS   = 60   // MB
	LargestGoalTX  = 0.01 // body build + send ≤ 1 % of the cell's TTFT
	LargestGoalRSS = 2    // peak RSS ≤ 2× the bodies' size
)

// BinaryCell is a per-token cell of the binary rows.
type BinaryCell struct {
	Mode string
	N    int
}

// BinaryRows reduces the binary group's samples to rows: the fixed cost of a one-cell run,
// the marginal CPU per token at each cell against the raw client's and the peak RSS at N =
// 1,024 against the asyncio client's, and the largest cells' send time and memory.
func BinaryRows(s *Samples, cells []BinaryCell, largest []string) []Row {
	get := func(name, unit string) []float64 { return s.Get(Key(name, unit)) }
	var rows []Row
	{
		c, m := Summarize(get("Binary/fixed", "cpu-s")), Summarize(get("Binary/fixed", "maxrss-MB"))
		rows = append(rows,
			Row{"9", "fixed cost of a one-cell run (B = 1, 2 tokens: tokenizer, corpus, plugins, probes, warmup), CPU user+sys", fmtStat(c, 1, 3, "CPU-s"), "—", "—", fmt.Sprintf("≤ %.2f CPU-s", FixedGoalCPU), verdict(c.Median <= FixedGoalCPU, c)},
			Row{"9", "fixed cost of a one-cell run, peak RSS", fmtStat(m, 1, 1, "MB"), "—", "—", fmt.Sprintf("≤ %d MB", FixedGoalRSS), verdict(m.Median <= FixedGoalRSS, m)})
		if cc := Summarize(get("Binary/fixed-cold", "cpu-s")); cc.N > 0 {
			cm := Summarize(get("Binary/fixed-cold", "maxrss-MB"))
			rows = append(rows,
				Row{"9", "the same run on a machine's first run (empty user cache: the tokenizer's tables built from its JSON, the plugin compiled), CPU user+sys", fmtStat(cc, 1, 3, "CPU-s"), "—", "—", "— (once per machine)", "—"},
				Row{"9", "the same first run, peak RSS", fmtStat(cm, 1, 1, "MB"), "—", "—", "— (once per machine)", "—"})
		}
	}
	for _, c := range cells {
		key := fmt.Sprintf("Binary/%s/N=%d", c.Mode, c.N)
		g, r := get(key, "marginal-ns/token"), get(key+"/raw", "cpu-ns/token")
		rt := Summarize(Ratios(g, r))
		rows = append(rows, Row{"9", fmt.Sprintf("CPU per token of a one-cell run, %s N=%d (run − the same cell with 2 tokens a stream, ÷ the other tokens) vs the raw-socket Go client", c.Mode, c.N),
			fmtStat(Summarize(g), 1e-3, 2, "µs"), fmtStat(Summarize(r), 1e-3, 2, "µs"), fmtStat(rt, 1, 2, "×"), fmt.Sprintf("≤ %.1f×", PacedGoalRaw), verdict(rt.Median <= PacedGoalRaw, rt)})
		if c.N == PacedRSSN {
			g, a := get(key, "maxrss-MB"), get(key+"/asyncio", "maxrss-MB")
			rm := Summarize(Ratios(g, a))
			rows = append(rows, Row{"9", fmt.Sprintf("peak RSS of a one-cell run, %s N=%d, vs the asyncio client", c.Mode, c.N),
				fmtStat(Summarize(g), 1, 1, "MB"), fmtStat(Summarize(a), 1, 1, "MB"), fmtStat(rm, 1, 2, "×"), fmt.Sprintf("≤ %.1f×", PacedGoalRSS), verdict(rm.Median <= PacedGoalRSS, rm)})
		}
	}
	for _, name := range largest {
		key := "Largest/" + name
		b, sent, ttft := Summarize(get(key, "build-ms")), Summarize(get(key, "sent-ms")), Summarize(get(key, "ttft-model-s"))
		body, rss := Summarize(get(key, "body-MB")), Summarize(get(key, "maxrss-MB"))
		tx := Stat{N: min(b.N, ttft.N)}
		if tx.N > 0 {
			v := (b.Median + sent.Median) / 1e3 / ttft.Median
			tx = Stat{v, v, v, 1}
		}
		rows = append(rows, Row{"9", fmt.Sprintf("largest cell %s: build + send of the bodies (%s + %s) vs the cell's TTFT p50 modeled on dense-8b (one H100)", name, fmtStat(b, 1, 0, "ms"), fmtStat(sent, 1, 0, "ms")),
			fmt.Sprintf("%.0f ms", b.Median+sent.Median), fmtStat(ttft, 1, 1, "s"), fmtStat(tx, 100, 3, "%"), "< 1 %", verdict(tx.Median < LargestGoalTX, tx)})
		rr := Stat{N: min(body.N, rss.N)}
		if rr.N > 0 {
			v := rss.Median / body.Median
			rr = Stat{v, v, v, 1}
		}
		rows = append(rows, Row{"9", fmt.Sprintf("largest cell %s: peak RSS of the run vs the bodies' size", name),
			fmtStat(rss, 1, 0, "MB"), fmtStat(body, 1, 0, "MB"), fmtStat(rr, 1, 2, "×"), fmt.Sprintf("< %d×", LargestGoalRSS), verdict(rr.Median < LargestGoalRSS, rr)})
	}
	return rows
}
