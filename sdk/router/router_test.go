package router

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/genload/genload/sdk"
	"github.com/genload/genload/sdk/abi"
	"github.com/genload/genload/sdk/internal/guest"
)

var completed []Completion

func init() {
	Register(sdk.Info{Name: "t", Version: "1", Caps: []string{sdk.CapCompletions}}, func(env *sdk.Env) (Policy, error) {
		return Policy{
			// Longest first: the j-th longest prompt goes to worker j mod workers. Two Scratch
			// buffers in one call (the order and the result) must not overlap.
			Route: func(lens []int, workers int) ([]int, error) {
				order, out := Scratch(len(lens)), Scratch(len(lens))
				for i := range order {
					order[i] = i
				}
				slices.SortStableFunc(order, func(a, b int) int { return lens[b] - lens[a] })
				for j, i := range order {
					out[i] = j % workers
				}
				return out, nil
			},
			Complete: func(done []Completion) error { completed = append(completed, done...); return nil },
		}, nil
	})
}

func u32s(vs ...uint32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

func TestRouteAndComplete(t *testing.T) {
	if rc := guest.Init([]byte(`{"config":null}`)); rc != 0 {
		t.Fatalf("init rc %d: %s", rc, guest.LastError())
	}
	in := u32s(10, 11, 12)
	out := make([]byte, 12)
	src := func(size uint32) ([]byte, error) { return in[:size], nil }
	dst := func(size uint32) ([]byte, error) { return out[:size], nil }
	// Longest first over 4 workers: 12 → 0, 11 → 1, 10 → 2.
	if rc := route(3, 4, src, dst); rc != 3 || !slices.Equal(out, u32s(2, 1, 0)) {
		t.Errorf("route rc %d out % x", rc, out)
	}
	// Again, with other lengths, over the same (reused) storage.
	in = u32s(5, 50, 7, 1)
	out = make([]byte, 16)
	if rc := route(4, 3, src, dst); rc != 4 || !slices.Equal(out, u32s(2, 0, 1, 0)) {
		t.Errorf("second route rc %d out %v", rc, out)
	}
	if rc := route(3, 0, src, dst); rc != -1 || !strings.Contains(string(guest.LastError()), "workers = 0") {
		t.Errorf("zero workers: rc %d %q", rc, guest.LastError())
	}
	recs := append(u32s(1, 100, 50, 0), u32s(2, 200, 0, abi.CompletionFailed)...)
	if rc := complete(2, func(size uint32) ([]byte, error) { return recs[:size], nil }); rc != 0 {
		t.Fatalf("complete rc %d: %s", rc, guest.LastError())
	}
	want := []Completion{{Worker: 1, PromptLen: 100, CompletionTokens: 50}, {Worker: 2, PromptLen: 200, Failed: true}}
	if !slices.Equal(completed, want) {
		t.Errorf("completed %+v, want %+v", completed, want)
	}
}

func TestScratch(t *testing.T) {
	// Within one Route call every Scratch is separate storage; the next call reuses it.
	scratchUsed = 0
	a, b := Scratch(4), Scratch(4)
	if &a[0] == &b[0] {
		t.Fatal("two Scratch calls in one Route call share storage")
	}
	scratchUsed = 0 // what route does before the next call
	if c := Scratch(4); &c[0] != &a[0] {
		t.Error("the next Route call's first Scratch does not reuse the first buffer")
	}
}
