//go:build !linux

package plugin

import "github.com/tetratelabs/wazero/experimental"

// linearMemory allocates linear memory on the Go heap where there is no anonymous mmap.
type linearMemory struct{}

// Allocate returns a memory of up to max bytes on the Go heap.
func (*linearMemory) Allocate(_, max uint64) experimental.LinearMemory { return &heapMemory{max: max} }

func (*linearMemory) release() {}
