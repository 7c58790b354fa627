package report

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/warning"
)

// WarningGroup is one kind of warning (or error) and the cells it applies to.
type WarningGroup struct {
	// Name is the warnings' catalogue name (package warning); "" for a group of errors and
	// warning.Other for texts the catalogue does not know.
	Name warning.Name
	// Kind is the group's headline: the catalogue's sentence for a known Name ("The first
	// chunks of some sequences arrived late"); for errors and unknown texts the text
	// before its first ": " or " (" outside brackets, cut at the first comma, with each
	// number that differs between the group's messages written as … (one message keeps all
	// its numbers).
	Kind string
	// Error is true for a group of cell errors (✗), false for warnings (⚠).
	Error bool
	// Cells are the cells it applies to, in run order; Messages[i] is the full text for
	// Cells[i].
	Cells    []matrix.Cell
	Messages []string
}

var numberRE = regexp.MustCompile(`[-+−]?\d[\d.,]*`)

// warningKey is the text by which two messages are of one kind: the message up to its first
// ": " or " (" outside brackets, with every number replaced by N.
func warningKey(msg string) string {
	return numberRE.ReplaceAllString(warningPrefix(msg), "N")
}

// warningPrefix is msg up to its first ": " or " (" outside brackets.
func warningPrefix(msg string) string {
	depth := 0
	cut := len(msg)
	for i, r := range msg {
		switch r {
		case '(', '[':
			if depth == 0 && i > 0 && msg[i-1] == ' ' {
				cut = i - 1
			}
			depth++
		case ')', ']':
			depth--
		case ':':
			if depth == 0 && strings.HasPrefix(msg[i:], ": ") {
				cut = i
			}
		}
		if cut != len(msg) {
			break
		}
	}
	return msg[:cut]
}

// kindOf is the label of a group of messages of one key: the first message's prefix with
// every number that is not the same in all of them written as "…".
func kindOf(msgs []string) string {
	first := warningPrefix(msgs[0])
	locs := numberRE.FindAllStringIndex(first, -1)
	same := make([]bool, len(locs))
	for j, l := range locs {
		same[j] = true
		for _, m := range msgs[1:] {
			nums := numberRE.FindAllString(warningPrefix(m), -1)
			if j >= len(nums) || nums[j] != first[l[0]:l[1]] {
				same[j] = false
				break
			}
		}
	}
	var b strings.Builder
	at := 0
	for j, l := range locs {
		b.WriteString(first[at:l[0]])
		if same[j] {
			b.WriteString(first[l[0]:l[1]])
		} else {
			b.WriteString("…")
		}
		at = l[1]
	}
	b.WriteString(first[at:])
	return kindLabel(b.String())
}

// kindLabel shortens a key for display: up to its first ", " or " (".
func kindLabel(key string) string {
	for _, sep := range []string{" (", ", "} {
		if i := strings.Index(key, sep); i > 0 {
			key = key[:i]
		}
	}
	return key
}

// GroupWarnings gathers run's warnings and errors by kind ([WarningGroup]), in the order of
// each kind's first appearance: warnings by their catalogue name ([results.Cell.NamedWarnings]),
// errors and unknown texts by their text with the numbers taken out; errors are grouped
// apart from warnings.
func GroupWarnings(run *results.Run) []WarningGroup {
	var out []WarningGroup
	index := map[string]int{}
	type entry struct{ at, rec int } // a cell's message in a group (its index), from record rec
	entries := map[string]entry{}
	add := func(rec int, c matrix.Cell, name warning.Name, msg string, isErr bool) {
		key := fmt.Sprintf("%v\x00%s", isErr, name)
		if name == "" || name == warning.Other {
			key += "\x00" + warningKey(msg)
		}
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, WarningGroup{Name: name, Error: isErr})
		}
		g := &out[i]
		ek := fmt.Sprintf("%d\x00%d\x00%d\x00%d", i, c.Index, c.SeqLen, c.Batch)
		if e, ok := entries[ek]; ok {
			// A second message of the same kind in one record: kept beside the first unless
			// it says the same. Another repeat's record of the cell (--repeat) adds nothing to
			// the group's cell: its texts are in --wide and the JSON.
			if e.rec == rec && !strings.Contains(g.Messages[e.at], msg) {
				g.Messages[e.at] += "; " + msg
			}
			return
		}
		entries[ek] = entry{len(g.Cells), rec}
		g.Cells = append(g.Cells, c)
		g.Messages = append(g.Messages, msg)
	}
	for i := range run.Cells {
		c := &run.Cells[i]
		for _, w := range c.NamedWarnings() {
			add(i, c.Cell, w.Name, w.Text, false)
		}
		if c.Error != "" {
			add(i, c.Cell, "", c.Error, true)
		}
	}
	for i := range out {
		if k, ok := warning.Lookup(out[i].Name); ok {
			out[i].Kind = k.Headline
			continue
		}
		out[i].Kind = kindOf(out[i].Messages)
	}
	return out
}

// countMessages is the number of warnings and errors in run.
func countMessages(run *results.Run) int {
	n := 0
	for _, c := range run.Cells {
		n += len(c.Warnings)
		if c.Error != "" {
			n++
		}
	}
	return n
}

// CellList writes cells compactly, grouped by L in first-appearance order:
// "L=32000 B=32,48,64; L=64000 B=4,5". Given the run's cells (all; nil for none), an L whose
// every cell is listed is "L=1000 all B", and the whole run "every cell".
func CellList(cells, all []matrix.Cell) string {
	perL := map[int]int{}
	for _, c := range all {
		perL[c.SeqLen]++
	}
	if len(all) > 0 && len(cells) == len(all) {
		return "every cell"
	}
	var order []int
	bs := map[int][]string{}
	for _, c := range cells {
		if _, ok := bs[c.SeqLen]; !ok {
			order = append(order, c.SeqLen)
		}
		b := fmt.Sprint(c.Batch)
		if !slices.Contains(bs[c.SeqLen], b) {
			bs[c.SeqLen] = append(bs[c.SeqLen], b)
		}
	}
	parts := make([]string, len(order))
	for i, l := range order {
		if perL[l] > 1 && len(bs[l]) == perL[l] {
			parts[i] = fmt.Sprintf("L=%d all B", l)
			continue
		}
		parts[i] = fmt.Sprintf("L=%d B=%s", l, strings.Join(bs[l], ","))
	}
	return strings.Join(parts, "; ")
}
