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
			// Longest prompt to the last worker, others by length mod workers.
			Route: func(lens []int, workers int) ([]int, error) {
				out := make([]int, len(lens))
				for i, l := range lens {
					out[i] = l % workers
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
	// 10, 11, 12 mod 4 = 2, 3, 0.
	if rc := route(3, 4, src, dst); rc != 3 || !slices.Equal(out, u32s(2, 3, 0)) {
		t.Errorf("route rc %d out % x", rc, out)
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
