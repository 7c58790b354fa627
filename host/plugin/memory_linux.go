//go:build linux

package plugin

import (
	"sync"
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// linearMemory keeps the linear memory of a Host's instances outside the Go heap: each is a
// mapping of its maximum size (the memory limit) reserved without access, whose first pages
// are made writable as the plugin grows its memory. Growing moves nothing (wazero's default
// reallocates and copies a Go []byte at every growth, and a Go plugin grows its memory at
// start), untouched pages cost no memory and the garbage collector never sees the bytes.
// An instance's close returns its pages at once (madvise); the mapping itself stays until the
// Host closes, so that no view of it can fault. Where a mapping cannot be made, the memory is
// a Go []byte as wazero's would be.
type linearMemory struct {
	mu   sync.Mutex
	maps [][]byte // every mapping made, unmapped by release
}

// Allocate reserves max bytes (experimental.MemoryAllocator).
func (l *linearMemory) Allocate(_, max uint64) experimental.LinearMemory {
	if max > 0 && max <= 1<<40 && uint64(int(max)) == max {
		if b, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON); err == nil {
			l.mu.Lock()
			l.maps = append(l.maps, b)
			l.mu.Unlock()
			return &mappedMemory{buf: b}
		}
	}
	return &heapMemory{max: max}
}

// release unmaps every mapping; the Host calls it once its runtime is closed.
func (l *linearMemory) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range l.maps {
		_ = syscall.Munmap(b)
	}
	l.maps = nil
}

// mappedMemory is a linear memory in a reserved mapping; buf[:writable] is read-write.
type mappedMemory struct {
	buf      []byte
	writable uint64
	freed    bool
}

// Reallocate makes the first size bytes usable and returns them (nil beyond the mapping or
// after Free: the grow fails).
func (m *mappedMemory) Reallocate(size uint64) []byte {
	if m.freed || size > uint64(len(m.buf)) {
		return nil
	}
	if size > m.writable {
		if err := syscall.Mprotect(m.buf[m.writable:size], syscall.PROT_READ|syscall.PROT_WRITE); err != nil {
			return nil
		}
		m.writable = size
	}
	return m.buf[:size]
}

// Free returns the memory's pages to the system; the mapping stays readable (as zeros)
// until the Host releases it.
func (m *mappedMemory) Free() {
	if !m.freed && m.writable > 0 {
		_ = syscall.Madvise(m.buf[:m.writable], syscall.MADV_DONTNEED)
	}
	m.freed = true
}
