//go:build wasip1

package lengths

import "github.com/genload/genload/sdk/internal/guest"

//go:wasmexport genload_lengths
func exportLengths(n, mean, lo, hi int32, seed uint64, outPtr uint32) int32 {
	return export(n, mean, lo, hi, seed, func(size uint32) ([]byte, error) { return guest.Slice(outPtr, size) })
}
