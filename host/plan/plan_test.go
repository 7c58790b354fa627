package plan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/genload/genload/host/lengths"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/recording"
)

// drawn answers every cell with the same draws.
type drawn []int

func (d drawn) Lengths(context.Context, int, int, int, int) ([]int, error) {
	return slices.Clone(d), nil
}

// idPrompter makes prompt i of length l the ids [i, i, …] (l of them).
type idPrompter struct{ calls int }

func (p *idPrompter) Prompts(_ context.Context, _ matrix.Cell, lens []int, one bool) ([][]int32, []string, []int, error) {
	p.calls++
	if one {
		lens = lens[:1]
	}
	ids := make([][]int32, len(lens))
	for i, l := range lens {
		ids[i] = make([]int32, l)
		for k := range ids[i] {
			ids[i][k] = int32(i)
		}
	}
	return ids, nil, slices.Clone(lens), nil
}

// longestFirst sends each prompt longer than 100 tokens to worker 1, and records its calls.
type longestFirst struct{ calls [][]int }

func (r *longestFirst) Route(_ context.Context, lens []int, workers int) ([]int, error) {
	r.calls = append(r.calls, slices.Clone(lens))
	out := make([]int, len(lens))
	for i, l := range lens {
		if l > 100 && workers > 1 {
			out[i] = 1
		}
	}
	return out, nil
}

var _ lengths.Router = (*longestFirst)(nil)

