//go:build wasip1

package guest

import "unsafe"

// addrOf returns the linear-memory address of b's first byte (wasm32 pointers are 32 bits).
func addrOf(b []byte) uint32 { return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// resetAddr does nothing: real addresses need no reset.
func resetAddr() {}
