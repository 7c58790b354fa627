package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/genload/genload/host/results"
)

// CacheNotes says of each of runs whose prompts were already in the server's prefix cache
// before some of its cell records sent them ([results.Cell.WasCached]: an earlier run, repeat or cell
// had sent the same prompts) how many records, and in a run with repeats which repeats: with
// a warmup the measured requests are warm either way; without one, their TTFT is not a cold
// prefill's. Runs whose records all sent their prompts to a cold cache, or whose server did
// not count cached tokens, get no note. Consistency, diff and the table's legend print them.
func CacheNotes(runs []*results.Run) []string {
	var notes []string
	for i, r := range runs {
		if n := cacheNote(r); n != "" {
			notes = append(notes, fmt.Sprintf("prompts already cached: %s: %s", r.Name(i), n))
		}
	}
	return notes
}

// cacheNote is CacheNotes' phrase for one run ("" when none of its records found its prompts
// cached).
func cacheNote(r *results.Run) string {
	cached, warm := 0, true
	var repeats []int
	for i := range r.Cells {
		c := &r.Cells[i]
		if !c.WasCached() {
			continue
		}
		cached++
		warm = warm && c.CacheBefore.Warmup
		if c.Repeat > 0 && !slices.Contains(repeats, c.Repeat) {
			repeats = append(repeats, c.Repeat)
		}
	}
	if cached == 0 {
		return ""
	}
	slices.Sort(repeats)
	in := ""
	if len(repeats) > 0 {
		rs := make([]string, len(repeats))
		for i, n := range repeats {
			rs[i] = strconv.Itoa(n)
		}
		in = " (repeat " + strings.Join(rs, ", ") + ")"
	}
	effect := "their warmup found them there, so the measured requests are warm as in any run"
	if !warm {
		effect = "without a warmup, their TTFT is not a cold prefill's"
	}
	return fmt.Sprintf("%d of %d cell records%s found their prompts in the server's prefix cache before sending them (an earlier run, repeat or cell had sent the same prompts): %s",
		cached, len(r.Cells), in, effect)
}
