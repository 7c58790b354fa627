package lengths

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/genload/genload/host/matrix"
)

func TestClampBoundsEveryLengthAndCountsClamps(t *testing.T) {
	drawn := []int{10, 50, 500, 131000, 130972}
	r := Clamp(drawn, 1000, 50, 130972)
	// 10 → 50 and 131000 → 130972 are clamped; 50 and 130972 are on the bounds already, as a
	// plugin that clamps (the ABI's contract) gives them: 4 lengths on a bound.
	if !slices.Equal(r.Each, []int{50, 50, 500, 130972, 130972}) || r.Clamped != 4 {
		t.Fatalf("lengths %v, clamped %d", r.Each, r.Clamped)
	}
	if !slices.Equal(drawn, []int{10, 50, 500, 131000, 130972}) || !slices.Equal(r.Requested, drawn) {
		t.Fatalf("the draws changed: %v (requested %v)", drawn, r.Requested)
	}
	// mean = (50+50+500+130972+130972)/5 = 52508.8
	if r.Min != 50 || r.Max != 130972 || r.Mean != 52508.8 || r.Target != 1000 {
		t.Errorf("stats %+v", r)
	}
}

// fakeLengths answers every cell with its lengths, and counts the calls.
type fakeLengths struct {
	each  []int
	err   error
	calls [][4]int // n, mean, min, max
}

func (f *fakeLengths) Lengths(_ context.Context, n, mean, lo, hi int) ([]int, error) {
	f.calls = append(f.calls, [4]int{n, mean, lo, hi})
	return slices.Clone(f.each), f.err
}

var _ Lengths = (*fakeLengths)(nil)

func TestStageAsksForTheRangeAndClampsAgain(t *testing.T) {
	src := &fakeLengths{each: []int{90, 100, 140}}
	s := Stage{Source: src, Lo: 95, Hi: 120}
	r, err := s.Cell(context.Background(), matrix.Cell{SeqLen: 100, Batch: 3})
	if err != nil {
		t.Fatal(err)
	}
	// asked for the range [95, 120]; a source that does not keep to it is clamped to it: 95,
	// 100, 120, mean 105 (+5 %)
	if len(src.calls) != 1 || src.calls[0] != [4]int{3, 100, 95, 120} {
		t.Fatalf("calls %v", src.calls)
	}
	if !slices.Equal(r.Each, []int{95, 100, 120}) || r.Clamped != 2 || r.Mean != 105 {
		t.Fatalf("realised %+v", r)
	}
	if w := r.Warning(); w != "realised mean length 105 is +5.0 % off L = 100: 2 of 3 lengths clamped to [95, 120]" {
		t.Fatalf("warning %q", w)
	}
	// the legacy n shape: no plugin, B lengths of L, no warning
	r, err = Stage{Lo: 95, Hi: 120}.Cell(context.Background(), matrix.Cell{SeqLen: 100, Batch: 4})
	if err != nil || !slices.Equal(r.Each, []int{100, 100, 100, 100}) || r.Warning() != "" {
		t.Fatalf("n shape: %+v %v %q", r, err, r.Warning())
	}
}

func TestWarningOnlyBeyondOnePercent(t *testing.T) {
	for _, c := range []struct {
		each []int
		want string
	}{
		{[]int{1010, 990}, ""},                     // mean 1000
		{[]int{1005, 1005}, ""},                    // +0.5 %
		{[]int{1030, 1030}, "+3.0 % off L = 1000"}, // the plugin's draws, not clamps
	} {
		w := Clamp(c.each, 1000, 1, 1<<20).Warning()
		if c.want == "" && w != "" || c.want != "" && !strings.Contains(w, c.want) || c.want != "" && !strings.Contains(w, "the plugin's lengths average 1030") {
			t.Errorf("%v: warning %q, want %q", c.each, w, c.want)
		}
	}
}

func TestPrefetchNamesTheFailingCell(t *testing.T) {
	src := &fakeLengths{each: []int{1}}
	st := Stage{Source: src, Lo: 20, Hi: 4000}
	if err := st.Prefetch(context.Background(), []matrix.Cell{{SeqLen: 100, Batch: 1}, {SeqLen: 200, Batch: 4}}); err != nil ||
		len(src.calls) != 2 || src.calls[1] != [4]int{4, 200, 20, 4000} {
		t.Fatalf("err %v calls %v", err, src.calls)
	}
	src.err = errors.New("boom")
	if err := st.Prefetch(context.Background(), []matrix.Cell{{SeqLen: 300, Batch: 2}}); err == nil || err.Error() != "cell L=300,B=2: boom" {
		t.Fatalf("err %v", err)
	}
	if err := (Stage{}).Prefetch(context.Background(), []matrix.Cell{{SeqLen: 300, Batch: 2}}); err != nil {
		t.Fatalf("the n shape (no source): %v", err)
	}
}

type fixedRouter []int

func (r fixedRouter) Route(context.Context, []int, int) ([]int, error) { return r, nil }

func TestRouteChecksTheAnswer(t *testing.T) {
	ctx := context.Background()
	if a, err := Route(ctx, fixedRouter{1, 0}, []int{5, 6}, 2); err != nil || !slices.Equal(a, []int{1, 0}) {
		t.Fatalf("%v %v", a, err)
	}
	if _, err := Route(ctx, fixedRouter{1}, []int{5, 6}, 2); err == nil || err.Error() != "router returned 1 workers for 2 prompts" {
		t.Fatalf("short answer: %v", err)
	}
	if _, err := Route(ctx, fixedRouter{0, 2}, []int{5, 6}, 2); err == nil || err.Error() != "router sent prompt 1 to worker 2, want [0, 2)" {
		t.Fatalf("bad worker: %v", err)
	}
}
