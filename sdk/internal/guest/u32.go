package guest

import (
	"encoding/binary"
	"math"
)

// Inside wasm, under the host's termination check (wazero WithCloseOnContextDone), every loop
// iteration and every entry of a Go function that can be resumed costs ≈ 30 ns: a round trip
// out of the compiled code to check whether the call was cancelled. The helpers below are
// therefore unrolled by 8 and avoid allocation, which takes the SDK's share of a 64-value call
// from ≈ 12 µs to ≈ 2 µs (host/plugin BenchmarkUniformLengths64).

// PutU32s writes src as little-endian u32 values into dst, which must hold 4·len(src) bytes.
// It returns the index of the first value outside [0, 2³² − 1] (nothing from it on is
// written), or −1 when all fit.
func PutU32s(dst []byte, src []int) int {
	_ = dst[:4*len(src)]
	i := 0
	for ; i+8 <= len(src); i += 8 {
		s := src[i : i+8 : i+8]
		if uint64(s[0])|uint64(s[1])|uint64(s[2])|uint64(s[3])|uint64(s[4])|uint64(s[5])|uint64(s[6])|uint64(s[7]) > math.MaxUint32 {
			break // the tail loop finds which one
		}
		d := dst[4*i : 4*i+32 : 4*i+32]
		binary.LittleEndian.PutUint32(d[0:], uint32(s[0]))
		binary.LittleEndian.PutUint32(d[4:], uint32(s[1]))
		binary.LittleEndian.PutUint32(d[8:], uint32(s[2]))
		binary.LittleEndian.PutUint32(d[12:], uint32(s[3]))
		binary.LittleEndian.PutUint32(d[16:], uint32(s[4]))
		binary.LittleEndian.PutUint32(d[20:], uint32(s[5]))
		binary.LittleEndian.PutUint32(d[24:], uint32(s[6]))
		binary.LittleEndian.PutUint32(d[28:], uint32(s[7]))
	}
	for ; i < len(src); i++ {
		if uint64(src[i]) > math.MaxUint32 { // negative values are huge as uint64
			return i
		}
		binary.LittleEndian.PutUint32(dst[4*i:], uint32(src[i]))
	}
	return -1
}

// GetU32s reads len(dst) little-endian u32 values from src (at least 4·len(dst) bytes) into dst.
func GetU32s(dst []int, src []byte) {
	_ = src[:4*len(dst)]
	i := 0
	for ; i+8 <= len(dst); i += 8 {
		d := dst[i : i+8 : i+8]
		s := src[4*i : 4*i+32 : 4*i+32]
		d[0] = int(binary.LittleEndian.Uint32(s[0:]))
		d[1] = int(binary.LittleEndian.Uint32(s[4:]))
		d[2] = int(binary.LittleEndian.Uint32(s[8:]))
		d[3] = int(binary.LittleEndian.Uint32(s[12:]))
		d[4] = int(binary.LittleEndian.Uint32(s[16:]))
		d[5] = int(binary.LittleEndian.Uint32(s[20:]))
		d[6] = int(binary.LittleEndian.Uint32(s[24:]))
		d[7] = int(binary.LittleEndian.Uint32(s[28:]))
	}
	for ; i < len(dst); i++ {
		dst[i] = int(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

// Ints is a grow-only []int reused from call to call (export calls never overlap: the host
// serialises them per instance).
type Ints struct{ buf []int }

// Get returns a slice of n ints; its contents are whatever the previous call left.
func (s *Ints) Get(n int) []int {
	if cap(s.buf) < n {
		s.buf = make([]int, n)
	}
	return s.buf[:n]
}
