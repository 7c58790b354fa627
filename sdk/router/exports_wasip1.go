//go:build wasip1

package router

import "github.com/genload/genload/sdk/internal/guest"

//go:wasmexport genload_route
func exportRoute(n, inPtr, workers int32, outPtr uint32) int32 {
	return route(n, workers,
		func(size uint32) ([]byte, error) { return guest.Slice(uint32(inPtr), size) },
		func(size uint32) ([]byte, error) { return guest.Slice(outPtr, size) })
}

//go:wasmexport genload_on_complete
func exportOnComplete(n int32, recsPtr uint32) int32 {
	return complete(n, func(size uint32) ([]byte, error) { return guest.Slice(recsPtr, size) })
}
