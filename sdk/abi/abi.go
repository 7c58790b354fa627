// Package abi holds the names, signatures and codes of the genload plugin ABI v1, as specified in
// sdk/ABI.md. It is imported by the guest SDK (sdk/lengths, sdk/router) and by the host
// (host/plugin), so both sides share one spelling of every export; it has no dependencies and
// contains no wasm-specific code.
//
// A test in host/plugin parses every WAT signature in sdk/ABI.md and compares it with [Exports],
// so the prose and this registry cannot drift apart.
package abi

// Major is the ABI major version this package describes. A guest declares it by exporting
// [MarkerPrefix] followed by the number ("genload_abi_v1"); a host refuses any other major version.
const Major = 1

// Minor is the newest ABI minor version this host/SDK knows. Minor versions only add optional
// exports, capabilities or envelope keys; a guest built for minor m works with any host of the
// same major version, and the host tells the guest its minor in the init envelope.
const Minor = 0

// Prefix starts every export name of the ABI.
const Prefix = "genload_"

// MarkerPrefix is the name of the version marker export without its number: a guest exports
// exactly one function named MarkerPrefix+"<major>", e.g. "genload_abi_v1", of type () -> ().
const MarkerPrefix = Prefix + "abi_v"

// Export names, each specified in its own section of sdk/ABI.md.
const (
	// Initialize is the reactor start function that Go's -buildmode=c-shared (and WASI reactors in
	// other languages) produce; the host calls it exactly once, before any other export.
	Initialize = "_initialize"
	// Start is the WASI command entry point; its presence without Initialize means the module was
	// built as a command (Go: without -buildmode=c-shared) and is rejected.
	Start = "_start"
	// Marker is the ABI v1 version marker: () -> ().
	Marker = Prefix + "abi_v1"
	// Alloc allocates and pins a guest buffer: (size i32) -> (ptr i32).
	Alloc = Prefix + "alloc"
	// Free unpins a buffer returned by Alloc: (ptr i32) -> ().
	Free = Prefix + "free"
	// Info returns the plugin's info JSON as a packed ptr<<32|len: () -> (i64).
	Info = Prefix + "info"
	// Init configures the instance from the init envelope JSON: (ptr i32, len i32) -> (rc i32).
	Init = Prefix + "init"
	// LastError returns the message of the last failed call as a packed ptr<<32|len: () -> (i64).
	LastError = Prefix + "last_error"
	// Lengths fills n prompt lengths (tokens) for a cell:
	// (n i32, mean i32, min i32, max i32, seed i64, out_ptr i32) -> (rc i32).
	Lengths = Prefix + "lengths"
	// Route assigns n prompts to workers: (n i32, in_ptr i32, workers i32, out_ptr i32) -> (rc i32).
	Route = Prefix + "route"
	// OnComplete reports n finished requests to a router: (n i32, recs_ptr i32) -> (rc i32).
	OnComplete = Prefix + "on_complete"
	// Memory is the name of the guest's exported linear memory.
	Memory = "memory"
)

// WASIModule is the only import module a guest may import functions from.
const WASIModule = "wasi_snapshot_preview1"

// Plugin kinds, reported in the info JSON "kind" field and implied by the kind exports.
const (
	// KindLengths is a length distribution: it exports Lengths.
	KindLengths = "lengths"
	// KindRouter is a routing policy: it exports Route (and optionally OnComplete).
	KindRouter = "router"
)

// Capabilities a guest may list in its info JSON "caps" array. Unknown capabilities are ignored
// by the host, so later minor versions can add more.
const (
	// CapCompletions: the router wants OnComplete calls after its requests finish.
	CapCompletions = "completions"
	// CapPure: Lengths is a pure function of (n, mean, min, max, seed), so the host may cache
	// results.
	CapPure = "pure"
)

// Status is a failure code. Exports that can fail return an i32 rc: rc >= 0 means success (for
// Lengths and Route, the number of u32 values written; 0 otherwise), rc < 0 means failure with
// Status(-rc), and LastError then holds a UTF-8 message. After any Status the instance stays usable.
type Status int32

// Status codes (sdk/ABI.md §Status codes).
const (
	// OK is success; never returned negated.
	OK Status = 0
	// BadInput: the host passed invalid arguments or config (unknown key, bad pointer, n < 0...).
	BadInput Status = 1
	// PluginError: the plugin failed on valid input, including a recovered panic.
	PluginError Status = 2
	// NotInitialised: an export other than Info/Alloc/Free/LastError was called before a
	// successful Init.
	NotInitialised Status = 3
	// Unsupported: the export or the requested feature is not implemented by this plugin.
	Unsupported Status = 4
)

