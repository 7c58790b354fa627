package cellcheck

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/genload/genload/host/stats"

	"github.com/genload/genload/host/report"
)

// lostNote is a row's note on its lost records, "" when none.
func lostNote(r Row) string {
	var n []string
	if len(r.Lost) > 0 {
		n = append(n, fmt.Sprintf("%d record(s) lost to malformed lines (%s)", len(r.Lost), strings.Join(r.Lost, ", ")))
	}
	if len(r.MaybeLost) > 0 {
		n = append(n, fmt.Sprintf("may have lost %d record(s) to malformed lines at its edges (%s)", len(r.MaybeLost), strings.Join(r.MaybeLost, ", ")))
	}
	return strings.Join(n, "; ")
}

// WriteTable writes the per-cell markdown table (with a repeat column when the run
// has repeats; report.MarkdownTable, so every row has the header's cells), the run summary
// and the notes, numbered and referenced where they apply: first the format's notes on its
// forward time (from the fwd column's header), then each distinct note of a row (a reason,
// lost records; from its notes cell) — kept out of the table so that its lines stay within
// 120 columns. "above B" is how many forwards ran with more than B sequences, "never" for
// none.
func (res *Result) WriteTable(w io.Writer) {
	rows, f := res.Rows, res.opt.Format
	unit := "forwards"
	if f.Sample {
		unit = "samples"
	}
	reps := slices.ContainsFunc(rows, func(r Row) bool { return r.Repeat > 0 })
	notes := f.Notes()
	number := map[string]int{}
	for i, n := range notes {
		number[n] = i + 1
	}
	fmtRefs := ""
	for i := range notes {
		fmtRefs += fmt.Sprintf("[%d]", i+1)
	}
	ref := func(text string) string {
		if _, ok := number[text]; !ok {
			notes = append(notes, text)
			number[text] = len(notes)
		}
		return fmt.Sprintf("[%d]", number[text])
	}
	fwdHead := "fwd ms at B"
	if fmtRefs != "" {
		fwdHead += " " + fmtRefs // the format's notes concern the whole column
	}
	head := []string{"L", "B", "status", unit, "modal active", "at B", "above B", fwdHead, "fwd CV %", "notes"}
	left := []int{2, 6, 9}
	if reps {
		head = slices.Insert(head, 2, "repeat")
		left = []int{3, 7, 10}
	}
	var table [][]string
	for _, r := range rows {
		g := r.Figures
		var refs []string
		cells := []string{strconv.Itoa(r.SeqLen), strconv.Itoa(r.Batch)}
		if reps {
			cells = append(cells, strconv.Itoa(r.Repeat))
		}
		if g.Forwards == 0 {
			if g.Reason != "" {
				refs = append(refs, ref(g.Reason))
			}
			if ln := lostNote(r); ln != "" {
				refs = append(refs, ref(ln))
			}
			table = append(table, append(cells, r.Status, "0", "–", "–", "–", "–", "–", strings.Join(refs, " ")))
			continue
		}
		fwd, cv := "–", "–"
		if g.Reason != "" {
			refs = append(refs, ref(g.Reason))
		}
		if g.FwdN > 0 {
			fwd = fmt.Sprintf("%.3f", g.FwdMeanMs)
			if g.FwdCV != nil {
				cv = fmt.Sprintf("%.2f", 100**g.FwdCV)
			} else {
				refs = append(refs, ref(g.FwdCVReason))
			}
		} else if g.FwdReason != "" && g.Reason == "" {
			refs = append(refs, ref(g.FwdReason))
		}
		if ln := lostNote(r); ln != "" {
			refs = append(refs, ref(ln))
		}
		above := "never"
		if !g.NeverAbove {
			above = fmt.Sprintf("%d× (max %d)", g.Above, g.MaxActive)
		}
		table = append(table, append(cells, r.Status, strconv.Itoa(g.Forwards), fmt.Sprintf("%d (%.1f %%)", g.Modal, 100*g.ModalShare),
			fmt.Sprintf("%.2f %%", 100*g.AtTargetShare), above, fwd, cv, strings.Join(refs, " ")))
	}
	report.MarkdownTable(w, head, table, left...)
	fmt.Fprintln(w)
	report.Prose(w, "", "", summary(rows, unit)+".")
	for i, n := range notes {
		mark := fmt.Sprintf("[%d] ", i+1)
		report.Prose(w, mark, strings.Repeat(" ", len(mark)), n+".")
	}
}

// summary is the table's closing line over rows with records (forwards, or samples: unit):
// how many cells have records, in how many B is the modal occupancy and never exceeded, the
// median share of unit at B and the median and max fwd CV at B of the cells that have one.
func summary(rows []Row, unit string) string {
	var modalOK, neverAbove, measured int
	var shares, cvs []float64
	for _, r := range rows {
		g := r.Figures
		if g.Forwards == 0 {
			continue
		}
		measured++
		if g.ModalAtTarget {
			modalOK++
		}
		if g.NeverAbove {
			neverAbove++
		}
		shares = append(shares, g.AtTargetShare)
		if g.FwdN > 0 && g.FwdCV != nil {
			cvs = append(cvs, *g.FwdCV)
		}
	}
	sum := fmt.Sprintf("%d of %d cells have step-log records: B is the modal occupancy in %d, never exceeded in %d", measured, len(rows), modalOK, neverAbove)
	if len(shares) > 0 {
		sum += fmt.Sprintf("; share of %s at B: median %.2f %%", unit, 100*stats.Median(shares))
	}
	if len(cvs) > 0 {
		sum += fmt.Sprintf("; fwd CV at B: median %.2f %%, max %.2f %%", 100*stats.Median(cvs), 100*slices.Max(cvs))
	}
	return sum
}
