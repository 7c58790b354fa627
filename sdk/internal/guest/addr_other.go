//go:build !wasip1

package guest

// fakeNext is the next fake address handed out on native builds, where pointers do not fit in
// 32 bits; native tests only use addresses round-tripped through Alloc and Slice.
var fakeNext uint32 = 0x10000

// addrOf hands out increasing fake addresses, 8-byte aligned with a gap of 8 bytes.
func addrOf(b []byte) uint32 {
	p := fakeNext
	fakeNext += (uint32(len(b))+7)&^7 + 8
	return p
}

// resetAddr restarts the fake addresses (tests).
func resetAddr() { fakeNext = 0x10000 }
