//go:build linux

package plugin

import "testing"

// TestLinearMemory checks the mapped linear memory: as a heap one, and after Free its pages
// are returned but it stays readable, until the host releases the mappings.
func TestLinearMemory(t *testing.T) {
	l := &linearMemory{}
	m := l.Allocate(0, 4<<16)
	mm, ok := m.(*mappedMemory)
	if !ok {
		t.Fatalf("Allocate gave a %T, want a mapping", m)
	}
	checkLinearMemory(t, m)
	if got := mm.Reallocate(1 << 16); got != nil {
		t.Error("a freed memory grew")
	}
	if v := mm.buf[3<<16-1]; v != 0 { // still mapped, its pages returned
		t.Errorf("a freed memory still holds %d", v)
	}
	if len(l.maps) != 1 {
		t.Fatalf("%d mappings recorded, want 1", len(l.maps))
	}
	l.release()
	if len(l.maps) != 0 {
		t.Errorf("%d mappings left after release", len(l.maps))
	}
}
