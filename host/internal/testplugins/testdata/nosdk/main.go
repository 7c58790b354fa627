//go:build wasip1

// Command nosdk implements ABI v1 from sdk/ABI.md by hand, without the genload SDK, as an author
// in another language would: a length distribution giving every prompt the cell's mean. It is
// deliberately lax about its config (it ignores unknown keys), which `genload plugin check`
// must report.
package main

import (
	"encoding/binary"
	"unsafe"
)

var (
	bufs    = map[uint32][]uint64{}
	info    = []byte(`{"name":"nosdk","version":"0.1.0","kind":"lengths","abi_minor":0,"caps":[]}`)
	lastErr []byte
	ready   bool
)

func addr(p unsafe.Pointer) uint32 { return uint32(uintptr(p)) }

func pack(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(addr(unsafe.Pointer(&b[0])))<<32 | uint64(len(b))
}

// find returns the bytes [ptr, ptr+n) if they lie in one allocated buffer.
func find(ptr, n uint32) []byte {
	for base, w := range bufs {
		b := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(w)*8)
		if ptr >= base && uint64(ptr)+uint64(n) <= uint64(base)+uint64(len(b)) {
			return b[ptr-base : ptr-base+n]
		}
	}
	return nil
}

//go:wasmexport genload_abi_v1
func marker() {}

//go:wasmexport genload_alloc
func alloc(size uint32) uint32 {
	w := make([]uint64, max(1, (size+7)/8))
	p := addr(unsafe.Pointer(&w[0]))
	bufs[p] = w
	return p
}

//go:wasmexport genload_free
func free(ptr uint32) { delete(bufs, ptr) }

//go:wasmexport genload_info
func infoExport() uint64 { return pack(info) }

//go:wasmexport genload_last_error
func lastError() uint64 { return pack(lastErr) }

//go:wasmexport genload_init
func initExport(ptr, n uint32) int32 {
	if find(ptr, n) == nil {
		lastErr = []byte("envelope outside allocated buffers")
		return -1
	}
	ready = true // lax: the config is not even looked at
	return 0
}

//go:wasmexport genload_lengths
func lengths(n, mean, lo, hi int32, seed uint64, out uint32) int32 {
	if !ready {
		lastErr = []byte("not initialised")
		return -3
	}
	b := find(out, uint32(n)*4)
	if n < 0 || b == nil {
		lastErr = []byte("bad output buffer")
		return -1
	}
	v := min(max(mean, lo), hi)
	for i := range n {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	return n
}

func main() {}
