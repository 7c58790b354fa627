package perf

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Goals of the paced-stream rows (PERF.md).
const (
	PacedGoalRaw     = 1.5 // genload's CPU per paced token ≤ 1.5× the raw-socket Go client's
	PacedGoalAsyncio = 0.3 // … and ≤ 0.3× the asyncio client's
	PacedGoalRSS     = 1.5 // peak RSS at N = 1,024 ≤ 1.5× the asyncio client's
	PacedRSSN        = 1024
)

// PacedSummary counts how many cells met each goal of the paced rows (medians over rounds).
type PacedSummary struct {
	Cells              int // cells with figures of genload and the raw client
	RawMet, AsyncioMet int
	AsyncioCells       int // cells with the asyncio client's figures
	// AsyncioBehind counts the cells over the asyncio goal where that client fell behind in
	// most rounds (cannot tell: its CPU per token is below its paced cost), AsyncioFloor
	// those where it kept up and the raw client itself is above the goal's ratio to it (no
	// client of one connection per stream meets it there).
	AsyncioBehind, AsyncioFloor int
	RSSMet, RSSCells            int // cells at N = PacedRSSN with both RSS figures
	ErrP50NoWorse, ErrBoth      int // cells where genload's p50 error ≤ 1.2× the raw client's, of those with both
}

// WritePacedTable writes the paced-stream table: one line per cell with every client's CPU
// per token (its own CPU while streaming ÷ token chunks), the per-round ratios genload ÷ raw
// and genload ÷ asyncio (median [min–max]) against their goals (an asyncio miss reads "cannot
// tell" when that client fell behind in most rounds, and names the raw client's own ratio when
// that is above the goal too), the timestamp errors, whether
// each client kept up in every round (p99 error ≤ one step), whether the server kept its own
// pace, and each process's peak RSS. It returns the goals' tally.
func WritePacedTable(w io.Writer, s *Samples, cells []PacedCell, clients []string) PacedSummary {
	get := func(c PacedCell, cl, unit string) []float64 { return s.Get(PacedKey(c, cl, unit)) }
	has := func(name string) bool { return strings.Contains(strings.Join(clients, ","), name) }
	triple := func(c PacedCell, unit string, scale float64, prec int) string {
		var parts []string
		for _, cl := range clients {
			st := Summarize(get(c, cl, unit))
			if st.N == 0 {
				parts = append(parts, "–")
				continue
			}
			parts = append(parts, fmt.Sprintf("%.*f", prec, st.Median*scale))
		}
		return strings.Join(parts, " · ")
	}
	kept := func(c PacedCell, cl, unit string) string {
		k, n := keptRounds(get(c, cl, unit))
		if n == 0 {
			return "–"
		}
		if k == n {
			return "yes"
		}
		if k == 0 {
			return "no"
		}
		return fmt.Sprintf("%d/%d", k, n)
	}
	var sum PacedSummary
	// ratio formats genload ÷ other for cell c against goal, counting the cells and those met;
	// a miss reads what miss says of it.
	ratio := func(c PacedCell, other string, goal float64, met, cells *int, miss func(PacedCell) string) string {
		r := Summarize(Ratios(get(c, "genload", "cpu-ns/token"), get(c, other, "cpu-ns/token")))
		if r.N == 0 {
			return "–"
		}
		*cells++
		v := "pass"
		if r.Median <= goal {
			*met++
		} else {
			v = miss(c)
		}
		return fmt.Sprintf("%s %s", fmtStat(r, 1, 2, "×"), v)
	}
	plainMiss := func(PacedCell) string { return "miss" }
	asyncioMiss := func(c PacedCell) string {
		if !keptMostRounds(get(c, "asyncio", "kept-up")) {
			sum.AsyncioBehind++
			return "cannot tell (asyncio fell behind)"
		}
		if floor := Summarize(Ratios(get(c, "raw", "cpu-ns/token"), get(c, "asyncio", "cpu-ns/token"))); floor.N > 0 && floor.Median > PacedGoalAsyncio {
			sum.AsyncioFloor++
			return fmt.Sprintf("miss (raw itself %.2f×)", floor.Median)
		}
		return "miss"
	}
	fmt.Fprintf(w, "| mode | step | N | CPU per token, µs: %s | genload ÷ raw (≤ %.1f×) | genload ÷ asyncio (≤ %.1f×) | timestamp error p50, µs | p99, µs | kept up | server kept pace | peak RSS, MB |\n",
		strings.Join(clients, " · "), PacedGoalRaw, PacedGoalAsyncio)
	fmt.Fprintln(w, "|---|---|---:|---|---|---|---|---|---|---|---|")
	for _, c := range cells {
		rr := ratio(c, "raw", PacedGoalRaw, &sum.RawMet, &sum.Cells, plainMiss)
		ra := "–"
		if has("asyncio") {
			ra = ratio(c, "asyncio", PacedGoalAsyncio, &sum.AsyncioMet, &sum.AsyncioCells, asyncioMiss)
		}
		var ku []string
		for _, cl := range clients {
			ku = append(ku, kept(c, cl, "kept-up"))
		}
		g50, r50 := Summarize(get(c, "genload", "err-p50-µs")), Summarize(get(c, "raw", "err-p50-µs"))
		if g50.N > 0 && r50.N > 0 {
			sum.ErrBoth++
			if g50.Median <= 1.2*r50.Median {
				sum.ErrP50NoWorse++
			}
		}
		if c.N == PacedRSSN && has("asyncio") {
			g, a := Summarize(get(c, "genload", "maxrss-MB")), Summarize(get(c, "asyncio", "maxrss-MB"))
			if g.N > 0 && a.N > 0 {
				sum.RSSCells++
				if g.Median <= PacedGoalRSS*a.Median {
					sum.RSSMet++
				}
			}
		}
		fmt.Fprintf(w, "| %s | %g ms | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", c.Mode, float64(c.Step.Microseconds())/1e3, c.N,
			triple(c, "cpu-ns/token", 1e-3, 2), rr, ra, triple(c, "err-p50-µs", 1, 0), triple(c, "err-p99-µs", 1, 0),
			strings.Join(ku, " · "), kept(c, "genload", "server-kept-pace"), triple(c, "maxrss-MB", 1, 1))
	}
	return sum
}

