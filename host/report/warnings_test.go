package report

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/warning"
)

// A cell record written before warnings had names holds their texts alone: it still loads,
// and its warnings are named from the catalogue. A record written now keeps its names.
func TestWarningNamesOfOldAndNewRecords(t *testing.T) {
	old := `{"type":"cell","cell":{"index":0,"seq_len":1000,"batch":8},"status":"ok","warnings":[` +
		`"per-forward estimators disagree: fwd (the mean forward pass) 1.045 ms is +16.6 % of the robust fit 0.896 ms (the typical one)",` +
		`"batch attainment: the server mostly ran 1 sequence at once, not B = 8 (0 % of samples at B)",` +
		`"a text no kind knows"]}`
	var c results.Cell
	if err := json.Unmarshal([]byte(old), &c); err != nil {
		t.Fatal(err)
	}
	want := []warning.Name{warning.FwdVsFit, warning.BatchNotReached, warning.Other}
	if got := names(c.NamedWarnings()); !slices.Equal(got, want) {
		t.Errorf("old record's names %v, want %v", got, want)
	}
	// A new record: Warn keeps the names beside the texts, through JSON.
	var n results.Cell
	n.Warnings = append(n.Warnings, "realised mean length 206 is +3.2 % off L = 200: 2 of 8 lengths clamped") // appended without a name
	n.Warn(warning.New(warning.ServersDiffer, "a text whose own words would classify otherwise"))
	b, err := json.Marshal(&n)
	if err != nil {
		t.Fatal(err)
	}
	var back results.Cell
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	want = []warning.Name{warning.LengthsOffTarget, warning.ServersDiffer}
	if got := names(back.NamedWarnings()); !slices.Equal(got, want) || !slices.Equal(back.WarningNames, want) {
		t.Errorf("new record's names %v (stored %v), want %v\n%s", got, back.WarningNames, want, b)
	}
}

// The table's groups are the catalogue's kinds, headed by their sentence: "estimators
// disagree" (measure's fit check) and "estimates disagree" (the server's figures) are two
// kinds, each with its own headline, also in a record that stored the one retired name for
// both; a text no kind knows keeps its own words with its varying numbers as ….
func TestGroupsAreTheCataloguesKinds(t *testing.T) {
	run := &results.Run{Cells: []results.Cell{
		{Cell: matrix.Cell{Index: 0, SeqLen: 1000, Batch: 1}, Warnings: []string{
			"per-forward estimators disagree: fwd (the mean forward pass) 1.045 ms is +16.6 % of the robust fit 0.896 ms (the typical one)",
			"odd thing 3 happened"}},
		{Cell: matrix.Cell{Index: 1, SeqLen: 1000, Batch: 8}, Warnings: []string{
			"per-forward estimators disagree: fwd (the mean forward pass) 1.2 ms is +20.0 % of the robust fit 1.0 ms (the typical one)",
			"per-forward estimates disagree: metrics fwd (/metrics) 10.000 ms is +39 % of the client's fwd 7.190 ms (a late first token or a stall)",
			"odd thing 4 happened"},
			WarningNames: []warning.Name{"estimates-disagree", "estimates-disagree", warning.Other}},
	}}
	gs := GroupWarnings(run)
	if len(gs) != 3 {
		t.Fatalf("%d groups: %+v", len(gs), gs)
	}
	for i, want := range []struct {
		name  warning.Name
		kind  string
		cells int
	}{
		{warning.FwdVsFit, "The mean forward pass and the robust fit (a Theil–Sen slope) differ by more than 5 %", 2},
		{warning.Other, "odd thing … happened", 2},
		{warning.SourcesDisagree, "The client's, the server's and the engine's per-forward figures differ by more than 5 %", 1},
	} {
		if g := gs[i]; g.Name != want.name || g.Kind != want.kind || len(g.Cells) != want.cells {
			t.Errorf("group %d: %s %q over %d cells, want %s %q over %d", i, g.Name, g.Kind, len(g.Cells), want.name, want.kind, want.cells)
		}
	}
	if got, want := csvWarnings(&run.Cells[1]), "fwd-vs-fit; sources-disagree; other"; got != want {
		t.Errorf("CSV warnings column %q, want %q", got, want)
	}
}

func names(ws []warning.Warning) []warning.Name {
	out := make([]warning.Name, len(ws))
	for i, w := range ws {
		out[i] = w.Name
	}
	return out
}

// Repeats of one run: repeat 1's warmups sent the prompts to a cold cache (the counts of the
// second run of the live test, 0 of 600), repeats 2 and 3 found them there (576 of 600): the
// note names the repeats; a run whose server counted no cached tokens gets none.
func TestCacheNotesNameTheRepeats(t *testing.T) {
	r := &results.Run{Header: results.Header{RunID: "r"}}
	for rep := 1; rep <= 3; rep++ {
		cached := 0
		if rep > 1 {
			cached = 576
		}
		r.Cells = append(r.Cells, results.Cell{Cell: matrix.Cell{SeqLen: 300, Batch: 2}, Repeat: rep, CacheBefore: &results.PromptCache{Cached: cached, Prompt: 600, Warmup: true}})
	}
	want := []string{"prompts already cached: r: 2 of 3 cell records (repeat 2, 3) found their prompts in the server's prefix cache before sending them (an earlier run, repeat or cell had sent the same prompts): their warmup found them there, so the measured requests are warm as in any run"}
	if got := CacheNotes([]*results.Run{r}); !slices.Equal(got, want) {
		t.Errorf("notes %q,\nwant %q", got, want)
	}
	for i := range r.Cells {
		r.Cells[i].CacheBefore = nil
	}
	if got := CacheNotes([]*results.Run{r}); len(got) != 0 {
		t.Errorf("a server without cached-token counts: %q", got)
	}
}

// A cell measured three times (--repeat) with the same warning each time: its group's example
// says the sentence once; two different messages of one kind in one record stay side by side.
func TestGroupOfRepeatsSaysTheExampleOnce(t *testing.T) {
	cached := "prompts already cached: its warmup found 99.2 % of the prompt tokens (992 of 1,000) in the server's prefix cache before the cell had sent them"
	a, b := matrix.Cell{Index: 0, SeqLen: 1000, Batch: 1}, matrix.Cell{Index: 1, SeqLen: 1000, Batch: 4}
	run := &results.Run{}
	for r := 1; r <= 3; r++ {
		for _, c := range []matrix.Cell{a, b} {
			run.Cells = append(run.Cells, results.Cell{Cell: c, Repeat: r, Warnings: []string{cached}})
		}
	}
	// a repeat that found another share: still one example, the first record's
	run.Cells[2].Warnings = []string{strings.Replace(cached, "99.2 %", "98.0 %", 1)}
	run.Cells = append(run.Cells, results.Cell{Cell: matrix.Cell{Index: 2, SeqLen: 2000, Batch: 1},
		Warnings: []string{"token counts of 1 of 1 sequences: x", "token counts of 1 of 1 sequences: y", "token counts of 1 of 1 sequences: x"}})
	gs := GroupWarnings(run)
	if len(gs) != 2 || gs[0].Name != warning.PromptsCached {
		t.Fatalf("groups %+v", gs)
	}
	if g := gs[0]; len(g.Cells) != 2 || g.Messages[0] != cached {
		t.Fatalf("cached group: %d cells, first message %q", len(g.Cells), g.Messages[0])
	}
	if got := gs[1].Messages[0]; got != "token counts of 1 of 1 sequences: x; token counts of 1 of 1 sequences: y" {
		t.Fatalf("one record's two messages: %q", got)
	}
}