// String names the status as in sdk/ABI.md, e.g. "bad input".
func (s Status) String() string {
	switch s {
	case OK:
		return "ok"
	case BadInput:
		return "bad input"
	case PluginError:
		return "plugin error"
	case NotInitialised:
		return "not initialised"
	case Unsupported:
		return "unsupported"
	}
	return "unknown status"
}

// MaxBatch is the largest n the host passes to Lengths, Route or OnComplete (a guest may reject
// larger n with BadInput).
const MaxBatch = 1 << 20

// CompletionRecordSize is the size in bytes of one OnComplete record: four little-endian u32
// fields worker, prompt_len (tokens), completion_tokens (tokens), flags (bit 0: request failed).
const CompletionRecordSize = 16

// CompletionFailed is bit 0 of a completion record's flags: the request failed.
const CompletionFailed = 1

// ValType is a WebAssembly value type as spelled in WAT.
type ValType string

// Value types used by the ABI.
const (
	I32 ValType = "i32"
	I64 ValType = "i64"
)

// Export describes one guest export of ABI v1.
type Export struct {
	// Name is the export name, e.g. "genload_lengths".
	Name string
	// Params and Results are the exact wasm signature.
	Params, Results []ValType
	// Kind is "" for exports every plugin must have, else the plugin kind that requires it.
	Kind string
	// Optional exports may be missing: Initialize (a module without start code) and OnComplete
	// (needed only with CapCompletions).
	Optional bool
}

// Exports is the registry of every function export in ABI v1 with its exact signature, in the
// order of sdk/ABI.md.
var Exports = []Export{
	{Name: Initialize, Optional: true},
	{Name: Marker},
	{Name: Alloc, Params: []ValType{I32}, Results: []ValType{I32}},
	{Name: Free, Params: []ValType{I32}},
	{Name: Info, Results: []ValType{I64}},
	{Name: Init, Params: []ValType{I32, I32}, Results: []ValType{I32}},
	{Name: LastError, Results: []ValType{I64}},
	{Name: Lengths, Params: []ValType{I32, I32, I32, I32, I64, I32}, Results: []ValType{I32}, Kind: KindLengths},
	{Name: Route, Params: []ValType{I32, I32, I32, I32}, Results: []ValType{I32}, Kind: KindRouter},
	{Name: OnComplete, Params: []ValType{I32, I32}, Results: []ValType{I32}, Kind: KindRouter, Optional: true},
}

// Pack packs a guest pointer and a byte length into the i64 returned by Info and LastError:
// ptr<<32 | len, e.g. Pack(0x10000, 42) = 0x0001_0000_0000_002A.
func Pack(ptr, n uint32) uint64 { return uint64(ptr)<<32 | uint64(n) }

// Unpack splits an i64 from Info or LastError into pointer (high 32 bits) and length (low 32
// bits): Unpack(0x0001_0000_0000_002A) = (0x10000, 42).
func Unpack(v uint64) (ptr, n uint32) { return uint32(v >> 32), uint32(v) }

// Envelope is the JSON document passed to Init. Guests must ignore keys they do not know (later
// minor versions may add some); the plugin's own config, in contrast, is strict.
type Envelope struct {
	// ABI is the host's major version (1).
	ABI int `json:"abi"`
	// ABIMinor is the host's minor version.
	ABIMinor int `json:"abi_minor"`
	// Host names the host program and version, e.g. "genload".
	Host string `json:"host"`
	// Seed is the run seed (an unsigned 64-bit integer; may exceed 2^53).
	Seed uint64 `json:"seed"`
	// Config is the plugin's bench.toml table re-encoded as a JSON object ({} when absent).
	Config map[string]any `json:"config"`
}

// InfoDoc is the JSON document returned by Info.
type InfoDoc struct {
	// Name is the plugin's short name, e.g. "gamma" (lower-case letters, digits, '-', '_').
	Name string `json:"name"`
	// Version is the plugin's own version, e.g. "1.0.0".
	Version string `json:"version"`
	// Kind is KindLengths or KindRouter and must agree with the exports.
	Kind string `json:"kind"`
	// ABIMinor is the minor version the guest was written for.
	ABIMinor int `json:"abi_minor"`
	// Caps lists capabilities such as CapCompletions and CapPure.
	Caps []string `json:"caps"`
}

// CallSeed derives the seed passed to Lengths for one cell from the run seed, the cell's mean
// length and its batch size n: splitmix64(runSeed ^ splitmix64(mean<<32 | n)). The same run seed
// and cell always give the same call seed, whatever order the cells run in.
func CallSeed(runSeed uint64, mean, n int) uint64 {
	return splitmix64(runSeed ^ splitmix64(uint64(uint32(mean))<<32|uint64(uint32(n))))
}

// splitmix64 is the finaliser of Steele, Lea and Flood's SplitMix64 (2014).
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