// keptRounds counts the rounds with a figure (n) and those of them where it is 1 (k: the
// client kept up, the server kept pace).
func keptRounds(xs []float64) (k, n int) {
	for _, x := range xs {
		if !math.IsNaN(x) {
			n++
			if x == 1 {
				k++
			}
		}
	}
	return k, n
}

// keptMostRounds reports whether a client kept up in at least half of the rounds that have
// the figure.
func keptMostRounds(xs []float64) bool {
	k, n := keptRounds(xs)
	return n > 0 && 2*k >= n
}

// WritePacedSummary writes the goals' verdicts under the paced table.
func WritePacedSummary(w io.Writer, sum PacedSummary, s *Samples, cells []PacedCell) {
	fmt.Fprintf(w, "\n- CPU per paced token ≤ %.1f× the raw-socket Go client: met in %d of %d cells (median ratio over rounds)\n", PacedGoalRaw, sum.RawMet, sum.Cells)
	if sum.AsyncioCells > 0 {
		fmt.Fprintf(w, "- CPU per paced token ≤ %.1f× the asyncio client: met in %d of %d cells; cannot tell in %d (the asyncio client fell behind in most rounds, so it read several chunks per wake-up and its CPU per token is below what keeping up would cost); missed in %d where the raw-socket client itself is above %.1f× (the floor of a client with one connection per stream)\n",
			PacedGoalAsyncio, sum.AsyncioMet, sum.AsyncioCells, sum.AsyncioBehind, sum.AsyncioFloor, PacedGoalAsyncio)
	} else {
		fmt.Fprintln(w, "- asyncio client: not run (python3 with aiohttp not found; apt-get install python3-aiohttp)")
	}
	fmt.Fprintf(w, "- timestamp error p50 within 1.2× the raw client's: %d of %d cells\n", sum.ErrP50NoWorse, sum.ErrBoth)
	if sum.RSSCells > 0 {
		var parts []string
		for _, c := range cells {
			if c.N != PacedRSSN {
				continue
			}
			r := Summarize(Ratios(s.Get(PacedKey(c, "genload", "maxrss-MB")), s.Get(PacedKey(c, "asyncio", "maxrss-MB"))))
			if r.N > 0 {
				parts = append(parts, fmt.Sprintf("%s %g ms %s", c.Mode, float64(c.Step.Microseconds())/1e3, fmtStat(r, 1, 2, "×")))
			}
		}
		fmt.Fprintf(w, "- peak RSS at N = %d ≤ %.1f× the asyncio client's: met in %d of %d cells (%s)\n", PacedRSSN, PacedGoalRSS, sum.RSSMet, sum.RSSCells, strings.Join(parts, "; "))
	}
}
