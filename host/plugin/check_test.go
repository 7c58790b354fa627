package plugin

import (
	"bytes"
	"context"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/host/internal/textcheck"
	"github.com/genload/genload/sdk/abi"
)

func TestCheckWithoutSDK(t *testing.T) {
	// testdata/flat.wat implements the ABI in WebAssembly text from sdk/ABI.md alone (no SDK, no
	// compiler): it loads and serves lengths, but ignores unknown config keys, which the config
	// step must catch.
	ctx := context.Background()
	h := interpHost(t)
	wasm := testplugins.Wat(t, "flat")
	p, err := h.LoadLengths(ctx, wasm, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Info().Name != "flat" || !p.Info().HasCap(abi.CapPure) {
		t.Errorf("info %+v, want flat with capability pure", p.Info())
	}
	// The mean clamped to [min, max], and a batch larger than the first buffer (4 KiB) so the
	// host frees it, allocates a larger one and the guest grows its memory past one page.
	for _, c := range []struct{ n, mean, min, max, want int }{{3, 700, 1, 600, 600}, {2, 5, 10, 20, 10}, {20000, 123, 1, 32768, 123}} {
		ls, err := p.Lengths(ctx, c.n, c.mean, c.min, c.max)
		if err != nil || len(ls) != c.n || slices.ContainsFunc(ls, func(v int) bool { return v != c.want }) {
			t.Errorf("lengths(%d, %d, [%d, %d]) = %d values (%v…), %v; want all %d", c.n, c.mean, c.min, c.max, len(ls), ls[:min(len(ls), 4)], err, c.want)
		}
	}
	r, err := h.Check(ctx, wasm, nil)
	last := r.Steps[len(r.Steps)-1]
	if err == nil || len(r.Steps) != 9 || last.Name != "config" || last.OK || !strings.Contains(err.Error(), `accepted the unknown config key "genload_check_unknown_key"`) {
		t.Errorf("report %+v, err %v", r.Steps, err)
	}
	if pure := r.Steps[len(r.Steps)-2]; pure.Name != "pure" || !pure.OK {
		t.Errorf("step before config: %+v, want pure ok", pure)
	}
	// A module rejected statically stops at the abi step, with its exports listed.
	r, err = h.Check(ctx, testplugins.Build(t, "./plugins/uniform", testplugins.Options{Name: "uniform-cmd", NoCShared: true}), nil)
	if err == nil || len(r.Steps) != 1 || r.Steps[0].Name != "abi" || r.Steps[0].OK || len(r.Exports) == 0 {
		t.Errorf("report %+v, err %v", r.Steps, err)
	}
}

func TestCheckCatchesAnImpurePlugin(t *testing.T) {
	// testdata/liar.wat declares "pure" but adds its call count to every length: its first call
	// on each instance gives the mean (1000), so the repeat step passes; the trial call again on
	// the first instance is its 4th call (trial, two edge calls), 1003 everywhere.
	ctx := context.Background()
	r, err := interpHost(t).Check(ctx, testplugins.Wat(t, "liar"), nil)
	if err == nil {
		t.Fatalf("a plugin whose pure output changes passed: %+v", r.Steps)
	}
	last := r.Steps[len(r.Steps)-1]
	if last.Name != "pure" || last.OK || r.Steps[len(r.Steps)-2].Name != "repeat" || !r.Steps[len(r.Steps)-2].OK {
		t.Errorf("steps %+v, want repeat ok then pure failing", r.Steps)
	}
	for _, want := range []string{"plugin liar", "[genload_lengths]", `declares capability "pure"`,
		"on the first instance, after the edge calls length 0 is 1003, on the first call 1000"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if r.TrialOut[0] != 1000 || slices.ContainsFunc(r.TrialOut, func(v int) bool { return v != 1000 }) {
		t.Errorf("trial %v, want 64 × 1000", r.TrialOut)
	}
}

func TestSummarize(t *testing.T) {
	cases := []struct {
		in   []int
		want Summary
	}{
		// Sorted: 122 481 1058 2339; p50 = 2nd (⌈0.5·4⌉), p90 = 4th (⌈3.6⌉); mean 4000/4.
		{[]int{2339, 122, 1058, 481}, Summary{N: 4, Min: 122, P50: 481, P90: 2339, Max: 2339, Mean: 1000}},
		// 10 values 1..10: p50 = 5th, p90 = 9th; mean 5.5.
		{[]int{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, Summary{N: 10, Min: 1, P50: 5, P90: 9, Max: 10, Mean: 5.5}},
		{[]int{7}, Summary{N: 1, Min: 7, P50: 7, P90: 7, Max: 7, Mean: 7}},
		{nil, Summary{}},
	}
	for _, c := range cases {
		if got := Summarize(c.in); got != c.want {
			t.Errorf("Summarize(%v) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

func TestHistogram(t *testing.T) {
	// Range [0, 99] in 4 bins of width 25: [0,25) [25,50) [50,75) [75,99].
	got := Histogram([]int{0, 1, 30, 60, 99, 99}, 4)
	want := []Bin{{0, 25, 2, 2, false}, {25, 50, 1, 2, false}, {50, 75, 1, 2, false}, {75, 99, 2, 2, true}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	// All equal: one bin.
	if got := Histogram([]int{5, 5, 5}, 10); len(got) != 1 || got[0].Count != 3 || got[0].Lo != 5 || got[0].Hi != 5 {
		t.Errorf("constant lengths: %+v", got)
	}
	var b bytes.Buffer
	if err := WriteLengths(&b, []int{122, 481, 1058, 2339}, 2); err != nil {
		t.Fatal(err)
	}
	// Span 2218 in 2 bins of width 1109: [122,1231) holds 3, [1231,2339] holds 1 (bar ⌈40/3⌉ = 14).
	wantText := "lengths: 122 481 1058 2339\n" +
		"n=4 mean=1000.0 min=122 p50=481 p90=2339 max=2339\n" +
		"[   122,   1231)   3 " + strings.Repeat("█", 40) + "\n" +
		"[  1231,   2339]   1 " + strings.Repeat("█", 14) + "\n"
	if b.String() != wantText {
		t.Errorf("got\n%s\nwant\n%s", b.String(), wantText)
	}
}

// 64 lengths of 4 and 5 digits (316 columns on one line) wrap within 120 columns, the
// continuation lines under the first length, every length kept in order.
func TestWriteLengthsWrapsTheList(t *testing.T) {
	var ls []int
	for i := range 64 {
		ls = append(ls, 1000+i*1500)
	}
	var b bytes.Buffer
	if err := WriteLengths(&b, ls, 10); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if wide := textcheck.Wider(out, 120); len(wide) > 0 {
		t.Errorf("lines over 120 columns: %v", wide)
	}
	lines := strings.Split(out, "\n")
	var got []string
	n := 0
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "lengths: "):
			got = append(got, strings.Fields(strings.TrimPrefix(l, "lengths:"))...)
			n++
		case strings.HasPrefix(l, "         ") && n > 0 && len(got) < len(ls):
			got = append(got, strings.Fields(l)...)
			n++
		}
	}
	want := make([]string, len(ls))
	for i, v := range ls {
		want[i] = strconv.Itoa(v)
	}
	if n < 3 || !slices.Equal(got, want) {
		t.Errorf("%d lines of lengths %v, want %v over 3 or more lines:\n%s", n, got, want, out)
	}
}

func TestParseSet(t *testing.T) {
	got, err := ParseSet([]string{"k=0.9", "n=3", "on=true", "edges=[1, 2]", "name=x", `q="y z"`, "k=2.5"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"k": 2.5, "n": int64(3), "on": true, "edges": []any{int64(1), int64(2)}, "name": "x", "q": "y z"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v\nwant %#v", got, want)
	}
	for _, bad := range []string{"k", "=3"} {
		if _, err := ParseSet([]string{bad}); err == nil {
			t.Errorf("ParseSet(%q) succeeded", bad)
		}
	}
}

func TestCheckShipped(t *testing.T) {
	ctx := context.Background()
	h := testHost(t)
	for name, c := range map[string]struct {
		trial string
		steps int // gamma is pure, so it has a pure step
	}{
		"gamma":     {"lengths(n=64, mean=1000, min=1, max=32768): n=64 mean=1000.0", 9},
		"router-rr": {"route(8 prompts of 100…800 tokens, 4 workers) = [0 1 2 3 0 1 2 3]", 8},
	} {
		r, err := h.Check(ctx, name, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var b bytes.Buffer
		_ = r.WriteText(&b)
		trial := c.trial
		if len(r.Steps) != c.steps || (c.steps == 9) != strings.Contains(b.String(), "ok   pure ") || !strings.Contains(b.String(), `ok   config   unknown key rejected: config: json: unknown field "genload_check_unknown_key"`) || !strings.Contains(b.String(), "ok   trial    "+trial) || !strings.Contains(b.String(), "genload_abi_v1") {
			t.Errorf("%s report:\n%s", name, b.String())
		}
	}
}

func TestCheckCompletions(t *testing.T) {
	// A router declaring "completions" gets a completions step; one whose callback fails is
	// caught there, before a run would abort at its first cell.
	ctx := context.Background()
	h := testHost(t)
	wasm := testplugins.Build(t, "./host/internal/testplugins/testdata/completer", testplugins.Options{})
	r, err := h.Check(ctx, wasm, nil)
	if err != nil || len(r.Steps) != 9 || r.Steps[6].Name != "completions" || !r.Steps[6].OK {
		t.Fatalf("report %+v, err %v", r.Steps, err)
	}
	// Least outstanding tokens over 4 workers: 100, 200, 300, 400 fill workers 0–3; 500 goes
	// to worker 0 (100), 600 to 1 (200), 700 to 2 (300), 800 to 3 (400).
	if want := []int{0, 1, 2, 3, 0, 1, 2, 3}; !slices.Equal(r.TrialOut, want) {
		t.Errorf("trial %v, want %v", r.TrialOut, want)
	}
	r, err = h.Check(ctx, wasm, map[string]any{"fail": true})
	last := r.Steps[len(r.Steps)-1]
	if err == nil || last.Name != "completions" || last.OK || !strings.Contains(err.Error(), "[genload_on_complete]") ||
		!strings.Contains(err.Error(), "completion bookkeeping broke") {
		t.Errorf("report %+v, err %v", r.Steps, err)
	}
}
