package abi

import "testing"

func TestPack(t *testing.T) {
	// sdk/ABI.md §1: 42 bytes at 0x10000 pack to 0x0001_0000_0000_002A.
	if got := Pack(0x10000, 42); got != 0x0001_0000_0000_002A {
		t.Errorf("Pack = %#x", got)
	}
	if p, n := Unpack(0x0001_0000_0000_002A); p != 0x10000 || n != 42 {
		t.Errorf("Unpack = %#x, %d", p, n)
	}
}

func TestCallSeed(t *testing.T) {
	// sdk/ABI.md §9: run seed 42, cell L = 1000, B = 4.
	if got := CallSeed(42, 1000, 4); got != 0x58ebc66ae2053bc0 {
		t.Errorf("CallSeed(42, 1000, 4) = %#x", got)
	}
	// Distinct cells get distinct seeds; the same cell the same seed.
	seen := map[uint64]bool{}
	for _, L := range []int{1000, 2000, 4000} {
		for _, B := range []int{1, 2, 64} {
			s := CallSeed(7, L, B)
			if seen[s] || s != CallSeed(7, L, B) {
				t.Errorf("seed collision or instability at L=%d B=%d", L, B)
			}
			seen[s] = true
		}
	}
}

func TestStatusString(t *testing.T) {
	for s, want := range map[Status]string{OK: "ok", BadInput: "bad input", PluginError: "plugin error", NotInitialised: "not initialised", Unsupported: "unsupported", 9: "unknown status"} {
		if s.String() != want {
			t.Errorf("%d: %q, want %q", s, s.String(), want)
		}
	}
}