func TestBuildLaysOutEachShape(t *testing.T) {
	c := matrix.Cell{Index: 2, SeqLen: 100, Batch: 3}
	for _, tc := range []struct {
		shape    recording.Mode
		prompts  int
		requests string
		workers  []int
	}{
		// one request of the three prompts as an array
		{recording.ModeArray, 3, "[{0 [0 1 2] true 1}]", nil},
		// the draws 80, 100, 130 (clamped to [90, 120]: 90, 100, 120): the third goes to worker 1
		{recording.ModeRouted, 3, "[{0 [0] false 1} {0 [1] false 1} {1 [2] false 1}]", []int{0, 0, 1}},
		// one prompt of L, n = B: no plugin asked, every length L
		{recording.ModeN, 1, "[{0 [0] false 3}]", nil},
	} {
		t.Run(string(tc.shape), func(t *testing.T) {
			r := &longestFirst{}
			st := Stages{Shape: tc.shape, Lengths: lengths.Stage{Source: drawn{80, 100, 130}, Lo: 90, Hi: 120},
				Prompts: &idPrompter{}, Router: r, Workers: 2, MaxTokens: 16}
			if tc.shape == recording.ModeN {
				st.Lengths.Source = nil
			}
			p, err := st.Build(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(p.Requests); got != tc.requests || p.Prompts() != tc.prompts || !slices.Equal(p.Workers, tc.workers) {
				t.Fatalf("requests %s (%d prompts, workers %v), want %s (%d, %v)", got, p.Prompts(), p.Workers, tc.requests, tc.prompts, tc.workers)
			}
			seqs := 0
			for _, q := range p.Requests {
				seqs += q.Sequences()
			}
			if seqs != c.Batch || p.MaxTokens != 16 || p.Cell != c {
				t.Fatalf("%d sequences, max_tokens %d, cell %+v", seqs, p.MaxTokens, p.Cell)
			}
			want := []int{90, 100, 120}
			if tc.shape == recording.ModeN {
				want = []int{100, 100, 100}
			}
			if !slices.Equal(p.Lengths.Each, want) || !slices.Equal(p.Built, want[:tc.prompts]) {
				t.Fatalf("lengths %v built %v, want %v", p.Lengths.Each, p.Built, want)
			}
			// the router is asked once, with the clamped lengths, and only when routed
			if tc.shape == recording.ModeRouted != (len(r.calls) == 1) || len(r.calls) == 1 && !slices.Equal(r.calls[0], want) {
				t.Fatalf("router calls %v", r.calls)
			}
			w := p.ForWarmup()
			if w.MaxTokens != 1 || !w.Warmup || p.MaxTokens != 16 || p.Warmup || fmt.Sprint(w.Requests) != tc.requests {
				t.Fatalf("warmup %+v of %+v", w, p)
			}
		})
	}
}

// Round robin without a router: prompt i to worker i mod W.
func TestRoutedWithoutRouterIsRoundRobin(t *testing.T) {
	st := Stages{Shape: recording.ModeRouted, Lengths: lengths.Stage{Lo: 1, Hi: 1000}, Prompts: &idPrompter{}, Workers: 2}
	p, err := st.Build(context.Background(), matrix.Cell{SeqLen: 10, Batch: 5})
	if err != nil || !slices.Equal(p.Workers, []int{0, 1, 0, 1, 0}) {
		t.Fatalf("workers %v, %v", p.Workers, err)
	}
}

type failing struct{ err error }

func (f failing) Lengths(context.Context, int, int, int, int) ([]int, error) { return nil, f.err }
func (f failing) Route(context.Context, []int, int) ([]int, error)           { return nil, f.err }

func TestBuildNamesTheFailedStage(t *testing.T) {
	boom := errors.New("boom")
	c := matrix.Cell{SeqLen: 100, Batch: 2}
	for _, tc := range []struct {
		name  string
		st    Stages
		stage string
	}{
		{"lengths", Stages{Lengths: lengths.Stage{Source: failing{boom}, Lo: 1, Hi: 200}, Prompts: &idPrompter{}}, "lengths"},
		{"route", Stages{Shape: recording.ModeRouted, Lengths: lengths.Stage{Lo: 1, Hi: 200}, Prompts: &idPrompter{}, Router: failing{boom}, Workers: 2}, "route"},
		{"shape", Stages{Shape: "bogus", Lengths: lengths.Stage{Lo: 1, Hi: 200}, Prompts: &idPrompter{}}, "requests"},
	} {
		p, err := tc.st.Build(context.Background(), c)
		var se *Error
		if !errors.As(err, &se) || se.Stage != tc.stage {
			t.Errorf("%s: err %v, want stage %q", tc.name, err, tc.stage)
		}
		if tc.stage != "lengths" && (p == nil || len(p.Lengths.Each) != 2) {
			t.Errorf("%s: the plan keeps its lengths: %+v", tc.name, p)
		}
	}
}

// Replay repeats the routing call (same lengths as Build's) and builds no prompt.
func TestReplayRoutesWithoutPrompts(t *testing.T) {
	r, pr := &longestFirst{}, &idPrompter{}
	st := Stages{Shape: recording.ModeRouted, Lengths: lengths.Stage{Source: drawn{80, 130}, Lo: 90, Hi: 120}, Prompts: pr, Router: r, Workers: 2}
	if err := st.Replay(context.Background(), matrix.Cell{SeqLen: 100, Batch: 2}); err != nil {
		t.Fatal(err)
	}
	if len(r.calls) != 1 || !slices.Equal(r.calls[0], []int{90, 120}) || pr.calls != 0 {
		t.Fatalf("router calls %v, prompter calls %d", r.calls, pr.calls)
	}
}

// Prompts without a cell: the n shape keeps the first prompt and asks n = the number given;
// routed goes round robin.
func TestForPrompts(t *testing.T) {
	ids := [][]int32{{1}, {2}, {3}}
	for _, tc := range []struct {
		shape    recording.Mode
		prompts  int
		requests string
	}{
		{"", 3, "[{0 [0 1 2] true 1}]"},
		{recording.ModeRouted, 3, "[{0 [0] false 1} {1 [1] false 1} {0 [2] false 1}]"},
		{recording.ModeN, 1, "[{0 [0] false 3}]"},
	} {
		p, err := ForPrompts(tc.shape, ids, nil, 2, 8)
		if err != nil {
			t.Fatalf("%q: %v", tc.shape, err)
		}
		if p.Prompts() != tc.prompts || fmt.Sprint(p.Requests) != tc.requests || p.MaxTokens != 8 {
			t.Errorf("%q: %d prompts, requests %v, want %d, %s", tc.shape, p.Prompts(), p.Requests, tc.prompts, tc.requests)
		}
	}
	if _, err := ForPrompts(recording.ModeArray, nil, nil, 1, 8); err == nil || err.Error() != "no prompts" {
		t.Errorf("no prompts: %v", err)
	}
}
