// Package sdk is the Go SDK for genload plugins: WebAssembly modules that give the load
// generator its prompt-length distributions and its routing policies. The ABI they implement is
// specified in sdk/ABI.md; with this SDK an author writes one plain Go function and never sees it.
//
// A length distribution (see package github.com/genload/genload/sdk/lengths):
//
//	package main
//
//	import (
//		"github.com/genload/genload/sdk"
//		"github.com/genload/genload/sdk/lengths"
//	)
//
//	func init() { // c-shared modules run init functions, never main
//		lengths.Register(sdk.Info{Name: "flat", Version: "1.0.0", Caps: []string{"pure"}},
//			func(env *sdk.Env) (lengths.Func, error) {
//				return func(c lengths.Call) ([]int, error) {
//					out := make([]int, c.N)
//					for i := range out {
//						out[i] = c.Mean
//					}
//					return out, nil
//				}, nil
//			})
//	}
//
//	func main() {}
//
// Build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -ldflags="-s -w" -o flat.wasm .
//
// and check it with `genload plugin check flat.wasm`. This package links encoding/json, fmt and
// reflect (Env.Decode, BadInput), more than a third of a small Go plugin; package
// github.com/genload/genload/sdk/plain has the same names without them (configs decoded with
// Env.DecodeFields), as the bundled plugins use it. Routers use package
// github.com/genload/genload/sdk/router the same way.
//
// The SDK turns a returned error into a status code with the error text as genload_last_error
// — status 1 "bad input" for every error returned by setup (it judges the config) and, during
// calls, for errors made with BadInput; status 2 "plugin error" for other errors of a call —
// and a panic into status 2 with the panic value and stack; the instance stays usable after
// both.
//
// Buffers: lengths.Call.Buf and router.Scratch are storage the SDK reuses for the next call
// (allocation is slow inside wasm), and so are the prompt lengths given to a router's Route:
// use them during the call, return them, but keep copies, never the slices, in any state that
// outlives the call (a memo, a router's history). The []Completion given to Complete is the
// plugin's to keep.
//
// Outside this repository, depend on the SDK through a replace directive to a genload
// checkout (the module is not published to a proxy):
//
//	go mod init example.com/myplugin
//	go mod edit -require=github.com/genload/genload@v0.0.0 -replace=github.com/genload/genload=/path/to/genload
//	go mod tidy
package sdk

import (
	"fmt"

	"github.com/genload/genload/sdk/abi"
	"github.com/genload/genload/sdk/internal/guest"
	"github.com/genload/genload/sdk/internal/jsonconfig"
)

// Info names and versions a plugin: Name (e.g. "gamma"), Version (e.g. "1.0.0") and Caps (ABI
// capabilities: CapPure for a length distribution whose output depends only on its inputs,
// CapCompletions for a router that wants completion callbacks).
type Info = guest.Info

// Env is what the plugin's setup function receives once, at load: Seed (the run seed),
// ABIMinor (the host's ABI minor version), Host, and Decode(&cfg) (or DecodeFields, see package
// plain) for the plugin's config table.
type Env = guest.Env

// Capabilities for Info.Caps.
const (
	// CapPure declares that a length distribution's output depends only on (n, mean, min, max,
	// seed), so the host may cache it.
	CapPure = abi.CapPure
	// CapCompletions declares that a router implements Policy.Complete.
	CapCompletions = abi.CapCompletions
)

// BadInput returns an error that the SDK reports as status 1 "bad input" (the host's arguments
// or the config are wrong) instead of status 2 "plugin error".
func BadInput(format string, args ...any) error {
	return &guest.StatusError{Status: abi.BadInput, Err: fmt.Errorf(format, args...)}
}

// Env.Decode decodes with encoding/json, which this package links in (see package plain for
// a plugin without it).
func init() { guest.SetDecoder(jsonconfig.Decode) }
