package lengths

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/genload/genload/sdk"
	"github.com/genload/genload/sdk/abi"
	"github.com/genload/genload/sdk/internal/guest"
)

// The test plugin returns n+extra copies of mean, or panics for mean 13.
var extra int

func init() {
	Register(sdk.Info{Name: "t", Version: "1"}, func(env *sdk.Env) (Func, error) {
		return func(c Call) ([]int, error) {
			if c.Mean == 13 {
				panic("unlucky")
			}
			if c.Mean < 0 {
				return []int{c.Mean}, nil
			}
			out := make([]int, c.N+extra)
			for i := range out {
				out[i] = c.Mean + int(c.Seed)
			}
			return out, nil
		}, nil
	})
}

func TestClamp(t *testing.T) {
	c := Call{Min: 10, Max: 20}
	for v, want := range map[int]int{5: 10, 10: 10, 15: 15, 20: 20, 99: 20} {
		if got := c.Clamp(v); got != want {
			t.Errorf("Clamp(%d) = %d, want %d", v, got, want)
		}
	}
}

func TestExport(t *testing.T) {
	buf := make([]byte, 64)
	out := func(size uint32) ([]byte, error) {
		if int(size) > len(buf) {
			return nil, guest.Error(abi.BadInput, "too big")
		}
		return buf[:size], nil
	}
	if rc := export(2, 10, 1, 100, 0, out); rc != -3 {
		t.Errorf("before init: rc %d, want -3 (not initialised)", rc)
	}
	if rc := guest.Init([]byte(`{"abi":1,"config":{}}`)); rc != 0 {
		t.Fatalf("init rc %d: %s", rc, guest.LastError())
	}
	cases := []struct {
		name  string
		n     int32
		mean  int32
		extra int
		rc    int32
		err   string
	}{
		{"ok", 4, 10, 0, 4, ""},
		{"too-many", 4, 10, 1, 5, ""}, // writes 4, reports 5: the host rejects the count
		{"too-few", 4, 10, -1, 3, ""},
		{"negative-n", -1, 10, 0, -1, "n = -1"},
		{"buffer-too-small", 17, 10, 0, -1, "too big"},
		{"panic", 2, 13, 0, -2, "panic: unlucky"},
		{"negative-length", 1, -5, 0, -2, "length -5 at index 0 does not fit in a u32"},
	}
	for _, c := range cases {
		extra = c.extra
		clear(buf)
		rc := export(c.n, c.mean, 1, 100, 7, out)
		if rc != c.rc || !strings.Contains(string(guest.LastError()), c.err) {
			t.Errorf("%s: rc %d (%q), want %d containing %q", c.name, rc, guest.LastError(), c.rc, c.err)
		}
		if c.name == "ok" {
			for i := range 4 {
				// mean 10 + seed 7 = 17 in each of the 4 little-endian u32 slots.
				if v := binary.LittleEndian.Uint32(buf[4*i:]); v != 17 {
					t.Errorf("slot %d = %d, want 17", i, v)
				}
			}
		}
	}
}
