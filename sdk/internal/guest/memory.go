package guest

import (
	"strconv"
	"unsafe"

	"github.com/genload/genload/sdk/abi"
)

// maxAlloc is the largest buffer genload_alloc grants (bytes); larger requests return 0.
const maxAlloc = 1 << 30

// pinned is the set of buffers handed out by genload_alloc, keyed by guest address. Holding the
// slice keeps it reachable, and Go's garbage collector never moves heap objects, so the address
// stays valid until genload_free.
type pinned struct {
	bufs map[uint32][]byte
	// last is the buffer Slice found last and lastBase its address: the host reuses one
	// buffer call after call (input and output at two offsets in it), so Slice usually needs
	// neither a map lookup nor a map walk, both slow inside wasm.
	last     []byte
	lastBase uint32
}

var pins = newPinned()

func newPinned() *pinned { return &pinned{bufs: map[uint32][]byte{}} }

// Alloc implements genload_alloc: it returns the address of a new 8-byte-aligned, zeroed,
// pinned buffer of size bytes (size 0 gives a distinct 8-byte buffer), or 0 if size exceeds 1 GiB.
func Alloc(size uint32) uint32 {
	if size > maxAlloc {
		return 0
	}
	words := make([]uint64, max(1, (uint64(size)+7)/8))
	b := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	p := addrOf(b)
	pins.bufs[p] = b
	return p
}

// Free implements genload_free: it unpins the buffer at ptr; unknown pointers are ignored.
func Free(ptr uint32) {
	delete(pins.bufs, ptr)
	if ptr == pins.lastBase {
		pins.last, pins.lastBase = nil, 0
	}
}

// Slice returns the n bytes at guest address ptr, which must lie inside one pinned buffer
// (a sub-range is fine); otherwise it returns an abi.BadInput error, so a host bug never makes
// the guest write outside memory it owns.
func Slice(ptr, n uint32) ([]byte, error) {
	if b, base := pins.last, pins.lastBase; b != nil && ptr >= base && uint64(ptr)+uint64(n) <= uint64(base)+uint64(len(b)) {
		off := ptr - base
		return b[off : off+n : off+n], nil
	}
	for base, b := range pins.bufs {
		if ptr >= base && uint64(ptr)+uint64(n) <= uint64(base)+uint64(len(b)) {
			pins.last, pins.lastBase = b, base
			off := ptr - base
			return b[off : off+n : off+n], nil
		}
	}
	return nil, Error(abi.BadInput, "buffer [0x"+strconv.FormatUint(uint64(ptr), 16)+", +"+strconv.FormatUint(uint64(n), 10)+" bytes) is not inside a buffer from "+abi.Alloc)
}

// Pack returns the packed ptr<<32|len of b for genload_info and genload_last_error; b must stay
// reachable until the next export call.
func Pack(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return abi.Pack(addrOf(b), uint32(len(b)))
}

// String renders a buffer for messages.
func (p *pinned) String() string { return strconv.Itoa(len(p.bufs)) + " pinned buffers" }
