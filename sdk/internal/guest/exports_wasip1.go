//go:build wasip1

package guest

// The core exports of ABI v1 (sdk/ABI.md §Lifecycle and §Memory). Kind exports live in
// sdk/lengths and sdk/router.

//go:wasmexport genload_abi_v1
func exportMarker() {}

//go:wasmexport genload_alloc
func exportAlloc(size uint32) uint32 { return Alloc(size) }

//go:wasmexport genload_free
func exportFree(ptr uint32) { Free(ptr) }

//go:wasmexport genload_info
func exportInfo() uint64 { return Pack(InfoJSON()) }

//go:wasmexport genload_last_error
func exportLastError() uint64 { return Pack(LastError()) }

//go:wasmexport genload_init
func exportInit(ptr, n uint32) int32 {
	b, err := Slice(ptr, n)
	if err != nil {
		return Guard(func() (int32, error) { return 0, err })
	}
	return Init(b)
}
